//! Complex tensors (c64, c128): `real imag conj angle complex`, and the elementwise ops,
//! `where` and the reductions that NumPy defines on complex numbers. c64 computes in f32
//! parts and c128 in f64 parts, as NumPy does; a sum accumulates in f64 parts whatever the
//! dtype and rounds once. Ops without a complex meaning (ordering, `relu`, `//`, ...) are E0201
//! ([`real_only`]).

use std::borrow::Cow;

use num_complex::Complex;
use num_traits::Float;

use crate::dtype::DType;
use crate::error::{Result, RuntimeError};
use crate::memory;
use crate::ops::cmath;
use crate::ops::elementwise::{promote_operands, BinaryOp, Operand, UnaryOp};
use crate::ops::kernel::{map1, zip2, zip3};
use crate::ops::reduce::ReduceOp;
use crate::shape::{broadcast_shapes, fmt_shape};
use crate::storage::Storage;
use crate::tensor::Tensor;

/// E0201 when `dtype` is complex: `op` has no complex meaning (or no complex kernel yet).
pub(crate) fn real_only(op: &str, dtype: DType) -> Result<()> {
    if dtype.is_complex() {
        return Err(RuntimeError::dtype(format!(
            "{op} is not defined for complex tensors ({dtype})"
        ))
        .with_help("apply it to a real tensor: op.real(x), op.imag(x) or op.abs(x)"));
    }
    Ok(())
}

/// The element type of a complex dtype's parts, with the reads and writes of its storage.
pub(crate) trait Part: Float + Default + Send + Sync + 'static {
    /// The values of storage of dtype `d` as complex numbers (zero imaginary parts for real
    /// dtypes).
    fn complex_of(st: &Storage, d: DType) -> Cow<'_, [Complex<Self>]>;
    /// The values of storage of dtype `d` as real numbers (complex: the real part).
    fn real_of(st: &Storage, d: DType) -> Cow<'_, [Self]>;
    /// The complex values of an operand (a real operand gets a zero imaginary part).
    fn read(o: &Operand<'_>, op: &str) -> Result<Vec<Complex<Self>>>;
    /// Complex values into storage of `dtype`.
    fn store(v: Vec<Complex<Self>>, dtype: DType) -> Storage;
    /// Real values into storage of `dtype`.
    fn store_real(v: Vec<Self>, dtype: DType) -> Storage;
    fn of_f64(x: f64) -> Self;
}

impl Part for f32 {
    fn complex_of(st: &Storage, d: DType) -> Cow<'_, [Complex<f32>]> {
        st.to_c64(d)
    }
    fn real_of(st: &Storage, d: DType) -> Cow<'_, [f32]> {
        st.to_f32(d)
    }
    fn read(o: &Operand<'_>, op: &str) -> Result<Vec<Complex<f32>>> {
        Ok(match o {
            Operand::Tensor(t) => t.storage(op)?.to_c64(t.dtype()).into_owned(),
            Operand::Scalar(s) => vec![Complex::new(s.as_f64() as f32, 0.0)],
        })
    }
    fn store(v: Vec<Complex<f32>>, dtype: DType) -> Storage {
        Storage::from_c64(v, dtype)
    }
    fn store_real(v: Vec<f32>, dtype: DType) -> Storage {
        Storage::from_f32(v, dtype)
    }
    fn of_f64(x: f64) -> f32 {
        x as f32
    }
}

impl Part for f64 {
    fn complex_of(st: &Storage, d: DType) -> Cow<'_, [Complex<f64>]> {
        st.to_c128(d)
    }
    fn real_of(st: &Storage, d: DType) -> Cow<'_, [f64]> {
        st.to_f64(d)
    }
    fn read(o: &Operand<'_>, op: &str) -> Result<Vec<Complex<f64>>> {
        Ok(match o {
            Operand::Tensor(t) => t.storage(op)?.to_c128(t.dtype()).into_owned(),
            Operand::Scalar(s) => vec![Complex::new(s.as_f64(), 0.0)],
        })
    }
    fn store(v: Vec<Complex<f64>>, dtype: DType) -> Storage {
        Storage::from_c128(v, dtype)
    }
    fn store_real(v: Vec<f64>, dtype: DType) -> Storage {
        Storage::from_f64(v, dtype)
    }
    fn of_f64(x: f64) -> f64 {
        x
    }
}

fn op_shape<'a>(o: &'a Operand<'_>) -> &'a [usize] {
    match o {
        Operand::Tensor(t) => t.shape(),
        Operand::Scalar(_) => &[],
    }
}

fn op_abstract(o: &Operand<'_>) -> bool {
    matches!(o, Operand::Tensor(t) if t.is_abstract())
}

// ----- the parts --------------------------------------------------------------------------------

/// `real(x)`: the real part (fp32 of c64, fp64 of c128); a real tensor is returned as is.
pub fn real(x: &Tensor) -> Result<Tensor> {
    part(x, "real", false)
}

/// `imag(x)`: the imaginary part; zeros of a real tensor's dtype.
pub fn imag(x: &Tensor) -> Result<Tensor> {
    if !x.dtype().is_complex() {
        return if x.is_abstract() {
            Tensor::abstract_tensor(x.shape(), x.dtype())
        } else {
            Tensor::zeros(x.shape(), x.dtype())
        };
    }
    part(x, "imag", true)
}

fn part(x: &Tensor, op: &str, imag: bool) -> Result<Tensor> {
    let d = x.dtype();
    if !d.is_complex() {
        return Ok(x.clone());
    }
    let out = d.real_part();
    if x.is_abstract() {
        return Tensor::abstract_tensor(x.shape(), out);
    }
    memory::check_alloc(x.numel(), out)?;
    let st = match x.storage(op)? {
        Storage::C64(v) => Storage::F32(map1(v, |z| if imag { z.im } else { z.re })),
        other => Storage::F64(map1(&other.to_c128(d), |z| if imag { z.im } else { z.re })),
    };
    Ok(Tensor::from_storage(x.shape().to_vec(), out, st))
}

/// `conj(x)`: the complex conjugate; a real tensor is returned as is.
pub fn conj(x: &Tensor) -> Result<Tensor> {
    let d = x.dtype();
    if !d.is_complex() {
        return Ok(x.clone());
    }
    if x.is_abstract() {
        return Tensor::abstract_tensor(x.shape(), d);
    }
    memory::check_alloc(x.numel(), d)?;
    let st = match x.storage("conj")? {
        Storage::C64(v) => Storage::C64(map1(v, |z| z.conj())),
        other => Storage::C128(map1(&other.to_c128(d), |z| z.conj())),
    };
    Ok(Tensor::from_storage(x.shape().to_vec(), d, st))
}

/// `angle(x)`: `atan2(imag, real)` in radians, in the parts' precision (fp32 for c64, fp64 for
/// c128); real tensors give 0 or π (fp64 stays fp64, other dtypes give fp32).
pub fn angle(x: &Tensor) -> Result<Tensor> {
    let d = x.dtype();
    let out = if d.is_complex() {
        d.real_part()
    } else if d == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    if x.is_abstract() {
        return Tensor::abstract_tensor(x.shape(), out);
    }
    memory::check_alloc(x.numel(), out)?;
    let st = x.storage("angle")?;
    let st = if out == DType::F64 {
        Storage::F64(map1(&st.to_c128(d), |z| z.im.atan2(z.re)))
    } else {
        Storage::F32(map1(&st.to_c64(d), |z| z.im.atan2(z.re)))
    };
    Ok(Tensor::from_storage(x.shape().to_vec(), out, st))
}

/// `complex(re, im)`: `re + im·j`, broadcast. Both parts must be real; the result is c128 when
/// their promoted dtype is fp64, else c64 (each part rounded once).
pub fn complex<'a, 'b>(re: impl Into<Operand<'a>>, im: impl Into<Operand<'b>>) -> Result<Tensor> {
    let (re, im) = (re.into(), im.into());
    for o in [&re, &im] {
        if let Operand::Tensor(t) = o {
            if t.dtype().is_complex() {
                return Err(RuntimeError::dtype(format!(
                    "complex: the real and imaginary parts must be real tensors, got {}",
                    t.dtype()
                ))
                .with_help("take op.real(x) and op.imag(x) of a complex tensor first"));
            }
        }
    }
    let shape = broadcast_shapes(op_shape(&re), op_shape(&im), "complex")?;
    let dtype = promote_operands(re.operand_type(), im.operand_type()).to_complex();
    if op_abstract(&re) || op_abstract(&im) {
        return Tensor::abstract_tensor(&shape, dtype);
    }
    let n = memory::check_shape_alloc(&shape, dtype)?;
    memory::check_alloc(n, dtype)?;
    let (sa, sb) = (op_shape(&re), op_shape(&im));
    let st = if dtype == DType::C128 {
        let (a, b) = (f64::read(&re, "complex")?, f64::read(&im, "complex")?);
        Storage::C128(zip2(&shape, &a, sa, &b, sb, |x, y| {
            Complex::new(x.re, y.re)
        }))
    } else {
        let (a, b) = (f32::read(&re, "complex")?, f32::read(&im, "complex")?);
        Storage::C64(zip2(&shape, &a, sa, &b, sb, |x, y| {
            Complex::new(x.re, y.re)
        }))
    };
    Ok(Tensor::from_storage(shape, dtype, st))
}

// ----- elementwise --------------------------------------------------------------------------------

/// NumPy's complex division (Smith's algorithm, as npymath: no overflow of `|b|²`).
fn div<T: Float>(a: Complex<T>, b: Complex<T>) -> Complex<T> {
    let (ar, ai, br, bi) = (a.re, a.im, b.re, b.im);
    if br.abs() >= bi.abs() {
        if br == T::zero() && bi == T::zero() {
            // a / 0: inf or nan parts, as IEEE divides them
            return Complex::new(ar / br.abs(), ai / br.abs());
        }
        let rat = bi / br;
        let scl = T::one() / (br + bi * rat);
        Complex::new((ar + ai * rat) * scl, (ai - ar * rat) * scl)
    } else {
        let rat = br / bi;
        let scl = T::one() / (bi + br * rat);
        Complex::new((ar * rat + ai) * scl, (ai * rat - ar) * scl)
    }
}

fn mul<T: Float>(a: Complex<T>, b: Complex<T>) -> Complex<T> {
    Complex::new(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re)
}

/// NumPy's complex power (npymath `cpow`): `x**0` is 1, `0**y` is 0 for a positive real `y`,
/// small integer exponents multiply, everything else is `exp(y·ln x)`.
fn pow<T: Part>(a: Complex<T>, b: Complex<T>) -> Complex<T> {
    let (zero, one) = (T::zero(), T::one());
    if b.re == zero && b.im == zero {
        return Complex::new(one, zero);
    }
    if a.re == zero && a.im == zero {
        return if b.re > zero && b.im == zero {
            Complex::new(zero, zero)
        } else {
            Complex::new(T::nan(), T::nan())
        };
    }
    if b.im == zero && b.re == b.re.round() && b.re.abs() < T::from(100).unwrap_or(one) {
        let n = b.re.to_i64().unwrap_or(0);
        // the first factor is taken as it is, not multiplied into 1+0j: that product would
        // turn an infinite part's zero partner into inf·0 = nan (`(1e30+0j)**2` is inf+0j)
        let mut acc: Option<Complex<T>> = None;
        let mut base = a;
        let mut e = n.unsigned_abs();
        while e > 0 {
            if e & 1 == 1 {
                acc = Some(acc.map_or(base, |acc| mul(acc, base)));
            }
            e >>= 1;
            if e > 0 {
                base = mul(base, base);
            }
        }
        let acc = acc.unwrap_or(Complex::new(one, zero));
        return if n < 0 {
            div(Complex::new(one, zero), acc)
        } else {
            acc
        };
    }
    if b.im == zero && b.re == T::of_f64(0.5) {
        // NumPy's `x**0.5` is `sqrt(x)`: exact special values, no overflow in `exp(b·ln a)`
        return in_f64(a, cmath::sqrt);
    }
    in_f64(mul(b, in_f64(a, cmath::ln)), cmath::exp)
}

/// The `.tsr` spelling of a binary op in messages: its operator, else `op.<name>`.
fn binary_name(op: BinaryOp) -> String {
    match op.row().operator {
        Some(sym) => format!("`{sym}`"),
        None => format!("op.{}", op.name()),
    }
}

/// `lhs op rhs` where the operands promote to a complex dtype (`elementwise::binary` sends them
/// here): `+ - * / **` give the complex dtype, `== !=` bool; the rest is E0201.
pub(crate) fn binary(
    op: BinaryOp,
    lhs: Operand<'_>,
    rhs: Operand<'_>,
    shape: Vec<usize>,
    dtype: DType,
    promoted: DType,
) -> Result<Tensor> {
    let supported = matches!(
        op,
        BinaryOp::Add
            | BinaryOp::Sub
            | BinaryOp::Mul
            | BinaryOp::Div
            | BinaryOp::Pow
            | BinaryOp::Eq
            | BinaryOp::Ne
    );
    if !supported {
        let help = if op.is_comparison() || matches!(op, BinaryOp::Maximum | BinaryOp::Minimum) {
            "complex numbers have no order: compare op.abs(x) or op.real(x)"
        } else {
            "NumPy does not define it on complex numbers either"
        };
        return Err(RuntimeError::dtype(format!(
            "{} is not defined for complex tensors ({promoted})",
            binary_name(op)
        ))
        .with_help(help));
    }
    if op_abstract(&lhs) || op_abstract(&rhs) {
        return Tensor::abstract_tensor(&shape, dtype);
    }
    let n = memory::check_shape_alloc(&shape, dtype)?;
    memory::check_alloc(n, promoted)?;
    let st = if promoted == DType::C128 {
        binary_in::<f64>(op, &lhs, &rhs, &shape, dtype)?
    } else {
        binary_in::<f32>(op, &lhs, &rhs, &shape, dtype)?
    };
    Ok(Tensor::from_storage(shape, dtype, st))
}

fn binary_in<T: Part>(
    op: BinaryOp,
    lhs: &Operand<'_>,
    rhs: &Operand<'_>,
    shape: &[usize],
    dtype: DType,
) -> Result<Storage> {
    let name = op.name();
    let (a, b) = (T::read(lhs, name)?, T::read(rhs, name)?);
    let (sa, sb) = (op_shape(lhs), op_shape(rhs));
    // macros, so that each function is inlined into the loop (see `elementwise::float_binary`)
    macro_rules! arith {
        ($f:expr) => {
            T::store(zip2(shape, &a, sa, &b, sb, $f), dtype)
        };
    }
    macro_rules! cmp {
        ($f:expr) => {
            Storage::Bool(zip2(shape, &a, sa, &b, sb, $f))
        };
    }
    Ok(match op {
        BinaryOp::Add => arith!(|x, y| x + y),
        BinaryOp::Sub => arith!(|x, y| x - y),
        BinaryOp::Mul => arith!(mul),
        BinaryOp::Div => arith!(div),
        BinaryOp::Pow => arith!(pow),
        BinaryOp::Eq => cmp!(|x, y| x.re == y.re && x.im == y.im),
        _ => cmp!(|x, y| x.re != y.re || x.im != y.im),
    })
}

/// `op(x)` of a complex tensor: `neg exp log sqrt sin cos` stay complex, `abs` is the real
/// modulus, `isnan`/`isfinite` test both parts; the rest is E0201.
pub(crate) fn unary(op: UnaryOp, x: &Tensor, dtype: DType) -> Result<Tensor> {
    let supported = matches!(
        op,
        UnaryOp::Neg
            | UnaryOp::Abs
            | UnaryOp::Exp
            | UnaryOp::Log
            | UnaryOp::Sqrt
            | UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::IsNan
            | UnaryOp::IsFinite
    );
    if !supported {
        real_only(&format!("op.{}", op.name()), x.dtype())?;
    }
    if x.is_abstract() {
        return Tensor::abstract_tensor(x.shape(), dtype);
    }
    memory::check_alloc(x.numel(), dtype)?;
    let o = Operand::Tensor(x);
    let st = if x.dtype() == DType::C128 {
        unary_in::<f64>(op, &f64::read(&o, op.name())?, dtype)
    } else {
        unary_in::<f32>(op, &f32::read(&o, op.name())?, dtype)
    };
    Ok(Tensor::from_storage(x.shape().to_vec(), dtype, st))
}

/// `f` (a [`cmath`] function) of `z`, computed in f64 and rounded once to `T`'s parts.
fn in_f64<T: Part>(z: Complex<T>, f: fn(Complex<f64>) -> Complex<f64>) -> Complex<T> {
    let w = f(Complex::new(
        z.re.to_f64().unwrap_or(f64::NAN),
        z.im.to_f64().unwrap_or(f64::NAN),
    ));
    Complex::new(T::of_f64(w.re), T::of_f64(w.im))
}

fn unary_in<T: Part>(op: UnaryOp, a: &[Complex<T>], dtype: DType) -> Storage {
    macro_rules! m {
        ($f:expr) => {
            T::store(map1(a, $f), dtype)
        };
    }
    match op {
        UnaryOp::Abs => T::store_real(map1(a, |z| z.re.hypot(z.im)), dtype),
        UnaryOp::IsNan => Storage::Bool(map1(a, |z| z.re.is_nan() || z.im.is_nan())),
        UnaryOp::IsFinite => Storage::Bool(map1(a, |z| z.re.is_finite() && z.im.is_finite())),
        UnaryOp::Exp => m!(|z| in_f64(z, cmath::exp)),
        UnaryOp::Log => m!(|z| in_f64(z, cmath::ln)),
        UnaryOp::Sqrt => m!(|z| in_f64(z, cmath::sqrt)),
        UnaryOp::Sin => m!(|z| in_f64(z, cmath::sin)),
        UnaryOp::Cos => m!(|z| in_f64(z, cmath::cos)),
        _ => m!(|z| -z),
    }
}

/// `where(cond, a, b)` with a complex result dtype.
pub(crate) fn where_(
    cond: &Tensor,
    a: Operand<'_>,
    b: Operand<'_>,
    shape: Vec<usize>,
    dtype: DType,
) -> Result<Tensor> {
    let n = memory::check_shape_alloc(&shape, dtype)?;
    memory::check_alloc(n, dtype)?;
    let c = cond.storage("where")?.to_bool(cond.dtype());
    let cs = (&c[..], cond.shape());
    fn pick<T: Part>(
        shape: &[usize],
        cs: (&[bool], &[usize]),
        a: &Operand<'_>,
        b: &Operand<'_>,
        dtype: DType,
    ) -> Result<Storage> {
        let (x, y) = (T::read(a, "where")?, T::read(b, "where")?);
        let v = zip3(
            shape,
            cs,
            (&x, op_shape(a)),
            (&y, op_shape(b)),
            |c, x, y| if c { x } else { y },
        );
        Ok(T::store(v, dtype))
    }
    let st = if dtype == DType::C128 {
        pick::<f64>(&shape, cs, &a, &b, dtype)?
    } else {
        pick::<f32>(&shape, cs, &a, &b, dtype)?
    };
    Ok(Tensor::from_storage(shape, dtype, st))
}

// ----- reductions ---------------------------------------------------------------------------------

/// Elements per block along the reduced axis (the summation order: blocks summed in order).
const BLOCK: usize = 4096;

/// `sum`/`mean` of a complex tensor: each part accumulated in f64 in a fixed blocked order
/// (deterministic), rounded once to the dtype. `max`/`min` are E0201.
pub(crate) fn reduce(
    x: &Tensor,
    op: ReduceOp,
    axis: Option<isize>,
    out_shape: Vec<usize>,
    dtype: DType,
) -> Result<Tensor> {
    if !matches!(op, ReduceOp::Sum | ReduceOp::Mean) {
        return Err(RuntimeError::dtype(format!(
            "op.{} is not defined for complex tensors ({})",
            op.name(),
            x.dtype()
        ))
        .with_help("complex numbers have no order: reduce op.abs(x) or op.real(x)"));
    }
    if x.is_abstract() {
        return Tensor::abstract_tensor(&out_shape, dtype);
    }
    let shape = x.shape();
    let (outer, r, inner) = crate::ops::reduce::around_axis(x, axis, op)?;
    let n_out = memory::check_shape_alloc(&out_shape, dtype)?;
    if n_out != outer * inner {
        return Err(RuntimeError::shape(format!(
            "{}: result shape {} does not match the input {}",
            op.name(),
            fmt_shape(&out_shape),
            fmt_shape(shape)
        )));
    }
    memory::check_alloc(n_out, DType::C128)?;
    let v = x.storage(op.name())?.to_c128(x.dtype());
    let lanes: Vec<usize> = (0..n_out).collect();
    let scale = if op == ReduceOp::Mean { r as f64 } else { 1.0 };
    let sums = map1(&lanes, |lane| {
        let (o, i) = (lane / inner.max(1), lane % inner.max(1));
        let base = o * r * inner + i;
        let mut total = Complex::new(0.0, 0.0);
        let mut k = 0;
        while k < r {
            let end = (k + BLOCK).min(r);
            let mut block = Complex::new(0.0, 0.0);
            for j in k..end {
                if let Some(z) = v.get(base + j * inner) {
                    block += *z;
                }
            }
            total += block;
            k = end;
        }
        // mean of an empty axis is NaN (0/0), as for real tensors
        Complex::new(total.re / scale, total.im / scale)
    });
    Ok(Tensor::from_storage(
        out_shape,
        dtype,
        Storage::from_c128(sums, dtype),
    ))
}

/// `take` of a complex tensor: its parts gathered separately and joined.
pub(crate) fn take_parts(x: &Tensor, f: impl Fn(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
    let (re, im) = (f(&real(x)?)?, f(&imag(x)?)?);
    complex(&re, &im)
}
