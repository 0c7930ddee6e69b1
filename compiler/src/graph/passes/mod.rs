//! Graph IR passes, one file each. A pass is `fn run(&mut Graph, &PassCx) -> Fired`: it
//! rewrites in place and reports the rules that fired and the near misses; the driver in
//! [`super::pipeline`] verifies after each.

pub mod dce;
pub mod flash_attention;
pub mod fuse_elementwise;
pub mod fuse_epilogue;
pub mod fuse_epilogue_body;
pub mod fuse_multi_output;
pub mod fuse_reduce;

use super::{Graph, Op, Scalar, ValueId};

/// What a pass may consult.
#[derive(Clone, Debug, Default)]
pub struct PassCx {
    /// The most elementwise ops one fused group may hold (`None`: no limit).
    pub max_fused_ops: Option<usize>,
}

/// The scalar a value holds when it is a `const` of a number.
pub(crate) fn const_number(g: &Graph, v: ValueId) -> Option<f64> {
    match g.op(v) {
        Some(Op::Const {
            value: value @ (Scalar::Int(_) | Scalar::Float(_)),
        }) => Some(value.as_f64()),
        _ => None,
    }
}
