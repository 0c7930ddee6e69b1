//! The signatures of the Hopper ops (sm_90/sm_90a): warpgroup roles, TMA copies, wgmma and its
//! descriptors, `setmaxnreg`.

use super::{CheckError, Ctx};
use crate::scalar::Ty;
use crate::tile::ir::*;

impl Ctx<'_> {
    /// `tile.warpgroup_role`: no operands or results, one region without arguments that
    /// yields nothing, warpgroups `first .. first + count` of a one-dimensional block of whole
    /// warpgroups, and no block-wide barrier inside unless every warpgroup runs the role.
    pub(crate) fn role(&self, first: u32, count: u32) -> Result<(), CheckError> {
        self.count(0)?;
        self.res(&[])?;
        if self.d.regions.len() != 1 || !self.d.regions[0].args.is_empty() {
            return Err(self.err("takes one region without arguments"));
        }
        self.yields(0, &[], "gives")?;
        let threads = self.k.threads();
        if !threads.is_multiple_of(128) || self.k.block[1] != 1 || self.k.block[2] != 1 {
            return Err(self.err(format!(
                "warpgroup roles need a one-dimensional block of whole warpgroups (128 threads); the block is {:?}",
                self.k.block
            )));
        }
        let groups = threads / 128;
        let end = u64::from(first) + u64::from(count);
        if count == 0 || end > groups {
            return Err(self.err(format!(
                "warpgroups {first} .. {end}: the block has warpgroups 0 .. {groups}"
            )));
        }
        if count as u64 == groups {
            return Ok(());
        }
        let mut stack: Vec<OpId> = self.d.regions[0].ops.clone();
        while let Some(id) = stack.pop() {
            let Some(d) = self.k.op(id) else { continue };
            if matches!(d.kind, OpKind::Barrier | OpKind::ReduceBlock { .. }) {
                return Err(super::super::op_err(
                    self.k,
                    id,
                    format!(
                        "a block-wide barrier inside the role of warpgroups {first} .. {end} (of {groups}): the other warpgroups never reach it, and bar.sync 0 waits for every thread of the block"
                    ),
                ));
            }
            for r in &d.regions {
                stack.extend(r.ops.iter().copied());
            }
        }
        Ok(())
    }
}

impl Ctx<'_> {
    /// `tile.tma.load dst, map, mbar, coords…` (`load`) and `tile.tma.store map, src,
    /// coords…`: one signed coordinate per box dimension.
    pub(crate) fn tma(&self, load: bool) -> Result<(), CheckError> {
        let (at, first) = if load { (1, 3) } else { (0, 2) };
        let rank = match self.value_ty(at)? {
            Some(Type::TensorMap(m)) => m.box_dims.len(),
            _ => {
                return Err(self.err(format!(
                    "operand {at} is {}, not a tensor map",
                    self.describe(at)
                )))
            }
        };
        self.count(first + rank)?;
        for j in 0..first {
            if j != at {
                self.scalar(j, Ty::U32)?;
            }
        }
        for j in first..first + rank {
            self.scalar(j, Ty::S32)?;
        }
        self.res(&[])
    }

    /// `(addr, lbo, sbo: u32) -> u64` with a swizzle of 0, 32, 64 or 128 bytes.
    pub(crate) fn wgmma_desc(&self, swizzle: u32) -> Result<(), CheckError> {
        if !matches!(swizzle, 0 | 32 | 64 | 128) {
            return Err(self.err(format!(
                "swizzle = {swizzle}; a wgmma descriptor's swizzle is 0, 32, 64 or 128 bytes"
            )));
        }
        self.sig(&[Ty::U32; 3], &[Ty::U64])
    }

    /// `()`: `setmaxnreg` to `n` registers per thread, a multiple of 8 from 24 to 256, in a
    /// block of whole warpgroups.
    pub(crate) fn setmaxnreg(&self, n: u32) -> Result<(), CheckError> {
        if !(n.is_multiple_of(8) && (24..=256).contains(&n)) {
            return Err(self.err(format!(
                "n = {n}; setmaxnreg takes a register count that is a multiple of 8 from 24 to 256"
            )));
        }
        let threads = self.k.threads();
        if !threads.is_multiple_of(128) {
            return Err(self.err(format!(
                "setmaxnreg runs on warpgroups of 128 threads; the block has {threads}"
            )));
        }
        self.sig(&[], &[])
    }

    /// `(desc_a, desc_b: u64[, acc: n/2 × f32]) -> n/2 × f32`, `n` a multiple of 8 up to 256,
    /// `ab` bf16 or f16.
    pub(crate) fn wgmma(&self, n: u32, ab: Ty) -> Result<(), CheckError> {
        if !(n.is_multiple_of(8) && (8..=256).contains(&n)) {
            return Err(self.err(format!(
                "n = {n}; wgmma m64nNk16 takes N a multiple of 8 from 8 to 256"
            )));
        }
        if !matches!(ab, Ty::BF16 | Ty::F16) {
            return Err(self.err(format!(
                "wgmma.mma_async.{} takes bf16 or f16 operands",
                ab.name()
            )));
        }
        let threads = self.k.threads();
        if !threads.is_multiple_of(128) {
            return Err(self.err(format!(
                "wgmma runs on warpgroups of 128 threads; the block has {threads}"
            )));
        }
        let regs = (n / 2) as usize;
        let have = self.d.operands.len();
        if have != 2 && have != 2 + regs {
            return Err(self.err(format!(
                "takes 2 descriptors and optionally {regs} f32 accumulators, it has {have} operands"
            )));
        }
        for j in 0..2 {
            self.scalar(j, Ty::U64)?;
        }
        for j in 2..have {
            self.scalar(j, Ty::F32)?;
        }
        self.res(&vec![Ty::F32; regs])
    }
}
