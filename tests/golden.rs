//! Golden script tests: every `.tsr` under `tests/golden/`, `tests/ir/`, `tests/hostile/` and `examples/` runs through the same
//! runner as `tessera test`. `TESSERA_BLESS=1 cargo test --test golden` rewrites expectations.

use libtest_mimic::{Arguments, Failed, Trial};
use std::path::{Path, PathBuf};

fn main() {
    let args = Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_tessera"));
    let bless = std::env::var_os("TESSERA_BLESS").is_some_and(|v| v == "1");
    let cases = tessera::golden::discover(&[
        root.join("tests/golden"),
        root.join("tests/ir"),
        root.join("tests/hostile"),
        root.join("examples"),
    ]);
    assert!(
        !cases.is_empty(),
        "no golden cases found under tests/golden and examples"
    );
    let hostile = root.join("tests/hostile");
    let mut trials: Vec<Trial> = vec![Trial::test("tests/hostile: the set", move || {
        hostile_set(&hostile)
    })];
    trials.extend(cases.into_iter().map(|path| {
        let name = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .display()
            .to_string();
        let exe = exe.clone();
        Trial::test(name, move || {
            match tessera::golden::run_case(&exe, &path, bless, tessera::golden::TIMEOUT) {
                tessera::golden::Outcome::Passed | tessera::golden::Outcome::Blessed => Ok(()),
                tessera::golden::Outcome::Failed(report) => Err(Failed::from(report)),
            }
        })
    }));
    libtest_mimic::run(&args, trials).exit();
}

/// The hostile set (issue 15): at least 60 scripts, each with its expected exit status and
/// stderr; a failing one reports an error code, one that exits 0 reports a warning, and none
/// shows a panic or a backtrace.
fn hostile_set(dir: &Path) -> Result<(), Failed> {
    let scripts = tessera::golden::discover(&[dir.to_path_buf()]);
    if scripts.len() < 60 {
        return Err(format!("{} hostile scripts, want at least 60", scripts.len()).into());
    }
    for tsr in scripts {
        let code = std::fs::read_to_string(tsr.with_extension("code"))
            .map_err(|e| format!("{}: no .code file: {e}", tsr.display()))?;
        let stderr = std::fs::read_to_string(tsr.with_extension("stderr"))
            .map_err(|e| format!("{}: no .stderr file: {e}", tsr.display()))?;
        let status: i32 = code
            .trim()
            .parse()
            .map_err(|_| format!("{}: bad .code {code:?}", tsr.display()))?;
        let has_code = stderr.contains("error[E");
        let ok = match status {
            0 => stderr.contains("warning"),
            _ => has_code,
        };
        if !ok || stderr.contains("panicked") || stderr.contains("RUST_BACKTRACE") {
            return Err(format!(
                "{}: exit {status} needs an error code (or, at 0, a warning) and no panic:\n{stderr}",
                tsr.display()
            )
            .into());
        }
    }
    Ok(())
}
