//! `tessera explain CODE` (SPEC error codes): every code has an explanation; each
//! explanation's example fails with that code and its fix runs.

mod common;

use common::{fresh_dir, tessera};
use tessera::explain::{find, CODES};
use tessera_lang::diag::Code;

#[test]
fn every_code_is_explained_once() {
    for c in Code::ALL {
        let e = find(c.as_str()).unwrap_or_else(|| panic!("{} has no explanation", c.as_str()));
        assert!(!e.text.is_empty() && !e.title.is_empty(), "{}", e.code);
    }
    assert_eq!(CODES.len(), Code::ALL.len());
    assert!(find("e0300").is_some() && find("0300").is_some());
}

#[test]
fn each_example_produces_its_code_and_each_fix_runs() {
    let dir = fresh_dir("explain");
    for e in CODES {
        let bad = dir.join(format!("{}.tsr", e.code));
        std::fs::write(&bad, e.example).expect("write the example");
        // without a GPU: the E0800 example asks for cuda
        let env = [("TESSERA_CUDA", "off")];
        let r = tessera(&["run".as_ref(), bad.as_os_str()], &env);
        // syntax errors (E000x) exit 2, the others 1 (SPEC §1)
        let want = if e.code.starts_with("E000") { 2 } else { 1 };
        assert_eq!(r.code, want, "{} example exit code: {}", e.code, r.stderr);
        assert!(
            r.stderr.contains(&format!("error[{}]", e.code)),
            "{} example:\n{}",
            e.code,
            r.stderr
        );
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
        let good = dir.join(format!("{}_fixed.tsr", e.code));
        std::fs::write(&good, e.fix).expect("write the fix");
        let r = tessera(&["run".as_ref(), good.as_os_str()], &env);
        assert_eq!(r.code, 0, "{} fix: {}", e.code, r.stderr);
        assert!(!r.stdout.is_empty(), "{} fix prints nothing", e.code);
    }
}

#[test]
fn the_command_prints_an_explanation_or_the_list() {
    let r = tessera(&["explain", "E0300"], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r
        .stdout
        .starts_with("E0300: invalid schedule for the target"));
    assert!(r.stdout.contains("This script fails with E0300:"));
    assert!(r.stdout.contains("schedule.tile((128, 128, 32))"));
    let r = tessera(&["explain"], &[]);
    assert_eq!(r.code, 0);
    assert_eq!(r.stdout.lines().count(), 1 + CODES.len());
    let r = tessera(&["explain", "E9999"], &[]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("unknown error code 'E9999'") && r.stderr.contains("E0800"));
}
