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
//!
//! # Layers
//!
//! A module imports only modules below it: `dtype`, `scalar`, `arch` < `graph` < `schedule` <
//! `tile` < `kernels` < `backend` < `pipeline` < `cost` < `tune` (`tests/module_layers.rs`
//! fails on an import up the layers or a cycle). What two levels share lives in the lower one:
//! the kernel [`graph::Kind`] a fusion group becomes ([`graph::kind_of`], re-exported by
//! `schedule`), the conv cost model the spectral rewrite consults
//! (`graph::passes::spectral_conv::cost`, re-exported as [`cost::conv`]), the launch overhead
//! ([`arch::LAUNCH_US`]), the templates' own error ([`kernels::Error`], which
//! [`backend::Error`] takes in). One edge up remains, `schedule::lower` reading the kernel
//! templates' limits, and is listed in the test as known.

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
