//! The cuda device from the command line on a machine without a usable GPU: `--device auto`
//! (the default) runs on the cpu quietly; `--device cuda` is E0800 naming the reason, and
//! nothing runs (exit 2). `TESSERA_CUDA=off` makes the driver count as absent, so they hold on
//! any machine (the reason a missing libcuda gives is checked in the runtime's unit tests).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use std::process::Command;

fn run(device: &str, src: &str) -> (Option<i32>, String, String) {
    let dir =
        std::env::temp_dir().join(format!("tessera-cuda-cli-{}-{device}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("k.tsr");
    std::fs::write(&script, src).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["run", "--device", device, "k.tsr"])
        .current_dir(&dir)
        .env("NO_COLOR", "1")
        // The driver counts as absent, so these hold on machines with a GPU too.
        .env("TESSERA_CUDA", "off")
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const SCRIPT: &str = "@op.kernel\ndef f(x):\n    return op.relu(x) * 2.0\n\
                      print(target.device(), target.current())\n\
                      print(f(op.tensor([-1.0, 3.0])))\n";

#[test]
fn device_cuda_without_a_gpu_is_e0800_naming_the_driver_and_runs_nothing() {
    let (code, stdout, stderr) = run("cuda", SCRIPT);
    assert_eq!(code, Some(2), "stderr: {stderr}");
    assert_eq!(stdout, "");
    assert!(
        stderr.starts_with("error[E0800]: --device cuda: no usable CUDA device: "),
        "{stderr}"
    );
    assert!(stderr.contains("TESSERA_CUDA=off"), "{stderr}");
    assert!(
        stderr.contains("--device") || stderr.contains("auto"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn device_auto_without_a_gpu_runs_on_the_cpu_quietly() {
    let (code, stdout, stderr) = run("auto", SCRIPT);
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert_eq!(stdout, "cpu sm_90\ntensor([0.0000, 6.0000], dtype=fp32)\n");
    assert_eq!(stderr, "");
}

#[test]
fn crosscheck_cuda_without_a_gpu_is_e0800_at_start_and_runs_nothing() {
    let dir = std::env::temp_dir().join(format!("tessera-cuda-cli-{}-cc", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("k.tsr"), SCRIPT).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["run", "--device", "cpu", "k.tsr"])
        .current_dir(&dir)
        .env("NO_COLOR", "1")
        .env("TESSERA_CUDA", "off")
        .env("TESSERA_CROSSCHECK", "cuda")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(out.stdout.is_empty());
    assert!(
        stderr.starts_with(
            "error[E0800]: TESSERA_CROSSCHECK=cuda: no usable CUDA device: CUDA is turned off"
        ),
        "{stderr}"
    );
}
