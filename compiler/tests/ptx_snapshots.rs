//! The printed PTX of each sample kernel (Tile IR text in `tests/data/`), compared with
//! `tests/snapshots/NAME.TARGET.ptx`.
//! Re-bless with `TESSERA_BLESS=1 cargo test -p tessera-compiler --test ptx_snapshots`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use std::path::PathBuf;
use tessera_compiler::backend::ptx::{print as ptx, MmaKind, Target};
use tessera_lang::SourceMap;

#[path = "common/samples.rs"]
mod samples;

fn check(name: &str, text: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var_os("TESSERA_BLESS").is_some() {
        std::fs::write(&path, text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "missing snapshot {}: run with TESSERA_BLESS=1",
            path.display()
        )
    });
    if want != text {
        let first = want
            .lines()
            .zip(text.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(want.lines().count().min(text.lines().count()));
        panic!(
            "{name} changed (first difference at line {}); re-bless with TESSERA_BLESS=1\n--- new ---\n{text}",
            first + 1
        );
    }
}

#[test]
fn sample_ptx_snapshots() {
    let mut sources = SourceMap::new();
    let kernels = [
        "gelu_affine",
        "softmax_rows",
        "matmul_f32",
        "matmul_bf16",
        samples::mma_tile(MmaKind::M16n8k8Tf32),
    ]
    .map(|name| samples::load(name, &mut sources));
    for k in &kernels {
        for t in [Target::Sm80, Target::Sm90] {
            let text = ptx::print(k, t, &sources).unwrap();
            // Printing is deterministic.
            assert_eq!(text, ptx::print(k, t, &sources).unwrap());
            check(&format!("{}.{}.ptx", k.name, t.name()), &text);
        }
    }
}
