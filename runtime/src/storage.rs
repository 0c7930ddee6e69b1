//! Compact per-dtype storage and the conversions the kernels read and write through.
//!
//! Kernels compute in one of four domains (f32 for fp32 and narrower, f64, i64, bool); a tensor is
//! read into its domain (borrowed when the storage already is that type) and the result is rounded
//! once into the destination dtype's storage.

use std::borrow::Cow;

use half::{bf16, f16};
use num_complex::{Complex32, Complex64};
use rayon::prelude::*;

use crate::cast;
use crate::dtype::DType;
use crate::error::{Result, RuntimeError};

/// Element storage. `F32` holds fp32 and tf32; `F8` holds both fp8 formats (the dtype says which);
/// `C64`/`C128` hold (real, imaginary) pairs, laid out as NumPy's complex64/complex128.
#[derive(Clone, Debug, PartialEq)]
pub enum Storage {
    F64(Vec<f64>),
    F32(Vec<f32>),
    F16(Vec<f16>),
    BF16(Vec<bf16>),
    F8(Vec<u8>),
    I64(Vec<i64>),
    I32(Vec<i32>),
    I8(Vec<i8>),
    Bool(Vec<bool>),
    C64(Vec<Complex32>),
    C128(Vec<Complex64>),
}

/// Below this many elements, work runs on the calling thread.
pub const PAR_MIN: usize = 1 << 15;
/// Chunk size for parallel elementwise work.
pub const PAR_CHUNK: usize = 1 << 14;

/// Buffers at least this large ask the kernel for transparent huge pages.
const HUGE_MIN_BYTES: usize = 8 << 20;

/// Asks Linux to back a large buffer with transparent huge pages before it is first written:
/// a 64 MiB output then takes 32 page faults instead of 16384. A hint only; no effect elsewhere.
pub fn advise_huge<T>(ptr: *const T, len: usize) {
    #[cfg(target_os = "linux")]
    {
        let bytes = len.saturating_mul(std::mem::size_of::<T>());
        if bytes < HUGE_MIN_BYTES {
            return;
        }
        let start = (ptr as usize).div_ceil(4096) * 4096;
        let end = (ptr as usize + bytes) / 4096 * 4096;
        if end > start {
            // SAFETY: madvise only changes how the kernel backs pages of a mapping we own
            // (the range lies inside the live allocation); it never changes their contents.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, len);
}

/// A zero-filled (`T::default()`) buffer of `n` elements, huge-page backed when large.
/// For plain number types the allocation is `calloc`, so pages are first touched by the
/// (parallel) kernel that fills it.
pub fn buffer<T: Clone + Default>(n: usize) -> Vec<T> {
    let v = vec![T::default(); n];
    advise_huge(v.as_ptr(), v.len());
    v
}

/// `src.map(f)`, in parallel when large.
pub fn par_map<I: Sync, O: Send>(src: &[I], f: impl Fn(&I) -> O + Sync + Send) -> Vec<O> {
    // Each task maps one chunk in a loop compiled for the CPU's widest vectors (the same bits on
    // every ISA, see `isa_versions!`).
    let isa = crate::isa::current();
    let n = src.len();
    let mut out: Vec<O> = Vec::with_capacity(n);
    let spare = &mut out.spare_capacity_mut()[..n];
    if n >= PAR_MIN {
        advise_huge(spare.as_ptr(), n);
        spare
            .par_chunks_mut(PAR_CHUNK)
            .zip(src.par_chunks(PAR_CHUNK))
            .for_each(|(o, s)| map_chunk(isa, o, s, &f));
    } else {
        map_chunk(isa, spare, src, &f);
    }
    // SAFETY: every one of the n slots was written above (the chunks of `spare` and `src` pair
    // up one to one and cover both), and `out` has capacity n. A panic in `f` leaves the length
    // 0, so no uninitialised element is ever dropped.
    unsafe { out.set_len(n) };
    out
}

#[inline(always)]
fn map_chunk_impl<I, O, F: Fn(&I) -> O>(o: &mut [std::mem::MaybeUninit<O>], s: &[I], f: &F) {
    for (o, x) in o.iter_mut().zip(s) {
        o.write(f(x));
    }
}

crate::isa_versions! {
    fn map_chunk<I, O, F: Fn(&I) -> O>(o: &mut [std::mem::MaybeUninit<O>], s: &[I], f: &F) => map_chunk_impl
}

impl Storage {
    /// The bytes the elements take.
    pub fn nbytes(&self) -> usize {
        let each = match self {
            Storage::F64(_) | Storage::I64(_) | Storage::C64(_) => 8,
            Storage::F32(_) | Storage::I32(_) => 4,
            Storage::F16(_) | Storage::BF16(_) => 2,
            Storage::F8(_) | Storage::I8(_) | Storage::Bool(_) => 1,
            Storage::C128(_) => 16,
        };
        self.len() * each
    }

    pub fn len(&self) -> usize {
        match self {
            Storage::F64(v) => v.len(),
            Storage::F32(v) => v.len(),
            Storage::F16(v) => v.len(),
            Storage::BF16(v) => v.len(),
            Storage::F8(v) => v.len(),
            Storage::I64(v) => v.len(),
            Storage::I32(v) => v.len(),
            Storage::I8(v) => v.len(),
            Storage::Bool(v) => v.len(),
            Storage::C64(v) => v.len(),
            Storage::C128(v) => v.len(),
        }
    }

    /// Reads as f32 (fp32 and narrower are exact; wider values round).
    pub fn to_f32(&self, dtype: DType) -> Cow<'_, [f32]> {
        match self {
            Storage::F32(v) => Cow::Borrowed(v),
            Storage::F64(v) => Cow::Owned(par_map(v, |&x| x as f32)),
            Storage::F16(v) => Cow::Owned(par_map(v, |x| x.to_f32())),
            Storage::BF16(v) => Cow::Owned(par_map(v, |x| x.to_f32())),
            Storage::F8(v) => {
                let t = cast::fp8_table(dtype);
                Cow::Owned(par_map(v, |&b| t[usize::from(b)]))
            }
            Storage::I64(v) => Cow::Owned(par_map(v, |&x| x as f32)),
            Storage::I32(v) => Cow::Owned(par_map(v, |&x| x as f32)),
            Storage::I8(v) => Cow::Owned(par_map(v, |&x| f32::from(x))),
            Storage::Bool(v) => Cow::Owned(par_map(v, |&x| f32::from(u8::from(x)))),
            // complex: the real part (a cast drops the imaginary part, as NumPy's astype)
            Storage::C64(v) => Cow::Owned(par_map(v, |x| x.re)),
            Storage::C128(v) => Cow::Owned(par_map(v, |x| x.re as f32)),
        }
    }

    /// Reads as f64 (exact for every dtype except int64 beyond 2^53).
    pub fn to_f64(&self, dtype: DType) -> Cow<'_, [f64]> {
        match self {
            Storage::F64(v) => Cow::Borrowed(v),
            Storage::F32(v) => Cow::Owned(par_map(v, |&x| f64::from(x))),
            Storage::F16(v) => Cow::Owned(par_map(v, |x| x.to_f64())),
            Storage::BF16(v) => Cow::Owned(par_map(v, |x| x.to_f64())),
            Storage::F8(v) => {
                let t = cast::fp8_table(dtype);
                Cow::Owned(par_map(v, |&b| f64::from(t[usize::from(b)])))
            }
            Storage::I64(v) => Cow::Owned(par_map(v, |&x| x as f64)),
            Storage::I32(v) => Cow::Owned(par_map(v, |&x| f64::from(x))),
            Storage::I8(v) => Cow::Owned(par_map(v, |&x| f64::from(x))),
            Storage::Bool(v) => Cow::Owned(par_map(v, |&x| f64::from(u8::from(x)))),
            Storage::C64(v) => Cow::Owned(par_map(v, |x| f64::from(x.re))),
            Storage::C128(v) => Cow::Owned(par_map(v, |x| x.re)),
        }
    }

    /// Reads ints and bools as i64 (floats truncate toward zero, saturating).
    pub fn to_i64(&self, dtype: DType) -> Cow<'_, [i64]> {
        match self {
            Storage::I64(v) => Cow::Borrowed(v),
            Storage::I32(v) => Cow::Owned(par_map(v, |&x| i64::from(x))),
            Storage::I8(v) => Cow::Owned(par_map(v, |&x| i64::from(x))),
            Storage::Bool(v) => Cow::Owned(par_map(v, |&x| i64::from(x))),
            Storage::F64(v) => Cow::Owned(par_map(v, |&x| x as i64)),
            Storage::F32(v) => Cow::Owned(par_map(v, |&x| x as i64)),
            Storage::F16(v) => Cow::Owned(par_map(v, |x| x.to_f32() as i64)),
            Storage::BF16(v) => Cow::Owned(par_map(v, |x| x.to_f32() as i64)),
            Storage::F8(v) => {
                let t = cast::fp8_table(dtype);
                Cow::Owned(par_map(v, |&b| t[usize::from(b)] as i64))
            }
            Storage::C64(v) => Cow::Owned(par_map(v, |x| x.re as i64)),
            Storage::C128(v) => Cow::Owned(par_map(v, |x| x.re as i64)),
        }
    }

    /// Reads as bool (`x != 0`; NaN is true).
    pub fn to_bool(&self, dtype: DType) -> Cow<'_, [bool]> {
        match self {
            Storage::Bool(v) => Cow::Borrowed(v),
            Storage::I64(v) => Cow::Owned(par_map(v, |&x| x != 0)),
            Storage::I32(v) => Cow::Owned(par_map(v, |&x| x != 0)),
            Storage::I8(v) => Cow::Owned(par_map(v, |&x| x != 0)),
            Storage::F64(v) => Cow::Owned(par_map(v, |&x| x != 0.0)),
            Storage::F32(v) => Cow::Owned(par_map(v, |&x| x != 0.0)),
            Storage::F16(v) => Cow::Owned(par_map(v, |x| x.to_f32() != 0.0)),
            Storage::BF16(v) => Cow::Owned(par_map(v, |x| x.to_f32() != 0.0)),
            Storage::F8(v) => {
                let t = cast::fp8_table(dtype);
                Cow::Owned(par_map(v, |&b| t[usize::from(b)] != 0.0))
            }
            Storage::C64(v) => Cow::Owned(par_map(v, |x| x.re != 0.0 || x.im != 0.0)),
            Storage::C128(v) => Cow::Owned(par_map(v, |x| x.re != 0.0 || x.im != 0.0)),
        }
    }

    /// Reads as complex64: real dtypes give a zero imaginary part (fp32 and narrower exactly;
    /// fp64, c128 and int64 round once per part).
    pub fn to_c64(&self, dtype: DType) -> Cow<'_, [Complex32]> {
        match self {
            Storage::C64(v) => Cow::Borrowed(v),
            Storage::C128(v) => {
                Cow::Owned(par_map(v, |x| Complex32::new(x.re as f32, x.im as f32)))
            }
            Storage::F64(v) => Cow::Owned(par_map(v, |&x| Complex32::new(x as f32, 0.0))),
            Storage::I64(v) => Cow::Owned(par_map(v, |&x| {
                Complex32::new(cast::i64_to_f64_odd(x) as f32, 0.0)
            })),
            other => Cow::Owned(par_map(&other.to_f32(dtype), |&x| Complex32::new(x, 0.0))),
        }
    }

    /// Reads as complex128 (exact for every dtype except int64 beyond 2^53).
    pub fn to_c128(&self, dtype: DType) -> Cow<'_, [Complex64]> {
        match self {
            Storage::C128(v) => Cow::Borrowed(v),
            Storage::C64(v) => Cow::Owned(par_map(v, |x| {
                Complex64::new(f64::from(x.re), f64::from(x.im))
            })),
            other => Cow::Owned(par_map(&other.to_f64(dtype), |&x| Complex64::new(x, 0.0))),
        }
    }

    /// Complex64 values into `dtype`: c128 widens exactly; a real dtype takes the real part
    /// (rounded once); bool is `x != 0`.
    pub fn from_c64(v: Vec<Complex32>, dtype: DType) -> Storage {
        match dtype {
            DType::C64 => Storage::C64(v),
            DType::C128 => Storage::C128(par_map(&v, |x| {
                Complex64::new(f64::from(x.re), f64::from(x.im))
            })),
            DType::Bool => Storage::Bool(par_map(&v, |x| x.re != 0.0 || x.im != 0.0)),
            _ => Storage::from_f32(par_map(&v, |x| x.re), dtype),
        }
    }

    /// Complex128 values into `dtype` (c64 rounds each part once).
    pub fn from_c128(v: Vec<Complex64>, dtype: DType) -> Storage {
        match dtype {
            DType::C128 => Storage::C128(v),
            DType::C64 => Storage::C64(par_map(&v, |x| Complex32::new(x.re as f32, x.im as f32))),
            DType::Bool => Storage::Bool(par_map(&v, |x| x.re != 0.0 || x.im != 0.0)),
            _ => Storage::from_f64(par_map(&v, |x| x.re), dtype),
        }
    }

    /// Rounds f32 values once into `dtype` (a float dtype; fp64 widens exactly).
    pub fn from_f32(v: Vec<f32>, dtype: DType) -> Storage {
        match dtype {
            DType::F32 => Storage::F32(v),
            DType::TF32 => Storage::F32(par_map(&v, |&x| cast::f32_to_tf32(x))),
            DType::F16 => Storage::F16(par_map(&v, |&x| cast::f32_to_f16(x))),
            DType::BF16 => Storage::BF16(par_map(&v, |&x| cast::f32_to_bf16(x))),
            DType::F8E4M3 | DType::F8E5M2 => {
                Storage::F8(par_map(&v, |&x| cast::f64_to_fp8(f64::from(x), dtype)))
            }
            DType::F64 => Storage::F64(par_map(&v, |&x| f64::from(x))),
            DType::Bool => Storage::Bool(par_map(&v, |&x| x != 0.0)),
            // Int results never come from the f32 domain except through `cast`, which checks.
            DType::I64 => Storage::I64(par_map(&v, |&x| x as i64)),
            DType::I32 => Storage::I32(par_map(&v, |&x| x as i32)),
            DType::I8 => Storage::I8(par_map(&v, |&x| x as i8)),
            DType::C64 => Storage::C64(par_map(&v, |&x| Complex32::new(x, 0.0))),
            DType::C128 => Storage::C128(par_map(&v, |&x| Complex64::new(f64::from(x), 0.0))),
        }
    }

    /// Rounds f64 values once into `dtype`.
    pub fn from_f64(v: Vec<f64>, dtype: DType) -> Storage {
        match dtype {
            DType::F64 => Storage::F64(v),
            DType::F32 => Storage::F32(par_map(&v, |&x| x as f32)),
            DType::TF32 => Storage::F32(par_map(&v, |&x| cast::round_to(x, DType::TF32) as f32)),
            DType::F16 => Storage::F16(par_map(&v, |&x| cast::f64_to_f16(x))),
            DType::BF16 => Storage::BF16(par_map(&v, |&x| cast::f64_to_bf16(x))),
            DType::F8E4M3 | DType::F8E5M2 => {
                Storage::F8(par_map(&v, |&x| cast::f64_to_fp8(x, dtype)))
            }
            DType::Bool => Storage::Bool(par_map(&v, |&x| x != 0.0)),
            DType::I64 => Storage::I64(par_map(&v, |&x| x as i64)),
            DType::I32 => Storage::I32(par_map(&v, |&x| x as i32)),
            DType::I8 => Storage::I8(par_map(&v, |&x| x as i8)),
            DType::C64 => Storage::C64(par_map(&v, |&x| Complex32::new(x as f32, 0.0))),
            DType::C128 => Storage::C128(par_map(&v, |&x| Complex64::new(x, 0.0))),
        }
    }

    /// Converts i64 values into `dtype`: ints wrap at their width, floats round once, bool is `!= 0`.
    pub fn from_i64(v: Vec<i64>, dtype: DType) -> Storage {
        match dtype {
            DType::I64 => Storage::I64(v),
            DType::I32 => Storage::I32(par_map(&v, |&x| x as i32)),
            DType::I8 => Storage::I8(par_map(&v, |&x| x as i8)),
            DType::Bool => Storage::Bool(par_map(&v, |&x| x != 0)),
            DType::F64 => Storage::F64(par_map(&v, |&x| x as f64)),
            DType::F32 => Storage::F32(par_map(&v, |&x| x as f32)),
            DType::C128 => Storage::C128(par_map(&v, |&x| Complex64::new(x as f64, 0.0))),
            _ => {
                let f: Vec<f64> = par_map(&v, |&x| cast::i64_to_f64_odd(x));
                Storage::from_f64(f, dtype)
            }
        }
    }

    pub fn from_bool(v: Vec<bool>, dtype: DType) -> Storage {
        match dtype {
            DType::Bool => Storage::Bool(v),
            _ => Storage::from_i64(par_map(&v, |&b| i64::from(b)), dtype),
        }
    }

    /// Casts float values to an int dtype: truncation toward zero; NaN or out of range is E0500.
    pub fn float_to_int(v: &[f64], dtype: DType) -> Result<Storage> {
        let (lo, hi) = match dtype {
            DType::I64 => (-9.223_372_036_854_776e18, 9.223_372_036_854_776e18),
            DType::I32 => (-2147483649.0, 2147483648.0),
            _ => (-129.0, 128.0),
        };
        // Valid values are strictly inside (lo, hi) after truncation, i.e. lo < x < hi.
        if let Some(bad) = v
            .iter()
            .find(|&&x| !((x > lo && x < hi) || (dtype == DType::I64 && x == lo)))
        {
            return Err(RuntimeError::runtime(format!(
                "cannot cast {} to {}: {}",
                crate::dtype::python_float(*bad),
                dtype.name(),
                if bad.is_nan() {
                    "NaN has no integer value"
                } else {
                    "out of range"
                }
            )));
        }
        Ok(match dtype {
            DType::I64 => Storage::I64(par_map(v, |&x| x as i64)),
            DType::I32 => Storage::I32(par_map(v, |&x| x as i32)),
            _ => Storage::I8(par_map(v, |&x| x as i8)),
        })
    }
}

impl Storage {
    /// Element `i` as a Python scalar of the dtype's kind (None when out of range).
    pub fn get(&self, i: usize, dtype: DType) -> Option<crate::dtype::Scalar> {
        use crate::dtype::Scalar as S;
        Some(match self {
            Storage::F64(v) => S::Float(*v.get(i)?),
            Storage::F32(v) => S::Float(f64::from(*v.get(i)?)),
            Storage::F16(v) => S::Float(v.get(i)?.to_f64()),
            Storage::BF16(v) => S::Float(v.get(i)?.to_f64()),
            Storage::F8(v) => S::Float(f64::from(cast::fp8_to_f32(*v.get(i)?, dtype))),
            Storage::I64(v) => S::Int(*v.get(i)?),
            Storage::I32(v) => S::Int(i64::from(*v.get(i)?)),
            Storage::I8(v) => S::Int(i64::from(*v.get(i)?)),
            Storage::Bool(v) => S::Bool(*v.get(i)?),
            // a Python scalar has no complex kind: the real part (printing reads complex
            // elements with `get_complex`)
            Storage::C64(v) => S::Float(f64::from(v.get(i)?.re)),
            Storage::C128(v) => S::Float(v.get(i)?.re),
        })
    }

    /// Element `i` of a complex storage as (real, imaginary) in f64; `None` for other storage.
    pub fn get_complex(&self, i: usize) -> Option<(f64, f64)> {
        match self {
            Storage::C64(v) => v.get(i).map(|x| (f64::from(x.re), f64::from(x.im))),
            Storage::C128(v) => v.get(i).map(|x| (x.re, x.im)),
            _ => None,
        }
    }
}
