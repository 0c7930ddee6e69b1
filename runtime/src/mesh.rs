//! Device meshes, sharded tensors and collectives (SPEC §7).
//!
//! - [`Mesh`]: named axes, their sizes and the devices (rank `r` sits at the row-major
//!   coordinates of `r` over the axis sizes).
//! - [`Sharded`]: a tensor's global shape and dtype, its [`Layout`] over a mesh, and one shard
//!   per device in that device's own buffer (abstract shards for an abstract tensor: nothing is
//!   allocated, whatever the global size).
//! - [`per_device`]: runs a function once per device, one worker thread per device.
//! - [`Collectives`]: `all_reduce`, `reduce_scatter`, `all_gather`, `all_to_all` over the
//!   shards of one group of devices. [`Local`] reduces in fixed rank order, in fp32 for
//!   low-precision floats (fp64 for fp64, int64 for ints) and rounds once: the same bits on
//!   every run and thread count. An NCCL implementation is behind the `nccl` feature.

use crate::error::{Code, Result, RuntimeError};
use crate::ops::elementwise::{binary, BinaryOp};
use crate::ops::shape_ops::{concat, IndexItem};
use crate::{DType, Tensor};
pub use tessera_compiler::schedule::mesh::{
    after, shard_range, Comm, CommKind, Layout, MeshShape, Program, RedOp, Step,
};

mod local;
mod shards;
use local::check_all_to_all;
#[cfg(feature = "nccl")]
pub(crate) use local::{cat, chunks};
pub use local::{reduce_fixed, Local};
pub use shards::{AbstractShards, Shards};
#[cfg(feature = "nccl")]
pub mod nccl;

/// E0400: a sharding or mesh error.
pub fn mesh_error(message: impl Into<String>) -> RuntimeError {
    RuntimeError::new(Code::E0400, message)
}

/// A device mesh.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Mesh {
    pub shape: MeshShape,
    /// The device of each rank when not rank `r` on device `r` (kept only where given, so a
    /// mesh costs the same on any number of devices).
    devices: Option<Vec<usize>>,
}

/// The most balanced factorisation of `n` devices over `k` axes (SPEC §7): the largest
/// factor as small as possible, then the next, and so on, in non-increasing order (larger
/// factors to earlier axes). 72 over 3 axes is `[6, 4, 3]`; 8 over 2 is `[4, 2]`; a prime `p`
/// over 2 is `[p, 1]`. No axes: `[]`.
pub fn balanced_shape(n: usize, k: usize) -> Vec<usize> {
    // The lexicographically smallest non-increasing k-tuple of product n, each factor at most
    // `max`: the smallest first factor for which the rest exists, then the rest likewise.
    fn go(n: usize, k: usize, max: usize, divs: &[usize]) -> Option<Vec<usize>> {
        if k == 1 {
            return (n <= max).then(|| vec![n]);
        }
        for &f in divs {
            if f > max || f > n {
                break;
            }
            // the largest of k factors is at least the k-th root of their product
            if !n.is_multiple_of(f) || (f as u128).pow(k as u32) < n as u128 {
                continue;
            }
            if let Some(mut rest) = go(n / f, k - 1, f, divs) {
                rest.insert(0, f);
                return Some(rest);
            }
        }
        None
    }
    if k == 0 {
        return vec![];
    }
    let mut divs = Vec::new();
    let mut i = 1usize;
    while i.saturating_mul(i) <= n {
        if n.is_multiple_of(i) {
            divs.push(i);
            divs.push(n / i);
        }
        i += 1;
    }
    divs.sort_unstable();
    divs.dedup();
    go(n, k, n, &divs).unwrap_or_else(|| {
        let mut s = vec![1; k];
        s[0] = n;
        s
    })
}

/// E0700 when a mesh of `n` devices is over the host memory bound: the mesh's host state grows
/// with its size (device lists, one shard per device), bounded like a tensor, so a mesh of
/// 10^9 devices is E0700, not an abort.
pub fn check_mesh_size(n: usize) -> Result<()> {
    let bytes = (n as u128) * (std::mem::size_of::<usize>() as u128) * 4;
    let limit = crate::memory::max_bytes();
    if bytes > u128::from(limit) {
        return Err(RuntimeError::resource(format!(
            "a mesh of {n} devices needs {bytes} bytes of host state, over the limit of {limit} bytes"
        ))
        .with_help("raise TESSERA_MAX_BYTES, or use a smaller mesh"));
    }
    Ok(())
}

impl Mesh {
    /// E0400 when the axes and sizes differ in number, an axis repeats or is empty, or the
    /// product of the sizes is not the number of devices.
    pub fn new(axes: Vec<String>, shape: Vec<usize>, devices: Option<Vec<usize>>) -> Result<Mesh> {
        if axes.len() != shape.len() {
            return Err(mesh_error(format!(
                "mesh has {} axes but a shape of {} dimensions",
                axes.len(),
                shape.len()
            )));
        }
        for (i, a) in axes.iter().enumerate() {
            if axes[..i].contains(a) {
                return Err(mesh_error(format!("mesh axis '{a}' appears twice")));
            }
            if shape[i] == 0 {
                return Err(mesh_error(format!("mesh axis '{a}' has size 0")));
            }
        }
        let n = shape
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| mesh_error("mesh shape is too large"))?;
        check_mesh_size(n)?;
        let Some(devices) = devices else {
            return Ok(Mesh {
                shape: MeshShape { axes, shape },
                devices: None,
            });
        };
        if devices.len() != n {
            let prod: Vec<String> = axes
                .iter()
                .zip(&shape)
                .map(|(a, s)| format!("{a}={s}"))
                .collect();
            return Err(mesh_error(format!(
                "mesh shape ({}) has {n} positions but {} devices were given",
                prod.join(" × "),
                devices.len()
            )));
        }
        let mut sorted = devices.clone();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(mesh_error(format!(
                "device {} appears twice in the mesh",
                w[0]
            )));
        }
        let identity = devices.iter().enumerate().all(|(i, &d)| i == d);
        Ok(Mesh {
            shape: MeshShape { axes, shape },
            devices: (!identity).then_some(devices),
        })
    }

    pub fn size(&self) -> usize {
        self.shape.size()
    }

    /// The device of rank `r`.
    pub fn device(&self, r: usize) -> usize {
        self.devices.as_ref().map_or(r, |d| d[r])
    }

    /// The device of every rank, in rank order.
    pub fn devices(&self) -> Vec<usize> {
        match &self.devices {
            Some(d) => d.clone(),
            None => (0..self.size()).collect(),
        }
    }

    /// The index of axis `name`, or E0400 naming the known axes.
    pub fn axis(&self, name: &str) -> Result<usize> {
        self.shape.axis_index(name).ok_or_else(|| {
            mesh_error(format!(
                "unknown mesh axis '{name}' (the mesh has axes {})",
                self.shape
                    .axes
                    .iter()
                    .map(|a| format!("'{a}'"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
    }

    /// The coordinates of rank `r`.
    pub fn coords(&self, r: usize) -> Vec<usize> {
        let mut c = vec![0; self.shape.shape.len()];
        let mut x = r;
        for i in (0..c.len()).rev() {
            let n = self.shape.shape[i];
            c[i] = x % n;
            x /= n;
        }
        c
    }

    pub fn rank(&self, coords: &[usize]) -> usize {
        coords
            .iter()
            .zip(&self.shape.shape)
            .fold(0, |acc, (&c, &n)| acc * n + c)
    }

    /// The groups of ranks that differ only along `axis`, each in axis order.
    pub fn groups(&self, axis: usize) -> Vec<Vec<usize>> {
        let mut out = Vec::new();
        for r in 0..self.size() {
            let c = self.coords(r);
            if c[axis] != 0 {
                continue;
            }
            out.push(
                (0..self.shape.shape[axis])
                    .map(|i| {
                        let mut c = c.clone();
                        c[axis] = i;
                        self.rank(&c)
                    })
                    .collect(),
            );
        }
        out
    }
}

/// `t[start:start+len]` along `dim`.
pub fn narrow(t: &Tensor, dim: usize, start: usize, len: usize) -> Result<Tensor> {
    if start == 0 && len == t.shape().get(dim).copied().unwrap_or(0) {
        return Ok(t.clone());
    }
    let mut items = vec![
        IndexItem::Slice {
            start: None,
            stop: None,
            step: None
        };
        dim
    ];
    items.push(IndexItem::Slice {
        start: Some(start as i64),
        stop: Some((start + len) as i64),
        step: None,
    });
    t.index(&items)
}

/// Checks that `layout` can split a tensor of `shape` over `mesh`: E0400 naming the dimension
/// or the axis otherwise. A dimension its axis does not divide is split as `torch.chunk`
/// does ([`shard_range`]).
pub fn check_layout(shape: &[usize], layout: &Layout, mesh: &Mesh) -> Result<()> {
    if layout.dims.len() != shape.len() {
        return Err(mesh_error(format!(
            "the layout has {} dimensions but the tensor has {}",
            layout.dims.len(),
            shape.len()
        )));
    }
    for (i, d) in layout.dims.iter().enumerate() {
        let Some(a) = d else { continue };
        if layout.dims[..i].contains(d) {
            return Err(mesh_error(format!(
                "mesh axis '{}' splits two dimensions",
                mesh.shape.axes[*a]
            )));
        }
    }
    Ok(())
}

/// Most devices a mesh holds data on in this process: each device's shard is its own buffer
/// and each op runs once per device on the local worker threads, so a concrete tensor over
/// more devices is refused up front (E0400) rather than run for minutes. Abstract tensors
/// (shapes only) have no such bound: their ops cost the same on any mesh size.
pub const MAX_LOCAL_DEVICES: usize = 1 << 17;

/// E0400 when a mesh of `n` devices is over [`MAX_LOCAL_DEVICES`] for data.
pub fn check_local_devices(n: usize) -> Result<()> {
    if n > MAX_LOCAL_DEVICES {
        return Err(mesh_error(format!(
            "a mesh of {n} devices is too large to hold data in one process (at most {MAX_LOCAL_DEVICES} devices: each device's shard is its own buffer, and each op runs once per device)"
        ))
        .with_help("declare the tensor with dist.tensor(...) to plan or profile a mesh this large (shapes only), or run across processes with `tessera launch`"));
    }
    Ok(())
}

/// A tensor laid out over a mesh: one shard per device.
#[derive(Clone, Debug)]
pub struct Sharded {
    pub mesh: std::sync::Arc<Mesh>,
    pub layout: Layout,
    pub shape: Vec<usize>,
    pub dtype: DType,
    /// Indexed by rank.
    pub shards: Shards,
}

impl Sharded {
    pub fn is_abstract(&self) -> bool {
        self.shards.is_abstract()
    }

    /// An abstract sharded tensor whose shards are in `shard_dtype` (a split contraction's
    /// partial sums are in its accumulator's dtype), nothing allocated: O(1) in the number of
    /// devices.
    pub fn abstract_in(
        shape: &[usize],
        dtype: DType,
        shard_dtype: DType,
        layout: Layout,
        mesh: std::sync::Arc<Mesh>,
    ) -> Result<Sharded> {
        let shards = Shards::Abstract(Box::new(AbstractShards::new(
            shape,
            shard_dtype,
            &layout,
            &mesh.shape,
        )?));
        Ok(Sharded {
            mesh,
            layout,
            shape: shape.to_vec(),
            dtype,
            shards,
        })
    }

    /// The dtype the shards are in (a partial sum's may be wider than the tensor's).
    pub fn shard_dtype(&self) -> DType {
        match &self.shards {
            Shards::Abstract(a) => a.dtype(),
            Shards::Each(v) => v.first().map_or(self.dtype, Tensor::dtype),
        }
    }

    /// The largest shard a device holds (every device's when the splits are even).
    pub fn local_shape(&self) -> Vec<usize> {
        self.layout.local_shape(&self.shape, &self.mesh.shape)
    }

    /// The slice of the global tensor rank `r` holds: per dimension, its start and length.
    pub fn ranges_of(&self, r: usize) -> Vec<(usize, usize)> {
        self.layout
            .shard_ranges(&self.shape, &self.mesh.shape, &self.mesh.coords(r))
    }

    /// Splits `t` (replicated on every device) to `layout`: each device keeps its slice. Devices
    /// that hold the same slice share its buffer (tensors are immutable).
    pub fn split(t: &Tensor, layout: Layout, mesh: std::sync::Arc<Mesh>) -> Result<Sharded> {
        check_layout(t.shape(), &layout, &mesh)?;
        if t.is_abstract() {
            return Sharded::abstract_of(t.shape(), t.dtype(), layout, mesh);
        }
        check_local_devices(mesh.size())?;
        // One shard per distinct block: devices that hold the same block share it.
        let mut cache: std::collections::HashMap<Vec<usize>, Tensor> =
            std::collections::HashMap::new();
        let mut shards = Vec::with_capacity(mesh.size());
        for r in 0..mesh.size() {
            let c = mesh.coords(r);
            let key: Vec<usize> = layout.dims.iter().map(|d| d.map_or(0, |a| c[a])).collect();
            if let Some(s) = cache.get(&key) {
                shards.push(s.clone());
                continue;
            }
            let ranges = layout.shard_ranges(t.shape(), &mesh.shape, &c);
            let mut s = t.clone();
            for (d, &(start, len)) in ranges.iter().enumerate() {
                if layout.dims[d].is_some() {
                    s = narrow(&s, d, start, len)?;
                }
            }
            cache.insert(key, s.clone());
            shards.push(s);
        }
        Ok(Sharded {
            mesh,
            layout,
            shape: t.shape().to_vec(),
            dtype: t.dtype(),
            shards: shards.into(),
        })
    }

    /// An abstract sharded tensor: abstract shards of each device's shape, nothing
    /// allocated.
    pub fn abstract_of(
        shape: &[usize],
        dtype: DType,
        layout: Layout,
        mesh: std::sync::Arc<Mesh>,
    ) -> Result<Sharded> {
        check_layout(shape, &layout, &mesh)?;
        crate::memory::checked_numel(shape)?;
        Sharded::abstract_in(shape, dtype, dtype, layout, mesh)
    }

    /// Slices each device's shard further to `to` (which only adds splits to the current
    /// layout): no communication.
    pub fn slice_to(&self, to: &Layout) -> Result<Sharded> {
        if *to == self.layout {
            return Ok(self.clone());
        }
        let layout = Layout {
            dims: to.dims.clone(),
            partial: self.layout.partial,
        };
        if let Shards::Abstract(a) = &self.shards {
            return Sharded::abstract_in(
                &self.shape,
                self.dtype,
                a.dtype(),
                layout,
                self.mesh.clone(),
            );
        }
        let shards = (0..self.mesh.size())
            .map(|r| {
                let c = self.mesh.coords(r);
                let ranges = to.shard_ranges(&self.shape, &self.mesh.shape, &c);
                let mut s = self.shards[r].clone();
                if s.is_abstract() {
                    let mut local = s.shape().to_vec();
                    for (d, (cur, new)) in self.layout.dims.iter().zip(&to.dims).enumerate() {
                        if cur.is_none() && new.is_some() {
                            local[d] = ranges[d].1;
                        }
                    }
                    return Tensor::abstract_tensor(&local, s.dtype());
                }
                for (d, (cur, new)) in self.layout.dims.iter().zip(&to.dims).enumerate() {
                    if cur.is_none() && new.is_some() {
                        s = narrow(&s, d, ranges[d].0, ranges[d].1)?;
                    }
                }
                Ok(s)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Sharded {
            mesh: self.mesh.clone(),
            layout,
            shape: self.shape.clone(),
            dtype: self.dtype,
            shards: shards.into(),
        })
    }

    /// Applies one collective over `c.axis`, group by group.
    pub fn apply(&self, c: Comm, coll: &dyn Collectives) -> Result<Sharded> {
        if let Shards::Abstract(a) = &self.shards {
            // shapes only: each device's shard follows from the new layout
            return Sharded::abstract_in(
                &self.shape,
                self.dtype,
                a.dtype(),
                after(&self.layout, c),
                self.mesh.clone(),
            );
        }
        let mut shards: Vec<Tensor> = self.shards.iter().cloned().collect();
        let groups = self.mesh.groups(c.axis);
        if let (CommKind::AllToAll { .. }, Some(g)) = (c.kind, groups.first()) {
            check_all_to_all(g.len())?;
        }
        for g in groups {
            let ins: Vec<Tensor> = g.iter().map(|&r| self.shards[r].clone()).collect();
            let outs = match c.kind {
                CommKind::AllReduce(op) => coll.all_reduce(&ins, op)?,
                CommKind::ReduceScatter(op, d) => coll.reduce_scatter(&ins, op, d)?,
                CommKind::AllGather(d) => coll.all_gather(&ins, d)?,
                CommKind::AllToAll { split, concat } => coll.all_to_all(&ins, split, concat)?,
            };
            for (r, t) in g.iter().zip(outs) {
                shards[*r] = t;
            }
        }
        Ok(Sharded {
            mesh: self.mesh.clone(),
            layout: after(&self.layout, c),
            shape: self.shape.clone(),
            dtype: self.dtype,
            shards: shards.into(),
        })
    }

    /// The full tensor (a partial tensor is reduced first). Abstract: an abstract tensor.
    pub fn gather(&self, coll: &dyn Collectives) -> Result<Tensor> {
        let mut s = self.clone();
        if let Some(p) = s.layout.partial {
            s = s.apply(
                Comm {
                    kind: CommKind::AllReduce(RedOp::Sum),
                    axis: p,
                },
                coll,
            )?;
        }
        if s.is_abstract() {
            return Tensor::abstract_tensor(&s.shape, s.dtype);
        }
        let split: Vec<(usize, usize)> = s
            .layout
            .dims
            .iter()
            .enumerate()
            .filter_map(|(d, a)| a.map(|a| (d, a)))
            .collect();
        let mut coords = vec![0; s.mesh.shape.shape.len()];
        s.assemble(&split, 0, &mut coords)
    }

    fn assemble(
        &self,
        split: &[(usize, usize)],
        level: usize,
        coords: &mut Vec<usize>,
    ) -> Result<Tensor> {
        let Some(&(d, a)) = split.get(level) else {
            return Ok(self.shards[self.mesh.rank(coords)].clone());
        };
        let parts = (0..self.mesh.shape.shape[a])
            .map(|i| {
                coords[a] = i;
                self.assemble(split, level + 1, coords)
            })
            .collect::<Result<Vec<_>>>()?;
        coords[a] = 0;
        concat(&parts, d as isize)
    }
}

/// Most worker threads [`per_device`] runs devices on.
pub const MAX_WORKERS: usize = 64;

/// Runs `f(rank)` for every device on a bounded pool of worker threads (the machine's
/// parallelism, at most [`MAX_WORKERS`]; the calling thread is one of them), each taking the
/// next rank until none is left; the results in rank order. A mesh of any size runs on the
/// same few threads. One device (or `sequential`) runs on the calling thread.
pub fn per_device<T: Send>(
    n: usize,
    sequential: bool,
    f: impl Fn(usize) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    if n <= 1 || sequential {
        return (0..n).map(f).collect();
    }
    let workers = std::thread::available_parallelism()
        .map_or(4, |p| p.get())
        .clamp(2, MAX_WORKERS)
        .min(n);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut mine: Vec<(usize, Result<T>)> = Vec::new();
        loop {
            let r = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if r >= n {
                return mine;
            }
            mine.push((r, f(r)));
        }
    };
    let mut done: Vec<(usize, Result<T>)> = std::thread::scope(|s| {
        // A thread that cannot be started leaves its share to the others.
        let handles: Vec<_> = (1..workers)
            .filter_map(|_| std::thread::Builder::new().spawn_scoped(s, work).ok())
            .collect();
        let mut all = work();
        for h in handles {
            match h.join() {
                Ok(mine) => all.extend(mine),
                Err(_) => all.push((n, Err(RuntimeError::runtime("a device worker failed")))),
            }
        }
        all
    });
    done.sort_by_key(|(r, _)| *r);
    if done.len() != n || done.iter().enumerate().any(|(i, (r, _))| i != *r) {
        if let Some(failed) = done.into_iter().find_map(|(_, x)| x.err()) {
            return Err(failed);
        }
        return Err(RuntimeError::runtime("a device worker failed"));
    }
    done.into_iter().map(|(_, x)| x).collect()
}

/// Collectives over the shards of one group of devices, given in rank order; each returns one
/// tensor per member.
pub trait Collectives {
    fn name(&self) -> &'static str;
    /// Every member gets the reduction of all the shards.
    fn all_reduce(&self, group: &[Tensor], op: RedOp) -> Result<Vec<Tensor>>;
    /// Member `i` gets slice `i` (along `dim`) of the reduction.
    fn reduce_scatter(&self, group: &[Tensor], op: RedOp, dim: usize) -> Result<Vec<Tensor>>;
    /// Every member gets the shards concatenated along `dim`.
    fn all_gather(&self, group: &[Tensor], dim: usize) -> Result<Vec<Tensor>>;
    /// Member `j` gets chunk `j` (along `split`) of every member's shard, concatenated along
    /// `concat` in rank order.
    fn all_to_all(&self, group: &[Tensor], split: usize, concat: usize) -> Result<Vec<Tensor>>;
}

#[cfg(test)]
mod tests;
