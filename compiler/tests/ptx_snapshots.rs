//! The printed PTX of each hand-built kernel, compared with `tests/snapshots/NAME.TARGET.ptx`.
//! Re-bless with `TESSERA_BLESS=1 cargo test -p tessera-compiler --test ptx_snapshots`.

use std::path::PathBuf;
use tessera_compiler::target::{ptx, samples, MmaKind, Target};
use tessera_lang::SourceMap;

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
    let f = sources.add("samples.tsr", samples::SOURCE);
    let kernels = [
        samples::gelu_affine(f).unwrap(),
        samples::softmax_rows(f).unwrap(),
        samples::matmul_f32(f).unwrap(),
        samples::matmul_bf16(f).unwrap(),
        samples::mma_tile(f, MmaKind::M16n8k8Tf32).unwrap(),
    ];
    for k in &kernels {
        for t in [Target::Sm80, Target::Sm90] {
            let text = ptx::print(k, t, &sources).unwrap();
            // Printing is deterministic.
            assert_eq!(text, ptx::print(k, t, &sources).unwrap());
            check(&format!("{}.{}.ptx", k.name, t.name()), &text);
        }
    }
}
