//! A sharded tensor's shards: one tensor per device, or the shapes of abstract ones.

use super::*;

/// The shards of a sharded tensor, indexed by rank: one tensor per device, or, for an
/// abstract tensor, each device's shape computed from the layout (one abstract tensor per
/// distinct shard shape, whatever the number of devices).
#[derive(Clone, Debug)]
pub enum Shards {
    Each(Vec<Tensor>),
    Abstract(Box<AbstractShards>),
}

/// The abstract shards of a tensor of shape `global` laid out as `layout` over `mesh`.
#[derive(Clone, Debug)]
pub struct AbstractShards {
    global: Vec<usize>,
    layout: Layout,
    mesh: MeshShape,
    /// Every distinct shard shape, as an abstract tensor in the shards' dtype.
    blocks: Vec<Tensor>,
}

impl AbstractShards {
    /// E0700 when a shard is too large to describe (never happens when the global shape is
    /// valid).
    pub fn new(global: &[usize], dtype: DType, layout: &Layout, mesh: &MeshShape) -> Result<Self> {
        // per dimension, its distinct shard lengths: a `torch.chunk` split has full shards,
        // at most one smaller one, then empty ones
        let per_dim: Vec<Vec<usize>> = global
            .iter()
            .zip(&layout.dims)
            .map(|(&n, d)| match d {
                Some(a) => {
                    let k = mesh.shape[*a].max(1);
                    let c = n.div_ceil(k);
                    let f = n.checked_div(c).unwrap_or(0);
                    let mut v: Vec<usize> = [0, f, f + 1]
                        .into_iter()
                        .filter(|&i| i < k)
                        .map(|i| shard_range(n, k, i).1)
                        .collect();
                    v.sort_unstable();
                    v.dedup();
                    v
                }
                None => vec![n],
            })
            .collect();
        let mut shapes: Vec<Vec<usize>> = vec![vec![]];
        for lens in &per_dim {
            shapes = shapes
                .iter()
                .flat_map(|s| {
                    lens.iter().map(move |&l| {
                        let mut s = s.clone();
                        s.push(l);
                        s
                    })
                })
                .collect();
        }
        let blocks = shapes
            .iter()
            .map(|s| Tensor::abstract_tensor(s, dtype))
            .collect::<Result<Vec<_>>>()?;
        Ok(AbstractShards {
            global: global.to_vec(),
            layout: layout.clone(),
            mesh: mesh.clone(),
            blocks,
        })
    }

    fn coords(&self, r: usize) -> Vec<usize> {
        let mut c = vec![0; self.mesh.shape.len()];
        let mut x = r;
        for i in (0..c.len()).rev() {
            let n = self.mesh.shape[i].max(1);
            c[i] = x % n;
            x /= n;
        }
        c
    }

    fn at(&self, r: usize) -> &Tensor {
        let shape: Vec<usize> = self
            .layout
            .shard_ranges(&self.global, &self.mesh, &self.coords(r))
            .iter()
            .map(|x| x.1)
            .collect();
        self.blocks
            .iter()
            .find(|b| b.shape() == shape.as_slice())
            .unwrap_or(&self.blocks[0])
    }

    /// The shards' dtype.
    pub fn dtype(&self) -> DType {
        self.blocks[0].dtype()
    }
}

impl Shards {
    /// The number of devices.
    pub fn len(&self) -> usize {
        match self {
            Shards::Each(v) => v.len(),
            Shards::Abstract(a) => a.mesh.size(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn first(&self) -> Option<&Tensor> {
        (!self.is_empty()).then(|| &self[0])
    }
    /// Every device's shard in rank order (one per device: for data, or where each is asked
    /// for).
    pub fn iter(&self) -> impl Iterator<Item = &Tensor> + '_ {
        (0..self.len()).map(move |r| &self[r])
    }
    pub fn is_abstract(&self) -> bool {
        match self {
            Shards::Each(v) => v.iter().any(Tensor::is_abstract),
            Shards::Abstract(_) => true,
        }
    }
}

impl std::ops::Index<usize> for Shards {
    type Output = Tensor;
    fn index(&self, r: usize) -> &Tensor {
        match self {
            Shards::Each(v) => &v[r],
            Shards::Abstract(a) => a.at(r),
        }
    }
}

impl From<Vec<Tensor>> for Shards {
    fn from(v: Vec<Tensor>) -> Shards {
        Shards::Each(v)
    }
}
