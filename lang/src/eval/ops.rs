//! Operators on builtin values (Python semantics with 64-bit ints), with dispatch to host
//! objects for everything else.

use super::value::{range_len, Value};
use super::ITEM_BYTES;
use super::{Flow, Interp, R};
use crate::ast::{BinOp, CmpOp, UnaryOp};
use crate::diag::{Code, Diagnostic};
use crate::span::Span;
use std::rc::Rc;

fn overflow(span: Span) -> Flow {
    Diagnostic::new(
        Code::E0500,
        "integer overflow: the result does not fit in 64 bits",
    )
    .at(span)
    .into()
}

fn zero_div(span: Span, what: &str) -> Flow {
    Diagnostic::new(Code::E0500, format!("{what} by zero"))
        .at(span)
        .into()
}

fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    }
}

fn as_int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Bool(b) => Some(i64::from(*b)),
        _ => None,
    }
}

/// Python's float `%`: the result has the sign of the divisor (a zero result too).
fn py_fmod(a: f64, b: f64) -> f64 {
    let r = a % b;
    if r == 0.0 {
        0.0f64.copysign(b)
    } else if (r < 0.0) != (b < 0.0) {
        r + b
    } else {
        r
    }
}

impl Interp {
    pub(super) fn unary(&mut self, op: UnaryOp, v: &Value, span: Span) -> Result<Value, Flow> {
        match (op, v) {
            (UnaryOp::Not, _) => Ok(Value::Bool(!self.truthy(v, span)?)),
            (UnaryOp::Neg, Value::Int(i)) => i
                .checked_neg()
                .map(Value::Int)
                .ok_or_else(|| overflow(span)),
            (UnaryOp::Neg, Value::Bool(b)) => Ok(Value::Int(-i64::from(*b))),
            (UnaryOp::Neg, Value::Float(f)) => Ok(Value::Float(-f)),
            (UnaryOp::Pos, Value::Int(_) | Value::Float(_)) => Ok(v.clone()),
            (UnaryOp::Pos, Value::Bool(b)) => Ok(Value::Int(i64::from(*b))),
            (UnaryOp::Invert, Value::Int(i)) => Ok(Value::Int(!i)),
            (UnaryOp::Invert, Value::Bool(b)) => Ok(Value::Int(!i64::from(*b))),
            (_, Value::Host(h)) => match h.unary_at(op, span) {
                Some(r) => r.map_err(|d| d.or_at(span).into()),
                None => Err(bad_unary(op, v, span)),
            },
            _ => Err(bad_unary(op, v, span)),
        }
    }

    /// `a op b` for every value kind.
    pub(super) fn binary(
        &mut self,
        op: BinOp,
        a: &Value,
        b: &Value,
        span: Span,
        a_span: Span,
        b_span: Span,
    ) -> R<Value> {
        // Host objects first: a tensor on either side decides.
        if let Value::Host(h) = a {
            if let Some(r) = h.binary_at(op, b, false, span) {
                return r.map_err(|d| d.or_at(span).into());
            }
        }
        if let Value::Host(h) = b {
            if let Some(r) = h.binary_at(op, a, true, span) {
                return r.map_err(|d| d.or_at(span).into());
            }
        }
        if let (BinOp::BitAnd | BinOp::BitOr, Value::Bool(x), Value::Bool(y)) = (op, a, b) {
            // bool & bool is a bool, as in Python
            return Ok(Value::Bool(if op == BinOp::BitAnd {
                *x && *y
            } else {
                *x || *y
            }));
        }
        if let (Some(x), Some(y)) = (as_int(a), as_int(b)) {
            return int_binary(op, x, y, span, b_span);
        }
        if let (Some(x), Some(y)) = (as_f64(a), as_f64(b)) {
            return float_binary(op, x, y, span, b_span);
        }
        match (op, a, b) {
            (BinOp::Add, Value::Str(x), Value::Str(y)) => {
                self.check_host_size(x.len() + y.len(), 1, || {
                    format!("a string of {} + {} bytes", x.len(), y.len())
                })
                .map_err(|d| d.at(span))?;
                let mut s = String::with_capacity(x.len() + y.len());
                s.push_str(x);
                s.push_str(y);
                return Ok(Value::Str(s.into()));
            }
            (BinOp::Add, Value::List(x), Value::List(y)) => {
                let (n, m) = (x.borrow().len(), y.borrow().len());
                self.check_host_size(n + m, ITEM_BYTES, || format!("a list of {n} + {m} items"))
                    .map_err(|d| d.at(span))?;
                let mut v = x.borrow().clone();
                v.extend(y.borrow().iter().cloned());
                return Ok(Value::list(v));
            }
            (BinOp::Add, Value::Tuple(x), Value::Tuple(y)) => {
                let (n, m) = (x.len(), y.len());
                self.check_host_size(n + m, ITEM_BYTES, || format!("a tuple of {n} + {m} items"))
                    .map_err(|d| d.at(span))?;
                let mut v = x.as_ref().clone();
                v.extend(y.iter().cloned());
                return Ok(Value::tuple(v));
            }
            (BinOp::Mul, seq, n) | (BinOp::Mul, n, seq)
                if as_int(n).is_some()
                    && matches!(seq, Value::Str(_) | Value::List(_) | Value::Tuple(_)) =>
            {
                let k = as_int(n).unwrap_or(0).max(0) as usize;
                let (len, item) = match seq {
                    Value::Str(s) => (s.len(), 1),
                    Value::List(l) => (l.borrow().len(), ITEM_BYTES),
                    Value::Tuple(t) => (t.len(), ITEM_BYTES),
                    _ => (0, 1),
                };
                self.check_host_size(len.saturating_mul(k), item, || {
                    format!("repeating a sequence of {len} items {k} times")
                })
                .map_err(|d| d.at(span))?;
                return Ok(match seq {
                    Value::Str(s) => Value::Str(s.repeat(k).into()),
                    Value::List(l) => {
                        let items = l.borrow();
                        let mut v = Vec::with_capacity(items.len() * k);
                        for _ in 0..k {
                            v.extend(items.iter().cloned());
                        }
                        Value::list(v)
                    }
                    Value::Tuple(t) => {
                        let mut v = Vec::with_capacity(t.len() * k);
                        for _ in 0..k {
                            v.extend(t.iter().cloned());
                        }
                        Value::tuple(v)
                    }
                    _ => Value::None,
                });
            }
            (BinOp::Mod, Value::Str(fmt), args) => {
                return percent_format(fmt, args).map_err(|d| d.at(span).into());
            }
            _ => {}
        }
        let _ = a_span;
        Err(Diagnostic::new(
            Code::E0101,
            format!(
                "unsupported operand types for {}: '{}' and '{}'",
                op.symbol(),
                a.type_name(),
                b.type_name()
            ),
        )
        .at(span)
        .into())
    }

    pub(super) fn compare(&mut self, op: CmpOp, a: &Value, b: &Value, span: Span) -> R<Value> {
        match op {
            CmpOp::In | CmpOp::NotIn => {
                let found = self.contains(b, a, span)?;
                return Ok(Value::Bool(found == (op == CmpOp::In)));
            }
            CmpOp::Is | CmpOp::IsNot => {
                let same = identical(a, b);
                return Ok(Value::Bool(same == (op == CmpOp::Is)));
            }
            _ => {}
        }
        if let Value::Host(h) = a {
            if let Some(r) = h.compare_at(op, b, false, span) {
                return r.map_err(|d| d.or_at(span).into());
            }
        }
        if let Value::Host(h) = b {
            if let Some(r) = h.compare_at(op, a, true, span) {
                return r.map_err(|d| d.or_at(span).into());
            }
        }
        match op {
            CmpOp::Eq => Ok(Value::Bool(values_equal(a, b))),
            CmpOp::Ne => Ok(Value::Bool(!values_equal(a, b))),
            _ => match order(a, b) {
                Some(o) => Ok(Value::Bool(match op {
                    CmpOp::Lt => o == std::cmp::Ordering::Less,
                    CmpOp::Le => o != std::cmp::Ordering::Greater,
                    CmpOp::Gt => o == std::cmp::Ordering::Greater,
                    _ => o != std::cmp::Ordering::Less,
                })),
                None if is_nan_cmp(a, b) => Ok(Value::Bool(false)),
                None => Err(Diagnostic::new(
                    Code::E0101,
                    format!(
                        "'{}' not supported between instances of '{}' and '{}'",
                        op.symbol(),
                        a.type_name(),
                        b.type_name()
                    ),
                )
                .at(span)
                .into()),
            },
        }
    }

    fn contains(&mut self, container: &Value, item: &Value, span: Span) -> R<bool> {
        match container {
            Value::Str(s) => match item {
                Value::Str(x) => Ok(s.contains(&**x)),
                _ => Err(Diagnostic::new(
                    Code::E0101,
                    format!(
                        "'in <string>' requires a string as left operand, not {}",
                        item.type_name()
                    ),
                )
                .at(span)
                .into()),
            },
            Value::Dict(d) => Ok(d.borrow().contains(item).map_err(|e| e.at(span))?),
            Value::Host(_) if container.downcast::<super::pyset::SetObj>().is_some() => {
                match container.downcast::<super::pyset::SetObj>() {
                    Some(set) => Ok(set.contains(item).map_err(|e| e.at(span))?),
                    None => Ok(false),
                }
            }
            Value::Range(a, b, s) => Ok(match as_int(item) {
                Some(x) => {
                    let n = range_len(*a, *b, *s);
                    let k = (x as i128 - *a as i128) / *s as i128;
                    (x as i128 - *a as i128) % *s as i128 == 0 && k >= 0 && k < n as i128
                }
                None => false,
            }),
            _ => {
                let items = self.iterate(container, span)?;
                for x in items {
                    if values_equal(&x, item) {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
        }
    }

    /// `v[idx]`.
    pub(super) fn subscript(
        &mut self,
        v: &Value,
        idx: &Value,
        span: Span,
        idx_span: Span,
    ) -> R<Value> {
        match v {
            Value::Dict(d) => match d.borrow().get(idx).map_err(|e| e.at(idx_span))? {
                Some(x) => Ok(x),
                None => Err(
                    Diagnostic::new(Code::E0500, format!("KeyError: {}", idx.repr()))
                        .at(idx_span)
                        .with_label("not a key of the dict")
                        .into(),
                ),
            },
            Value::List(l) => {
                let items = l.borrow();
                index_seq(&items, idx, "list", idx_span).map(|r| match r {
                    Picked::One(x) => x,
                    Picked::Many(xs) => Value::list(xs),
                })
            }
            Value::Tuple(t) => index_seq(t, idx, "tuple", idx_span).map(|r| match r {
                Picked::One(x) => x,
                Picked::Many(xs) => Value::tuple(xs),
            }),
            Value::Str(s) => {
                let chars: Vec<Value> = s
                    .chars()
                    .map(|c| Value::Str(c.to_string().into()))
                    .collect();
                index_seq(&chars, idx, "string", idx_span).map(|r| match r {
                    Picked::One(x) => x,
                    Picked::Many(xs) => {
                        Value::Str(xs.iter().map(|x| x.to_str()).collect::<String>().into())
                    }
                })
            }
            Value::Range(a, b, s) => {
                let n = range_len(*a, *b, *s);
                match idx {
                    Value::Slice(_) => {
                        let (lo, hi, st) = slice_bounds(idx, n as usize, idx_span)?;
                        let start = a + lo * s;
                        let stop = a + hi * s;
                        Ok(Value::Range(start, stop, s * st))
                    }
                    _ => {
                        let i = index_of(idx, n as usize, "range", idx_span)?;
                        Ok(Value::Int(a + i as i64 * s))
                    }
                }
            }
            Value::Host(h) => match h.getitem_at(idx, span) {
                Some(r) => r.map_err(|d| d.or_at(span).into()),
                None => Err(not_subscriptable(v, span)),
            },
            _ => Err(not_subscriptable(v, span)),
        }
    }
}

fn not_subscriptable(v: &Value, span: Span) -> Flow {
    Diagnostic::new(
        Code::E0101,
        format!("'{}' object is not subscriptable", v.type_name()),
    )
    .at(span)
    .into()
}

enum Picked {
    One(Value),
    Many(Vec<Value>),
}

fn index_seq(items: &[Value], idx: &Value, what: &str, span: Span) -> R<Picked> {
    match idx {
        Value::Slice(_) => {
            let (lo, hi, st) = slice_bounds(idx, items.len(), span)?;
            let mut out = Vec::new();
            let mut i = lo;
            while (st > 0 && i < hi) || (st < 0 && i > hi) {
                if let Some(x) = items.get(i as usize) {
                    out.push(x.clone());
                }
                i += st;
            }
            Ok(Picked::Many(out))
        }
        _ => {
            let i = index_of(idx, items.len(), what, span)?;
            Ok(Picked::One(items.get(i).cloned().unwrap_or(Value::None)))
        }
    }
}

/// A checked index into a sequence of `len` items (negative counts from the end).
pub(super) fn index_of(idx: &Value, len: usize, what: &str, span: Span) -> R<usize> {
    let Some(i) = as_int(idx) else {
        return Err(Diagnostic::new(
            Code::E0101,
            format!("{what} indices must be integers, not {}", idx.type_name()),
        )
        .at(span)
        .into());
    };
    let n = len as i64;
    let j = if i < 0 { i + n } else { i };
    if j < 0 || j >= n {
        return Err(Diagnostic::new(
            Code::E0500,
            format!("{what} index out of range: index {i} for length {len}"),
        )
        .at(span)
        .with_label("out of range")
        .into());
    }
    Ok(j as usize)
}

/// Python's `slice.indices(len)`: start, stop, step after clamping.
pub(super) fn slice_bounds(idx: &Value, len: usize, span: Span) -> R<(i64, i64, i64)> {
    let Value::Slice(p) = idx else {
        return Ok((0, len as i64, 1));
    };
    let get = |v: &Value| -> R<Option<i64>> {
        match v {
            Value::None => Ok(None),
            other => match as_int(other) {
                Some(i) => Ok(Some(i)),
                None => Err(Diagnostic::new(
                    Code::E0101,
                    format!(
                        "slice indices must be integers or None, not {}",
                        other.type_name()
                    ),
                )
                .at(span)
                .into()),
            },
        }
    };
    let step = get(&p[2])?.unwrap_or(1);
    if step == 0 {
        return Err(Diagnostic::new(Code::E0500, "slice step cannot be zero")
            .at(span)
            .into());
    }
    let n = len as i64;
    let clamp = |v: Option<i64>, default: i64, lo: i64, hi: i64| -> i64 {
        match v {
            None => default,
            Some(x) => {
                let x = if x < 0 { x.saturating_add(n) } else { x };
                x.clamp(lo, hi)
            }
        }
    };
    let (lo, hi) = if step > 0 {
        (clamp(get(&p[0])?, 0, 0, n), clamp(get(&p[1])?, n, 0, n))
    } else {
        (
            clamp(get(&p[0])?, n - 1, -1, n - 1),
            clamp(get(&p[1])?, -1, -1, n - 1),
        )
    };
    Ok((lo, hi, step))
}

fn int_binary(op: BinOp, x: i64, y: i64, span: Span, b_span: Span) -> R<Value> {
    let r = match op {
        BinOp::Add => x.checked_add(y),
        BinOp::Sub => x.checked_sub(y),
        BinOp::Mul => x.checked_mul(y),
        BinOp::Div => {
            if y == 0 {
                return Err(zero_div(b_span, "division"));
            }
            return Ok(Value::Float(x as f64 / y as f64));
        }
        BinOp::FloorDiv => {
            if y == 0 {
                return Err(zero_div(b_span, "integer division"));
            }
            x.checked_div_euclid(y).map(|_| {
                let q = x.wrapping_div(y);
                if (x % y != 0) && ((x < 0) != (y < 0)) {
                    q - 1
                } else {
                    q
                }
            })
        }
        BinOp::Mod => {
            if y == 0 {
                return Err(zero_div(b_span, "integer modulo"));
            }
            // `x % -1` is 0 for every x (Python); `i64::MIN % -1` overflows `checked_rem`
            let r = if y == -1 { Some(0) } else { x.checked_rem(y) };
            r.map(|r| {
                if r != 0 && ((r < 0) != (y < 0)) {
                    r + y
                } else {
                    r
                }
            })
        }
        BinOp::Pow => {
            if y < 0 {
                if x == 0 {
                    return Err(zero_div(span, "zero to a negative power: division"));
                }
                return Ok(Value::Float((x as f64).powf(y as f64)));
            }
            match u32::try_from(y) {
                Ok(e) => x.checked_pow(e),
                Err(_) if x == 0 || x == 1 => Some(x),
                Err(_) if x == -1 => Some(if y % 2 == 0 { 1 } else { -1 }),
                Err(_) => None,
            }
        }
        BinOp::MatMul => {
            return Err(Diagnostic::new(
                Code::E0101,
                "unsupported operand types for @: 'int' and 'int'",
            )
            .at(span)
            .into())
        }
        BinOp::BitAnd => Some(x & y),
        BinOp::BitOr => Some(x | y),
    };
    r.map(Value::Int).ok_or_else(|| overflow(span))
}

fn float_binary(op: BinOp, x: f64, y: f64, span: Span, b_span: Span) -> R<Value> {
    Ok(Value::Float(match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => {
            if y == 0.0 {
                return Err(zero_div(b_span, "float division"));
            }
            x / y
        }
        BinOp::FloorDiv => {
            if y == 0.0 {
                return Err(zero_div(b_span, "float floor division"));
            }
            (x / y).floor()
        }
        BinOp::Mod => {
            if y == 0.0 {
                return Err(zero_div(b_span, "float modulo"));
            }
            py_fmod(x, y)
        }
        BinOp::Pow => {
            if x == 0.0 && y < 0.0 {
                return Err(zero_div(span, "zero to a negative power: division"));
            }
            if x < 0.0 && y.fract() != 0.0 {
                return Err(Diagnostic::new(
                    Code::E0500,
                    "a negative number to a fractional power has no real result",
                )
                .at(span)
                .into());
            }
            x.powf(y)
        }
        BinOp::MatMul | BinOp::BitAnd | BinOp::BitOr => {
            return Err(Diagnostic::new(
                Code::E0101,
                format!(
                    "unsupported operand types for {}: 'float' and 'float'",
                    op.symbol()
                ),
            )
            .at(span)
            .into())
        }
    }))
}

fn bad_unary(op: UnaryOp, v: &Value, span: Span) -> Flow {
    let sym = match op {
        UnaryOp::Neg => "-",
        UnaryOp::Pos => "+",
        UnaryOp::Not => "not",
        UnaryOp::Invert => "~",
    };
    Diagnostic::new(
        Code::E0101,
        format!("bad operand type for unary {sym}: '{}'", v.type_name()),
    )
    .at(span)
    .into()
}

fn is_nan_cmp(a: &Value, b: &Value) -> bool {
    matches!((as_f64(a), as_f64(b)), (Some(x), Some(y)) if x.is_nan() || y.is_nan())
}

fn identical(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::None, Value::None) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::List(x), Value::List(y)) => Rc::ptr_eq(x, y),
        (Value::Tuple(x), Value::Tuple(y)) => Rc::ptr_eq(x, y),
        (Value::Function(x), Value::Function(y)) => Rc::ptr_eq(x, y),
        (Value::Native(x), Value::Native(y)) => Rc::ptr_eq(x, y),
        (Value::Module(x), Value::Module(y)) => Rc::ptr_eq(x, y),
        (Value::Type(x), Value::Type(y)) => x == y,
        (Value::Host(x), Value::Host(y)) => Rc::ptr_eq(x, y),
        (Value::Str(x), Value::Str(y)) => Rc::ptr_eq(x, y) || x == y,
        _ => false,
    }
}

/// Python `==` for builtin values (host objects compare by identity here).
pub fn values_equal(a: &Value, b: &Value) -> bool {
    if let (Some(x), Some(y)) = (as_int(a), as_int(b)) {
        return x == y;
    }
    if let (Some(x), Some(y)) = (as_f64(a), as_f64(b)) {
        return x == y;
    }
    match (a, b) {
        (Value::None, Value::None) => true,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::List(x), Value::List(y)) => {
            if Rc::ptr_eq(x, y) {
                return true;
            }
            let (x, y) = (x.borrow(), y.borrow());
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| values_equal(p, q))
        }
        (Value::Tuple(x), Value::Tuple(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| values_equal(p, q))
        }
        (Value::Dict(x), Value::Dict(y)) => {
            if Rc::ptr_eq(x, y) {
                return true;
            }
            let (x, y) = (x.borrow(), y.borrow());
            x.len() == y.len()
                && x.entries()
                    .all(|(k, v)| matches!(y.get(k), Ok(Some(w)) if values_equal(v, &w)))
        }
        (Value::Range(a1, b1, s1), Value::Range(a2, b2, s2)) => {
            let (n1, n2) = (range_len(*a1, *b1, *s1), range_len(*a2, *b2, *s2));
            n1 == n2 && (n1 == 0 || (a1 == a2 && (n1 == 1 || s1 == s2)))
        }
        (Value::Host(x), Value::Host(y)) => Rc::ptr_eq(x, y) || x.same(y.as_ref()),
        _ => identical(a, b),
    }
}

/// Python ordering for builtin values (`None` where the types are not orderable).
pub fn order(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    if let (Some(x), Some(y)) = (as_int(a), as_int(b)) {
        return Some(x.cmp(&y));
    }
    if let (Some(x), Some(y)) = (as_f64(a), as_f64(b)) {
        return x.partial_cmp(&y);
    }
    match (a, b) {
        (Value::Str(x), Value::Str(y)) => Some(x.cmp(y)),
        (Value::List(x), Value::List(y)) => seq_order(&x.borrow(), &y.borrow()),
        (Value::Tuple(x), Value::Tuple(y)) => seq_order(x, y),
        _ => None,
    }
}

fn seq_order(x: &[Value], y: &[Value]) -> Option<std::cmp::Ordering> {
    for (p, q) in x.iter().zip(y.iter()) {
        if !values_equal(p, q) {
            return order(p, q);
        }
    }
    Some(x.len().cmp(&y.len()))
}

/// `"%d items" % n` — the printf-style operator, for `%s %r %d %i %f %e %g %x %%`.
fn percent_format(fmt: &str, args: &Value) -> Result<Value, Diagnostic> {
    let items: Vec<Value> = match args {
        Value::Tuple(t) => t.as_ref().clone(),
        other => vec![other.clone()],
    };
    let mut it = items.into_iter();
    let mut out = String::new();
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = String::new();
        while let Some(&d) = chars.peek() {
            if d.is_ascii_digit() || matches!(d, '.' | '-' | '+' | ' ' | '0') {
                spec.push(d);
                chars.next();
            } else {
                break;
            }
        }
        let Some(ty) = chars.next() else {
            return Err(Diagnostic::new(Code::E0101, "incomplete format"));
        };
        if ty == '%' {
            out.push('%');
            continue;
        }
        let Some(v) = it.next() else {
            return Err(Diagnostic::new(
                Code::E0101,
                "not enough arguments for format string",
            ));
        };
        let s = match ty {
            's' => v.to_str(),
            'r' => v.repr(),
            'd' | 'i' | 'f' | 'F' | 'e' | 'E' | 'g' | 'G' | 'x' | 'X' | 'o' => {
                let v = match (ty, &v) {
                    ('d' | 'i', Value::Float(f)) => Value::Int(f.trunc() as i64),
                    _ => v,
                };
                let ty = if ty == 'i' { 'd' } else { ty };
                let spec = spec.replace('-', "<");
                let spec = if let Some(rest) = spec.strip_prefix('<') {
                    format!("<{rest}")
                } else {
                    spec
                };
                super::format::format_value(&v, &format!("{spec}{ty}"))?
            }
            other => {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!("unsupported format character '{other}'"),
                ))
            }
        };
        out.push_str(&s);
    }
    if it.next().is_some() {
        return Err(Diagnostic::new(
            Code::E0101,
            "not all arguments converted during string formatting",
        ));
    }
    Ok(Value::Str(out.into()))
}
