//! Op definitions: one per op family, each in its own file, holding everything about its
//! ops: the shape and dtype rule, the attributes Graph IR prints, the derivative, the kernel
//! kind, the cost, the CPU evaluation, the sharding rule and the help text. Every concern
//! dispatches through [`def`]; an op [`def`] does not know yet is handled by the older
//! `match` of each concern (`infer`, `print`, `autodiff`, `schedule`, `cost`).
//!
//! | family | file | ops |
//! | --- | --- | --- |
//! | row functions | [`rows`] | `softmax`, `logsumexp` |
//! | norms | [`norms`] | `layernorm`, `rmsnorm` |
//! | elementwise | [`elementwise`] | `Unary` (exp, neg, …), `Binary` (add, lt, …), `where`, `cast` |
//! | reductions | [`reduce`] | `sum`, `mean`, `max`, `min` |
//! | matrix product | [`matmul`] | `matmul` (with its epilogue, prologue, `accum`, `tile_shape`) |
//! | copies | [`copies`] | `transpose`, `reshape`, `broadcast`, `concat`, `slice`, `take`, `scatter_add` |

pub mod copies;
pub mod elementwise;
pub mod matmul;
pub mod norms;
pub mod reduce;
pub mod rows;

use super::infer::TypeError;
use super::{Graph, Op, TensorType, ValueId};
use crate::graph::Kind;

/// How a sharded operand of an op runs on a mesh.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ShardRule {
    /// The op reads whole slices along `axis` (of the input): a tensor sharded along another
    /// axis runs locally, one sharded along `axis` is gathered along it first.
    WholeAxis(usize),
    /// [`ShardRule::WholeAxis`] of the last axis.
    WholeLast,
    /// Each result element reads the operand elements at its own index: operands laid out
    /// alike run locally, each device computing its piece.
    Elementwise,
    /// A product (operands of at least 2 dimensions): the mesh's matmul layout rule places
    /// both operands and the result (stdlib `dist::rules::matmul`); 1-d operands are gathered.
    Matmul,
    /// A copy: a transpose of a sharded tensor permutes its layout, a reshape or broadcast
    /// that keeps the sharded shape keeps it; the others gather first.
    Copy,
    /// A reduction along `axis` (`None`: all of them): a tensor sharded along another axis
    /// runs locally; along a reduced axis `partial` ones (sum, mean) leave each device's
    /// partial result to be summed, the others gather first.
    Reduce { axis: Option<usize>, partial: bool },
}

/// What an op's printed attributes refer to: another value by its printed name (`%3`), and
/// the span of a fused step (printed in the op's `loc(fused[...])`).
pub trait AttrPrinter {
    fn value(&self, v: ValueId) -> String;
    fn span(&mut self, s: tessera_lang::Span);
}

/// Everything the compiler and the runtime know about one family of Graph IR ops.
pub trait OpDef: Sync {
    /// The name Graph IR prints and `op.<name>` binds.
    fn name(&self, op: &Op) -> &'static str;
    /// The result type (the verifier's rule; the eager form and the tracer run the same rule
    /// through the family's shape function). `declared` is the type the op carries, for the
    /// ops whose attributes live in the type (a cast's dtype).
    fn infer(&self, g: &Graph, op: &Op, declared: &TensorType) -> Result<TensorType, TypeError>;
    /// The attributes Graph IR prints after the operands (`axis = 1`), naming other values
    /// and the spans of fused steps through `p`.
    fn attrs(&self, g: &Graph, op: &Op, p: &mut dyn AttrPrinter) -> Vec<String>;
    /// The cotangents of the operands (one per [`Op::operands`]) given the result `y` and its
    /// cotangent `dy`; `Err(None)`: no derivative.
    fn vjp(
        &self,
        g: &mut Graph,
        op: &Op,
        y: ValueId,
        dy: ValueId,
    ) -> Result<Vec<Option<ValueId>>, Option<TypeError>>;
    /// The kernel kind a group rooted at this op compiles to (`None`: glue, no kernel).
    fn kernel_kind(&self, op: &Op) -> Option<Kind>;
    /// Arithmetic per input element (the cost model's roofline).
    fn flops_per_elem(&self, op: &Op) -> f64;
    /// How the op runs on a sharded operand.
    fn shard_rule(&self, op: &Op) -> ShardRule;
    /// The length of the dimension one result element reads (the crosscheck's tolerance).
    fn reduced_len(&self, g: &Graph, op: &Op) -> u64;
}

/// The definition of `op`'s family, if it has one.
/// The pattern of every op [`def`] answers: the older per-concern `match`es (`infer`, `print`,
/// `kind_of`, `Op::name`) name it once in the arm they never reach, instead of listing the
/// variants again. A family migrated here adds its variants to this list and to [`def`].
macro_rules! defined_ops {
    () => {
        Op::Row { .. }
            | Op::LayerNorm { .. }
            | Op::RmsNorm { .. }
            | Op::Unary { .. }
            | Op::Binary { .. }
            | Op::Where { .. }
            | Op::Cast { .. }
            | Op::Reduce { .. }
            | Op::Matmul { .. }
            | Op::Transpose { .. }
            | Op::Reshape { .. }
            | Op::Broadcast { .. }
            | Op::Concat { .. }
            | Op::Slice { .. }
            | Op::Take { .. }
            | Op::ScatterAdd { .. }
    };
}
pub(crate) use defined_ops;

pub fn def(op: &Op) -> Option<&'static dyn OpDef> {
    match op {
        Op::Row { .. } => Some(&rows::RowFamily),
        Op::LayerNorm { .. } | Op::RmsNorm { .. } => Some(&norms::NormFamily),
        Op::Unary { .. } | Op::Binary { .. } | Op::Where { .. } | Op::Cast { .. } => {
            Some(&elementwise::ElementwiseFamily)
        }
        Op::Reduce { .. } => Some(&reduce::ReduceFamily),
        Op::Matmul { .. } => Some(&matmul::MatmulFamily),
        Op::Transpose { .. }
        | Op::Reshape { .. }
        | Op::Broadcast { .. }
        | Op::Concat { .. }
        | Op::Slice { .. }
        | Op::Take { .. }
        | Op::ScatterAdd { .. } => Some(&copies::CopyFamily),
        _ => None,
    }
}
