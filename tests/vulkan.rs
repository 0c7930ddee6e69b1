//! The SPIR-V back end through a real Vulkan driver (Mesa's lavapipe here and in CI; any
//! Vulkan 1.3 device elsewhere). Every script of `tests/golden`, `tests/ir` and `examples` that
//! makes a kernel runs with `TESSERA_CROSSCHECK=vulkan` and `--emit-spirv DIR`: the session
//! compiles for the `spirv` target, and every kernel launch also runs its SPIR-V on the Vulkan
//! device and is compared with the cpu result within the dtype's bound (a mismatch, a status
//! word the cpu does not raise, or a kernel not translated to SPIR-V is an E0800 error). The
//! script must then print what it prints with `--target spirv --device cpu` (its golden
//! `.stdout` also counts: timings differ from run to run) and exit the same way; every module it
//! emitted (both forms of a kernel with warp operations: subgroups, and warps in workgroup
//! memory) must pass `spirv-val --target-env vulkan1.3`.
//!
//! Needs a Vulkan loader and device and `spirv-val`: `scripts/test` installs
//! `mesa-vulkan-drivers` and `spirv-tools`; without them the test fails and says so.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Scripts whose output legitimately differs between the two runs (only the exit status and
/// the absence of a cross-check error are checked): what they print depends on which device
/// ran the kernels.
const OUTPUT_DIFFERS: &[(&str, &str)] = &[
    (
        "tests/golden/lower_attention_tc_emu.tsr",
        "it prints emu's differences from the cpu and emu's counters; the cross-check runs on the cpu",
    ),
    (
        "tests/golden/lower_f64_erf_pow_emu.tsr",
        "it prints emu's gelu values, which differ from the cpu's in the last digit",
    ),
    (
        "tests/golden/lower_sin_cos_emu.tsr",
        "it prints whether emu's results equal the cpu's; the cross-check runs on the cpu",
    ),
    (
        "tests/golden/lower_mma_pipeline_emu.tsr",
        "it compares emu's tf32 matmul with the cpu's: on spirv (no tensor cores) the kernel computes in fp32",
    ),
    (
        "tests/golden/profile_emu_counters.tsr",
        "it prints the emulator's counters, which the cross-check (run on vulkan) does not collect",
    ),
];

/// The output with measured figures blanked (lines of a profile table's `measured` rows):
/// they differ from run to run, and so may a table's column widths: in table lines, runs of
/// blanks, rules and blanked figures count as one.
fn normalize(out: &str) -> String {
    out.lines()
        .map(|l| {
            if !l.starts_with('|') {
                return l.to_string();
            }
            let measured = l.contains("| measured |");
            let mut t = String::with_capacity(l.len());
            for c in l.chars() {
                let c = if measured && (c.is_ascii_digit() || c == '.') {
                    '#'
                } else {
                    c
                };
                if matches!(c, ' ' | '-' | '#') && t.ends_with(c) {
                    continue;
                }
                t.push(c);
            }
            t
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Scripts expected to stop at a kernel the back end does not translate, with the reason the
/// error must give.
const NOT_ON_VULKAN: &[(&str, &str)] = &[
    (
        "tests/golden/profile_table.tsr",
        "compiled for the sm_80 target, not spirv",
    ),
    (
        "tests/golden/lower_emu_fallback.tsr",
        "attention tiles of 173 KiB of shared memory (head dimensions 640 and 640",
    ),
    (
        "tests/golden/grad_logsumexp_mid.tsr",
        "broadcasting [2, 1, 4] to [2, 3, 4]",
    ),
];

/// Scripts started first: lavapipe takes seconds to compile each of their large FMA attention
/// and convolution kernels when its shader cache is cold, as in CI; started last, one of them
/// would run alone at the end. `grad_attention` (FlashAttention forward and backward kernels of
/// seven shapes, up to head dimension 160 in fp64) takes about 340 s alone on 2 cores with a
/// cold cache, the longest of all: the other scripts run beside it.
const START_FIRST: &[&str] = &[
    "tests/golden/grad_attention.tsr",
    "tests/golden/grad_check.tsr",
    "tests/golden/lower_attention_tc_emu.tsr",
    "tests/golden/conv_spectral.tsr",
    "tests/golden/lower_conv_mma_emu.tsr",
    "tests/golden/lower_attention_emu.tsr",
];

/// Scripts not run here, with the reason: printed as not run. None at present.
const NOT_RUN: &[(&str, &str)] = &[];

const SCRIPT_TIMEOUT: Duration = Duration::from_secs(600);

struct Outcome {
    name: String,
    launches: usize,
    modules: usize,
    failure: Option<String>,
    seconds: f64,
}

fn spirv_val(spv: &Path) -> Result<(), String> {
    let out = std::process::Command::new("spirv-val")
        .args(["--target-env", "vulkan1.3"])
        .arg(spv)
        .output()
        .map_err(|e| {
            format!(
                "spirv-val could not run ({e}): scripts/test installs it (Debian's spirv-tools)"
            )
        })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}: {}{}",
            spv.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn check(exe: &Path, root: &Path, tsr: &Path, work: &Path, i: usize) -> Outcome {
    let name = tsr.strip_prefix(root).unwrap_or(tsr).display().to_string();
    let start = Instant::now();
    let emit = work.join(format!("spv-{i}"));
    let log = work.join(format!("{i}.log"));
    let emit_s = emit.display().to_string();
    let log_s = log.display().to_string();
    let checked = tessera::golden::run_script_args(
        exe,
        tsr,
        &["--emit-spirv", &emit_s],
        &[
            ("TESSERA_CROSSCHECK", "vulkan"),
            ("TESSERA_CROSSCHECK_LOG", &log_s),
        ],
        SCRIPT_TIMEOUT,
    );
    let launches = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("checked\t"))
        .count();
    let mut modules = 0;
    let mut report = String::new();
    if let Ok(rd) = std::fs::read_dir(&emit) {
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "spv") {
                modules += 1;
                if let Err(e) = spirv_val(&p) {
                    report.push_str(&format!("spirv-val rejects {e}\n"));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&emit);
    let golden = std::fs::read_to_string(tsr.with_extension("stdout")).ok();
    // A clean run that prints the golden output needs no reference run; otherwise the same
    // script on `--target spirv --device cpu` says what it must print and how it must exit.
    let clean = checked.as_ref().is_ok_and(|c| {
        c.code == 0
            && !c.stderr.contains("cross-check:")
            && golden
                .as_deref()
                .is_some_and(|g| tessera::golden::text_matches(g, &c.stdout))
    });
    let reference = if clean {
        checked.clone()
    } else {
        let spirv_cpu = ["--target", "spirv", "--device", "cpu"];
        tessera::golden::run_script_args(exe, tsr, &spirv_cpu, &[], SCRIPT_TIMEOUT)
    };
    let (reference, checked) = match (reference, checked) {
        (Ok(r), Ok(c)) => (r, c),
        (Err(e), _) | (_, Err(e)) => {
            return Outcome {
                name,
                launches,
                modules,
                failure: Some(e),
                seconds: start.elapsed().as_secs_f64(),
            }
        }
    };
    let listed = NOT_ON_VULKAN.iter().find(|(s, _)| *s == name);
    if let Some((_, reason)) = listed {
        let needle = format!("is not lowered to SPIR-V ({reason}");
        if checked.code == reference.code {
            report.push_str("listed as failing on vulkan but it passes: remove it from the list\n");
        } else if !checked.stderr.contains(&needle) {
            report.push_str(&format!(
                "expected to stop at a kernel that {needle}...); got exit {}\n{}",
                checked.code, checked.stderr
            ));
        }
    } else {
        let differs = OUTPUT_DIFFERS.iter().any(|(s, _)| *s == name);
        let same = differs
            || normalize(&checked.stdout) == normalize(&reference.stdout)
            || golden
                .as_deref()
                .is_some_and(|g| tessera::golden::text_matches(g, &checked.stdout));
        if !same {
            report.push_str(&format!(
                "stdout differs from the cpu's\n--- cpu (--target spirv) ---\n{}--- vulkan cross-check ---\n{}--- stderr ---\n{}",
                reference.stdout, checked.stdout, checked.stderr
            ));
        }
        if checked.stderr.contains("cross-check:") {
            report.push_str(&format!("a cross-check error\n{}", checked.stderr));
        }
        if checked.code != reference.code {
            report.push_str(&format!(
                "exit status {} (the cpu's: {})\n--- stderr ---\n{}",
                checked.code, reference.code, checked.stderr
            ));
        }
    }
    Outcome {
        name,
        launches,
        modules,
        failure: (!report.is_empty()).then_some(report),
        seconds: start.elapsed().as_secs_f64(),
    }
}

#[test]
fn every_golden_kernel_agrees_on_cpu_and_vulkan_and_passes_spirv_val() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_tessera"));
    let all = tessera::golden::kernel_scripts(root);
    assert!(all.len() >= 20, "only {} kernel scripts", all.len());
    let rel = |p: &PathBuf| p.strip_prefix(root).unwrap_or(p).to_path_buf();
    let named = NOT_RUN
        .iter()
        .chain(NOT_ON_VULKAN)
        .map(|(s, _)| *s)
        .chain(START_FIRST.iter().copied());
    for s in named {
        assert!(
            all.iter().any(|p| rel(p) == Path::new(s)),
            "{s} is listed but is not a kernel script"
        );
    }
    for (s, why) in NOT_RUN {
        println!("NOT RUN on vulkan: {s}: {why}");
    }
    let mut list: Vec<PathBuf> = all
        .into_iter()
        .filter(|p| !NOT_RUN.iter().any(|(s, _)| rel(p) == Path::new(s)))
        .collect();
    list.sort_by_key(|p| !START_FIRST.iter().any(|s| rel(p) == Path::new(s)));
    let work = std::env::temp_dir().join(format!("tessera-vulkan-{}", std::process::id()));
    std::fs::create_dir_all(&work).expect("create a work directory");
    let start = Instant::now();
    let mut results = common::on_all_cores(&list, |i, tsr| check(&exe, root, tsr, &work, i));
    let _ = std::fs::remove_dir_all(&work);
    results.sort_by(|a, b| a.name.cmp(&b.name));
    let (mut launches, mut modules) = (0, 0);
    for r in &results {
        println!(
            "{:<48} {:>6.2}s {:>3} launches {:>3} modules{}",
            r.name,
            r.seconds,
            r.launches,
            r.modules,
            if r.failure.is_some() { "  FAILED" } else { "" }
        );
        launches += r.launches;
        modules += r.modules;
    }
    println!(
        "{} scripts, {launches} launches checked on vulkan, {modules} SPIR-V modules validated; {:.1}s",
        results.len(),
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
        "{} of {} scripts fail on vulkan:\n{}",
        failures.len(),
        results.len(),
        failures.join("\n")
    );
    // the check ran kernels: a driver that ran nothing would pass vacuously
    assert!(launches > 500, "only {launches} launches were checked");
    assert!(modules > 500, "only {modules} modules were emitted");
}

/// The golden scripts of `tests/vulkan` (the vulkan device as a user reaches it:
/// `target.set_device("vulkan")`, `graph.lower(..., level="spirv")`) print their expected
/// output; they are kept out of `tests/golden`, which also runs where no Vulkan driver is
/// (the aarch64 build under qemu).
#[test]
fn the_vulkan_golden_scripts_pass() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_tessera"));
    let out = std::process::Command::new(&exe)
        .arg("test")
        .arg(root.join("tests/vulkan"))
        .env("NO_COLOR", "1")
        .output()
        .expect("run tessera test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}
