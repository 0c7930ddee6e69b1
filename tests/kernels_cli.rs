//! `tessera run --dump graph`: every compiled kernel's Graph IR goes to stderr, once per
//! compilation (a cache hit compiles nothing and prints nothing).

use std::process::Command;

#[test]
fn dump_graph_prints_each_compiled_kernel_to_stderr() {
    let dir = std::env::temp_dir().join(format!("tessera-kernels-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("dump.tsr");
    std::fs::write(
        &script,
        "@op.kernel\n\
         def f(x, w, b):\n\
         \x20   return op.relu(op.matmul(x, w) + b)\n\
         x = op.ones((4, 8))\n\
         w = op.ones((8, 2))\n\
         b = op.zeros((2,))\n\
         print(f(x, w, b))\n\
         print(f(x, w, b))\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["run", "--dump", "graph", "dump.tsr"])
        .current_dir(&dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(
        stdout,
        "tensor([[8.0000, 8.0000], [8.0000, 8.0000], [8.0000, 8.0000], [8.0000, 8.0000]], dtype=fp32)\n"
            .repeat(2)
    );
    assert_eq!(
        stderr,
        "graph @f(%0: fp32[4,8], %1: fp32[8,2], %2: fp32[2]) {\n  \
         %3 = matmul %0, %1 {accum = fp32, epilogue = [add %2, relu]} : fp32[4,2]   \
         loc(fused[\"dump.tsr\":3:20, \"dump.tsr\":2:5, \"dump.tsr\":3:12])\n  \
         return %3\n}\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_dump_nothing_goes_to_stderr() {
    let dir = std::env::temp_dir().join(format!("tessera-kernels-cli2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("quiet.tsr"),
        "@op.kernel\ndef f(x):\n    return op.exp(x) * 2.0\nprint(f(op.zeros((2,))))\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["run", "quiet.tsr"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "tensor([2.0000, 2.0000], dtype=fp32)\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
