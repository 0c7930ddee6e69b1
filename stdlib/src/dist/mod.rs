//! The `dist` module (SPEC §7): device meshes, shard specs, sharded tensors, and operations
//! on them.
//!
//! - `dist.Mesh(axes, shape=None, devices=None)` (without a shape, the most balanced
//!   factorisation of the devices), `dist.ShardSpec(partition, mesh_axes)`;
//! - `dist.shard(t, spec, mesh=None)`: a tensor split over a mesh (or a sharded tensor
//!   resharded to another spec), `dist.gather(t)`: the full tensor;
//! - `dist.tensor(shape, dtype, layout=None, mesh=None)`: an abstract tensor (no data);
//! - `dist.all_reduce(t, axis, op="sum")`, `dist.reduce_scatter(t, axis, dim=0, op="sum")`,
//!   `dist.all_gather(t, axis)`: the collectives, called directly.
//!
//! The sharded tensors themselves and their operations are [`crate::tensor::sharded`]; here are
//! the `dist` module and the mesh programs built on sharded tensors: the planner, data-parallel
//! gradients, compiled kernels run per device and optimizer updates on a mesh.

use crate::session::Session;
use crate::tensor::sharded::exec::*;
use crate::tensor::sharded::*;
use crate::tensor::*;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;
use tessera_compiler::schedule::mesh as rules;
use tessera_lang::diag::{Code, Diagnostic};
use tessera_lang::eval::{Arg, CallArgs, Interp, Module, Value};
use tessera_lang::Span;
use tessera_runtime::mesh::{
    per_device, Comm, CommKind, Layout, Mesh, Program, RedOp, Sharded, Step,
};
use tessera_runtime::{self as rtm, BinaryOp, DType, Scalar, Tensor};

pub mod compiled;
mod grad;
mod module;
mod plan;
mod update;
pub use grad::{overlap_note, run_gradient, Buckets, Overlap, GRAD_BUCKET_BYTES};
pub use module::*;
pub use update::{whole_gradient, MeshUpdate};
