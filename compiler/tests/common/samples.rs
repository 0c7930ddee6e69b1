//! The sample kernels, as Tile IR text in `compiler/tests/data/NAME.tile`: parsed, checked
//! and translated to Target IR. Their `loc(...)` spans point into `samples.tsr` (a synthetic
//! file the parser adds to the `SourceMap` that PTX printing and error messages use).
//! Shared by the compiler's and the runtime's tests (`#[path]`-included).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code
#![allow(dead_code)]

use std::path::PathBuf;
use tessera_compiler::backend::ptx::from_tile;
use tessera_compiler::backend::ptx::{Kernel, MmaKind};
use tessera_compiler::tile::{check, text};
use tessera_lang::SourceMap;

/// `compiler/tests/data/NAME.tile`.
pub fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../compiler/tests/data")
        .join(format!("{name}.tile"))
}

/// Parses, checks and translates sample `name`; its spans are added to `sources`.
pub fn load(name: &str, sources: &mut SourceMap) -> Kernel {
    let p = path(name);
    let src =
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()));
    let k = text::parse(&src, sources)
        .unwrap_or_else(|e| panic!("{}:{}:{}: {}", p.display(), e.line, e.col, e.message));
    let checked = check::check(&k).unwrap_or_else(|e| panic!("{}: {}", p.display(), e.message));
    from_tile::translate(checked)
        .unwrap_or_else(|e| panic!("{}: {e:?}", p.display()))
        .kernel
}

/// Sample `name` with its own `SourceMap`.
pub fn sample(name: &str) -> (Kernel, SourceMap) {
    let mut s = SourceMap::new();
    let k = load(name, &mut s);
    (k, s)
}

/// The one-warp `mma.sync` tile sample for `kind`.
pub fn mma_tile(kind: MmaKind) -> &'static str {
    match kind {
        MmaKind::M16n8k16Bf16 => "mma_tile_bf16",
        MmaKind::M16n8k16F16 => "mma_tile_f16",
        MmaKind::M16n8k8Tf32 => "mma_tile_tf32",
    }
}
