//! The tile mapping of a matmul kernel: its tile, warps and pipeline, and how its batch
//! dimensions map onto the grid.

use super::*;

/// The tile mapping of a matmul: the MMA template with tensor cores, the FMA one without.
pub(super) fn matmul_tile(
    g: &Graph,
    k: &Kernel,
    op: &Op,
    tk: &mut TileKernel,
) -> Result<(), NotLowered> {
    let s = &k.schedule;
    let (a, b, accum) = match op {
        Op::Matmul { a, b, accum, .. } => (*a, *b, *accum),
        _ => return Err(nl(k, "not a matmul")),
    };
    let at = g.ty(a).ok_or_else(|| nl(k, "untyped operand"))?;
    let bt = g.ty(b).ok_or_else(|| nl(k, "untyped operand"))?;
    // A 1-D operand is the matrix with the same memory: a [k] is [1, k], b [k] is
    // [k, 1]; the result ([..., n], [..., m] or []) then gains that 1.
    let (a1, b1) = (at.shape.len() == 1, bt.shape.len() == 1);
    if at.shape.is_empty() || bt.shape.is_empty() {
        return Err(nl(k, "0-D matmul operand"));
    }
    let as_matrix = |t: &TensorType, front: bool| TensorType {
        shape: if front {
            vec![1, t.shape[0]]
        } else {
            vec![t.shape[0], 1]
        },
        dtype: t.dtype,
    };
    let (a2, b2) = (as_matrix(at, true), as_matrix(bt, false));
    let at = if a1 { &a2 } else { at };
    let bt = if b1 { &b2 } else { bt };
    let mut oshape = k.ty.shape.clone();
    if a1 {
        let at_n = oshape.len().saturating_sub(usize::from(!b1));
        oshape.insert(at_n, 1);
    }
    if b1 {
        oshape.push(1);
    }
    if oshape.len() < 2 {
        return Err(nl(k, "a matmul result below 2-D"));
    }
    let batch = matmul_batch(k, &oshape, at, bt)?;
    let (at, bt) = (
        &TensorType {
            shape: at.shape[at.shape.len() - 2..].to_vec(),
            dtype: at.dtype,
        },
        &TensorType {
            shape: bt.shape[bt.shape.len() - 2..].to_vec(),
            dtype: bt.dtype,
        },
    );
    let f64_mm = at.dtype == DType::F64 && bt.dtype == DType::F64;
    let intlike = |d: DType| matches!(d, DType::I8 | DType::I32 | DType::I64 | DType::Bool);
    let int_mm = intlike(at.dtype)
        && intlike(bt.dtype)
        && matches!(k.ty.dtype, DType::I8 | DType::I32 | DType::I64);
    let fp8_mm = at.dtype == bt.dtype
        && matches!(at.dtype, DType::F8E4M3 | DType::F8E5M2)
        && any_float(k.ty.dtype);
    // fp64 results: an fp64 matmul, or a float one whose epilogue promotes to fp64.
    let f64_out = k.ty.dtype == DType::F64 && at.dtype.is_float() && bt.dtype.is_float();
    // Mixed float operands (bf16 @ fp32, fp32 @ fp64, …) run the FMA kernel, each
    // converted as it is staged.
    let mixed = at.dtype != bt.dtype && at.dtype.is_float() && bt.dtype.is_float();
    let fma_only = (f64_mm || int_mm || fp8_mm || mixed) && !s.tensor_cores;
    if !(any_float(k.ty.dtype) || f64_out || fma_only) {
        return Err(nl(k, format!("{} result", k.ty.dtype)));
    }
    let (m, kk, n) = (
        u32_of(k, at.shape[0])?,
        u32_of(k, at.shape[1])?,
        u32_of(k, bt.shape[1])?,
    );
    let [bm, bn, bk] = s.tile;
    let pow2 = |v: u32| v.is_power_of_two();
    if !(pow2(bm) && pow2(bn) && pow2(bk)) {
        return Err(nl(k, "tile sizes that are not powers of two"));
    }
    tk.grid = [n.div_ceil(bn).max(1), m.div_ceil(bm).max(1), batch.count];
    if s.tensor_cores {
        let tf32 = crate::schedule::mma_tf32(at.dtype, bt.dtype, accum);
        let kind = match (at.dtype, bt.dtype) {
            (DType::BF16, DType::BF16) => MmaKind::M16n8k16Bf16,
            (DType::F16, DType::F16) => MmaKind::M16n8k16F16,
            _ if tf32 => MmaKind::M16n8k8Tf32,
            _ => {
                return Err(nl(
                    k,
                    "tensor cores with operands other than bf16/fp16 pairs or tf32",
                ))
            }
        };
        // the schedule check refuses these (schedule::fit); a kernel lowered on its own
        // still falls back
        let threads = crate::schedule::fit::mma_threads(s.tile, s.warp)
            .filter(|_| s.stages > 0)
            .ok_or_else(|| nl(k, "a warp tile or tile the threads cannot load evenly"))?;
        tk.block = [threads, 1, 1];
        tk.shape = Shape::MatmulMma {
            m,
            n,
            k: kk,
            tile: s.tile,
            warp: s.warp,
            stages: s.stages,
            kind,
            async_copy: s.async_copy,
            batch,
        };
    } else {
        // whole warps of up to 4×4 outputs each: a tile of fewer than 32 outputs
        // has no such layout
        if u64::from(bm) * u64::from(bn) < 32 {
            return Err(nl(k, "a tile of fewer than 32 outputs (one warp)"));
        }
        let threads = crate::schedule::fit::fma_even_threads(bm, bn, bk)
            .filter(|_| s.stages >= 2)
            .ok_or_else(|| nl(k, "a tile the threads cannot load evenly"))?;
        tk.block = [threads as u32, 1, 1];
        tk.shape = Shape::MatmulFma {
            m,
            n,
            k: kk,
            tile: s.tile,
            stages: s.stages,
            async_copy: s.async_copy,
            batch,
        };
    }
    Ok(())
}

/// How a matmul with result shape `oshape` (2-D or more) and 2-D-or-more operands `at`, `bt`
/// maps its problems over the batch dimensions.
pub(super) fn matmul_batch(
    k: &Kernel,
    oshape: &[usize],
    at: &TensorType,
    bt: &TensorType,
) -> Result<MatmulBatch, NotLowered> {
    // Leading batch dims: each operand has the output's batch dims or none (shared), or
    // they broadcast against each other (a map from problem z to each operand's).
    let ob = &oshape[..oshape.len() - 2];
    let whole = |t: &TensorType| -> Option<bool> {
        let tb = &t.shape[..t.shape.len() - 2];
        if tb == ob {
            Some(true)
        } else if tb.iter().all(|&d| d == 1) {
            Some(false)
        } else {
            None
        }
    };
    let count: u64 = ob.iter().map(|&d| d as u64).product();
    if count > 65535 {
        return Err(nl(k, "more than 65535 batched matmuls"));
    }
    let batch = match (whole(at), whole(bt)) {
        (Some(a), Some(b)) => MatmulBatch {
            count: count.max(1) as u32,
            a,
            b,
            bcast: None,
        },
        _ => {
            if ob.len() > 4 {
                return Err(nl(
                    k,
                    "a broadcast batched matmul with over 4 batch dimensions",
                ));
            }
            // Each operand's stride (in problems) along each output batch dimension:
            // its batch dims right-aligned to the output's, 0 where it has size 1.
            let strides = |t: &TensorType| -> [u32; 4] {
                let tb = &t.shape[..t.shape.len() - 2];
                let mut st = [0u32; 4];
                let mut acc = 1u64;
                for d in (0..ob.len()).rev() {
                    let j = (d + tb.len()).checked_sub(ob.len());
                    let size = j.and_then(|j| tb.get(j)).copied().unwrap_or(1);
                    if size != 1 {
                        st[d] = acc as u32;
                    }
                    acc *= size as u64;
                }
                st
            };
            let mut dims = [1u32; 4];
            for (d, &v) in ob.iter().enumerate() {
                dims[d] = v as u32;
            }
            MatmulBatch {
                count: count.max(1) as u32,
                a: true,
                b: true,
                bcast: Some(crate::tile::BatchMap {
                    n: ob.len(),
                    dims,
                    a: strides(at),
                    b: strides(bt),
                }),
            }
        }
    };
    let batch = if batch.count == 1 {
        MatmulBatch::NONE
    } else {
        batch
    };
    Ok(batch)
}
