//! Compiletest-style tests of `tessera lower`: each hand-written `tests/lower/NAME.tile` is
//! lowered to PTX for sm_90 and compared with `NAME.ptx`, or, when lowering fails, its
//! diagnostic with `NAME.stderr` (one of the two must exist). `TESSERA_BLESS=1` rewrites the
//! expected files from the actual output.

use std::path::PathBuf;
use tessera::lower::{lower_text, Level};
use tessera_compiler::target::Target;

#[test]
fn hand_written_tile_ir_lowers_as_expected() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/lower");
    let bless = std::env::var_os("TESSERA_BLESS").is_some_and(|v| v == "1");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/lower")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "tile"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .tile files in {}", dir.display());
    let mut failures = vec![];
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read .tile");
        let name = f
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let (actual, ext, other) = match lower_text(&name, &text, Level::Ptx, Target::Sm90) {
            Ok(ptx) => (ptx, "ptx", "stderr"),
            Err((msg, _)) => (msg, "stderr", "ptx"),
        };
        let expected_path = f.with_extension(ext);
        if bless {
            std::fs::write(&expected_path, &actual).expect("bless");
            let _ = std::fs::remove_file(f.with_extension(other));
            continue;
        }
        match std::fs::read_to_string(&expected_path) {
            Ok(exp) if exp == actual => {}
            Ok(exp) => failures.push(format!(
                "{name}: output differs from {}:\n--- expected\n{}\n--- actual\n{}",
                expected_path.display(),
                exp.lines().take(40).collect::<Vec<_>>().join("\n"),
                actual.lines().take(40).collect::<Vec<_>>().join("\n")
            )),
            Err(_) => failures.push(format!(
                "{name}: no {} (lowering gave {ext}); bless with TESSERA_BLESS=1",
                expected_path.display()
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
