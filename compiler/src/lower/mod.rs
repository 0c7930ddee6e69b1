//! Lowering between the IR levels, one small module per step:
//! [`to_schedule`] (Graph → Schedule), [`to_tile`] (Schedule → Tile),
//! [`to_target`] (Tile → Target). [`crate::pipeline`] chains them. Generators of some
//! kernel kinds live in their own modules, both levels side by side: [`copy`] (transpose,
//! broadcast, slice, concat) and [`reduce_axis`] (reductions over a middle axis).

pub mod copy;
mod emit;
pub mod kernels;
mod math;
pub mod reduce_axis;
pub mod tile_target;
pub mod to_schedule;
pub mod to_target;
pub mod to_tile;
