//! The compiler: Graph IR → Schedule IR → Tile IR → PTX (through Target IR) or SPIR-V
//! (ARCHITECTURE.md). Each level is one data type with a printer and a verifier; the folders
//! follow the stages:
//!
//! | module | what |
//! | --- | --- |
//! | [`graph`] | Graph IR: ops, shape rules, rewrites, derivatives |
//! | [`schedule`] | Schedule IR and Graph → Schedule ([`schedule::lower`]) |
//! | [`tile`] | Tile IR: the typed SSA block program, its builder, text form and checker |
//! | [`kernels`] | Schedule → Tile: the kernel templates |
//! | [`backend`] | Tile → PTX ([`backend::ptx`], through Target IR) and Tile → SPIR-V ([`backend::spirv`]) |
//! | [`scalar`] | the scalar vocabulary Tile IR and both back ends share |
//! | [`arch`] | targets and their limits |
//! | [`cost`], [`tune`] | the cost model and the autotuner's search and cache |
//! | [`pipeline`] | the stages chained |

// `Diagnostic` is the one error type shared with host code; it is returned by value on purpose.

pub mod arch;
pub mod backend;
pub mod cost;
pub mod dtype;
pub mod graph;
pub mod kernels;
pub mod pipeline;
pub mod scalar;
pub mod schedule;
pub mod tile;
pub mod tune;
