//! The collectives between the devices of one process: buffers in memory, reductions in
//! fixed rank order.

use super::*;

/// Collectives between the devices of this process: buffers in memory, reductions in fixed
/// rank order.
pub struct Local;

/// The type a reduction accumulates in.
fn acc_dtype(d: DType) -> DType {
    match d {
        DType::F64 => DType::F64,
        d if d.is_float() => DType::F32,
        _ => DType::I64,
    }
}

/// The reduction of `group` in rank order, rounded once to the shards' dtype.
pub fn reduce_fixed(group: &[Tensor], op: RedOp) -> Result<Tensor> {
    let Some(first) = group.first() else {
        return Err(RuntimeError::runtime("a collective over no devices"));
    };
    let dt = first.dtype();
    if group.iter().any(Tensor::is_abstract) {
        return Tensor::abstract_tensor(first.shape(), dt);
    }
    if group.len() == 1 {
        return Ok(first.clone());
    }
    let acc = acc_dtype(dt);
    let bop = match op {
        RedOp::Sum => BinaryOp::Add,
        RedOp::Max => BinaryOp::Maximum,
        RedOp::Min => BinaryOp::Minimum,
    };
    let mut r = first.to(acc)?;
    for t in &group[1..] {
        r = binary(bop, &r, &t.to(acc)?)?;
    }
    r.to(dt)
}

/// Host bytes an all-to-all holds per (source, destination) pair of a group: the piece's tensor
/// handle, its shape and its buffer's header.
const ALL_TO_ALL_PIECE_BYTES: u128 = 512;

/// An all-to-all over `p` devices cuts `p²` pieces: bounded like a tensor (E0700), so that one
/// over a mesh of thousands of devices is an error instead of an abort (or hours of cutting).
pub(super) fn check_all_to_all(p: usize) -> Result<()> {
    let pieces = (p as u128) * (p as u128);
    let bytes = pieces * ALL_TO_ALL_PIECE_BYTES;
    let limit = crate::memory::max_bytes();
    if bytes > u128::from(limit) {
        return Err(RuntimeError::resource(format!(
            "an all-to-all over {p} devices cuts {pieces} pieces, {bytes} bytes of host state, over the limit of {limit} bytes"
        ))
        .with_help("use a smaller mesh axis, or raise TESSERA_MAX_BYTES"));
    }
    Ok(())
}

/// `t` cut along `dim` into `p` pieces as `torch.chunk` cuts it ([`shard_range`]; the last
/// pieces may be smaller or empty).
pub(crate) fn chunks(t: &Tensor, dim: usize, p: usize) -> Result<Vec<Tensor>> {
    let n = t.shape().get(dim).copied().unwrap_or(0);
    (0..p)
        .map(|i| {
            let (start, len) = shard_range(n, p, i);
            if t.is_abstract() {
                let mut s = t.shape().to_vec();
                s[dim] = len;
                Tensor::abstract_tensor(&s, t.dtype())
            } else {
                narrow(t, dim, start, len)
            }
        })
        .collect()
}

pub(crate) fn cat(parts: &[Tensor], dim: usize) -> Result<Tensor> {
    if parts.iter().any(Tensor::is_abstract) {
        let mut s = parts[0].shape().to_vec();
        s[dim] = parts.iter().map(|p| p.shape()[dim]).sum();
        return Tensor::abstract_tensor(&s, parts[0].dtype());
    }
    concat(parts, dim as isize)
}

impl Collectives for Local {
    fn name(&self) -> &'static str {
        "local"
    }
    fn all_reduce(&self, group: &[Tensor], op: RedOp) -> Result<Vec<Tensor>> {
        let r = reduce_fixed(group, op)?;
        Ok(vec![r; group.len()])
    }
    fn reduce_scatter(&self, group: &[Tensor], op: RedOp, dim: usize) -> Result<Vec<Tensor>> {
        let r = reduce_fixed(group, op)?;
        chunks(&r, dim, group.len())
    }
    fn all_gather(&self, group: &[Tensor], dim: usize) -> Result<Vec<Tensor>> {
        if group.is_empty() {
            return Ok(Vec::new());
        }
        let r = cat(group, dim)?;
        Ok(vec![r; group.len()])
    }
    fn all_to_all(&self, group: &[Tensor], split: usize, concat: usize) -> Result<Vec<Tensor>> {
        let p = group.len();
        let pieces = group
            .iter()
            .map(|t| chunks(t, split, p))
            .collect::<Result<Vec<_>>>()?;
        (0..p)
            .map(|j| {
                let mine: Vec<Tensor> = pieces.iter().map(|c| c[j].clone()).collect();
                cat(&mine, concat)
            })
            .collect()
    }
}
