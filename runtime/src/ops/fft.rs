//! The FFT family (SPEC §4 "spectral"), with NumPy's definitions: `fft ifft rfft irfft` along
//! one axis with a length `n` (the input cropped or zero-padded to it), `fft2 ifft2 rfft2 irfft2`
//! over the last two axes with lengths `s`, and the three normalisations.
//!
//! Transforms of any length come from `rustfft` (mixed radix, Rader, Bluestein; AVX/SSE/NEON
//! kernels) and the real ones from `realfft`, planned once per length and direction (the
//! planners are shared and cache their plans). The independent transforms of a batch run in
//! parallel over rayon's pool; one transform runs on one thread. c64 (and real inputs of fp32
//! and narrower) compute in f32, as NumPy 2 does; c128, fp64, ints and bools in f64.

use std::sync::{Arc, LazyLock, Mutex};

use num_complex::Complex;
use rayon::prelude::*;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use rustfft::{Fft, FftNum, FftPlanner};

use crate::dtype::DType;
use crate::error::{Result, RuntimeError};
use crate::memory;
use crate::ops::complex::Part;
use crate::shape::{fmt_shape, normalize_axis};
use crate::storage::{buffer, Storage};
use crate::tensor::Tensor;

/// The normalisation of a transform pair (NumPy's `norm=`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Norm {
    /// The forward transform unscaled, the inverse scaled by `1/n` (the default).
    Backward,
    /// Both scaled by `1/sqrt(n)`.
    Ortho,
    /// The forward transform scaled by `1/n`, the inverse unscaled.
    Forward,
}

impl Norm {
    /// `"backward"`, `"ortho"` or `"forward"`; anything else is E0101.
    pub fn parse(s: &str) -> Result<Norm> {
        match s {
            "backward" => Ok(Norm::Backward),
            "ortho" => Ok(Norm::Ortho),
            "forward" => Ok(Norm::Forward),
            _ => Err(RuntimeError::args(format!(
                "invalid norm {s:?}: it should be \"backward\", \"ortho\" or \"forward\""
            ))),
        }
    }

    /// The factor a transform of length `n` applies, in the parts' precision (NumPy computes
    /// it in the real dtype of the data: `1/n` or `1/sqrt(n)`); `None` when it is 1.
    fn factor<T: Prec>(self, n: usize, inverse: bool) -> Option<T> {
        let nt = T::of_f64(n as f64);
        match (self, inverse) {
            (Norm::Backward, false) | (Norm::Forward, true) => None,
            (Norm::Ortho, _) => Some(T::one() / nt.sqrt()),
            (Norm::Backward, true) | (Norm::Forward, false) => Some(T::one() / nt),
        }
    }
}

/// The precisions a transform runs in, with their shared planners.
trait Prec: Part + FftNum {
    fn planner() -> &'static Mutex<FftPlanner<Self>>;
    fn real_planner() -> &'static Mutex<RealFftPlanner<Self>>;
    /// The complex dtype of this precision.
    const COMPLEX: DType;
}

static PLAN32: LazyLock<Mutex<FftPlanner<f32>>> = LazyLock::new(|| Mutex::new(FftPlanner::new()));
static PLAN64: LazyLock<Mutex<FftPlanner<f64>>> = LazyLock::new(|| Mutex::new(FftPlanner::new()));
static REAL32: LazyLock<Mutex<RealFftPlanner<f32>>> =
    LazyLock::new(|| Mutex::new(RealFftPlanner::new()));
static REAL64: LazyLock<Mutex<RealFftPlanner<f64>>> =
    LazyLock::new(|| Mutex::new(RealFftPlanner::new()));

impl Prec for f32 {
    fn planner() -> &'static Mutex<FftPlanner<f32>> {
        &PLAN32
    }
    fn real_planner() -> &'static Mutex<RealFftPlanner<f32>> {
        &REAL32
    }
    const COMPLEX: DType = DType::C64;
}

impl Prec for f64 {
    fn planner() -> &'static Mutex<FftPlanner<f64>> {
        &PLAN64
    }
    fn real_planner() -> &'static Mutex<RealFftPlanner<f64>> {
        &REAL64
    }
    const COMPLEX: DType = DType::C128;
}

/// The plan of a complex transform of length `n` (cached by the planner).
fn plan<T: Prec>(n: usize, inverse: bool) -> Arc<dyn Fft<T>> {
    let mut p = T::planner().lock().unwrap_or_else(|e| e.into_inner());
    if inverse {
        p.plan_fft_inverse(n)
    } else {
        p.plan_fft_forward(n)
    }
}

fn plan_r2c<T: Prec>(n: usize) -> Arc<dyn RealToComplex<T>> {
    let mut p = T::real_planner().lock().unwrap_or_else(|e| e.into_inner());
    p.plan_fft_forward(n)
}

fn plan_c2r<T: Prec>(n: usize) -> Arc<dyn ComplexToReal<T>> {
    let mut p = T::real_planner().lock().unwrap_or_else(|e| e.into_inner());
    p.plan_fft_inverse(n)
}

/// The complex dtype a transform of an input of dtype `d` gives (NumPy 2): c64 and c128 keep
/// theirs, fp64, ints and bools give c128, the other floats c64.
pub fn complex_result(d: DType) -> DType {
    match d {
        DType::C64 => DType::C64,
        DType::F64 | DType::C128 | DType::I64 | DType::I32 | DType::I8 | DType::Bool => DType::C128,
        _ => DType::C64,
    }
}

/// Elements a parallel task transforms at least (whole rows).
const TASK_ELEMS: usize = 1 << 15;

/// Rows per parallel task for rows of `n` elements.
fn rows_per_task(n: usize) -> usize {
    (TASK_ELEMS / n.max(1)).max(1)
}

/// Copies `min(m, n)` elements of each `m`-long source row into the `n`-long rows of `out`
/// (the rest stays as it is: zero).
fn fit_rows<T: Copy>(src: &[T], m: usize, out: &mut [T], n: usize) {
    for (o, s) in out.chunks_mut(n).zip(src.chunks(m.max(1))) {
        for (d, &x) in o.iter_mut().zip(s).take(m.min(n)) {
            *d = x;
        }
    }
}

/// Runs `work(first_row, rows_chunk)` over the `n`-long rows of `out`, in parallel tasks of
/// whole rows when there is more than one task's worth.
fn for_rows<D: Send>(out: &mut [D], n: usize, work: impl Fn(usize, &mut [D]) + Sync) {
    let per = rows_per_task(n);
    if n == 0 || out.is_empty() {
        return;
    }
    if out.len() <= per * n {
        work(0, out);
    } else {
        out.par_chunks_mut(per * n)
            .enumerate()
            .for_each(|(c, ch)| work(c * per, ch));
    }
}

fn scale_all<T: Prec>(v: &mut [Complex<T>], f: Option<T>) {
    if let Some(f) = f {
        for z in v {
            *z = Complex::new(z.re * f, z.im * f);
        }
    }
}

/// Complex transforms of length `n` of the `rows` rows (each `m` long) of `src`.
fn c2c<T: Prec>(
    src: &[Complex<T>],
    rows: usize,
    m: usize,
    n: usize,
    inverse: bool,
    norm: Norm,
) -> Vec<Complex<T>> {
    let mut out = buffer::<Complex<T>>(rows * n);
    let fft = plan::<T>(n, inverse);
    let f = norm.factor::<T>(n, inverse);
    for_rows(&mut out, n, |r0, chunk| {
        let nrows = chunk.len() / n;
        let s = src.get(r0 * m..(r0 + nrows) * m).unwrap_or(&[]);
        fit_rows(s, m, chunk, n);
        let mut scratch = vec![Complex::new(T::zero(), T::zero()); fft.get_inplace_scratch_len()];
        fft.process_with_scratch(chunk, &mut scratch);
        scale_all(chunk, f);
    });
    out
}

/// Real-to-complex transforms of length `n` (`n/2 + 1` outputs per row).
fn r2c<T: Prec>(src: &[T], rows: usize, m: usize, n: usize, norm: Norm) -> Result<Vec<Complex<T>>> {
    let h = n / 2 + 1;
    let mut out = buffer::<Complex<T>>(rows * h);
    let fft = plan_r2c::<T>(n);
    let f = norm.factor::<T>(n, false);
    let failed = Mutex::new(None);
    for_rows(&mut out, h, |r0, chunk| {
        let mut input = vec![T::zero(); n];
        let mut scratch = fft.make_scratch_vec();
        for (j, o) in chunk.chunks_mut(h).enumerate() {
            let row = src.get((r0 + j) * m..(r0 + j + 1) * m).unwrap_or(&[]);
            input.iter_mut().for_each(|x| *x = T::zero());
            let k = m.min(n).min(row.len());
            input[..k].copy_from_slice(&row[..k]);
            if let Err(e) = fft.process_with_scratch(&mut input, o, &mut scratch) {
                *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
            }
            scale_all(o, f);
        }
    });
    match failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(RuntimeError::runtime(format!("rfft: {e}"))),
        None => Ok(out),
    }
}

/// Complex-to-real transforms of length `n` of rows of `m` complex values (cropped or padded to
/// `n/2 + 1`; the imaginary parts of the zero-frequency and, for even `n`, the Nyquist term
/// are ignored, as NumPy's `irfft` ignores them).
fn c2r<T: Prec>(src: &[Complex<T>], rows: usize, m: usize, n: usize, norm: Norm) -> Result<Vec<T>> {
    let h = n / 2 + 1;
    let mut out = buffer::<T>(rows * n);
    let fft = plan_c2r::<T>(n);
    let f = norm.factor::<T>(n, true);
    let failed = Mutex::new(None);
    let zero = Complex::new(T::zero(), T::zero());
    for_rows(&mut out, n, |r0, chunk| {
        let mut input = vec![zero; h];
        let mut scratch = fft.make_scratch_vec();
        for (j, o) in chunk.chunks_mut(n).enumerate() {
            let row = src.get((r0 + j) * m..(r0 + j + 1) * m).unwrap_or(&[]);
            input.iter_mut().for_each(|x| *x = zero);
            let k = m.min(h).min(row.len());
            input[..k].copy_from_slice(&row[..k]);
            input[0].im = T::zero();
            if n.is_multiple_of(2) {
                input[h - 1].im = T::zero();
            }
            if let Err(e) = fft.process_with_scratch(&mut input, o, &mut scratch) {
                *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
            }
            if let Some(f) = f {
                o.iter_mut().for_each(|x| *x = *x * f);
            }
        }
    });
    match failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(RuntimeError::runtime(format!("irfft: {e}"))),
        None => Ok(out),
    }
}

// ----- along an axis -----------------------------------------------------------------------------

/// What a 1-D transform computes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Kind {
    Fft,
    Ifft,
    Rfft,
    Irfft,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Fft => "fft",
            Kind::Ifft => "ifft",
            Kind::Rfft => "rfft",
            Kind::Irfft => "irfft",
        }
    }
}

/// The transform length: `n` when given, else the axis' length (for `irfft`, `2·(m − 1)`).
/// Less than 1 is E0200 (NumPy's "Invalid number of FFT data points").
fn length(kind: Kind, n: Option<i64>, m: usize) -> Result<usize> {
    let n = match n {
        Some(n) => n,
        None if kind == Kind::Irfft => 2 * (m as i64 - 1),
        None => m as i64,
    };
    if n < 1 {
        let mut e = RuntimeError::shape(format!(
            "{}: invalid number of FFT data points ({n}): it must be at least 1",
            kind.name()
        ))
        .with_help("pass n= a positive length, or transform a non-empty axis");
        e.label = Some("not a transform length");
        return Err(e);
    }
    usize::try_from(n).map_err(|_| RuntimeError::resource(format!("n={n} is too large")))
}

/// A transform of `x` along `axis` with length `n`.
fn along(x: &Tensor, kind: Kind, n: Option<i64>, axis: isize, norm: Norm) -> Result<Tensor> {
    let d = x.dtype();
    if kind == Kind::Rfft && d.is_complex() {
        return Err(
            RuntimeError::dtype(format!("rfft needs a real input, got {d}"))
                .with_help("use op.fft for complex data, or op.real(x) to drop the imaginary part"),
        );
    }
    let nd = x.ndim();
    let ax = normalize_axis(axis, nd, kind.name())?;
    let m = x.shape()[ax];
    let n = length(kind, n, m)?;
    let cdt = complex_result(d);
    let (out_dtype, out_len) = match kind {
        Kind::Fft | Kind::Ifft => (cdt, n),
        Kind::Rfft => (cdt, n / 2 + 1),
        Kind::Irfft => (cdt.real_part(), n),
    };
    let mut out_shape = x.shape().to_vec();
    out_shape[ax] = out_len;
    if x.is_abstract() {
        return Tensor::abstract_tensor(&out_shape, out_dtype);
    }
    if memory::check_shape_alloc(&out_shape, out_dtype)? == 0 {
        // no rows: nothing to plan (the transform length may be huge, `(0, 10**10)`)
        return Tensor::zeros(&out_shape, out_dtype);
    }
    // the axis last, contiguous
    let last = ax + 1 == nd;
    let mut perm: Vec<usize> = (0..nd).filter(|&i| i != ax).collect();
    perm.push(ax);
    let xt = if last {
        x.clone()
    } else {
        x.transpose(Some(&perm))?
    };
    let rows: usize = (0..nd).filter(|&i| i != ax).map(|i| x.shape()[i]).product();
    let mut t_shape: Vec<usize> = perm.iter().map(|&i| x.shape()[i]).collect();
    if let Some(l) = t_shape.last_mut() {
        *l = out_len;
    }
    let st = xt.storage(kind.name())?;
    let storage = if cdt == DType::C128 {
        run::<f64>(st, d, kind, rows, m, n, norm)?
    } else {
        run::<f32>(st, d, kind, rows, m, n, norm)?
    };
    let y = Tensor::from_storage(t_shape, out_dtype, storage);
    if last {
        return Ok(y);
    }
    // back: the last axis to position `ax`
    let mut inv: Vec<usize> = (0..nd - 1).collect();
    inv.insert(ax, nd - 1);
    y.transpose(Some(&inv))
}

fn run<T: Prec>(
    st: &Storage,
    d: DType,
    kind: Kind,
    rows: usize,
    m: usize,
    n: usize,
    norm: Norm,
) -> Result<Storage> {
    let cdt = T::COMPLEX;
    Ok(match kind {
        Kind::Fft | Kind::Ifft => {
            let src = T::complex_of(st, d);
            T::store(c2c(&src, rows, m, n, kind == Kind::Ifft, norm), cdt)
        }
        Kind::Rfft => {
            let src = T::real_of(st, d);
            T::store(r2c(&src, rows, m, n, norm)?, cdt)
        }
        Kind::Irfft => {
            let src = T::complex_of(st, d);
            T::store_real(c2r(&src, rows, m, n, norm)?, cdt.real_part())
        }
    })
}

/// `fft(x, n=None, axis=-1, norm="backward")`: the discrete Fourier transform along `axis`.
pub fn fft(x: &Tensor, n: Option<i64>, axis: isize, norm: Norm) -> Result<Tensor> {
    along(x, Kind::Fft, n, axis, norm)
}

/// `ifft(x, n=None, axis=-1, norm="backward")`: the inverse transform.
pub fn ifft(x: &Tensor, n: Option<i64>, axis: isize, norm: Norm) -> Result<Tensor> {
    along(x, Kind::Ifft, n, axis, norm)
}

/// `rfft(x, n=None, axis=-1, norm="backward")`: the transform of real data, `n/2 + 1` terms.
pub fn rfft(x: &Tensor, n: Option<i64>, axis: isize, norm: Norm) -> Result<Tensor> {
    along(x, Kind::Rfft, n, axis, norm)
}

/// `irfft(x, n=None, axis=-1, norm="backward")`: the inverse of `rfft`, `n` real values
/// (default `2·(m − 1)`).
pub fn irfft(x: &Tensor, n: Option<i64>, axis: isize, norm: Norm) -> Result<Tensor> {
    along(x, Kind::Irfft, n, axis, norm)
}

// ----- over the last two axes ----------------------------------------------------------------------

/// What a 2-D transform computes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind2 {
    Fft2,
    Ifft2,
    Rfft2,
    Irfft2,
}

impl Kind2 {
    fn name(self) -> &'static str {
        match self {
            Kind2::Fft2 => "fft2",
            Kind2::Ifft2 => "ifft2",
            Kind2::Rfft2 => "rfft2",
            Kind2::Irfft2 => "irfft2",
        }
    }
}

/// A 2-D transform over the last two axes with lengths `s` (NumPy's `fftn` order: the last
/// axis' real transform first for `rfft2`, last for `irfft2`).
pub fn fft2d(x: &Tensor, kind: Kind2, s: Option<[i64; 2]>, norm: Norm) -> Result<Tensor> {
    if x.ndim() < 2 {
        return Err(RuntimeError::shape(format!(
            "{}: needs a tensor with at least 2 dimensions, got shape {}",
            kind.name(),
            fmt_shape(x.shape())
        )));
    }
    if let Some(s) = s {
        for v in s {
            if v < 1 {
                return Err(RuntimeError::shape(format!(
                    "{}: invalid number of FFT data points ({v}) in s={s:?}: each must be at least 1",
                    kind.name()
                )));
            }
        }
    }
    let (s0, s1) = match s {
        Some([a, b]) => (Some(a), Some(b)),
        None => (None, None),
    };
    match kind {
        Kind2::Fft2 => fft(&fft(x, s1, -1, norm)?, s0, -2, norm),
        Kind2::Ifft2 => ifft(&ifft(x, s1, -1, norm)?, s0, -2, norm),
        Kind2::Rfft2 => fft(&rfft(x, s1, -1, norm)?, s0, -2, norm),
        Kind2::Irfft2 => {
            let m = x.shape()[x.ndim() - 1];
            let n1 = s1.unwrap_or(2 * (m as i64 - 1));
            if n1 < 1 {
                return length(Kind::Irfft, Some(n1), m).map(|_| x.clone());
            }
            irfft(&ifft(x, s0, -2, norm)?, Some(n1), -1, norm)
        }
    }
}

// ----- the spectral rewrite's pieces -------------------------------------------------------------

/// `y` (the `n/2 + 1` bins of a real transform of length `n` along `axis`) with the bins
/// strictly between the zero and Nyquist frequencies doubled: `rfft` followed by this is the
/// adjoint of `irfft` (the Graph IR `irfft_adjoint`). Doubling is exact.
pub fn double_interior_bins(y: &Tensor, axis: usize, n: usize) -> Result<Tensor> {
    let h = y.shape().get(axis).copied().unwrap_or(1);
    let mut shape = vec![1; y.ndim()];
    if let Some(s) = shape.get_mut(axis) {
        *s = h;
    }
    let w: Vec<f64> = (0..h)
        .map(|k| if k > 0 && 2 * k < n { 2.0 } else { 1.0 })
        .collect();
    let mask = Tensor::from_f64(&shape, w, y.dtype().real_part())?;
    crate::binary(crate::BinaryOp::Mul, y, &mask)
}

/// `x` placed in a line of `n` along `axis`: element `j` at `lo + j·step`, the other
/// positions zero, positions past `n` dropped (the Graph IR `fft` op's embedding; `lo = 0,
/// step = 1` is NumPy's zero padding or truncation to `n`). Same dtype.
pub fn embed(x: &Tensor, axis: usize, n: usize, lo: usize, step: usize) -> Result<Tensor> {
    let shape = x.shape().to_vec();
    let Some(&m) = shape.get(axis) else {
        return Err(RuntimeError::shape(format!(
            "fft: axis {axis} is out of range for {}",
            fmt_shape(&shape)
        )));
    };
    let mut out_shape = shape.clone();
    out_shape[axis] = n;
    let d = x.dtype();
    if x.is_abstract() {
        return Tensor::abstract_tensor(&out_shape, d);
    }
    if memory::check_shape_alloc(&out_shape, d)? == 0 || x.numel() == 0 {
        return Tensor::zeros(&out_shape, d);
    }
    let outer: usize = shape[..axis].iter().product();
    let inner: usize = shape[axis + 1..].iter().product();
    let step = step.max(1);
    // (source position, line position) pairs that land inside the line
    let places: Vec<(usize, usize)> = (0..m)
        .map_while(|j| Some((j, lo.checked_add(j.checked_mul(step)?)?)))
        .take_while(|&(_, p)| p < n)
        .collect();
    fn place<T: Copy + Default>(
        v: &[T],
        outer: usize,
        m: usize,
        n: usize,
        inner: usize,
        places: &[(usize, usize)],
    ) -> Vec<T> {
        let mut out = vec![T::default(); outer * n * inner];
        for o in 0..outer {
            for &(j, p) in places {
                let src = (o * m + j) * inner;
                let dst = (o * n + p) * inner;
                out[dst..dst + inner].copy_from_slice(&v[src..src + inner]);
            }
        }
        out
    }
    let st = x.storage("fft")?;
    let storage = if d.is_complex() {
        let v = st.to_c128(d);
        Storage::from_c128(place(&v, outer, m, n, inner, &places), d)
    } else {
        let v = st.to_f64(d);
        Storage::from_f64(place(&v, outer, m, n, inner, &places), d)
    };
    Ok(Tensor::from_storage(out_shape, d, storage))
}

/// The frequency-domain product of a convolution: `x` `[N, C, ...F]` and `w`
/// `[O, C/groups, ...F]` complex (one dtype), `y[n, o, f] = Σ_c x[n, g·C/groups + c, f] ·
/// conj(w[o, c, f])` with `g` the group of output channel `o` (the Graph IR `spectral_mul`).
pub fn spectral_mul(x: &Tensor, w: &Tensor, groups: usize) -> Result<Tensor> {
    let (xs, ws) = (x.shape(), w.shape());
    let d = x.dtype();
    let fits = xs.len() >= 3
        && ws.len() == xs.len()
        && d.is_complex()
        && w.dtype() == d
        && groups > 0
        && xs[1] % groups == 0
        && ws[0] % groups == 0
        && ws[1] * groups == xs[1]
        && xs[2..] == ws[2..];
    if !fits {
        return Err(RuntimeError::shape(format!(
            "spectral_mul: x {} and w {} do not fit {groups} groups",
            fmt_shape(xs),
            fmt_shape(ws)
        )));
    }
    let (n, c, o, cg) = (xs[0], xs[1], ws[0], ws[1]);
    let og = o / groups;
    let f: usize = xs[2..].iter().product();
    let mut out_shape = xs.to_vec();
    out_shape[1] = o;
    if x.is_abstract() || w.is_abstract() {
        return Tensor::abstract_tensor(&out_shape, d);
    }
    memory::check_shape_alloc(&out_shape, d)?;
    let xv = x.storage("spectral_mul")?.to_c128(d);
    let wv = w.storage("spectral_mul")?.to_c128(d);
    let mut out = vec![Complex::<f64>::new(0.0, 0.0); n * o * f];
    {
        out.par_chunks_mut(f).enumerate().for_each(|(no, row)| {
            let (b, oc) = (no / o, no % o);
            let g = oc / og;
            for ci in 0..cg {
                let xr = &xv[(b * c + g * cg + ci) * f..][..f];
                let wr = &wv[(oc * cg + ci) * f..][..f];
                for ((y, a), k) in row.iter_mut().zip(xr).zip(wr) {
                    *y += a * k.conj();
                }
            }
        });
    }
    Ok(Tensor::from_storage(
        out_shape,
        d,
        Storage::from_c128(out, d),
    ))
}
