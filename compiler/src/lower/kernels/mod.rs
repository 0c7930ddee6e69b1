//! Schedule → Tile: the Tile IR program of each kernel kind, built from the shared building
//! blocks in [`blocks`], one module per kind. A kind not listed in [`build`] is still
//! generated directly as Target IR by [`super::to_target`].

pub mod blocks;
pub mod epilogue;
pub mod matmul_fma;
pub mod matmul_mma;
pub mod rows;

use super::to_target::Error;
use crate::graph::{DType, Graph};
use crate::tile::build::Builder;
use crate::tile::ir::{Kernel, ParamRole, Type, Value};
use crate::tile::{Shape, TileKernel};

pub type R<T> = Result<T, Error>;

pub fn no<T>(why: impl Into<String>) -> R<T> {
    Err(Error::NotLowered(why.into()))
}

/// The Tile IR program of a kernel, for the kinds built as Tile IR (None: not yet).
pub fn build(g: &Graph, tk: &TileKernel) -> Option<R<Kernel>> {
    Some(match &tk.shape {
        Shape::RowSoftmax { rows, cols, .. } => rows::softmax(g, tk, *rows, *cols),
        Shape::Rows { op, rows, cols, .. } => rows::rows(g, tk, *op, *rows, *cols),
        Shape::MatmulFma {
            m,
            n,
            k,
            tile,
            stages,
            batch,
        } => matmul_fma::matmul_fma(g, tk, [*m, *n, *k], *tile, *stages, *batch),
        Shape::MatmulMma {
            m,
            n,
            k,
            tile,
            warp,
            stages,
            kind,
            batch,
        } => matmul_mma::matmul_mma(g, tk, [*m, *n, *k], *tile, *warp, *stages, *kind, *batch),
        _ => return None,
    })
}

/// The buffer parameters of a kernel: one global view per input (named by `names`, in
/// order), then the output.
pub struct ParamSet {
    pub inputs: Vec<Value>,
    pub dtypes: Vec<DType>,
    pub out: Value,
    pub out_dtype: DType,
}

impl ParamSet {
    pub fn new(
        b: &mut Builder,
        g: &Graph,
        tk: &TileKernel,
        names: &[&str],
        out: &str,
    ) -> R<ParamSet> {
        if names.len() != tk.inputs.len() {
            return no(format!(
                "a kernel of {} inputs where {} were expected",
                tk.inputs.len(),
                names.len()
            ));
        }
        let mut inputs = vec![];
        let mut dtypes = vec![];
        for (&v, name) in tk.inputs.iter().zip(names) {
            let d = match g.ty(v) {
                Some(t) => t.dtype,
                None => return no("an input without a type"),
            };
            inputs.push(b.param(*name, Type::Global(d), ParamRole::Input));
            dtypes.push(d);
        }
        let out_dtype = tk.ty.dtype;
        let out = b.param(out, Type::Global(out_dtype), ParamRole::Output);
        Ok(ParamSet {
            inputs,
            dtypes,
            out,
            out_dtype,
        })
    }
}
