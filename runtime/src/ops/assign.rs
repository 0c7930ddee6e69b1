//! Item assignment on host tensors: `x[index] = v` writes the elements `x[index]` reads.
//!
//! A selection is the flat offsets of its elements, as an int64 tensor of the selection's
//! shape: [`Tensor::index_offsets`] gives them for basic indexing, and the evaluator applies
//! NumPy's advanced indexing (an integer gather, a boolean mask) to that tensor exactly as it
//! does to values, so reads and writes select the same elements. [`Tensor::assign_at`] then
//! writes through the offsets.

use super::shape_ops::{index_view, materialise, IndexItem, View};
use crate::dtype::DType;
use crate::error::{Result, RuntimeError};
use crate::memory;
use crate::shape::{broadcast_strides, fmt_shape};
use crate::storage::Storage;
use crate::tensor::Tensor;

/// Writes `src[i]` at `dst[offsets[i]]` for storages of the same variant.
macro_rules! scatter {
    ($dst:expr, $src:expr, $offs:expr; $($v:ident),*) => {
        match ($dst, $src) {
            $((Storage::$v(d), Storage::$v(s)) => {
                for (&o, &x) in $offs.iter().zip(s.iter()) {
                    d[o as usize] = x;
                }
                Ok(())
            })*
            _ => Err(RuntimeError::runtime(
                "assignment: the value's storage does not match the tensor's dtype",
            )),
        }
    };
}

impl Tensor {
    /// The flat (row-major) offsets of the elements `self.index(items)` selects, as an int64
    /// tensor of the selection's shape. Only the shape is read, so an abstract tensor has
    /// offsets too.
    pub fn index_offsets(&self, items: &[IndexItem]) -> Result<Tensor> {
        let v = index_view(self.shape(), items)?;
        let n = memory::check_shape_alloc(&v.shape, DType::I64)?;
        let nd = v.shape.len();
        let mut out = Vec::with_capacity(n);
        let mut idx = vec![0usize; nd];
        for _ in 0..n {
            let off = idx
                .iter()
                .zip(&v.strides)
                .fold(v.offset, |o, (&i, &s)| o + i as isize * s);
            out.push(off as i64);
            for k in (0..nd).rev() {
                idx[k] += 1;
                if idx[k] < v.shape[k] {
                    break;
                }
                idx[k] = 0;
            }
        }
        Ok(Tensor::from_storage(v.shape, DType::I64, Storage::I64(out)))
    }

    /// Writes `values` at the flat `offsets` (from [`Tensor::index_offsets`], possibly gathered
    /// or masked): the values broadcast to the offsets' shape as NumPy's assignment does
    /// (leading size-1 dimensions of the value dropped) and are cast to this tensor's dtype as
    /// [`Tensor::cast`] casts. A repeated offset takes the last value written. Storage shared
    /// with other tensors is copied first, so they keep their values.
    pub fn assign_at(&mut self, offsets: &Tensor, values: &Tensor) -> Result<()> {
        let sel = offsets.shape().to_vec();
        let mut vshape = values.shape();
        while vshape.len() > sel.len() && vshape[0] == 1 {
            vshape = &vshape[1..];
        }
        let fits = vshape.len() <= sel.len()
            && vshape
                .iter()
                .rev()
                .zip(sel.iter().rev())
                .all(|(&a, &b)| a == b || a == 1);
        if !fits {
            return Err(RuntimeError::shape(format!(
                "cannot assign a value of shape {} to a selection of shape {}",
                fmt_shape(values.shape()),
                fmt_shape(&sel)
            )));
        }
        if self.is_abstract() {
            self.storage_mut("item assignment")?;
        }
        let shaped = values.with_shape(vshape.to_vec()).cast(self.dtype())?;
        let view = View {
            offset: 0,
            strides: broadcast_strides(vshape, &sel)
                .into_iter()
                .map(|s| s as isize)
                .collect(),
            shape: sel,
        };
        let vals = materialise(&shaped, &view, "item assignment")?;
        let offs = match offsets.storage("item assignment")? {
            Storage::I64(o) => o,
            _ => {
                return Err(RuntimeError::runtime(
                    "assignment: the offsets must be an int64 tensor",
                ))
            }
        };
        let numel = self.numel();
        if offs.iter().any(|&o| o < 0 || o as usize >= numel) {
            return Err(RuntimeError::runtime(
                "assignment: an offset lies outside the tensor",
            ));
        }
        let src = vals.storage("item assignment")?;
        let dst = self.storage_mut("item assignment")?;
        scatter!(dst, src, offs; F64, F32, F16, BF16, F8, I64, I32, I8, Bool, C64, C128)
    }
}
