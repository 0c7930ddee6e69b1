//! Golden script tests: every `.tsr` under `tests/golden/`, `tests/ir/` and `examples/` runs through the same
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
        root.join("examples"),
    ]);
    assert!(
        !cases.is_empty(),
        "no golden cases found under tests/golden and examples"
    );
    let trials = cases
        .into_iter()
        .map(|path| {
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
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
