//! The Tile IR that `--dump tile` prints for a kernel, fed to `tessera lower`, gives the same
//! PTX as the kernel itself: every script of `tests/golden`, `tests/ir` and `examples` that
//! makes a kernel runs with `--dump tile --emit-ptx DIR`; each printed program is parsed,
//! checked and translated (`tessera::lower::lower_text`, what `tessera lower` runs) and the
//! PTX compared with the kernel's emitted file, byte for byte.
//!
//! Kinds not built as Tile IR programs yet print the older description form, which does not
//! parse; they are listed by name and must not be of a kind in [`PROGRAM_KINDS`].
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tessera::lower::{lower_text, Level};
use tessera_compiler::backend::ptx::Target;

/// Kernel kinds (the `_KIND_N` suffix of a kernel's name) built as Tile IR programs.
const PROGRAM_KINDS: &[&str] = &[
    "softmax",
    "layernorm",
    "rmsnorm",
    "reduce",
    "flash_attention",
    "elementwise",
    "copy",
    "matmul",
];

fn scripts(root: &Path) -> Vec<PathBuf> {
    tessera::golden::kernel_scripts(root)
}

/// The kernels of a `--dump tile` stream: name → the last text printed for it.
fn blocks(dump: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut cur: Option<(String, String)> = None;
    for line in dump.lines() {
        if let Some(rest) = line.strip_prefix("tile.kernel @") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
                .collect();
            cur = Some((name, String::new()));
        }
        if let Some((_, text)) = cur.as_mut() {
            text.push_str(line);
            text.push('\n');
            if line == "}" {
                if let Some((name, text)) = cur.take() {
                    out.insert(name, text);
                }
            }
        }
    }
    out
}

fn kind_of(name: &str) -> &str {
    let base = name.rsplit_once('_').map(|(b, _)| b).unwrap_or(name);
    PROGRAM_KINDS
        .iter()
        .find(|k| base.ends_with(&format!("_{k}")))
        .copied()
        .unwrap_or("other")
}

/// What one script's kernels gave: kernels checked, names in the old form, failures.
#[derive(Default)]
struct Found {
    checked: usize,
    old_form: Vec<String>,
    failures: Vec<String>,
}

/// Runs `script` with `--dump tile --emit-ptx` and lowers every dumped program again.
fn round_trip(exe: &Path, root: &Path, script: &Path, dir: &Path) -> Found {
    let mut found = Found::default();
    let _ = std::fs::create_dir_all(dir);
    let out = std::process::Command::new(exe)
        .current_dir(script.parent().unwrap_or(root))
        .env("TESSERA_CUDA", "off")
        .env("NO_COLOR", "1")
        .args(["run", "--device", "cpu", "--dump", "tile", "--emit-ptx"])
        .arg(dir)
        .arg(script.file_name().unwrap_or_default())
        .output()
        .expect("run tessera");
    let dump = String::from_utf8_lossy(&out.stderr);
    for (name, text) in blocks(&dump) {
        let Ok(ptx) = std::fs::read_to_string(dir.join(format!("{name}.ptx"))) else {
            continue;
        };
        if text.lines().next().is_some_and(|l| l.contains(") -> %")) {
            if kind_of(&name) != "other" {
                found
                    .failures
                    .push(format!("{name}: a program kind printed in the old form"));
            }
            found.old_form.push(name);
            continue;
        }
        let target = ptx
            .lines()
            .find_map(|l| l.strip_prefix(".target "))
            .and_then(Target::parse)
            .unwrap_or(Target::Sm90);
        found.checked += 1;
        match lower_text(&format!("{name}.tile"), &text, Level::Ptx, target) {
            Ok(p) if p == ptx => {}
            Ok(_) => found.failures.push(format!(
                "{}: {name}: the lowered PTX differs from the kernel's",
                script.display()
            )),
            Err((msg, _)) => found
                .failures
                .push(format!("{}: {name}: {msg}", script.display())),
        }
    }
    found
}

#[test]
fn dumped_tile_ir_lowers_to_the_same_ptx() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_tessera"));
    let tmp = std::env::temp_dir().join(format!("tessera-tile-roundtrip-{}", std::process::id()));
    let scripts = scripts(&root);
    let each = common::on_all_cores(&scripts, |i, script| {
        round_trip(&exe, &root, script, &tmp.join(i.to_string()))
    });
    let _ = std::fs::remove_dir_all(&tmp);
    let (mut checked, mut old_form, mut failures) = (0, vec![], vec![]);
    for f in each {
        checked += f.checked;
        old_form.extend(f.old_form);
        failures.extend(f.failures);
    }
    old_form.sort();
    old_form.dedup();
    println!(
        "{checked} kernels round-tripped; {} still in the old description form: {old_form:?}",
        old_form.len()
    );
    assert!(checked > 0, "no Tile IR program was dumped");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
