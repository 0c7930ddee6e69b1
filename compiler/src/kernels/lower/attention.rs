//! Schedule → Tile of FlashAttention kernels: the launch shape (`Shape::FlashAttention`,
//! fp32 FMA or tensor cores as the schedule says) and the description of the block program.

use super::*;
use crate::graph::AttnWrt;
use crate::tile::AttnPart;

/// The batch strides of attention operands whose batch dims broadcast to `ob`.
fn attn_batch(
    k: &Kernel,
    ob: &[usize],
    ops: [&TensorType; 3],
) -> Result<crate::tile::AttnBatch, NotLowered> {
    let strides = |t: &TensorType| -> Result<Vec<u32>, NotLowered> {
        let tb = &t.shape[..t.shape.len() - 2];
        let lead = ob.len() - tb.len().min(ob.len());
        let mut st = vec![0u32; ob.len()];
        let mut acc: u64 = 1;
        for d in (0..ob.len()).rev() {
            if let Some(j) = d.checked_sub(lead) {
                if tb[j] != 1 {
                    if tb[j] != ob[d] {
                        return Err(nl(k, "attention batch dimensions that do not broadcast"));
                    }
                    st[d] = u32::try_from(acc).map_err(|_| nl(k, "too large an attention"))?;
                }
                acc *= tb[j] as u64;
            }
        }
        Ok(st)
    };
    Ok(crate::tile::AttnBatch {
        dims: ob.iter().map(|&d| u32_of(k, d)).collect::<Result<_, _>>()?,
        q: strides(ops[0])?,
        k: strides(ops[1])?,
        v: strides(ops[2])?,
    })
}

/// The launch shape and parameters of a FlashAttention kernel.
pub(super) fn tile(g: &Graph, k: &Kernel, op: &Op, tk: &mut TileKernel) -> Result<(), NotLowered> {
    let s = &k.schedule;
    let (q, kv, v, causal, scale, part) = match op {
        Op::FlashAttention {
            q,
            k: kk,
            v,
            causal,
            scale,
        } => (*q, *kk, Some(*v), *causal, *scale, AttnPart::Out),
        Op::AttentionLse {
            q,
            k: kk,
            causal,
            scale,
        } => (*q, *kk, None, *causal, *scale, AttnPart::Lse),
        Op::AttentionGrad {
            wrt,
            q,
            k: kk,
            v,
            causal,
            scale,
            ..
        } => (*q, *kk, Some(*v), *causal, *scale, AttnPart::Grad(*wrt)),
        _ => return Err(nl(k, "not a flash attention")),
    };
    let qt = g.ty(q).ok_or_else(|| nl(k, "untyped operand"))?;
    let kt = g.ty(kv).ok_or_else(|| nl(k, "untyped operand"))?;
    // the log-sum-exp has no v: k stands in for its shape checks (dv is unused)
    let vt = match v {
        Some(v) => g.ty(v).ok_or_else(|| nl(k, "untyped operand"))?,
        None => kt,
    };
    for t in [qt, kt, vt, &k.ty] {
        if !super::any_float(t.dtype) && t.dtype != DType::F64 {
            return Err(nl(k, format!("{} attention", t.dtype)));
        }
        if t.shape.len() < 2 && !std::ptr::eq(t, &k.ty) {
            return Err(nl(k, "attention operands below 2-D"));
        }
    }
    let r = qt.shape.len();
    let (sq, dq) = (qt.shape[r - 2], qt.shape[r - 1]);
    let (sk, dv) = (kt.shape[kt.shape.len() - 2], vt.shape[vt.shape.len() - 1]);
    // the batch dims: the output's, less its [sq, d] (the log-sum-exp's [sq])
    let ob = &qt.shape[..r - 2];
    let bcast = if [qt, kt, vt]
        .iter()
        .all(|t| &t.shape[..t.shape.len() - 2] == ob)
        && (part != AttnPart::Out
            || k.ty.shape.len() >= 2 && &k.ty.shape[..k.ty.shape.len() - 2] == ob)
    {
        None
    } else if part == AttnPart::Out {
        let ob = &k.ty.shape[..k.ty.shape.len() - 2];
        Some(attn_batch(k, ob, [qt, kt, vt])?)
    } else {
        return Err(nl(
            k,
            "attention gradients of operands whose batch dims differ",
        ));
    };
    let ob: &[usize] = match part {
        AttnPart::Out => &k.ty.shape[..k.ty.shape.len() - 2],
        _ => ob,
    };
    let batch: u64 = ob.iter().map(|&d| d as u64).product();
    if dq == 0 || (dv == 0 && part != AttnPart::Lse) || sq == 0 || sk == 0 || batch == 0 {
        return Err(nl(k, "empty attention"));
    }
    if numel(qt).max(numel(kt)).max(numel(vt)).max(numel(&k.ty)) > u64::from(u32::MAX) {
        return Err(nl(k, "too large an attention"));
    }
    let mma = if s.tensor_cores && part == AttnPart::Out {
        crate::schedule::fit::attention_mma(g, &k.inputs, &k.ty)
    } else {
        None
    };
    let (bm, bn) = if mma.is_some() {
        (
            crate::kernels::attention_mma::BM,
            crate::kernels::attention_mma::BN,
        )
    } else {
        (s.tile[0], 32)
    };
    let warps = 4;
    if mma.is_none() && (bm == 0 || !bm.is_multiple_of(warps) || bm / warps > 8) {
        return Err(nl(
            k,
            "a query tile that is not 4..32 rows, a multiple of 4",
        ));
    }
    use crate::schedule::fit::{
        attention_elem_bytes, attention_grad_smem, fma_attention_smem, FMA_ATTENTION_SMEM,
    };
    let eb = attention_elem_bytes(g, &k.inputs, &k.ty);
    let smem = match part {
        AttnPart::Out => fma_attention_smem(eb, u64::from(bm), u64::from(bn), dq as u64, dv as u64),
        AttnPart::Lse => fma_attention_smem(eb, u64::from(bm), u64::from(bn), dq as u64, 0),
        AttnPart::Grad(_) => {
            attention_grad_smem(eb, u64::from(bm), u64::from(bn), dq as u64, dv as u64)
        }
    };
    if mma.is_none() && smem > FMA_ATTENTION_SMEM {
        return Err(nl(
            k,
            format!(
                "attention tiles of {} KiB of shared memory (head dimensions {dq} and {dv}; \
                 at most {} KiB)",
                smem.div_ceil(1024),
                FMA_ATTENTION_SMEM / 1024
            ),
        ));
    }
    let (sq, sk, dq, dv) = (
        u32_of(k, sq)?,
        u32_of(k, sk)?,
        u32_of(k, dq)?,
        u32_of(k, dv)?,
    );
    tk.block = [warps * 32, 1, 1];
    // batch problems on grid y, continued on z past y's 65535 (`kernels::attention::block_batch`)
    let batch = batch.max(1);
    // blocks of bm rows of the result: query rows, or key rows for dk and dv
    let rows = match part {
        AttnPart::Grad(AttnWrt::K | AttnWrt::V) => sk,
        _ => sq,
    };
    tk.grid = [
        rows.div_ceil(bm),
        batch.min(65535) as u32,
        batch.div_ceil(65535) as u32,
    ];
    tk.shape = Shape::FlashAttention {
        batch: batch as u32,
        sq,
        sk,
        dq,
        dv,
        causal,
        scale,
        bm,
        bn,
        bcast,
        mma,
        part,
    };
    Ok(())
}
