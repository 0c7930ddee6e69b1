//! Every kernel of the golden suite runs on both `cpu` and `emu` and agrees: each script of
//! `tests/golden`, `tests/ir` and `examples` that makes a kernel (`op.kernel`, `op.autotune`,
//! a gradient or an optimizer's `.update(` in its text) runs with `TESSERA_CROSSCHECK=emu`, so every kernel launch also
//! runs its Target IR in the emulator and is compared with the cpu result within the dtype's
//! tolerance (docs/decisions.md, "Cross-check"); a mismatch or a kernel without Target IR is an
//! error. The script must still print its expected `.stdout` (and `.stderr` where there is one)
//! and exit with its expected status. Run with `--nocapture` to see the scripts and kernels
//! covered.
//!
//! Two explicit lists name the scripts expected to fail with "not lowered to Target IR",
//! each with the reason the error must give; a listed script that passes fails the test (the
//! list must shrink with the compiler), and any other failure is a failure.

mod common;

use std::path::{Path, PathBuf};
use std::time::Instant;

/// Scripts whose only cross-check failure is a kernel a generator does not lower yet, at the
/// end of the script (everything before it is cross-checked): (script, reason).
const NOT_LOWERED_YET: &[(&str, &str)] = &[(
    "tests/golden/grad_logsumexp_mid.tsr",
    "broadcasting [2, 1, 4] to [2, 3, 4]",
)];

/// Scripts not run here, each with the reason: too slow on the emulator for this test, their
/// kernels' kinds and dtypes cross-checked by other scripts of the list.
const TOO_SLOW_ON_EMU: &[(&str, &str)] = &[(
    "examples/gpt.tsr",
    "3 training steps of a 2-block GPT take over 300 s on the emulator; its kernels (matmul, \
     softmax, layernorm, cross_entropy, embedding and their gradients) are those of \
     examples/train.tsr, grad_check_losses, losses and the attention goldens",
)];

/// Scripts that show the cpu fallback of the `emu` device on purpose, with a kernel kind that
/// has no generator: (script, reason).
const FALLBACK_DEMOS: &[(&str, &str)] = &[(
    "tests/golden/lower_emu_fallback.tsr",
    "attention tiles of 173 KiB of shared memory (head dimensions 640 and 640",
)];

/// The time limit of one script: every kernel launch runs twice (cpu, then its program on the
/// emulator), so the longest scripts (examples/train.tsr: about 95 s alone on a 2-core
/// machine) need more than a golden run's limit when two run side by side.
const SCRIPT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

fn scripts(root: &Path) -> Vec<PathBuf> {
    tessera::golden::kernel_scripts(root)
}

struct Result1 {
    name: String,
    /// Checked launches: (kernel, kind).
    launches: Vec<(String, String)>,
    failure: Option<String>,
    seconds: f64,
}

fn expected(tsr: &Path, ext: &str) -> Option<String> {
    std::fs::read_to_string(tsr.with_extension(ext))
        .ok()
        .map(|s| s.replace("\r\n", "\n"))
}

fn check(exe: &Path, root: &Path, tsr: &Path, log_dir: &Path, i: usize) -> Result1 {
    let name = tsr.strip_prefix(root).unwrap_or(tsr).display().to_string();
    let log = log_dir.join(format!("{i}.log"));
    let _ = std::fs::remove_file(&log);
    let start = Instant::now();
    let run = tessera::golden::run_script_within(
        exe,
        tsr,
        &[
            ("TESSERA_CROSSCHECK", "emu"),
            ("TESSERA_CROSSCHECK_LOG", &log.display().to_string()),
        ],
        SCRIPT_TIMEOUT,
    );
    let seconds = start.elapsed().as_secs_f64();
    let launches: Vec<(String, String)> = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f.first() == Some(&"checked") && f.len() >= 3)
                .then(|| (f[1].to_string(), f[2].to_string()))
        })
        .collect();
    let out = match run {
        Ok(o) => o,
        Err(e) => {
            return Result1 {
                name,
                launches,
                failure: Some(e),
                seconds,
            }
        }
    };
    let want_stdout = expected(tsr, "stdout").unwrap_or_default();
    let want_code: i32 = expected(tsr, "code")
        .and_then(|c| c.trim().parse().ok())
        .unwrap_or(0);
    let listed = NOT_LOWERED_YET
        .iter()
        .chain(FALLBACK_DEMOS)
        .find(|(s, _)| *s == name);
    let failure = if let Some((_, reason)) = listed {
        let needle = format!("is not lowered to Target IR ({reason}");
        if out.code == want_code && out.stdout == want_stdout {
            Some(format!(
                "listed as failing the cross-check ({reason}) but it passes: remove it from the list"
            ))
        } else if out.code != 1
            || !out.stderr.contains("cross-check: kernel '")
            || !out.stderr.contains(&needle)
            || !want_stdout.starts_with(&out.stdout)
        {
            Some(format!(
                "expected to stop at a kernel that {needle}...), after a prefix of its stdout; got exit {}\n--- stdout ---\n{}--- stderr ---\n{}",
                out.code, out.stdout, out.stderr
            ))
        } else {
            None
        }
    } else {
        let mut report = String::new();
        if !tessera::golden::text_matches(&want_stdout, &out.stdout) {
            report.push_str(&format!(
                "stdout differs\n--- expected ---\n{want_stdout}--- actual ---\n{}",
                out.stdout
            ));
        }
        if let Some(want) = expected(tsr, "stderr") {
            if !tessera::golden::text_matches(&want, &out.stderr) {
                report.push_str(&format!(
                    "stderr differs\n--- expected ---\n{want}--- actual ---\n{}",
                    out.stderr
                ));
            }
        }
        if out.code != want_code {
            report.push_str(&format!(
                "exit status {} (expected {want_code})\n--- stderr ---\n{}",
                out.code, out.stderr
            ));
        }
        (!report.is_empty()).then_some(report)
    };
    Result1 {
        name,
        launches,
        failure,
        seconds,
    }
}

#[test]
fn every_golden_kernel_agrees_on_cpu_and_emu() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_tessera"));
    let mut list = scripts(root);
    for (s, why) in TOO_SLOW_ON_EMU {
        let before = list.len();
        list.retain(|p| p.strip_prefix(root).map_or(true, |q| q != Path::new(s)));
        assert_eq!(
            list.len() + 1,
            before,
            "{s} is listed but is not a golden script that makes a kernel"
        );
        println!("{s}: not run ({why})");
    }
    assert!(
        list.len() >= 20,
        "only {} golden scripts make kernels",
        list.len()
    );
    for (s, _) in NOT_LOWERED_YET.iter().chain(FALLBACK_DEMOS) {
        assert!(
            list.iter()
                .any(|p| p.strip_prefix(root).is_ok_and(|q| q == Path::new(s))),
            "{s} is listed but is not a golden script that makes a kernel"
        );
    }
    let log_dir = std::env::temp_dir().join(format!("tessera-crosscheck-{}", std::process::id()));
    std::fs::create_dir_all(&log_dir).expect("create a log directory");
    let start = Instant::now();
    let mut results = common::on_all_cores(&list, |i, tsr| check(&exe, root, tsr, &log_dir, i));
    let _ = std::fs::remove_dir_all(&log_dir);
    results.sort_by(|a, b| a.name.cmp(&b.name));
    let mut kernels = std::collections::BTreeSet::new();
    let mut kinds = std::collections::BTreeMap::<String, usize>::new();
    let mut launches = 0;
    let mut with_launches = 0;
    for r in &results {
        println!(
            "{:<48} {:>6.2}s {:>3} launches{}",
            r.name,
            r.seconds,
            r.launches.len(),
            if r.failure.is_some() { "  FAILED" } else { "" }
        );
        launches += r.launches.len();
        if !r.launches.is_empty() {
            with_launches += 1;
        }
        for (k, kind) in &r.launches {
            if kernels.insert(format!("{}:{k}", r.name)) {
                *kinds.entry(kind.clone()).or_default() += 1;
            }
        }
    }
    println!(
        "{} scripts ({} launching kernels), {} distinct kernels, {} checked launches, by kind {:?}; {:.1}s",
        results.len(),
        with_launches,
        kernels.len(),
        launches,
        kinds,
        start.elapsed().as_secs_f64()
    );
    let failures: Vec<String> = results
        .iter()
        .filter_map(|r| {
            r.failure
                .as_ref()
                .map(|f| format!("=== {} ===\n{f}", r.name))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} scripts fail the cpu/emu cross-check:\n{}",
        failures.len(),
        results.len(),
        failures.join("\n")
    );
}

/// A value other than `emu` is an error, not a silently disabled check.
#[test]
fn an_unknown_crosscheck_device_is_an_error() {
    let dir = std::env::temp_dir().join(format!("tessera-crosscheck-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create a directory");
    let tsr = dir.join("k.tsr");
    std::fs::write(
        &tsr,
        "@op.kernel\ndef f(x):\n    return x * 2.0\n\nprint(f(op.ones((3,))))\n",
    )
    .expect("write a script");
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_tessera"));
    let bad = tessera::golden::run_script(&exe, &tsr, &[("TESSERA_CROSSCHECK", "gpu")])
        .expect("run tessera");
    let good = tessera::golden::run_script(&exe, &tsr, &[("TESSERA_CROSSCHECK", "emu")])
        .expect("run tessera");
    let _ = std::fs::remove_dir_all(&dir);
    // Checked with the other TESSERA_* variables when the session opens: nothing runs.
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert_eq!(bad.stdout, "");
    assert!(bad.stderr.contains("error[E0101]"), "{}", bad.stderr);
    assert!(bad.stderr.contains("TESSERA_CROSSCHECK"), "{}", bad.stderr);
    assert_eq!(good.code, 0, "{}", good.stderr);
    assert_eq!(
        good.stdout,
        "tensor([2.0000, 2.0000, 2.0000], dtype=fp32)\n"
    );
}
