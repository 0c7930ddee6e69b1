//! `tessera check`: parses and resolves names without running anything.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

mod common;

use std::path::{Path, PathBuf};

fn check(path: &Path) -> (i32, String) {
    let r = common::tessera(&[Path::new("check"), path], &[]);
    (r.code, r.stderr)
}

fn script(name: &str, text: &str) -> PathBuf {
    let p = common::fresh_dir(&format!("check-{name}")).join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn an_undefined_name_is_reported_without_running() {
    // The print before it would run first; check runs nothing, so no output either way.
    let p = script(
        "undef.tsr",
        "print(\"ran\")\nx = 1\nprint(undefined_name + x)\n",
    );
    let (code, stderr) = check(&p);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("error[E0100]: name 'undefined_name' is not defined"),
        "{stderr}"
    );
    assert!(stderr.contains(":3:7"), "{stderr}");
    assert!(!stderr.contains("ran"), "{stderr}");
}

#[test]
fn an_unknown_module_member_is_reported_with_a_suggestion() {
    let p = script("member.tsr", "y = op.softmaxx(op.ones((2,)))\n");
    let (code, stderr) = check(&p);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("module 'op' has no attribute 'softmaxx'"),
        "{stderr}"
    );
    assert!(stderr.contains("did you mean `softmax`?"), "{stderr}");
}

#[test]
fn names_bound_anywhere_are_not_reported() {
    let text = "\
def f(a, b=2):
    return g(a) + b + later

def g(x):
    return [y * 2 for y in range(x)][0] if x > 0 else 0

later = 3
for i, (j, k) in [(1, (2, 3))]:
    total = i + j + k
op = 5
print(op.anything, f(1), total)
";
    let p = script("bound.tsr", text);
    let (code, stderr) = check(&p);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stderr, "");
}

#[test]
fn every_script_that_runs_cleanly_checks_cleanly() {
    // No false positives: each example and golden script whose run ends with status 0 (it has
    // no `.code` file) must pass `check`.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scripts = tessera::golden::discover(&[root.join("examples"), root.join("tests/golden")]);
    let mut checked = 0;
    for s in scripts {
        if s.with_extension("code").exists() {
            continue;
        }
        let (code, stderr) = check(&s);
        assert_eq!(code, 0, "{}: {stderr}", s.display());
        checked += 1;
    }
    assert!(checked > 50, "only {checked} scripts checked");
}

#[test]
fn a_name_read_inside_a_try_with_a_handler_is_not_reported() {
    // the script may expect that error and catch it; outside the `try`, or in a `try` with only
    // `finally`, the same read is reported
    let text = "try:\n    missing_a\nexcept Exception as e:\n    print(e.code)\n";
    let (code, stderr) = check(&script("try_caught.tsr", text));
    assert_eq!(code, 0, "{stderr}");
    let text = "try:\n    missing_b\nfinally:\n    print(1)\nmissing_c\n";
    let (code, stderr) = check(&script("try_finally.tsr", text));
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("name 'missing_b' is not defined"),
        "{stderr}"
    );
    assert!(
        stderr.contains("name 'missing_c' is not defined"),
        "{stderr}"
    );
}
