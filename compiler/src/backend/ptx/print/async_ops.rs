//! The asynchronous copies and matrix products: `cp.async` (sm_80), and the sm_90 `mbarrier`
//! and `wgmma` instructions with the targets that lack them.

use super::Line;
use crate::backend::ptx::{CacheOp, Kernel, Op, Operand, Reg, Target};
use std::fmt::Write;

/// The sm_90 instructions: mbarrier and wgmma.
pub(super) fn write_hopper(w: &mut Line, op: &Op) {
    match op {
        Op::MbarrierInit { addr, count } => {
            w.op(&["mbarrier.init.shared::cta.b64"]);
            w.addr(*addr, 0);
            w.opnd(*count);
        }
        Op::MbarrierArrive { dst, addr, tx } => {
            let expect = if tx.is_some() { ".expect_tx" } else { "" };
            w.op(&["mbarrier.arrive", expect, ".shared::cta.b64"]);
            w.reg(*dst);
            w.addr(*addr, 0);
            if let Some(t) = tx {
                w.opnd(*t);
            }
        }
        Op::MbarrierCompleteTx { addr, tx } => {
            w.op(&["mbarrier.complete_tx.shared::cta.b64"]);
            w.addr(*addr, 0);
            w.opnd(*tx);
        }
        Op::MbarrierTryWait { dst, addr, parity } => {
            w.op(&["mbarrier.try_wait.parity.shared::cta.b64"]);
            w.reg(*dst);
            w.addr(*addr, 0);
            w.opnd(*parity);
        }
        Op::MbarrierWait {
            pred,
            addr,
            parity,
            label,
        } => {
            // a loop in one instruction's place: the label, the probe, the branch back
            let _ = write!(w.out, "$Lmbar_wait_{label}: ");
            w.op(&["mbarrier.try_wait.parity.shared::cta.b64"]);
            w.reg(*pred);
            w.addr(*addr, 0);
            w.opnd(*parity);
            let _ = write!(w.out, "; @!{} bra $Lmbar_wait_{label}", w.n.get(*pred));
        }
        Op::WgmmaFence => w.op(&["wgmma.fence.sync.aligned"]),
        Op::SetMaxNReg { inc, n } => {
            let action = if *inc { "inc" } else { "dec" };
            w.op(&["setmaxnreg.", action, ".sync.aligned.u32"]);
            w.num(i64::from(*n));
        }
        Op::WgmmaCommit => w.op(&["wgmma.commit_group.sync.aligned"]),
        Op::WgmmaWait { n } => {
            w.op(&["wgmma.wait_group.sync.aligned"]);
            w.num(i64::from(*n));
        }
        Op::WgmmaMmaAsync {
            n,
            ab,
            d,
            a_desc,
            b_desc,
            scale_d,
        } => {
            let shape = format!("wgmma.mma_async.sync.aligned.m64n{n}k16.f32.");
            w.op(&[&shape, ab.name(), ".", ab.name()]);
            w.regs(d);
            w.reg(*a_desc);
            w.reg(*b_desc);
            // scale-d, imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b (both K-major)
            w.num(i64::from(*scale_d));
            for v in [1, 1, 0, 0] {
                w.num(v);
            }
        }
        _ => w.op(&["invalid"]),
    }
}

/// The TMA: a tensor map's generic address, the bulk tensor copies and their bulk groups.
pub(super) fn write_tma(w: &mut Line, k: &Kernel, op: &Op) {
    // `[map, {c0, c1, ...}]`
    let tensor = |w: &mut Line, map: &Reg, coords: &[Reg]| {
        w.sep();
        let names: Vec<&str> = coords.iter().map(|c| w.n.get(*c)).collect();
        let _ = write!(w.out, "[{}, {{{}}}]", w.n.get(*map), names.join(", "));
    };
    match op {
        Op::TensorMapAddr { dst, param } => {
            let p = k.params.get(param.0 as usize);
            w.op(&["cvta.param.u64"]);
            w.reg(*dst);
            w.text(p.map_or("invalid", |p| p.name.as_str()));
        }
        Op::TmaLoad {
            dst,
            map,
            coords,
            mbar,
        } => {
            let dims = format!("cp.async.bulk.tensor.{}d", coords.len());
            w.op(&[
                &dims,
                ".shared::cluster.global.mbarrier::complete_tx::bytes",
            ]);
            w.addr(*dst, 0);
            tensor(w, map, coords);
            w.addr(*mbar, 0);
        }
        Op::TmaStore { map, coords, src } => {
            let dims = format!("cp.async.bulk.tensor.{}d", coords.len());
            w.op(&[&dims, ".global.shared::cta.bulk_group"]);
            tensor(w, map, coords);
            w.addr(*src, 0);
        }
        Op::BulkCommit => w.op(&["cp.async.bulk.commit_group"]),
        Op::BulkWaitRead { n } => {
            w.op(&["cp.async.bulk.wait_group.read"]);
            w.num(i64::from(*n));
        }
        _ => w.op(&["invalid"]),
    }
}

pub(super) fn write_cp_async(
    w: &mut Line,
    cache: &CacheOp,
    dst: &Reg,
    src: &Reg,
    bytes: &u32,
    src_size: &Option<Operand>,
) {
    let c = match cache {
        CacheOp::Ca => "ca",
        CacheOp::Cg => "cg",
    };
    w.op(&["cp.async.", c, ".shared.global"]);
    w.addr(*dst, 0);
    w.addr(*src, 0);
    w.num(i64::from(*bytes));
    if let Some(s) = src_size {
        w.opnd(*s);
    }
}

/// What an sm_90 instruction is when `target` lacks it ([`Op::hopper`]).
pub(super) fn hopper_only(op: &Op, target: Target) -> Option<&'static str> {
    op.hopper()
        .filter(|h| !h.supported(target))
        .map(|h| h.what())
}
