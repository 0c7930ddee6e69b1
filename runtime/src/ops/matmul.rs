//! `matmul` with NumPy semantics (1-D promotion, batch broadcasting). Floats accumulate in fp32
//! (fp64 for fp64) through our GEMM (`cpu_gemm`) on all cores; ints accumulate in int64 (wrapping).

use rayon::prelude::*;

use crate::cast;
use crate::dtype::DType;
use crate::error::{Result, RuntimeError};
use crate::memory;
use crate::shape::fmt_shape;
use crate::storage::{buffer, Storage};
use crate::tensor::Tensor;
use tessera_compiler::graph::ops::matmul as matmul_rule;

/// The shapes of a matmul problem after NumPy's 1-D promotion (the compiler's rule).
type Plan = tessera_compiler::graph::ops::matmul::MatmulShape;

/// [`Plan`] of `a @ b`, or E0200 naming both shapes and why.
fn plan(a: &[usize], b: &[usize]) -> Result<Plan> {
    use tessera_compiler::graph::infer::TypeError;
    matmul_rule::matmul_shape(a, b).map_err(|e| {
        let why = match e {
            TypeError::MatmulRank => {
                "are not allowed: matmul needs at least 1-D operands".to_string()
            }
            TypeError::MatmulInner { ka, kb } => {
                format!("are incompatible: inner dimensions {ka} and {kb} differ")
            }
            TypeError::Broadcast { .. } => {
                "have batch dimensions that cannot be broadcast together".to_string()
            }
            e => e.to_string(),
        };
        RuntimeError::shape(format!(
            "matmul: shapes {} and {} {why}",
            fmt_shape(a),
            fmt_shape(b)
        ))
    })
}

/// Result shape and dtype of `matmul(a, b, accum_dtype)` without computing it.
pub fn infer_matmul(
    a: (&[usize], DType),
    b: (&[usize], DType),
    accum: Option<DType>,
) -> Result<(Vec<usize>, DType)> {
    let p = plan(a.0, b.0)?;
    let (dtype, _) = types(a.1, b.1, accum)?;
    Ok((p.out, dtype))
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Acc {
    F32 { tf32: bool },
    F64,
    I64,
}

/// The result dtype and the accumulator (the compiler's rules, `matmul_dtype` and
/// `accumulator`); a float product into a non-float `accum_dtype` is E0201.
fn types(a: DType, b: DType, accum: Option<DType>) -> Result<(DType, Acc)> {
    let r = matmul_rule::matmul_dtype(a, b, accum).map_err(|e| match e {
        tessera_compiler::graph::infer::TypeError::Accum { accum, inputs } => {
            RuntimeError::dtype(format!(
                "matmul: accum_dtype {} cannot accumulate {} inputs",
                accum.name(),
                inputs.name()
            ))
            .with_help("use a float accum_dtype such as fp32")
        }
        e => RuntimeError::dtype(format!("matmul: {e}")),
    })?;
    let acc = match matmul_rule::accumulator(a, b, r) {
        DType::F64 => Acc::F64,
        DType::F32 => Acc::F32 {
            tf32: DType::promote(a, b) == DType::TF32 || r == DType::TF32,
        },
        _ => Acc::I64,
    };
    Ok((r, acc))
}

/// Element offsets of each output batch into a's and b's batches.
fn batch_offsets(p: &Plan) -> Vec<(usize, usize)> {
    let nb: usize = p.batch.iter().product();
    let sa = crate::shape::broadcast_strides(&p.a_batch, &p.batch);
    let sb = crate::shape::broadcast_strides(&p.b_batch, &p.batch);
    let (ma, mb) = (p.m * p.k, p.k * p.n);
    (0..nb)
        .map(|flat| {
            let (mut rem, mut oa, mut ob) = (flat, 0usize, 0usize);
            for i in (0..p.batch.len()).rev() {
                let d = p.batch[i].max(1);
                let ix = rem % d;
                rem /= d;
                oa += ix * sa[i];
                ob += ix * sb[i];
            }
            (oa * ma, ob * mb)
        })
        .collect()
}

/// A GEMM entry point of `cpu_gemm`: (isa, m, n, k, a, b, c, parallel).
type GemmFn<T, A, B> = fn(crate::isa::Isa, usize, usize, usize, &[A], &[B], &mut [T], bool);

/// One GEMM per batch (ours, `cpu_gemm`, on the ISA `TESSERA_CPU_ISA` picks): batches in parallel
/// when they are many and small. bf16/fp16 operands are widened inside the packing.
fn batched<T, A, B>(p: &Plan, a: &[A], b: &[B]) -> Vec<T>
where
    T: crate::ops::gemm_kernels::GemmScalar,
    A: crate::ops::cpu_gemm::Elem<T>,
    B: crate::ops::cpu_gemm::Elem<T>,
{
    batched_with(p, a, b, crate::ops::cpu_gemm::gemm_with::<T, A, B>)
}

/// [`batched`] through `gemm`.
fn batched_with<T, A, B>(p: &Plan, a: &[A], b: &[B], gemm: GemmFn<T, A, B>) -> Vec<T>
where
    T: Copy + Default + Send + Sync,
    A: Sync,
    B: Sync,
{
    let offs = batch_offsets(p);
    let (m, k, n) = (p.m, p.k, p.n);
    let mut out = buffer::<T>(offs.len() * m * n);
    if m * n == 0 {
        return out;
    }
    // The ISA is read here, on the calling thread, for every batch.
    let isa = crate::isa::current();
    let run = |(c, &(oa, ob)): (&mut [T], &(usize, usize)), par: bool| {
        if let (Some(a), Some(b)) = (a.get(oa..oa + m * k), b.get(ob..ob + k * n)) {
            gemm(isa, m, n, k, a, b, c, par);
        }
    };
    if offs.len() > 1 && m * n * k < (1 << 21) {
        out.par_chunks_mut(m * n)
            .zip(offs.par_iter())
            .for_each(|x| run(x, false));
    } else {
        let par = m * n * k >= (1 << 18);
        out.chunks_mut(m * n)
            .zip(offs.iter())
            .for_each(|x| run(x, par));
    }
    out
}

fn int_batched(p: &Plan, a: &[i64], b: &[i64]) -> Vec<i64> {
    let offs = batch_offsets(p);
    let (m, k, n) = (p.m, p.k, p.n);
    let mut out = buffer::<i64>(offs.len() * m * n);
    if m * n == 0 {
        return out;
    }
    // One task per output row: row (batch, i) = sum_kk a[i, kk] * b[kk, :].
    out.par_chunks_mut(n).enumerate().for_each(|(row, c)| {
        let (bi, i) = (row / m, row % m);
        let Some(&(oa, ob)) = offs.get(bi) else {
            return;
        };
        for kk in 0..k {
            let (Some(&x), Some(brow)) =
                (a.get(oa + i * k + kk), b.get(ob + kk * n..ob + kk * n + n))
            else {
                return;
            };
            for (cv, &y) in c.iter_mut().zip(brow) {
                *cv = cv.wrapping_add(x.wrapping_mul(y));
            }
        }
    });
    out
}

/// `matmul(a, b, accum_dtype)` (SPEC §4). Shape mismatch is E0200 naming both shapes.
pub fn matmul(a: &Tensor, b: &Tensor, accum_dtype: Option<DType>) -> Result<Tensor> {
    crate::ops::complex::real_only("matmul", a.dtype())?;
    crate::ops::complex::real_only("matmul", b.dtype())?;
    let p = plan(a.shape(), b.shape())?;
    let (dtype, acc) = types(a.dtype(), b.dtype(), accum_dtype)?;
    if a.is_abstract() || b.is_abstract() {
        return Tensor::abstract_tensor(&p.out, dtype);
    }
    let numel = memory::check_shape_alloc(&p.out, dtype)?;
    let (sa, sb) = (a.storage("matmul")?, b.storage("matmul")?);
    let st = match acc {
        Acc::F32 { tf32 } => {
            memory::check_alloc(numel, DType::F32)?;
            if !tf32 {
                // bf16/fp16 operands are widened inside the kernel's packing: no f32 copies.
                let direct = match (sa, sb) {
                    (Storage::BF16(x), Storage::BF16(y)) => {
                        Some(batched_with(&p, x, y, crate::ops::cpu_gemm::gemm_bf16))
                    }
                    (Storage::F16(x), Storage::F16(y)) => Some(batched::<f32, _, _>(&p, x, y)),
                    _ => None,
                };
                if let Some(out) = direct {
                    return Ok(Tensor::from_storage(
                        p.out,
                        dtype,
                        Storage::from_f32(out, dtype),
                    ));
                }
            }
            let (mut x, mut y) = (sa.to_f32(a.dtype()), sb.to_f32(b.dtype()));
            if tf32 {
                x = std::borrow::Cow::Owned(crate::storage::par_map(&x, |&v| cast::f32_to_tf32(v)));
                y = std::borrow::Cow::Owned(crate::storage::par_map(&y, |&v| cast::f32_to_tf32(v)));
            }
            Storage::from_f32(batched::<f32, f32, f32>(&p, &x, &y), dtype)
        }
        Acc::F64 => {
            memory::check_alloc(numel, DType::F64)?;
            let (x, y) = (sa.to_f64(a.dtype()), sb.to_f64(b.dtype()));
            Storage::from_f64(batched::<f64, f64, f64>(&p, &x, &y), dtype)
        }
        Acc::I64 => {
            memory::check_alloc(numel, DType::I64)?;
            let (x, y) = (sa.to_i64(a.dtype()), sb.to_i64(b.dtype()));
            Storage::from_i64(int_batched(&p, &x, &y), dtype)
        }
    };
    Ok(Tensor::from_storage(p.out, dtype, st))
}

impl Tensor {
    /// `self @ rhs` (result dtype: the promoted input dtype).
    pub fn matmul(&self, rhs: &Tensor) -> Result<Tensor> {
        matmul(self, rhs, None)
    }
}
