//! Lowering between the IR levels, one small module per step:
//! [`to_schedule`] (Graph → Schedule), [`to_tile`] (Schedule → Tile),
//! [`to_target`] (Tile → Target). [`crate::pipeline`] chains them. The kinds built as Tile
//! IR programs are in [`kernels`] (translated by [`tile_target`]); [`copy`] describes the
//! copy kernels (transpose, broadcast, slice, concat) for Schedule → Tile, and
//! [`reduce_axis`] generates reductions over a middle axis at both levels.

pub mod copy;
pub mod kernels;
mod math;
pub mod reduce_axis;
pub mod tile_spirv;
pub mod tile_target;
pub mod to_schedule;
pub mod to_target;
pub mod to_tile;
