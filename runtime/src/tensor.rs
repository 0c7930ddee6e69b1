//! The tensor value: a shape, a dtype and (unless abstract) shared contiguous storage.

use std::sync::Arc;

use num_complex::{Complex32, Complex64};
use rayon::prelude::*;

use crate::cast;
use crate::dtype::{DType, Scalar};
use crate::error::{Result, RuntimeError};
use crate::memory;
use crate::rng;
use crate::shape::fmt_shape;
use crate::storage::{par_map, Storage, PAR_MIN};

/// A dense row-major tensor. Cloning is cheap (the storage is shared behind an `Arc`); an
/// abstract tensor (from [`Tensor::abstract_tensor`]) has a shape and dtype but no data.
#[derive(Clone, Debug)]
pub struct Tensor {
    shape: Vec<usize>,
    dtype: DType,
    data: Option<Arc<Counted>>,
}

/// A tensor's storage, its bytes counted in the live total ([`memory::live_bytes`]) from
/// when it is made until it is dropped.
#[derive(Debug)]
struct Counted {
    storage: Storage,
    bytes: u64,
}

impl Counted {
    fn new(storage: Storage) -> Counted {
        let bytes = storage.nbytes() as u64;
        memory::add_live(bytes);
        Counted { storage, bytes }
    }
}

impl Clone for Counted {
    fn clone(&self) -> Counted {
        Counted::new(self.storage.clone())
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        memory::sub_live(self.bytes);
    }
}

/// A tensor's values as nested lists, for `tolist()`: the exact stored values.
#[derive(Clone, Debug, PartialEq)]
pub enum Nested {
    List(Vec<Nested>),
    Float(f64),
    Int(i64),
    Bool(bool),
}

impl Tensor {
    // ----- accessors ---------------------------------------------------------------------------

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Element count (checked at construction, so it cannot overflow).
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn is_abstract(&self) -> bool {
        self.data.is_none()
    }

    /// The storage, or E0700 "abstract tensor has no data" naming the operation.
    pub(crate) fn storage(&self, op: &str) -> Result<&Storage> {
        self.data
            .as_deref()
            .map(|c| &c.storage)
            .ok_or_else(|| RuntimeError::abstract_read(op))
    }

    /// The storage for writing: shared storage is copied first (copy on write), so other
    /// tensors holding it keep their values. E0700 for an abstract tensor.
    pub(crate) fn storage_mut(&mut self, op: &str) -> Result<&mut Storage> {
        self.data
            .as_mut()
            .map(|c| &mut Arc::make_mut(c).storage)
            .ok_or_else(|| RuntimeError::abstract_read(op))
    }

    pub(crate) fn from_storage(shape: Vec<usize>, dtype: DType, storage: Storage) -> Tensor {
        debug_assert_eq!(shape.iter().product::<usize>(), storage.len());
        Tensor {
            shape,
            dtype,
            data: Some(Arc::new(Counted::new(storage))),
        }
    }

    /// The same data under a new shape of equal element count (no copy).
    pub(crate) fn with_shape(&self, shape: Vec<usize>) -> Tensor {
        Tensor {
            shape,
            dtype: self.dtype,
            data: self.data.clone(),
        }
    }

    // ----- constructors ------------------------------------------------------------------------

    /// An abstract tensor: shape and dtype only. E0700 if the element count overflows.
    pub fn abstract_tensor(shape: &[usize], dtype: DType) -> Result<Tensor> {
        memory::checked_numel(shape)?;
        Ok(Tensor {
            shape: shape.to_vec(),
            dtype,
            data: None,
        })
    }

    fn check_len(shape: &[usize], len: usize, dtype: DType) -> Result<()> {
        let n = memory::check_shape_alloc(shape, dtype)?;
        if n != len {
            return Err(RuntimeError::shape(format!(
                "tensor: {len} values do not fill shape {} ({n} elements)",
                fmt_shape(shape)
            )));
        }
        Ok(())
    }

    /// From f64 values, rounded once to `dtype` (to an int dtype: truncation; NaN or out of
    /// range is E0500).
    pub fn from_f64(shape: &[usize], data: Vec<f64>, dtype: DType) -> Result<Tensor> {
        Tensor::check_len(shape, data.len(), dtype)?;
        let st = if dtype.is_int() {
            Storage::float_to_int(&data, dtype)?
        } else {
            Storage::from_f64(data, dtype)
        };
        Ok(Tensor::from_storage(shape.to_vec(), dtype, st))
    }

    /// From f32 values, rounded once to `dtype`.
    pub fn from_f32(shape: &[usize], data: Vec<f32>, dtype: DType) -> Result<Tensor> {
        Tensor::check_len(shape, data.len(), dtype)?;
        if dtype.is_int() {
            let f: Vec<f64> = par_map(&data, |&x| f64::from(x));
            return Ok(Tensor::from_storage(
                shape.to_vec(),
                dtype,
                Storage::float_to_int(&f, dtype)?,
            ));
        }
        Ok(Tensor::from_storage(
            shape.to_vec(),
            dtype,
            Storage::from_f32(data, dtype),
        ))
    }

    /// From i64 values: ints wrap at their width, floats round once, bool is `x != 0`.
    pub fn from_i64(shape: &[usize], data: Vec<i64>, dtype: DType) -> Result<Tensor> {
        Tensor::check_len(shape, data.len(), dtype)?;
        Ok(Tensor::from_storage(
            shape.to_vec(),
            dtype,
            Storage::from_i64(data, dtype),
        ))
    }

    /// A c64 tensor.
    pub fn from_c64(shape: &[usize], data: Vec<Complex32>) -> Result<Tensor> {
        Tensor::check_len(shape, data.len(), DType::C64)?;
        Ok(Tensor::from_storage(
            shape.to_vec(),
            DType::C64,
            Storage::C64(data),
        ))
    }

    /// A c128 tensor.
    pub fn from_c128(shape: &[usize], data: Vec<Complex64>) -> Result<Tensor> {
        Tensor::check_len(shape, data.len(), DType::C128)?;
        Ok(Tensor::from_storage(
            shape.to_vec(),
            DType::C128,
            Storage::C128(data),
        ))
    }

    /// A bool tensor.
    pub fn from_bool(shape: &[usize], data: Vec<bool>) -> Result<Tensor> {
        Tensor::check_len(shape, data.len(), DType::Bool)?;
        Ok(Tensor::from_storage(
            shape.to_vec(),
            DType::Bool,
            Storage::Bool(data),
        ))
    }

    /// A tensor from nested lists (`op.tensor`): E0200 when ragged. Without a dtype: fp32 if any
    /// element is a float, else bool if every element is a bool, else int64.
    pub fn from_nested(value: &Nested, dtype: Option<DType>) -> Result<Tensor> {
        let mut shape = Vec::new();
        let mut v = value;
        while let Nested::List(items) = v {
            shape.push(items.len());
            match items.first() {
                Some(first) => v = first,
                None => break,
            }
        }
        let mut leaves: Vec<Scalar> = Vec::new();
        collect_leaves(value, &shape, 0, &mut leaves)?;
        let dtype = dtype.unwrap_or_else(|| {
            if leaves.iter().any(|s| matches!(s, Scalar::Float(_))) {
                DType::F32
            } else if !leaves.is_empty() && leaves.iter().all(|s| matches!(s, Scalar::Bool(_))) {
                DType::Bool
            } else if leaves.is_empty() {
                DType::F32
            } else {
                DType::I64
            }
        });
        for s in &leaves {
            if let Scalar::Int(i) = *s {
                check_python_int(i, dtype)?;
            }
        }
        if leaves.iter().any(|s| matches!(s, Scalar::Float(_))) || dtype.is_float() {
            let f: Vec<f64> = leaves.iter().map(|s| s.as_f64()).collect();
            if dtype.is_float() {
                // Ints above 2^53 must round once: go through the round-to-odd path.
                let f = leaves
                    .iter()
                    .zip(f)
                    .map(|(s, x)| {
                        if let Scalar::Int(i) = s {
                            cast::i64_to_f64_odd(*i)
                        } else {
                            x
                        }
                    })
                    .collect();
                return Tensor::from_f64(&shape, f, dtype);
            }
            if dtype == DType::Bool {
                return Tensor::from_bool(&shape, f.iter().map(|&x| x != 0.0).collect());
            }
            return Tensor::from_f64(&shape, f, dtype);
        }
        let ints: Vec<i64> = leaves
            .iter()
            .map(|s| match *s {
                Scalar::Int(i) => i,
                Scalar::Bool(b) => i64::from(b),
                Scalar::Float(x) => x as i64,
            })
            .collect();
        Tensor::from_i64(&shape, ints, dtype)
    }

    /// A 0-d tensor holding `value` converted to `dtype`.
    pub fn scalar(value: Scalar, dtype: DType) -> Result<Tensor> {
        Tensor::full(&[], value, dtype)
    }

    /// A tensor filled with `value` converted to `dtype` (a float to an int dtype truncates;
    /// NaN or out of range is E0500).
    pub fn full(shape: &[usize], value: Scalar, dtype: DType) -> Result<Tensor> {
        let n = memory::check_shape_alloc(shape, dtype)?;
        let one = match value {
            Scalar::Float(x) if dtype.is_int() => Storage::float_to_int(&[x], dtype)?,
            Scalar::Float(x) => Storage::from_f64(vec![x], dtype),
            Scalar::Int(i) => Storage::from_i64(vec![i], dtype),
            Scalar::Bool(b) => Storage::from_bool(vec![b], dtype),
        };
        let st = match one {
            Storage::F64(v) => Storage::F64(vec![v.first().copied().unwrap_or_default(); n]),
            Storage::F32(v) => Storage::F32(vec![v.first().copied().unwrap_or_default(); n]),
            Storage::F16(v) => Storage::F16(vec![v.first().copied().unwrap_or_default(); n]),
            Storage::BF16(v) => Storage::BF16(vec![v.first().copied().unwrap_or_default(); n]),
            Storage::F8(v) => Storage::F8(vec![v.first().copied().unwrap_or_default(); n]),
            Storage::I64(v) => Storage::I64(vec![v.first().copied().unwrap_or_default(); n]),
            Storage::I32(v) => Storage::I32(vec![v.first().copied().unwrap_or_default(); n]),
            Storage::I8(v) => Storage::I8(vec![v.first().copied().unwrap_or_default(); n]),
            Storage::Bool(v) => Storage::Bool(vec![v.first().copied().unwrap_or_default(); n]),
            Storage::C64(v) => Storage::C64(vec![v.first().copied().unwrap_or_default(); n]),
            Storage::C128(v) => Storage::C128(vec![v.first().copied().unwrap_or_default(); n]),
        };
        Ok(Tensor::from_storage(shape.to_vec(), dtype, st))
    }

    pub fn zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::full(shape, Scalar::Int(0), dtype)
    }

    pub fn ones(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::full(shape, Scalar::Int(1), dtype)
    }

    /// `[0, 1, ..., n-1]` (empty for n <= 0); `op.arange` defaults to int64.
    pub fn arange(n: i64, dtype: DType) -> Result<Tensor> {
        let len = usize::try_from(n.max(0))
            .map_err(|_| RuntimeError::resource(format!("arange({n}) is too large")))?;
        memory::check_shape_alloc(&[len], dtype)?;
        memory::check_alloc(len, DType::I64)?;
        Tensor::from_i64(&[len], (0..n.max(0)).collect(), dtype)
    }

    /// `arange(start, stop, step)` of floats (NumPy's): `ceil((stop - start) / step)` values
    /// `start + i·step`, computed in f64 and rounded once to `dtype`. A zero or non-finite step,
    /// or non-finite bounds, are E0200.
    pub fn arange_f64(start: f64, stop: f64, step: f64, dtype: DType) -> Result<Tensor> {
        if step == 0.0 {
            return Err(RuntimeError::shape("arange: the step must not be zero"));
        }
        if !(start.is_finite() && stop.is_finite() && step.is_finite()) {
            return Err(RuntimeError::shape(
                "arange: start, stop and step must be finite",
            ));
        }
        let n = ((stop - start) / step).ceil().max(0.0);
        if n >= 2f64.powi(62) {
            // numbers as Python writes them: `1e-300`, not 300 zeros
            let r = tessera_lang::eval::format::float_repr;
            return Err(RuntimeError::resource(format!(
                "arange({}, {}, {}) has too many elements",
                r(start),
                r(stop),
                r(step)
            )));
        }
        let n = n as usize;
        memory::check_shape_alloc(&[n], dtype)?;
        memory::check_alloc(n, DType::F64)?;
        let v: Vec<f64> = (0..n).map(|i| start + i as f64 * step).collect();
        Tensor::from_f64(&[n], v, dtype)
    }

    /// `arange(start, stop, step)` of ints: every `start + i·step` before `stop`.
    pub fn arange_i64(start: i64, stop: i64, step: i64, dtype: DType) -> Result<Tensor> {
        if step == 0 {
            return Err(RuntimeError::shape("arange: the step must not be zero"));
        }
        let span = i128::from(stop) - i128::from(start);
        let step128 = i128::from(step);
        let n = if (span > 0) == (step128 > 0) && span != 0 {
            (span + step128 - step128.signum()) / step128
        } else {
            0
        };
        let n = usize::try_from(n)
            .map_err(|_| RuntimeError::resource("arange: too many elements".to_string()))?;
        memory::check_shape_alloc(&[n], dtype)?;
        memory::check_alloc(n, DType::I64)?;
        let v: Vec<i64> = (0..n as i64)
            .map(|i| start.wrapping_add(i.wrapping_mul(step)))
            .collect();
        Tensor::from_i64(&[n], v, dtype)
    }

    /// `linspace(start, stop, num)` (NumPy's): `num` evenly spaced values from `start` to
    /// `stop`, both included (`num = 1`: `[start]`), computed in f64, rounded once to `dtype`.
    pub fn linspace(start: f64, stop: f64, num: usize, dtype: DType) -> Result<Tensor> {
        memory::check_shape_alloc(&[num], dtype)?;
        memory::check_alloc(num, DType::F64)?;
        let v: Vec<f64> = match num {
            0 => Vec::new(),
            1 => vec![start],
            _ => {
                let step = (stop - start) / (num - 1) as f64;
                let mut v: Vec<f64> = (0..num).map(|i| start + i as f64 * step).collect();
                if let Some(last) = v.last_mut() {
                    *last = stop;
                }
                v
            }
        };
        Tensor::from_f64(&[num], v, dtype)
    }

    /// The n×n identity matrix.
    pub fn eye(n: usize, dtype: DType) -> Result<Tensor> {
        let numel = memory::check_shape_alloc(&[n, n], dtype)?;
        memory::check_alloc(numel, DType::I64)?;
        let mut v = vec![0i64; numel];
        for i in 0..n {
            if let Some(x) = v.get_mut(i * n + i) {
                *x = 1;
            }
        }
        Tensor::from_i64(&[n, n], v, dtype)
    }

    /// Uniform [0, 1) values, exact in `dtype` (docs/decisions.md "Random numbers").
    /// An int or bool dtype is E0201.
    pub fn rand(shape: &[usize], dtype: DType, seed: i64) -> Result<Tensor> {
        let p = rng::precision(dtype).ok_or_else(|| {
            RuntimeError::dtype(format!(
                "rand: dtype must be a float type, got {}",
                dtype.name()
            ))
        })?;
        let n = memory::check_shape_alloc(shape, dtype)?;
        Ok(Tensor::from_storage(
            shape.to_vec(),
            dtype,
            generate(n, dtype, |i| rng::uniform(seed, i, p)),
        ))
    }

    /// Standard normal values (Box-Muller in f64, rounded once to `dtype`). Int or bool is E0201.
    pub fn randn(shape: &[usize], dtype: DType, seed: i64) -> Result<Tensor> {
        if !dtype.is_float() {
            return Err(RuntimeError::dtype(format!(
                "randn: dtype must be a float type, got {}",
                dtype.name()
            )));
        }
        let n = memory::check_shape_alloc(shape, dtype)?;
        Ok(Tensor::from_storage(
            shape.to_vec(),
            dtype,
            generate(n, dtype, |i| rng::normal(seed, i)),
        ))
    }

    // ----- reading values ----------------------------------------------------------------------

    /// The values as f64 (exact for every dtype but int64 beyond 2^53). E0700 when abstract.
    pub fn to_f64_vec(&self) -> Result<Vec<f64>> {
        Ok(self.storage("read values")?.to_f64(self.dtype).into_owned())
    }

    /// The values as f32 (fp32 and narrower exactly). E0700 when abstract.
    pub fn to_f32_vec(&self) -> Result<Vec<f32>> {
        Ok(self.storage("read values")?.to_f32(self.dtype).into_owned())
    }

    /// The values as i64 (floats truncate). E0700 when abstract.
    pub fn to_i64_vec(&self) -> Result<Vec<i64>> {
        Ok(self.storage("read values")?.to_i64(self.dtype).into_owned())
    }

    /// The values as bool (`x != 0`). E0700 when abstract.
    pub fn to_bool_vec(&self) -> Result<Vec<bool>> {
        Ok(self
            .storage("read values")?
            .to_bool(self.dtype)
            .into_owned())
    }

    /// The values as complex64 (real dtypes with a zero imaginary part). E0700 when abstract.
    pub fn to_c64_vec(&self) -> Result<Vec<Complex32>> {
        Ok(self.storage("read values")?.to_c64(self.dtype).into_owned())
    }

    /// The values as complex128 (real dtypes with a zero imaginary part). E0700 when abstract.
    pub fn to_c128_vec(&self) -> Result<Vec<Complex64>> {
        Ok(self
            .storage("read values")?
            .to_c128(self.dtype)
            .into_owned())
    }

    /// The flat values as Python scalars (floats exact, ints, bools). A complex tensor is
    /// E0201: the language has no complex number.
    pub(crate) fn scalars(&self, op: &str) -> Result<Vec<Scalar>> {
        if self.dtype.is_complex() {
            return Err(RuntimeError::dtype(format!(
                "{op}() of a {} tensor: there is no complex Python number",
                self.dtype.name()
            ))
            .with_help("read the parts as real tensors: op.real(x) and op.imag(x)"));
        }
        let st = self.storage(op)?;
        Ok(if self.dtype.is_float() {
            st.to_f64(self.dtype)
                .iter()
                .map(|&x| Scalar::Float(x))
                .collect()
        } else if self.dtype == DType::Bool {
            st.to_bool(self.dtype)
                .iter()
                .map(|&b| Scalar::Bool(b))
                .collect()
        } else {
            st.to_i64(self.dtype)
                .iter()
                .map(|&i| Scalar::Int(i))
                .collect()
        })
    }

    /// Nested lists of the exact stored values. E0700 when abstract.
    pub fn tolist(&self) -> Result<Nested> {
        // the scalars, the nested lists, and the host values the caller makes of them
        let per = std::mem::size_of::<Scalar>() + 2 * std::mem::size_of::<Nested>();
        crate::memory::check_host(self.numel(), per, ".tolist()")?;
        let vals = self.scalars("tolist")?;
        let leaf = |s: &Scalar| match *s {
            Scalar::Float(x) => Nested::Float(x),
            Scalar::Int(i) => Nested::Int(i),
            Scalar::Bool(b) => Nested::Bool(b),
        };
        fn build(shape: &[usize], vals: &[Scalar], leaf: &dyn Fn(&Scalar) -> Nested) -> Nested {
            match shape.split_first() {
                None => vals.first().map(leaf).unwrap_or(Nested::List(Vec::new())),
                Some((&d, rest)) => {
                    let inner: usize = rest.iter().product();
                    Nested::List(
                        (0..d)
                            .map(|i| {
                                build(
                                    rest,
                                    vals.get(i * inner..(i + 1) * inner).unwrap_or(&[]),
                                    leaf,
                                )
                            })
                            .collect(),
                    )
                }
            }
        }
        Ok(build(&self.shape, &vals, &leaf))
    }

    /// The single value of a one-element tensor (E0200 otherwise; E0700 when abstract).
    pub fn item(&self) -> Result<Scalar> {
        if self.numel() != 1 {
            return Err(RuntimeError::shape(format!(
                "item(): the tensor has {} elements (shape {}), item() needs exactly one",
                self.numel(),
                fmt_shape(&self.shape)
            )));
        }
        let vals = self.scalars("item")?;
        vals.first()
            .copied()
            .ok_or_else(|| RuntimeError::runtime("item(): no value"))
    }

    // ----- casting -----------------------------------------------------------------------------

    /// Converts to `dtype`: floats round once (ties to even; fp8 saturates); float to int
    /// truncates toward zero (NaN or out of range is E0500); to bool is `x != 0`.
    pub fn cast(&self, dtype: DType) -> Result<Tensor> {
        if dtype == self.dtype {
            return Ok(self.clone());
        }
        let n = self.numel();
        if self.is_abstract() {
            return Tensor::abstract_tensor(&self.shape, dtype);
        }
        memory::check_alloc(n, dtype)?;
        let src = self.storage("cast")?;
        let from = self.dtype;
        let st = if from == DType::C128 {
            // complex to real keeps the real part (NumPy's astype, without its warning)
            let v = src.to_c128(from).into_owned();
            if dtype.is_int() {
                Storage::float_to_int(&v.iter().map(|x| x.re).collect::<Vec<_>>(), dtype)?
            } else {
                Storage::from_c128(v, dtype)
            }
        } else if from == DType::C64 {
            let v = src.to_c64(from).into_owned();
            if dtype.is_int() {
                let re: Vec<f64> = v.iter().map(|x| f64::from(x.re)).collect();
                Storage::float_to_int(&re, dtype)?
            } else {
                Storage::from_c64(v, dtype)
            }
        } else if dtype == DType::C64 {
            Storage::C64(src.to_c64(from).into_owned())
        } else if dtype == DType::C128 {
            Storage::C128(src.to_c128(from).into_owned())
        } else if dtype == DType::Bool {
            Storage::Bool(src.to_bool(from).into_owned())
        } else if from.is_float() && dtype.is_int() {
            Storage::float_to_int(&src.to_f64(from), dtype)?
        } else if from == DType::F64 {
            Storage::from_f64(src.to_f64(from).into_owned(), dtype)
        } else if from.is_float() {
            // Every value of fp32 and narrower is exact in f32: one rounding.
            Storage::from_f32(src.to_f32(from).into_owned(), dtype)
        } else {
            Storage::from_i64(src.to_i64(from).into_owned(), dtype)
        };
        Ok(Tensor::from_storage(self.shape.clone(), dtype, st))
    }

    /// Same as [`Tensor::cast`] (`t.to(dtype)`).
    pub fn to(&self, dtype: DType) -> Result<Tensor> {
        self.cast(dtype)
    }
}

fn collect_leaves(v: &Nested, shape: &[usize], depth: usize, out: &mut Vec<Scalar>) -> Result<()> {
    let ragged = || {
        RuntimeError::shape(format!(
            "tensor: nested lists are ragged (expected shape {})",
            fmt_shape(shape)
        ))
    };
    match v {
        Nested::List(items) => {
            if shape.get(depth) != Some(&items.len()) {
                return Err(ragged());
            }
            for it in items {
                collect_leaves(it, shape, depth + 1, out)?;
            }
        }
        leaf => {
            if depth != shape.len() {
                return Err(ragged());
            }
            out.push(match *leaf {
                Nested::Float(x) => Scalar::Float(x),
                Nested::Int(i) => Scalar::Int(i),
                Nested::Bool(b) => Scalar::Bool(b),
                Nested::List(_) => return Err(ragged()),
            });
        }
    }
    Ok(())
}

/// Storage of `n` values `f(i)` (computed in f64), rounded once to float `dtype`.
fn generate(n: usize, dtype: DType, f: impl Fn(u64) -> f64 + Sync + Send) -> Storage {
    fn gen<T: Send>(n: usize, g: impl Fn(u64) -> T + Sync + Send) -> Vec<T> {
        if n >= PAR_MIN {
            (0..n)
                .into_par_iter()
                .with_min_len(4096)
                .map(|i| g(i as u64))
                .collect()
        } else {
            (0..n).map(|i| g(i as u64)).collect()
        }
    }
    match dtype {
        DType::F64 => Storage::F64(gen(n, f)),
        DType::F32 => Storage::F32(gen(n, |i| f(i) as f32)),
        DType::TF32 => Storage::F32(gen(n, |i| cast::round_to(f(i), DType::TF32) as f32)),
        DType::F16 => Storage::F16(gen(n, |i| cast::f64_to_f16(f(i)))),
        DType::BF16 => Storage::BF16(gen(n, |i| cast::f64_to_bf16(f(i)))),
        DType::F8E4M3 | DType::F8E5M2 => Storage::F8(gen(n, |i| cast::f64_to_fp8(f(i), dtype))),
        DType::I64 | DType::I32 | DType::I8 | DType::Bool | DType::C64 | DType::C128 => {
            Storage::from_f64(gen(n, f), dtype)
        }
    }
}

/// E0500 when the integer `i` (a `.tsr` int: a Python int) is out of the range of the integer
/// `dtype` it is stored in, as NumPy 2 refuses it ("Python integer 300 out of bounds for
/// int8") instead of wrapping. Other dtypes take any int (floats round, bool tests nonzero).
pub fn check_python_int(i: i64, dtype: DType) -> Result<()> {
    let fits = match dtype {
        DType::I8 => i8::try_from(i).is_ok(),
        DType::I32 => i32::try_from(i).is_ok(),
        _ => true,
    };
    if fits {
        return Ok(());
    }
    Err(RuntimeError::runtime(format!(
        "Python integer {i} out of bounds for {}",
        dtype.name()
    ))
    .with_help("cast explicitly to wrap it: op.cast(op.tensor(v), dtype)"))
}
