//! What the fusion passes' unit tests share: fp32 types, and a pass run after the
//! elementwise chains (DCE around it, the graph verified after).

use super::{dce, fuse_elementwise, PassCx};
use crate::graph::verify::verify;
use crate::graph::{DType, Fired, Graph, TensorType};

pub fn f32t(shape: &[usize]) -> TensorType {
    TensorType::new(shape.to_vec(), DType::F32)
}

/// `elementwise_chain`, then `pass` with the group limit `limit`; returns what `pass` fired.
pub fn after_chains(
    g: &mut Graph,
    limit: Option<usize>,
    pass: fn(&mut Graph, &PassCx) -> Fired,
) -> Fired {
    let cx = PassCx {
        max_fused_ops: limit,
        ..PassCx::default()
    };
    fuse_elementwise::run(g, &cx);
    dce::run(g, &cx);
    let f = pass(g, &cx);
    dce::run(g, &cx);
    verify(g).unwrap();
    f
}
