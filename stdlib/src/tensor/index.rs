//! Indexing a tensor (`t[index]`) and the selection item assignment writes through.

use super::*;

/// `t[index]`: basic indexing (ints, slices, `None`, `...`), and NumPy's advanced indexing with
/// one advanced item — an int list or int tensor (a gather along its axis; an N-d index gives
/// N dimensions there) or a bool list or bool tensor (a mask over as many axes as it has,
/// which become one axis of the selected elements). Two advanced items are E0101.
pub(crate) fn getitem(t: &Tensor, index: &Value) -> Result<Value, Diagnostic> {
    select(t, index, false).map(tensor_value)
}

/// The elements `t[index]` selects: their values, or (`offsets`) their flat offsets in `t` as
/// an int64 tensor of the same shape, for assignment.
pub(crate) fn select(t: &Tensor, index: &Value, offsets: bool) -> Result<Tensor, Diagnostic> {
    let basic_index = |items: &[IndexItem]| {
        if offsets {
            t.index_offsets(items)
        } else {
            t.index(items)
        }
    };
    let parts: Vec<Value> = match index {
        Value::Tuple(items) => items.as_ref().clone(),
        other => vec![other.clone()],
    };
    let advanced: Vec<usize> = parts
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p, Value::List(_)) || as_tensor(p).is_some())
        .map(|(i, _)| i)
        .collect();
    let Some(&p) = advanced.first() else {
        return index_items(index).and_then(|items| basic_index(&items).map_err(rt));
    };
    if advanced.len() > 1 {
        return Err(Diagnostic::new(
            Code::E0101,
            "only one list, integer tensor or mask per index is supported",
        )
        .with_help("index in two steps: `x[rows][:, cols]`"));
    }
    let idx = tensor_arg(&parts[p], Span::default()).map_err(unplaced)?;
    let mask = idx.dtype() == DType::Bool;
    if !mask && !idx.dtype().is_int() && idx.numel() != 0 {
        return Err(Diagnostic::new(
            Code::E0101,
            format!(
                "tensor indices must be integers or bools, not {}",
                idx.dtype()
            ),
        ));
    }
    // the advanced item becomes full slices (one per mask dimension), applied first
    let covers = if mask { idx.ndim().max(1) } else { 1 };
    let full = Value::Slice(Rc::new([Value::None, Value::None, Value::None]));
    let mut basic: Vec<Value> = parts[..p].to_vec();
    basic.extend(std::iter::repeat_n(full, covers));
    basic.extend(parts[p + 1..].iter().cloned());
    let y = basic_index(&index_items(&Value::tuple(basic.clone()))?).map_err(rt)?;
    let axis = advanced_axis(&parts[..p], &basic, t.ndim());
    let shape = y.shape().to_vec();
    if mask {
        let k = idx.ndim().max(1);
        let span = shape.get(axis..axis + k).unwrap_or(&[]);
        let mshape: Vec<usize> = if idx.ndim() == 0 {
            vec![1]
        } else {
            idx.shape().to_vec()
        };
        if span != mshape.as_slice() {
            return Err(Diagnostic::new(
                Code::E0200,
                format!(
                    "a mask of shape {} does not match the indexed dimensions {}",
                    tessera_runtime::shape::fmt_shape(&mshape),
                    tessera_runtime::shape::fmt_shape(span)
                ),
            ));
        }
        let mut merged: Vec<i64> = shape[..axis].iter().map(|&d| d as i64).collect();
        merged.push(mshape.iter().product::<usize>() as i64);
        merged.extend(shape[axis + k..].iter().map(|&d| d as i64));
        let flat = y.reshape(&merged).map_err(rt)?;
        let picks: Vec<i64> = idx
            .to_i64_vec()
            .map_err(rt)?
            .iter()
            .enumerate()
            .filter(|(_, &b)| b != 0)
            .map(|(i, _)| i as i64)
            .collect();
        return tessera_runtime::take(&flat, &picks, axis).map_err(rt);
    }
    let picks = idx.to_i64_vec().map_err(rt)?;
    let r = tessera_runtime::take(&y, &picks, axis).map_err(rt)?;
    // an N-d index gives N dimensions at the axis
    let mut out: Vec<i64> = shape[..axis].iter().map(|&d| d as i64).collect();
    out.extend(idx.shape().iter().map(|&d| d as i64));
    out.extend(shape[axis + 1..].iter().map(|&d| d as i64));
    r.reshape(&out).map_err(rt)
}

/// The axis of `x[basic]` that an advanced item lands on: the output dimensions of the items
/// before it (`before`), where `basic` is the whole index with the advanced item as full
/// slices and `ndim` the indexed tensor's rank (an ellipsis stands for the dims the others
/// leave). Eager and traced indexing alike.
pub(crate) fn advanced_axis(before: &[Value], basic: &[Value], ndim: usize) -> usize {
    let is_ellipsis = |v: &Value| v.downcast::<tessera_lang::eval::EllipsisObj>().is_some();
    let consumed = basic
        .iter()
        .filter(|v| matches!(v, Value::Int(_) | Value::Bool(_) | Value::Slice(_)))
        .count();
    before
        .iter()
        .map(|v| match v {
            Value::Int(_) | Value::Bool(_) => 0,
            v if is_ellipsis(v) => ndim.saturating_sub(consumed),
            _ => 1,
        })
        .sum()
}

/// The items of a tensor index (`x[1, :, None]`), for eager and traced indexing alike.
pub(crate) fn index_items(index: &Value) -> Result<Vec<IndexItem>, Diagnostic> {
    let parts: Vec<Value> = match index {
        Value::Tuple(t) => t.as_ref().clone(),
        other => vec![other.clone()],
    };
    let opt = |v: &Value| -> Result<Option<i64>, Diagnostic> {
        match v {
            Value::None => Ok(None),
            Value::Int(i) => Ok(Some(*i)),
            Value::Bool(b) => Ok(Some(i64::from(*b))),
            other => Err(Diagnostic::new(
                Code::E0101,
                format!(
                    "slice indices must be ints or None, not {}",
                    other.type_name()
                ),
            )),
        }
    };
    parts
        .iter()
        .map(|p| match p {
            Value::Int(i) => Ok(IndexItem::Int(*i)),
            Value::None => Ok(IndexItem::NewAxis),
            v if v.downcast::<tessera_lang::eval::EllipsisObj>().is_some() => {
                Ok(IndexItem::Ellipsis)
            }
            Value::Slice(s) => Ok(IndexItem::Slice {
                start: opt(&s[0])?,
                stop: opt(&s[1])?,
                step: opt(&s[2])?,
            }),
            other => Err(Diagnostic::new(
                Code::E0101,
                format!(
                    "tensor indices must be ints, slices, None or ..., not {}",
                    other.type_name()
                ),
            )),
        })
        .collect()
}
