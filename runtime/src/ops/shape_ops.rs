//! Shape ops: `transpose`, `reshape`, `concat` and indexing/slicing with Python semantics.

use crate::dtype::DType;
use crate::error::{Result, RuntimeError};
use crate::memory;
use crate::ops::kernel::gather;
use crate::shape::{contiguous_strides, fmt_shape, normalize_axis};
use crate::storage::Storage;
use crate::tensor::Tensor;
use tessera_compiler::graph::infer::slice_indices;
use tessera_compiler::graph::ops::copies::{concat_shape, ConcatError};

/// Applies `$body` to the vector inside any storage variant, rebuilding the same variant.
macro_rules! map_storage {
    ($st:expr, $v:ident => $body:expr) => {
        match $st {
            Storage::F64($v) => Storage::F64($body),
            Storage::F32($v) => Storage::F32($body),
            Storage::F16($v) => Storage::F16($body),
            Storage::BF16($v) => Storage::BF16($body),
            Storage::F8($v) => Storage::F8($body),
            Storage::I64($v) => Storage::I64($body),
            Storage::I32($v) => Storage::I32($body),
            Storage::I8($v) => Storage::I8($body),
            Storage::Bool($v) => Storage::Bool($body),
            Storage::C64($v) => Storage::C64($body),
            Storage::C128($v) => Storage::C128($body),
        }
    };
}

/// One item of an index expression `x[...]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexItem {
    /// `x[i]` (negative counts from the end); removes the dimension.
    Int(i64),
    /// `x[start:stop:step]` with Python semantics (negative step included).
    Slice {
        start: Option<i64>,
        stop: Option<i64>,
        step: Option<i64>,
    },
    /// `None` / `newaxis`: inserts a dimension of size 1.
    NewAxis,
    /// `...`: as many full slices as needed.
    Ellipsis,
}

/// A strided view: element (i0, i1, ...) is at `offset + Σ ik·strides[k]`.
pub(crate) struct View {
    pub offset: isize,
    pub shape: Vec<usize>,
    pub strides: Vec<isize>,
}

pub(crate) fn materialise(x: &Tensor, v: &View, op: &str) -> Result<Tensor> {
    let dtype = x.dtype();
    if x.is_abstract() {
        return Tensor::abstract_tensor(&v.shape, dtype);
    }
    memory::check_shape_alloc(&v.shape, dtype)?;
    let st = x.storage(op)?;
    let off = usize::try_from(v.offset.max(0)).unwrap_or(0);
    let out = map_storage!(st, s => gather(s, off, &v.shape, &v.strides));
    Ok(Tensor::from_storage(v.shape.clone(), dtype, out))
}

impl Tensor {
    /// Permutes the axes (`None` reverses them, like `.T`). E0500 for an invalid permutation.
    pub fn transpose(&self, perm: Option<&[usize]>) -> Result<Tensor> {
        let nd = self.ndim();
        let perm: Vec<usize> = match perm {
            Some(p) => p.to_vec(),
            None => (0..nd).rev().collect(),
        };
        // the compiler's rule (graph::ops::copies), which the Graph IR verifier runs too
        if tessera_compiler::graph::ops::copies::transpose_shape(self.shape(), &perm).is_err() {
            return Err(RuntimeError::runtime(format!(
                "transpose: {perm:?} is not a permutation of the {nd} axes of a tensor of shape {}",
                fmt_shape(self.shape())
            )));
        }
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            return Ok(self.clone());
        }
        let cs = contiguous_strides(self.shape());
        let view = View {
            offset: 0,
            shape: perm.iter().map(|&p| self.shape()[p]).collect(),
            strides: perm.iter().map(|&p| cs[p] as isize).collect(),
        };
        materialise(self, &view, "transpose")
    }

    /// `.T`: all axes reversed.
    #[allow(non_snake_case)]
    pub fn T(&self) -> Result<Tensor> {
        self.transpose(None)
    }

    /// A new shape with the same element count; one entry may be `-1`. Never copies.
    pub fn reshape(&self, shape: &[i64]) -> Result<Tensor> {
        let bad = |why: &str| {
            RuntimeError::shape(format!(
                "reshape: cannot reshape a tensor of shape {} into {shape:?}: {why}",
                fmt_shape(self.shape())
            ))
        };
        let n = self.numel();
        let mut infer = None;
        let mut known = 1usize;
        let mut out = Vec::with_capacity(shape.len());
        for (i, &d) in shape.iter().enumerate() {
            if d == -1 {
                if infer.replace(i).is_some() {
                    return Err(bad("only one dimension can be -1"));
                }
                out.push(0);
            } else if d < 0 {
                return Err(bad("dimensions must be >= 0 or -1"));
            } else {
                let d = usize::try_from(d).map_err(|_| bad("dimension too large"))?;
                known = known
                    .checked_mul(d)
                    .ok_or_else(|| bad("too many elements"))?;
                out.push(d);
            }
        }
        if let Some(i) = infer {
            if known == 0 || !n.is_multiple_of(known) {
                return Err(bad("the sizes do not divide"));
            }
            if let Some(slot) = out.get_mut(i) {
                *slot = n / known;
            }
        } else if known != n {
            return Err(bad(&format!("{n} elements do not fit {known}")));
        }
        // an empty shape too must be one NumPy could make: `(0, 2**62, 2**62)` is not
        memory::checked_numel(&out)?;
        Ok(self.with_shape(out))
    }

    /// Indexing and slicing `x[items]` (Python/NumPy basic indexing). An int out of range is
    /// E0500 naming the index and the size.
    pub fn index(&self, items: &[IndexItem]) -> Result<Tensor> {
        let view = index_view(self.shape(), items)?;
        materialise(self, &view, "index")
    }
}

/// The strided view `x[items]` selects from a tensor of `shape`.
pub(crate) fn index_view(shape: &[usize], items: &[IndexItem]) -> Result<View> {
    let consumed = items
        .iter()
        .filter(|it| matches!(it, IndexItem::Int(_) | IndexItem::Slice { .. }))
        .count();
    let ellipses = items
        .iter()
        .filter(|it| matches!(it, IndexItem::Ellipsis))
        .count();
    if ellipses > 1 {
        return Err(RuntimeError::runtime(
            "an index can only have a single ellipsis ('...')",
        ));
    }
    if consumed > shape.len() {
        return Err(RuntimeError::runtime(format!(
            "too many indices for a tensor of shape {}: {consumed} were given",
            fmt_shape(shape)
        )));
    }
    let cs = contiguous_strides(shape);
    let mut view = View {
        offset: 0,
        shape: Vec::new(),
        strides: Vec::new(),
    };
    let mut dim = 0usize;
    let push_full = |view: &mut View, dim: &mut usize| {
        view.shape.push(shape[*dim]);
        view.strides.push(cs[*dim] as isize);
        *dim += 1;
    };
    for it in items {
        match *it {
            IndexItem::Int(i) => {
                let len = shape[dim];
                let j = if i < 0 { i + len as i64 } else { i };
                if j < 0 || j >= len as i64 {
                    return Err(RuntimeError::runtime(format!(
                        "index {i} is out of range for axis {dim} with size {len}"
                    )));
                }
                view.offset += j as isize * cs[dim] as isize;
                dim += 1;
            }
            IndexItem::Slice { start, stop, step } => {
                let (s, count, st) = slice_indices(start, stop, step, shape[dim])
                    .ok_or_else(|| RuntimeError::runtime("slice step cannot be zero"))?;
                if count > 0 {
                    view.offset += s as isize * cs[dim] as isize;
                }
                view.shape.push(count);
                // With at most one element the stride is never used (and may not fit).
                let stride = if count > 1 {
                    st as isize * cs[dim] as isize
                } else {
                    0
                };
                view.strides.push(stride);
                dim += 1;
            }
            IndexItem::NewAxis => {
                view.shape.push(1);
                view.strides.push(0);
            }
            IndexItem::Ellipsis => {
                let fill = shape.len() - consumed;
                for _ in 0..fill {
                    push_full(&mut view, &mut dim);
                }
            }
        }
    }
    while dim < shape.len() {
        push_full(&mut view, &mut dim);
    }
    Ok(view)
}

/// Concatenates tensors along `axis` (negative counts from the end). Dtypes promote; every
/// other dimension must match (E0200).
pub fn concat(xs: &[Tensor], axis: isize) -> Result<Tensor> {
    let Some(first) = xs.first() else {
        return Err(RuntimeError::args("concat: needs at least one tensor"));
    };
    let nd = first.ndim();
    if nd == 0 {
        return Err(RuntimeError::shape(
            "concat: zero-dimensional tensors cannot be concatenated",
        ));
    }
    let ax = normalize_axis(axis, nd, "concat")?;
    // the compiler's rule (graph::ops::copies), which the Graph IR verifier runs too
    let parts: Vec<(&[usize], DType)> = xs.iter().map(|t| (t.shape(), t.dtype())).collect();
    let (out_shape, dtype) = concat_shape(&parts, ax).map_err(|e| match e {
        ConcatError::Shapes { index } => RuntimeError::shape(format!(
            "concat: shapes {} and {} differ outside axis {ax}",
            fmt_shape(first.shape()),
            fmt_shape(xs.get(index).map_or(&[][..], |t| t.shape()))
        )),
        ConcatError::TooLarge => RuntimeError::resource("concat: too many elements"),
        ConcatError::Empty | ConcatError::Axis => {
            RuntimeError::runtime(format!("concat: axis {axis} of {nd} dimensions"))
        }
    })?;
    if xs.iter().any(Tensor::is_abstract) {
        return Tensor::abstract_tensor(&out_shape, dtype);
    }
    let n = memory::check_shape_alloc(&out_shape, dtype)?;
    if n == 0 {
        return Tensor::zeros(&out_shape, dtype);
    }
    let parts: Vec<Tensor> = xs.iter().map(|t| t.cast(dtype)).collect::<Result<_>>()?;
    let outer: usize = out_shape[..ax].iter().product();
    let inner: usize = out_shape[ax + 1..].iter().product();
    let mut stores = Vec::with_capacity(parts.len());
    for p in &parts {
        stores.push((p.storage("concat")?, p.shape()[ax] * inner));
    }
    macro_rules! cat {
        ($variant:ident) => {{
            let mut out = Vec::with_capacity(n);
            for o in 0..outer {
                for (st, w) in &stores {
                    if let Storage::$variant(v) = st {
                        out.extend_from_slice(v.get(o * w..(o + 1) * w).unwrap_or(&[]));
                    }
                }
            }
            Storage::$variant(out)
        }};
    }
    let storage = match stores.first().map(|s| s.0) {
        Some(Storage::F64(_)) => cat!(F64),
        Some(Storage::F32(_)) => cat!(F32),
        Some(Storage::F16(_)) => cat!(F16),
        Some(Storage::BF16(_)) => cat!(BF16),
        Some(Storage::F8(_)) => cat!(F8),
        Some(Storage::I64(_)) => cat!(I64),
        Some(Storage::I32(_)) => cat!(I32),
        Some(Storage::I8(_)) => cat!(I8),
        Some(Storage::C64(_)) => cat!(C64),
        Some(Storage::C128(_)) => cat!(C128),
        Some(Storage::Bool(_)) | None => cat!(Bool),
    };
    Ok(Tensor::from_storage(out_shape, dtype, storage))
}
