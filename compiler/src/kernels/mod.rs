//! Schedule → Tile: the kernel templates. [`lower`] turns a scheduled kernel into its
//! [`crate::tile::TileKernel`] (the kind and its parameters, or the reason it has none);
//! [`build`] makes the Tile IR program of each kind, from the shared building blocks in
//! [`blocks`] (and [`epilogue`] for the matmuls), one module per kind. [`copy_map`] describes
//! the copy kernels' gathers and [`reduce_axis`] the reductions over a middle axis.

pub mod attention;
pub mod attention_grad;
pub mod attention_mma;
pub mod axis;
pub mod blocks;
pub mod complex;
pub mod conv;
pub mod conv_mma;
pub mod copy;
pub mod copy_map;
pub mod elementwise;
pub mod epilogue;
pub mod fft;
pub(crate) mod index;
pub mod lower;
pub mod matmul_fma;
pub mod matmul_mma;
pub mod prologue;
pub mod reduce_axis;
pub mod rows;
pub mod take;
pub mod values;

use crate::graph::{DType, Graph, Op};
use crate::tile::build::Builder;
use crate::tile::ir::{Kernel, ParamRole, Type, Value};
use crate::tile::{AttnPart, Shape, TileKernel};

/// Why a kernel template built no Tile IR program. The back ends' error carries it on
/// (`backend::Error::NotLowered`), so the pipeline reports both alike.
#[derive(Clone, Debug, PartialEq)]
pub enum Error {
    /// Not supported yet (the caller falls back): the reason.
    NotLowered(String),
}

pub type R<T> = Result<T, Error>;

pub fn no<T>(why: impl Into<String>) -> R<T> {
    Err(Error::NotLowered(why.into()))
}

/// The Tile IR program of a kernel.
pub fn build(g: &Graph, tk: &TileKernel) -> R<Kernel> {
    let complex = tk.ty.dtype.is_complex()
        || tk
            .inputs
            .iter()
            .any(|v| g.ty(*v).is_some_and(|t| t.dtype.is_complex()));
    // the complex kernels: FFTs and products, the complex elementwise ops, and copies (which
    // move (re, im) pairs as they are)
    let complex_kernel = matches!(
        tk.shape,
        Shape::Fft(_) | Shape::SpectralMul { .. } | Shape::Gather { .. }
    ) || matches!(g.op(tk.root), Some(Op::Complex { .. }));
    if complex && !complex_kernel {
        return no("complex dtypes (c64, c128)");
    }
    match &tk.shape {
        Shape::Elementwise { n, vector, .. }
            if matches!(g.op(tk.root), Some(Op::Complex { .. })) =>
        {
            complex::build(g, tk, *n, *vector)
        }
        Shape::Fft(d) => fft::fft(g, tk, d),
        &Shape::SpectralMul {
            batch,
            cin,
            cout,
            groups,
            bins,
            wide,
        } => fft::spectral_mul(tk, [batch, cin, cout, groups, bins], wide),
        Shape::RowExp {
            out,
            rows,
            cols,
            row_block,
            ..
        } => rows::exp_rows(g, tk, *out, *rows, *cols, *row_block),
        Shape::Rows {
            op,
            rows,
            cols,
            row_block,
            ..
        } => rows::rows(g, tk, *op, *rows, *cols, *row_block),
        Shape::ReduceAxis { op, len, inner, .. } => {
            axis::build(g, tk, axis::AxisOp::Reduce(*op), *len, *inner)
        }
        Shape::ExpAxis {
            out, len, inner, ..
        } => axis::build(g, tk, axis::AxisOp::Exp(*out), *len, *inner),
        Shape::FlashAttention {
            sq,
            sk,
            dq,
            causal,
            scale,
            mma: Some(kind),
            part: AttnPart::Out,
            ..
        } => attention_mma::build(g, tk, *sq, *sk, *dq, *causal, *scale, *kind),
        Shape::FlashAttention {
            sq,
            sk,
            dq,
            dv,
            causal,
            scale,
            bm,
            bn,
            part: AttnPart::Grad(wrt),
            mma: None,
            bcast: None,
            ..
        } => attention_grad::build(g, tk, *wrt, *sq, *sk, *dq, *dv, *causal, *scale, *bm, *bn),
        Shape::FlashAttention {
            part: AttnPart::Grad(_),
            ..
        } => no("an attention gradient of broadcast operands or on tensor cores"),
        Shape::FlashAttention { mma: Some(_), .. } => {
            no("an attention log-sum-exp on tensor cores")
        }
        Shape::FlashAttention {
            sq,
            sk,
            dq,
            dv,
            causal,
            scale,
            bm,
            bn,
            bcast,
            part,
            ..
        } => attention::build(
            g,
            tk,
            *sq,
            *sk,
            *dq,
            *dv,
            *causal,
            *scale,
            *bm,
            *bn,
            bcast.as_ref(),
            *part == AttnPart::Lse,
        ),
        Shape::Elementwise { n, vector, tile } => {
            elementwise::elementwise(g, tk, *n, *vector, *tile)
        }
        Shape::Conv(d) => match &d.mma {
            Some(m) => conv_mma::build(g, tk, d, m),
            None => conv::build(g, tk, d),
        },
        Shape::Take {
            outer,
            n,
            k,
            inner,
            scatter,
            tile,
        } => take::build(g, tk, [*outer, *n, *k, *inner], *scatter, *tile),
        Shape::Gather {
            n,
            vector,
            dims,
            sources,
            tile,
        } => copy::gather(g, tk, *n, *vector, dims, sources, *tile),
        Shape::MatmulFma {
            m,
            n,
            k,
            tile,
            stages,
            async_copy,
            batch,
        } => matmul_fma::matmul_fma(g, tk, [*m, *n, *k], *tile, *stages, *async_copy, *batch),
        Shape::MatmulMma {
            m,
            n,
            k,
            tile,
            warp,
            stages,
            kind,
            async_copy,
            batch,
        } => matmul_mma::matmul_mma(
            g,
            tk,
            [*m, *n, *k],
            *tile,
            *warp,
            *stages,
            *kind,
            *async_copy,
            *batch,
        ),
    }
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
