//! [`Collectives`] on NCCL (cudarc's `nccl` feature, libraries loaded at run time): one rank
//! per GPU of this process, one communicator per GPU over all of them.
//!
//! Shards travel as fp32 (fp64 for fp64): each is copied to its GPU, the collective runs in
//! one NCCL group, and the results are copied back and rounded once to the shard dtype. A
//! group must span every GPU of the communicator (sub-group communicators are not made here:
//! a mesh axis smaller than the mesh is E0800).

use super::{cat, chunks, Collectives, RedOp};
use crate::error::{Code, Result, RuntimeError};
use crate::{DType, Tensor};
use cudarc::driver::CudaContext;
use cudarc::nccl::safe::{group_end, group_start, Comm, ReduceOp};

fn dev_err(what: &str, e: impl std::fmt::Debug) -> RuntimeError {
    RuntimeError::new(Code::E0800, format!("nccl: {what}: {e:?}"))
}

/// NCCL communicators, one per GPU.
pub struct Nccl {
    comms: Vec<Comm>,
}

impl Nccl {
    /// Communicators over GPUs `0..n`; E0800 when the driver or NCCL is missing.
    pub fn new(n: usize) -> Result<Nccl> {
        let streams = (0..n)
            .map(|i| {
                CudaContext::new(i)
                    .map(|c| c.default_stream())
                    .map_err(|e| dev_err("no CUDA device", e))
            })
            .collect::<Result<Vec<_>>>()?;
        let comms = Comm::from_devices(streams).map_err(|e| dev_err("init", e))?;
        Ok(Nccl { comms })
    }

    fn check(&self, group: &[Tensor]) -> Result<()> {
        if group.len() != self.comms.len() {
            return Err(RuntimeError::new(
                Code::E0800,
                format!(
                    "nccl: a collective over {} of the {} GPUs needs a sub-communicator",
                    group.len(),
                    self.comms.len()
                ),
            ));
        }
        if group.iter().any(Tensor::is_abstract) {
            return Err(RuntimeError::abstract_read("nccl collective"));
        }
        Ok(())
    }

    /// Runs `f` for each rank inside one NCCL group, on fp32 copies of the shards.
    fn run_f32(
        &self,
        group: &[Tensor],
        out_len: usize,
        f: impl Fn(
            &Comm,
            &cudarc::driver::CudaSlice<f32>,
            &mut cudarc::driver::CudaSlice<f32>,
        ) -> std::result::Result<(), cudarc::nccl::result::NcclError>,
    ) -> Result<Vec<Vec<f32>>> {
        self.check(group)?;
        let mut bufs = Vec::with_capacity(group.len());
        for (c, t) in self.comms.iter().zip(group) {
            let host = t.to_f32_vec()?;
            let s = c.stream();
            let src = s.clone_htod(&host).map_err(|e| dev_err("copy", e))?;
            let dst = s
                .alloc_zeros::<f32>(out_len)
                .map_err(|e| dev_err("alloc", e))?;
            bufs.push((src, dst));
        }
        group_start().map_err(|e| dev_err("group", e))?;
        for (c, (src, dst)) in self.comms.iter().zip(bufs.iter_mut()) {
            f(c, src, dst).map_err(|e| dev_err("collective", e))?;
        }
        group_end().map_err(|e| dev_err("group", e))?;
        self.comms
            .iter()
            .zip(&bufs)
            .map(|(c, (_, dst))| {
                c.stream()
                    .clone_dtoh(dst)
                    .map_err(|e| dev_err("copy back", e))
            })
            .collect()
    }
}

fn nccl_op(op: RedOp) -> ReduceOp {
    match op {
        RedOp::Sum => ReduceOp::Sum,
        RedOp::Max => ReduceOp::Max,
        RedOp::Min => ReduceOp::Min,
    }
}

fn back(v: Vec<f32>, shape: &[usize], dt: DType) -> Result<Tensor> {
    Tensor::from_f32(shape, v, dt)
}

impl Collectives for Nccl {
    fn name(&self) -> &'static str {
        "nccl"
    }
    fn all_reduce(&self, group: &[Tensor], op: RedOp) -> Result<Vec<Tensor>> {
        let Some(first) = group.first() else {
            return Ok(Vec::new());
        };
        let o = nccl_op(op);
        let outs = self.run_f32(group, first.numel(), |c, s, d| {
            c.all_reduce(s, d, &o).map(|_| ())
        })?;
        outs.into_iter()
            .map(|v| back(v, first.shape(), first.dtype()))
            .collect()
    }
    fn reduce_scatter(&self, group: &[Tensor], op: RedOp, dim: usize) -> Result<Vec<Tensor>> {
        // NCCL scatters contiguous blocks: reduce everywhere, then keep this rank's slice.
        let full = self.all_reduce(group, op)?;
        full.iter()
            .enumerate()
            .map(|(i, t)| Ok(chunks(t, dim, group.len())?.swap_remove(i)))
            .collect()
    }
    fn all_gather(&self, group: &[Tensor], dim: usize) -> Result<Vec<Tensor>> {
        let Some(first) = group.first() else {
            return Ok(Vec::new());
        };
        let p = group.len();
        // NCCL gathers along the slowest dimension: gather whole shards, then reassemble.
        let outs = self.run_f32(group, first.numel() * p, |c, s, d| {
            c.all_gather(s, d).map(|_| ())
        })?;
        outs.into_iter()
            .map(|v| {
                let n = first.numel();
                let parts = (0..p)
                    .map(|i| back(v[i * n..(i + 1) * n].to_vec(), first.shape(), first.dtype()))
                    .collect::<Result<Vec<_>>>()?;
                cat(&parts, dim)
            })
            .collect()
    }
    fn all_to_all(&self, group: &[Tensor], split: usize, concat: usize) -> Result<Vec<Tensor>> {
        // Built from all_gather: every rank keeps its chunk of every member's shard.
        let p = group.len();
        let gathered = self.all_gather(group, 0)?;
        gathered
            .iter()
            .enumerate()
            .map(|(j, g)| {
                let members = chunks(g, 0, p)?;
                let mine = members
                    .iter()
                    .map(|m| Ok(chunks(m, split, p)?.swap_remove(j)))
                    .collect::<Result<Vec<_>>>()?;
                cat(&mine, concat)
            })
            .collect()
    }
}
