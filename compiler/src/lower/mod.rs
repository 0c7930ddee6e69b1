//! Lowering between the IR levels, one small module per step:
//! [`to_schedule`] (Graph → Schedule), [`to_tile`] (Schedule → Tile),
//! [`to_target`] (Tile → Target). [`crate::pipeline`] chains them.

pub mod to_schedule;
pub mod to_target;
pub mod to_tile;
