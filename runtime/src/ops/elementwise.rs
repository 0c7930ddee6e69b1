//! Elementwise ops with NumPy broadcasting. Shapes and dtypes are inferred first ([`infer_binary`],
//! [`infer_unary`], `where_`: the compiler's rule, `graph::ops::elementwise`, which the Graph IR
//! verifier runs too), so abstract tensors get their result without computing. Values are computed
//! in a domain (f32 for fp32 and narrower, f64, i64 wrapping, bool) and rounded once.

use std::borrow::Cow;

use crate::dtype::{DType, Scalar};
use crate::error::{Result, RuntimeError};
use crate::memory;
use crate::ops::kernel::{filled, map1, zip2, zip3};
use crate::ops::real::Real;
use crate::shape::shape_error;
use crate::storage::Storage;
use crate::tensor::Tensor;
use tessera_compiler::graph::ops::elementwise as elementwise_rule;

/// An operand of an elementwise op: a tensor or a Python scalar.
#[derive(Clone, Copy, Debug)]
pub enum Operand<'a> {
    Tensor(&'a Tensor),
    Scalar(Scalar),
}

impl<'a> From<&'a Tensor> for Operand<'a> {
    fn from(t: &'a Tensor) -> Operand<'a> {
        Operand::Tensor(t)
    }
}
impl From<Scalar> for Operand<'_> {
    fn from(s: Scalar) -> Self {
        Operand::Scalar(s)
    }
}
impl From<f64> for Operand<'_> {
    fn from(x: f64) -> Self {
        Operand::Scalar(Scalar::Float(x))
    }
}
impl From<i64> for Operand<'_> {
    fn from(x: i64) -> Self {
        Operand::Scalar(Scalar::Int(x))
    }
}
impl From<bool> for Operand<'_> {
    fn from(x: bool) -> Self {
        Operand::Scalar(Scalar::Bool(x))
    }
}

pub use tessera_compiler::graph::ops::elementwise::{promote_operands, OperandType};

impl Operand<'_> {
    pub fn operand_type(&self) -> OperandType {
        match self {
            Operand::Tensor(t) => OperandType::Tensor(t.dtype()),
            Operand::Scalar(s) => OperandType::Scalar(s.kind()),
        }
    }
    fn shape(&self) -> &[usize] {
        match self {
            Operand::Tensor(t) => t.shape(),
            Operand::Scalar(_) => &[],
        }
    }
    fn is_abstract(&self) -> bool {
        matches!(self, Operand::Tensor(t) if t.is_abstract())
    }
}

pub use tessera_compiler::graph::{BinaryOp, UnaryOp};

/// The domain a kernel computes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Domain {
    F32,
    F64,
    I64,
    Bool,
}

pub(crate) fn domain_of(d: DType) -> Domain {
    match d {
        DType::F64 => Domain::F64,
        d if d.is_float() => Domain::F32,
        _ => Domain::I64,
    }
}

/// The compute domain of a binary op: comparisons compute in their operands' domain, logical
/// ops on bools, the others in their result's.
fn binary_domain(op: BinaryOp, a: OperandType, b: OperandType) -> Domain {
    let p = promote_operands(a, b);
    if op.is_comparison() {
        domain_of(p)
    } else if matches!(op, BinaryOp::LogicalAnd | BinaryOp::LogicalOr) {
        Domain::Bool
    } else {
        domain_of(op.result_for(p))
    }
}

/// Shape and dtype of `lhs op rhs` without computing it.
pub fn infer_binary(
    op: BinaryOp,
    lhs: (&[usize], OperandType),
    rhs: (&[usize], OperandType),
) -> Result<(Vec<usize>, DType)> {
    elementwise_rule::binary_type(op, lhs, rhs).map_err(|e| shape_error(e, op.name()))
}

/// Result dtype (the compiler's rule, [`UnaryOp::result_dtype`]) and domain of a unary op.
fn unary_types(op: UnaryOp, d: DType) -> (DType, Domain) {
    let r = elementwise_rule::unary_type(op, d);
    if op == UnaryOp::Not {
        (r, Domain::Bool)
    } else {
        (r, domain_of(r))
    }
}

/// Dtype of a unary op's result.
pub fn infer_unary(op: UnaryOp, d: DType) -> DType {
    unary_types(op, d).0
}

// ----- reading operands into a domain ---------------------------------------------------------

fn read_f32<'a>(o: &Operand<'a>, op: &str) -> Result<Cow<'a, [f32]>> {
    Ok(match o {
        Operand::Tensor(t) => t.storage(op)?.to_f32(t.dtype()),
        Operand::Scalar(s) => Cow::Owned(vec![s.as_f64() as f32]),
    })
}

fn read_f64<'a>(o: &Operand<'a>, op: &str) -> Result<Cow<'a, [f64]>> {
    Ok(match o {
        Operand::Tensor(t) => t.storage(op)?.to_f64(t.dtype()),
        Operand::Scalar(s) => Cow::Owned(vec![s.as_f64()]),
    })
}

fn read_i64<'a>(o: &Operand<'a>, op: &str) -> Result<Cow<'a, [i64]>> {
    Ok(match o {
        Operand::Tensor(t) => t.storage(op)?.to_i64(t.dtype()),
        Operand::Scalar(Scalar::Int(i)) => Cow::Owned(vec![*i]),
        Operand::Scalar(Scalar::Bool(b)) => Cow::Owned(vec![i64::from(*b)]),
        Operand::Scalar(Scalar::Float(x)) => Cow::Owned(vec![*x as i64]),
    })
}

fn read_bool<'a>(o: &Operand<'a>, op: &str) -> Result<Cow<'a, [bool]>> {
    Ok(match o {
        Operand::Tensor(t) => t.storage(op)?.to_bool(t.dtype()),
        Operand::Scalar(s) => Cow::Owned(vec![s.as_f64() != 0.0]),
    })
}

/// The result storage of a domain's values.
enum Values {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I64(Vec<i64>),
    Bool(Vec<bool>),
}

impl Values {
    fn into_storage(self, dtype: DType) -> Storage {
        match self {
            Values::F32(v) => Storage::from_f32(v, dtype),
            Values::F64(v) => Storage::from_f64(v, dtype),
            Values::I64(v) => Storage::from_i64(v, dtype),
            Values::Bool(v) => Storage::from_bool(v, dtype),
        }
    }
}

fn domain_dtype(d: Domain) -> DType {
    match d {
        Domain::F32 => DType::F32,
        Domain::F64 => DType::F64,
        Domain::I64 => DType::I64,
        Domain::Bool => DType::Bool,
    }
}

// ----- binary ---------------------------------------------------------------------------------

fn float_binary<T: Real>(
    op: BinaryOp,
    s: &[usize],
    a: &[T],
    sa: &[usize],
    b: &[T],
    sb: &[usize],
) -> Result<Values>
where
    Vec<T>: IntoValues,
{
    // Macros, not closures taking `fn` pointers: each op's function is its own type, inlined
    // into the loop (a pointer would be an indirect call per element, and no vectors).
    macro_rules! arith {
        ($f:expr) => {
            zip2(s, a, sa, b, sb, $f)
        };
    }
    macro_rules! cmp {
        ($f:expr) => {
            Values::Bool(zip2(s, a, sa, b, sb, $f))
        };
    }
    Ok(match op {
        BinaryOp::Add => arith!(|x, y| x + y).into_values(),
        BinaryOp::Sub => arith!(|x, y| x - y).into_values(),
        BinaryOp::Mul => arith!(|x, y| x * y).into_values(),
        BinaryOp::Div => arith!(|x, y| x / y).into_values(),
        BinaryOp::FloorDiv => arith!(|x, y| x.py_divmod(y).0).into_values(),
        BinaryOp::Mod => arith!(|x, y| x.py_divmod(y).1).into_values(),
        BinaryOp::Pow => arith!(|x, y| x.powf(y)).into_values(),
        BinaryOp::Maximum => arith!(|x, y| x.nan_max(y)).into_values(),
        BinaryOp::Minimum => arith!(|x, y| x.nan_min(y)).into_values(),
        BinaryOp::Eq => cmp!(|x, y| x == y),
        BinaryOp::Ne => cmp!(|x, y| x != y),
        BinaryOp::Lt => cmp!(|x, y| x < y),
        BinaryOp::Le => cmp!(|x, y| x <= y),
        BinaryOp::Gt => cmp!(|x, y| x > y),
        BinaryOp::Ge => cmp!(|x, y| x >= y),
        BinaryOp::LogicalAnd => cmp!(|x, y| x != T::ZERO && y != T::ZERO),
        BinaryOp::LogicalOr => cmp!(|x, y| x != T::ZERO || y != T::ZERO),
    })
}

trait IntoValues {
    fn into_values(self) -> Values;
}
impl IntoValues for Vec<f32> {
    fn into_values(self) -> Values {
        Values::F32(self)
    }
}
impl IntoValues for Vec<f64> {
    fn into_values(self) -> Values {
        Values::F64(self)
    }
}

/// Python's `//` on ints (wrapping at i64::MIN // -1). `b != 0`.
#[inline]
fn int_floordiv(a: i64, b: i64) -> i64 {
    let q = a.wrapping_div(b);
    if a.wrapping_rem(b) != 0 && ((a < 0) != (b < 0)) {
        q.wrapping_sub(1)
    } else {
        q
    }
}

/// Python's `%` on ints. `b != 0`.
#[inline]
fn int_mod(a: i64, b: i64) -> i64 {
    let r = a.wrapping_rem(b);
    if r != 0 && ((r < 0) != (b < 0)) {
        r.wrapping_add(b)
    } else {
        r
    }
}

/// Wrapping integer power, `e >= 0`.
#[inline]
fn int_pow(mut base: i64, mut e: i64) -> i64 {
    let mut acc: i64 = 1;
    while e > 0 {
        if e & 1 == 1 {
            acc = acc.wrapping_mul(base);
        }
        base = base.wrapping_mul(base);
        e >>= 1;
    }
    acc
}

fn int_binary(
    op: BinaryOp,
    s: &[usize],
    a: &[i64],
    sa: &[usize],
    b: &[i64],
    sb: &[usize],
) -> Result<Values> {
    let n: usize = s.iter().product();
    if n > 0 {
        if matches!(op, BinaryOp::FloorDiv | BinaryOp::Mod) && b.contains(&0) {
            return Err(RuntimeError::runtime(format!(
                "integer {} by zero",
                if op == BinaryOp::Mod {
                    "modulo"
                } else {
                    "division"
                }
            )));
        }
        if op == BinaryOp::Pow {
            if let Some(e) = b.iter().find(|&&e| e < 0) {
                return Err(RuntimeError::runtime(format!(
                    "integers to negative integer powers are not allowed (exponent {e})"
                ))
                .with_help("cast the base to a float dtype first"));
            }
        }
    }
    macro_rules! arith {
        ($f:expr) => {
            Values::I64(zip2(s, a, sa, b, sb, $f))
        };
    }
    macro_rules! cmp {
        ($f:expr) => {
            Values::Bool(zip2(s, a, sa, b, sb, $f))
        };
    }
    Ok(match op {
        BinaryOp::Add => arith!(i64::wrapping_add),
        BinaryOp::Sub => arith!(i64::wrapping_sub),
        BinaryOp::Mul => arith!(i64::wrapping_mul),
        BinaryOp::Div => arith!(|x, y| x / y.max(1)), // unreachable: int `/` computes in f32
        BinaryOp::FloorDiv => arith!(|x, y| if y == 0 { 0 } else { int_floordiv(x, y) }),
        BinaryOp::Mod => arith!(|x, y| if y == 0 { 0 } else { int_mod(x, y) }),
        BinaryOp::Pow => arith!(int_pow),
        BinaryOp::Maximum => arith!(i64::max),
        BinaryOp::Minimum => arith!(i64::min),
        BinaryOp::Eq => cmp!(|x, y| x == y),
        BinaryOp::Ne => cmp!(|x, y| x != y),
        BinaryOp::Lt => cmp!(|x, y| x < y),
        BinaryOp::Le => cmp!(|x, y| x <= y),
        BinaryOp::Gt => cmp!(|x, y| x > y),
        BinaryOp::Ge => cmp!(|x, y| x >= y),
        BinaryOp::LogicalAnd => cmp!(|x, y| x != 0 && y != 0),
        BinaryOp::LogicalOr => cmp!(|x, y| x != 0 || y != 0),
    })
}

/// E0500 for arithmetic between an integer tensor and a Python int out of its dtype's range
/// (`int8_tensor + 300`): the int would be stored in the tensor's dtype, and NumPy 2 refuses
/// it rather than wrap. Comparisons take any int (`x == 300` is false everywhere).
fn check_int_scalar(op: BinaryOp, lhs: &Operand, rhs: &Operand) -> Result<()> {
    use BinaryOp::*;
    if matches!(op, Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr) {
        return Ok(());
    }
    for (a, b) in [(lhs, rhs), (rhs, lhs)] {
        if let (Operand::Scalar(Scalar::Int(i)), Operand::Tensor(t)) = (a, b) {
            crate::tensor::check_python_int(*i, t.dtype())?;
        }
    }
    Ok(())
}

/// `lhs op rhs` with broadcasting and promotion (SPEC §4). Either side may be a Python scalar.
pub fn binary<'a, 'b>(
    op: BinaryOp,
    lhs: impl Into<Operand<'a>>,
    rhs: impl Into<Operand<'b>>,
) -> Result<Tensor> {
    let (lhs, rhs) = (lhs.into(), rhs.into());
    let name = op.name();
    let (shape, dtype) = infer_binary(
        op,
        (lhs.shape(), lhs.operand_type()),
        (rhs.shape(), rhs.operand_type()),
    )?;
    let domain = binary_domain(op, lhs.operand_type(), rhs.operand_type());
    let promoted = promote_operands(lhs.operand_type(), rhs.operand_type());
    check_int_scalar(op, &lhs, &rhs)?;
    if promoted.is_complex() && !matches!(op, BinaryOp::LogicalAnd | BinaryOp::LogicalOr) {
        return super::complex::binary(op, lhs, rhs, shape, dtype, promoted);
    }
    if lhs.is_abstract() || rhs.is_abstract() {
        return Tensor::abstract_tensor(&shape, dtype);
    }
    let n = memory::check_shape_alloc(&shape, dtype)?;
    memory::check_alloc(n, domain_dtype(domain))?;
    let (sa, sb) = (lhs.shape(), rhs.shape());
    let values = match domain {
        Domain::F32 => float_binary(
            op,
            &shape,
            &read_f32(&lhs, name)?,
            sa,
            &read_f32(&rhs, name)?,
            sb,
        )?,
        Domain::F64 => float_binary(
            op,
            &shape,
            &read_f64(&lhs, name)?,
            sa,
            &read_f64(&rhs, name)?,
            sb,
        )?,
        Domain::I64 => int_binary(
            op,
            &shape,
            &read_i64(&lhs, name)?,
            sa,
            &read_i64(&rhs, name)?,
            sb,
        )?,
        Domain::Bool => {
            let (a, b) = (read_bool(&lhs, name)?, read_bool(&rhs, name)?);
            Values::Bool(match op {
                BinaryOp::LogicalOr => zip2(&shape, &a, sa, &b, sb, |x, y| x || y),
                _ => zip2(&shape, &a, sa, &b, sb, |x, y| x && y),
            })
        }
    };
    Ok(Tensor::from_storage(
        shape,
        dtype,
        values.into_storage(dtype),
    ))
}

// ----- unary ----------------------------------------------------------------------------------

// The functions with large bodies (the fp32 ones are polynomials, ops::vmath) run in loops of
// their own, each calling its `#[inline(always)]` function directly: passed to `map1` as a
// closure or a fn item, the function was not inlined into the loop compiled per ISA and ran as
// a baseline-x86 call per element (gelu 7x slower).
#[inline(always)]
fn transcendental_run_impl<T: Real>(op: UnaryOp, o: &mut [std::mem::MaybeUninit<T>], a: &[T]) {
    macro_rules! each {
        ($f:expr) => {
            for (o, &x) in o.iter_mut().zip(a) {
                o.write($f(x));
            }
        };
    }
    match op {
        UnaryOp::Exp => each!(T::exp),
        UnaryOp::Tanh => each!(T::tanh),
        UnaryOp::Erf => each!(T::erf),
        UnaryOp::Sigmoid => each!(sigmoid::<T>),
        UnaryOp::Silu => each!(silu::<T>),
        _ => each!(gelu::<T>),
    }
}

crate::isa_versions! {
    fn transcendental_run<T: Real>(op: UnaryOp, o: &mut [std::mem::MaybeUninit<T>], a: &[T])
        => transcendental_run_impl
}

/// `op(a)` for exp, tanh, erf, sigmoid, silu and gelu.
fn transcendental<T: Real>(op: UnaryOp, a: &[T]) -> Vec<T> {
    let isa = crate::isa::current();
    filled(
        a.len(),
        &|start, chunk| match a.get(start..start + chunk.len()) {
            Some(src) => {
                transcendental_run(isa, op, chunk, src);
                true
            }
            None => false,
        },
    )
}

#[inline(always)]
fn sigmoid<T: Real>(x: T) -> T {
    T::ONE / (T::ONE + (-x).exp())
}

#[inline(always)]
fn silu<T: Real>(x: T) -> T {
    x / (T::ONE + (-x).exp())
}

#[inline(always)]
fn gelu<T: Real>(x: T) -> T {
    let r = T::from_f64(std::f64::consts::FRAC_1_SQRT_2);
    T::HALF * x * (T::ONE + (x * r).erf())
}

fn float_unary<T: Real>(op: UnaryOp, a: &[T]) -> Vec<T> {
    macro_rules! m {
        ($f:expr) => {
            map1(a, $f)
        };
    }
    match op {
        UnaryOp::Neg => m!(|x| -x),
        UnaryOp::Abs => m!(|x| x.abs()),
        UnaryOp::Relu => m!(|x| {
            if x > T::ZERO || x.is_nan() {
                x
            } else {
                T::ZERO
            }
        }),
        UnaryOp::Exp
        | UnaryOp::Tanh
        | UnaryOp::Erf
        | UnaryOp::Sigmoid
        | UnaryOp::Silu
        | UnaryOp::Gelu => transcendental(op, a),
        UnaryOp::Log => m!(|x| x.ln()),
        UnaryOp::Sqrt => m!(|x| x.sqrt()),
        UnaryOp::Rsqrt => m!(|x| T::ONE / x.sqrt()),
        UnaryOp::Sin => m!(|x| x.sin()),
        UnaryOp::Cos => m!(|x| x.cos()),
        UnaryOp::Floor => m!(|x| x.floor()),
        UnaryOp::Ceil => m!(|x| x.ceil()),
        UnaryOp::Round => m!(|x| x.round_even()),
        // NumPy: sign(±0) is +0, sign(NaN) is NaN
        UnaryOp::Sign => m!(|x| {
            if x > T::ZERO {
                T::ONE
            } else if x < T::ZERO {
                -T::ONE
            } else if x.is_nan() {
                x
            } else {
                T::ZERO
            }
        }),
        // bool tests give 1/0 here; `unary` stores them as bools
        UnaryOp::IsNan => m!(|x| if x.is_nan() { T::ONE } else { T::ZERO }),
        UnaryOp::IsFinite => m!(|x| if x.is_finite() { T::ONE } else { T::ZERO }),
        UnaryOp::Not => m!(|x| if x == T::ZERO { T::ONE } else { T::ZERO }),
    }
}

/// `op(x)`: float functions of int tensors give fp32; neg/abs/relu keep int dtypes (wrapping).
pub fn unary(op: UnaryOp, x: &Tensor) -> Result<Tensor> {
    let (dtype, domain) = unary_types(op, x.dtype());
    if x.dtype().is_complex() && op != UnaryOp::Not {
        return super::complex::unary(op, x, dtype);
    }
    if x.is_abstract() {
        return Tensor::abstract_tensor(x.shape(), dtype);
    }
    let n = x.numel();
    memory::check_alloc(n, dtype)?;
    memory::check_alloc(n, domain_dtype(domain))?;
    let st = x.storage(op.name())?;
    if matches!(op, UnaryOp::IsNan | UnaryOp::IsFinite) {
        // a bool test of the value: computed on the floats; ints and bools are never NaN
        let f = st.to_f64(x.dtype());
        let b: Vec<bool> = if op == UnaryOp::IsNan {
            map1(&f, f64::is_nan)
        } else {
            map1(&f, f64::is_finite)
        };
        return Ok(Tensor::from_storage(
            x.shape().to_vec(),
            dtype,
            Values::Bool(b).into_storage(dtype),
        ));
    }
    let values = match domain {
        Domain::F32 => Values::F32(float_unary(op, &st.to_f32(x.dtype()))),
        Domain::F64 => Values::F64(float_unary(op, &st.to_f64(x.dtype()))),
        Domain::I64 => {
            let a = st.to_i64(x.dtype());
            Values::I64(match op {
                UnaryOp::Neg => map1(&a, i64::wrapping_neg),
                UnaryOp::Abs => map1(&a, i64::wrapping_abs),
                UnaryOp::Sign => map1(&a, i64::signum),
                // integers are already integral
                UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round => a.into_owned(),
                _ => map1(&a, |v| v.max(0)),
            })
        }
        Domain::Bool => Values::Bool(map1(&st.to_bool(x.dtype()), |b| !b)),
    };
    Ok(Tensor::from_storage(
        x.shape().to_vec(),
        dtype,
        values.into_storage(dtype),
    ))
}

/// `where(cond, a, b)`: `a` where `cond` is true (nonzero), else `b`; broadcast over all three.
pub fn where_<'a, 'b>(
    cond: &Tensor,
    a: impl Into<Operand<'a>>,
    b: impl Into<Operand<'b>>,
) -> Result<Tensor> {
    let (a, b) = (a.into(), b.into());
    let (shape, dtype) = elementwise_rule::where_type(
        cond.shape(),
        (a.shape(), a.operand_type()),
        (b.shape(), b.operand_type()),
    )
    .map_err(|e| shape_error(e, "where"))?;
    if cond.is_abstract() || a.is_abstract() || b.is_abstract() {
        return Tensor::abstract_tensor(&shape, dtype);
    }
    if dtype.is_complex() {
        return super::complex::where_(cond, a, b, shape, dtype);
    }
    let domain = domain_of(dtype);
    let n = memory::check_shape_alloc(&shape, dtype)?;
    memory::check_alloc(n, domain_dtype(domain))?;
    let c = cond.storage("where")?.to_bool(cond.dtype());
    let cs = (&c[..], cond.shape());
    let values = match domain {
        Domain::F32 => {
            let (x, y) = (read_f32(&a, "where")?, read_f32(&b, "where")?);
            Values::F32(zip3(
                &shape,
                cs,
                (&x, a.shape()),
                (&y, b.shape()),
                |c, x, y| if c { x } else { y },
            ))
        }
        Domain::F64 => {
            let (x, y) = (read_f64(&a, "where")?, read_f64(&b, "where")?);
            Values::F64(zip3(
                &shape,
                cs,
                (&x, a.shape()),
                (&y, b.shape()),
                |c, x, y| if c { x } else { y },
            ))
        }
        Domain::I64 | Domain::Bool => {
            let (x, y) = (read_i64(&a, "where")?, read_i64(&b, "where")?);
            Values::I64(zip3(
                &shape,
                cs,
                (&x, a.shape()),
                (&y, b.shape()),
                |c, x, y| if c { x } else { y },
            ))
        }
    };
    Ok(Tensor::from_storage(
        shape,
        dtype,
        values.into_storage(dtype),
    ))
}

macro_rules! binary_methods {
    ($($(#[$m:meta])* $name:ident => $op:ident),* $(,)?) => {
        impl Tensor {
            $(
                $(#[$m])*
                pub fn $name<'b>(&self, rhs: impl Into<Operand<'b>>) -> Result<Tensor> {
                    binary(BinaryOp::$op, self, rhs)
                }
            )*
        }
    };
}

binary_methods! {
    /// `self + rhs` (rhs a tensor or a Python scalar).
    add => Add,
    sub => Sub,
    mul => Mul,
    /// True division: int operands give fp32.
    div => Div,
    /// Python `//`: int division by zero is E0500.
    floordiv => FloorDiv,
    /// Python `%` (the result has the divisor's sign).
    rem => Mod,
    pow => Pow,
    maximum => Maximum,
    minimum => Minimum,
    eq => Eq,
    ne => Ne,
    lt => Lt,
    le => Le,
    gt => Gt,
    ge => Ge,
    logical_and => LogicalAnd,
    logical_or => LogicalOr,
}

macro_rules! unary_methods {
    ($($name:ident => $op:ident),* $(,)?) => {
        impl Tensor {
            $(
                pub fn $name(&self) -> Result<Tensor> {
                    unary(UnaryOp::$op, self)
                }
            )*
        }
    };
}

unary_methods! {
    neg => Neg, abs => Abs, relu => Relu, exp => Exp, log => Log, sqrt => Sqrt, rsqrt => Rsqrt,
    tanh => Tanh, sigmoid => Sigmoid, gelu => Gelu, silu => Silu, logical_not => Not, erf => Erf,
    sin => Sin, cos => Cos, floor => Floor, ceil => Ceil, round => Round, sign => Sign,
    isnan => IsNan, isfinite => IsFinite,
}

impl Tensor {
    /// `where(cond=self, a, b)`.
    pub fn where_<'a, 'b>(
        &self,
        a: impl Into<Operand<'a>>,
        b: impl Into<Operand<'b>>,
    ) -> Result<Tensor> {
        where_(self, a, b)
    }
}
