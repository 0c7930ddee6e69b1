//! Every kernel of every golden script and example that makes kernels (`@op.kernel`, a
//! gradient, an optimizer update: `tessera::golden::kernel_scripts`) is compiled for
//! sm_80 and sm_90 (`tessera run --emit-ptx`) and assembled by ptxas: 0 errors, 0 spill bytes.
//! Needs ptxas (`scripts/install-ptxas`, or `TESSERA_PTXAS`); fails with that message if absent.

use std::path::{Path, PathBuf};
use std::process::Command;
use tessera_compiler::target::ptxas::{find_ptxas, run_ptxas};
use tessera_compiler::target::Target;

fn scripts() -> Vec<PathBuf> {
    tessera::golden::kernel_scripts(Path::new(env!("CARGO_MANIFEST_DIR")))
}

#[test]
fn every_kernel_assembles_without_spills() {
    assert!(
        find_ptxas().is_some(),
        "ptxas not found: run scripts/install-ptxas (or set TESSERA_PTXAS to a ptxas binary)"
    );
    let out = std::env::temp_dir().join(format!("tessera-lowering-ptxas-{}", std::process::id()));
    let mut failures = vec![];
    let mut count = 0;
    for target in [Target::Sm80, Target::Sm90] {
        for script in scripts() {
            let stem = script.file_stem().and_then(|s| s.to_str()).unwrap_or("x");
            let dir = out.join(target.name()).join(stem);
            let _ = Command::new(env!("CARGO_BIN_EXE_tessera"))
                .current_dir(script.parent().unwrap_or(Path::new(".")))
                .args(["run", "--target", target.name(), "--emit-ptx"])
                .arg(&dir)
                .arg(&script)
                .env("NO_COLOR", "1")
                .output()
                .expect("run tessera");
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut files: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
            files.sort();
            for f in files {
                let ptx = std::fs::read_to_string(&f).unwrap_or_default();
                count += 1;
                match run_ptxas(&ptx, target) {
                    Ok(r) => {
                        eprintln!(
                            "{} {}: {} registers, {} spill stores, {} spill loads, {} bytes smem",
                            target.name(),
                            f.display(),
                            r.registers,
                            r.spill_stores,
                            r.spill_loads,
                            r.shared_bytes
                        );
                        if r.spill_stores + r.spill_loads > 0 || r.stack_frame > 0 {
                            failures.push(format!("{}: spills\n{}", f.display(), r.log));
                        }
                    }
                    Err(e) => failures.push(format!("{}: {e}", f.display())),
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&out);
    assert!(count > 0, "no kernel was compiled");
    assert!(
        failures.is_empty(),
        "ptxas failures:\n{}",
        failures.join("\n")
    );
}
