//! The compiler: Graph IR → Schedule IR → Tile IR → Target IR → PTX (ARCHITECTURE.md).
//! Each level is one data type with a printer and a verifier; lowering between levels is a
//! separate small module.

// `Diagnostic` is the one error type shared with host code; it is returned by value on purpose.

pub mod cost;
pub mod dtype;
pub mod graph;
pub mod lower;
pub mod pipeline;
pub mod schedule;
pub mod target;
pub mod tile;
pub mod tune;
