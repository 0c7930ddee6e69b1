//! The autotune cache and `--profile` through the `tessera` binary: a second run of a tuned
//! script ranks and measures nothing; a corrupt cache is a warning and stays as it was;
//! `TESSERA_AUTOTUNE=off` reads and writes no cache; processes tuning at once lose no entries;
//! `tessera run --profile` prints the profile table at exit.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "tessera-autotune-cli-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn script(dir: &Path, n: usize) -> PathBuf {
    let p = dir.join(format!("tune{n}.tsr"));
    std::fs::write(
        &p,
        format!(
            "@op.autotune(cache=\"shared\")\n\
             def mm(A, B):\n    return A @ B\n\
             A = op.rand(({n}, 64), dtype=\"bf16\")\n\
             B = op.rand((64, 64), dtype=\"bf16\")\n\
             C = mm(A, B)\n\
             print(autotune.report())\n"
        ),
    )
    .unwrap();
    p
}

fn run(cache: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tessera"));
    c.arg("run")
        .args(args)
        .env("TESSERA_CACHE_DIR", cache)
        .env("NO_COLOR", "1");
    c.env_remove("TESSERA_AUTOTUNE");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The `from` and `ranked` cells of the first row of the report's session table.
fn first_row(stdout: &str) -> (String, u32) {
    let row = stdout
        .lines()
        .find(|l| l.starts_with("| mm "))
        .unwrap_or_else(|| panic!("no report row in:\n{stdout}"));
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    (cells[8].to_string(), cells[9].parse().unwrap())
}

#[test]
fn second_run_uses_the_cache() {
    let d = tmp("second");
    let s = script(&d, 128);
    let a = run(&d, &[s.to_str().unwrap()], &[]);
    assert!(a.status.success(), "{}", text(&a.stderr));
    let (from, ranked) = first_row(&text(&a.stdout));
    assert_eq!(from, "tuned");
    assert!(
        ranked > 10,
        "the default space ranks many candidates, got {ranked}"
    );
    let json = std::fs::read_to_string(d.join("shared.json")).unwrap();
    assert!(json.contains("\"format\": \"tessera-autotune\""));
    assert!(json.contains("\"arch\": \"sm_90\""));
    let b = run(&d, &[s.to_str().unwrap()], &[]);
    let out = text(&b.stdout);
    assert_eq!(first_row(&out), ("cache".to_string(), 0));
    assert!(out.contains("0 candidates ranked by the model, 0 trials measured, 1 from the cache"));
    // Another target is another key: tuned again.
    let c = run(&d, &["--target", "sm_80", s.to_str().unwrap()], &[]);
    assert_eq!(first_row(&text(&c.stdout)).0, "tuned");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn corrupt_cache_is_a_warning_and_left_in_place() {
    let d = tmp("corrupt");
    let s = script(&d, 64);
    let bad = "{\"format\": \"tessera-autotune\", \"version\": 1, \"entries\": [ oops";
    std::fs::write(d.join("shared.json"), bad).unwrap();
    let a = run(&d, &[s.to_str().unwrap()], &[]);
    assert!(a.status.success(), "{}", text(&a.stderr));
    let err = text(&a.stderr);
    assert!(
        err.contains("warning: autotune cache") && err.contains("it is ignored and left as it is"),
        "{err}"
    );
    assert_eq!(first_row(&text(&a.stdout)).0, "tuned");
    assert_eq!(std::fs::read_to_string(d.join("shared.json")).unwrap(), bad);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn autotune_off_uses_the_model_and_no_cache() {
    let d = tmp("off");
    let s = script(&d, 64);
    let a = run(&d, &[s.to_str().unwrap()], &[("TESSERA_AUTOTUNE", "off")]);
    assert!(a.status.success(), "{}", text(&a.stderr));
    let out = text(&a.stdout);
    assert_eq!(first_row(&out).0, "off");
    assert!(out.contains("TESSERA_AUTOTUNE=off"));
    assert!(!d.join("shared.json").exists());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn processes_tuning_at_once_lose_no_entries() {
    let d = tmp("conc");
    let scripts: Vec<PathBuf> = (1..=4).map(|i| script(&d, 64 * i)).collect();
    let children: Vec<_> = scripts
        .iter()
        .map(|s| {
            Command::new(env!("CARGO_BIN_EXE_tessera"))
                .arg("run")
                .arg(s)
                .env("TESSERA_CACHE_DIR", &d)
                .env_remove("TESSERA_AUTOTUNE")
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let entries = tessera_compiler::tune::cache::load(&d.join("shared.json")).unwrap();
    let mut rows: Vec<usize> = entries.iter().map(|e| e.key.shapes[0][0]).collect();
    rows.sort();
    assert_eq!(rows, vec![64, 128, 192, 256]);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn run_profile_prints_the_table_at_exit() {
    let d = tmp("profile");
    let p = d.join("p.tsr");
    std::fs::write(
        &p,
        "@op.kernel\ndef f(x):\n    return op.exp(x) + 1.0\n\
         x = op.rand((64, 64))\nfor i in range(3):\n    y = f(x)\nprint(\"done\")\n",
    )
    .unwrap();
    let a = run(&d, &["--profile", p.to_str().unwrap()], &[]);
    assert!(a.status.success());
    assert_eq!(text(&a.stdout), "done\n");
    let err = text(&a.stderr);
    assert!(
        err.contains("profile of the run: device cpu, model for sm_90, 3 kernel launch(es)"),
        "{err}"
    );
    assert!(err.contains("| op "), "{err}");
    // the three launches are one row per source: the kernel with its shape, its line, count 3
    let row = |l: &&str| {
        l.contains("| f_elementwise[64x64] ") && l.contains("| p.tsr:3 ") && l.contains("|     3 |")
    };
    let measured = err.lines().find(|l| row(l) && l.contains("measured"));
    assert!(measured.is_some(), "{err}");
    let model = err.lines().find(|l| row(l) && l.contains("| model"));
    assert!(
        model.is_some_and(|l| l.contains("sm_90") && l.contains("memory")),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
