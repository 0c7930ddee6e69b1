//! Compile latency of `.tsr` kernels, source to PTX, in process (`bench/RESULTS.md`).
//!
//! `cargo run --release --example compile_latency -- [--samples N] [KERNEL...]` spawns itself
//! once per sample (`--one KERNEL`): in that fresh process it builds a session for `sm_90`,
//! parses and runs the kernel's definition and its argument tensors (not timed), then times
//!
//! - **cold**: the first `graph.lower(k, *args, level="ptx")`: trace to Graph IR, Graph IR
//!   passes, Schedule, Tile and Target IR, PTX text — nothing was compiled before in that
//!   process;
//! - **cached (ptx)**: the same call again (same signature): a compile-cache hit plus printing
//!   the PTX text again from Target IR (the printing dominates for a large kernel);
//! - **cached (hit)**: `graph.lower(k, *args, level="schedule")` after that: a compile-cache hit
//!   plus printing the one-line Schedule IR — what a second call of the kernel pays before it
//!   launches;
//!
//! and prints `KERNEL cold_ms cached_ptx_ms cached_hit_ms ptx_bytes has_entry` (`has_entry` is
//! 0 when the kernel does not reach PTX yet and the text is only a "no ptx code" comment). The
//! driver prints the median of each.
//! `--one KERNEL --emit DIR` also writes the kernel's PTX to `DIR/KERNEL.ptx` (for `ptxas -v`).
//! Nothing runs on a device: the tensors exist only to give the kernel its signature.

use std::process::Command;
use std::time::Instant;
use tessera_lang::eval::{Interp, Value};
use tessera_lang::parse;

/// (name, setup source, the call whose PTX is timed).
const KERNELS: &[(&str, &str, &str)] = &[
    (
        "matmul_bias_relu",
        r#"
@op.kernel
def matmul_bias_relu(a, b, c):
    schedule.tile((128, 128, 64), warp=(64, 32))
    schedule.use_tensor_cores(True)
    schedule.pipeline_stages(3)
    schedule.async_copy(True)
    return op.relu(op.matmul(a, b, accum_dtype="fp32") + c).to("bf16")

a = op.zeros((4096, 4096), dtype="bf16")
b = op.zeros((4096, 4096), dtype="bf16")
c = op.zeros((4096,), dtype="fp32")
"#,
        r#"graph.lower(matmul_bias_relu, a, b, c, level="ptx")"#,
    ),
    (
        "softmax",
        r#"
@op.kernel
def softmax(x):
    return op.softmax(x, axis=-1)

x = op.zeros((4096, 4096), dtype="fp32")
"#,
        r#"graph.lower(softmax, x, level="ptx")"#,
    ),
    (
        "attention",
        r#"
@op.kernel
def attention(q, k, v):
    return op.flash_attention(q, k, v, causal=False)

q = op.zeros((4, 1024, 64), dtype="bf16")
k = op.zeros((4, 1024, 64), dtype="bf16")
v = op.zeros((4, 1024, 64), dtype="bf16")
"#,
        r#"graph.lower(attention, q, k, v, level="ptx")"#,
    ),
];

fn fail(msg: String) -> ! {
    eprintln!("compile_latency: {msg}");
    std::process::exit(1)
}

fn exec(it: &mut Interp, name: &str, src: &str) -> Option<Value> {
    let file = it.sources.add(name, src.to_string());
    let m = parse::parse_module(src, file).unwrap_or_else(|d| {
        fail(format!(
            "{name}: parse error: {}",
            d[0].render(&it.sources, false)
        ))
    });
    it.exec_module(&m)
        .unwrap_or_else(|d| fail(format!("{name}: {}", d.render(&it.sources, false))))
}

/// One sample in this (fresh) process.
fn one(kernel: &str, emit: Option<&str>) {
    let Some((name, setup, call)) = KERNELS.iter().find(|k| k.0 == kernel) else {
        fail(format!("unknown kernel {kernel}"))
    };
    let mut it = Interp::new();
    let cfg = tessera_stdlib::Config {
        argv: vec![format!("{name}.tsr")],
        target: Some("sm_90".into()),
        device: Some("cpu".into()),
        ..Default::default()
    };
    tessera_stdlib::install(&mut it, &cfg).unwrap_or_else(|d| fail(d.render(&it.sources, false)));
    exec(&mut it, &format!("{name}.tsr"), setup);
    let t0 = Instant::now();
    let ptx = exec(&mut it, "call.tsr", call);
    let cold = t0.elapsed();
    let t1 = Instant::now();
    let again = exec(&mut it, "call.tsr", call);
    let cached = t1.elapsed();
    let hit_call = call.replace(r#"level="ptx""#, r#"level="schedule""#);
    let t2 = Instant::now();
    exec(&mut it, "call.tsr", &hit_call);
    let hit = t2.elapsed();
    let text = match (ptx, again) {
        (Some(Value::Str(a)), Some(Value::Str(b))) if a == b => a.to_string(),
        _ => fail("graph.lower did not give the same str twice".into()),
    };
    if let Some(dir) = emit {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| fail(format!("{dir}: {e}")));
        std::fs::write(format!("{dir}/{name}.ptx"), &text)
            .unwrap_or_else(|e| fail(format!("{dir}: {e}")));
    }
    println!(
        "{name} {:.3} {:.3} {:.3} {} {}",
        cold.as_secs_f64() * 1e3,
        cached.as_secs_f64() * 1e3,
        hit.as_secs_f64() * 1e3,
        text.len(),
        u8::from(text.contains(".entry"))
    );
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--one") {
        let kernel = args.get(1).unwrap_or_else(|| fail("--one KERNEL".into()));
        let emit = match args.get(2).map(String::as_str) {
            Some("--emit") => args.get(3).map(String::as_str),
            _ => None,
        };
        one(kernel, emit);
        return;
    }
    let mut samples = 21;
    let mut names: Vec<String> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        if args[i] == "--samples" {
            samples = args
                .get(i + 1)
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| fail("--samples N".into()));
            i += 2;
        } else {
            names.push(args[i].clone());
            i += 1;
        }
    }
    if names.is_empty() {
        names = KERNELS.iter().map(|k| k.0.to_string()).collect();
    }
    let exe = std::env::current_exe().unwrap_or_else(|e| fail(e.to_string()));
    println!("kernel cold_ms cached_ptx_ms cached_hit_ms (median of {samples} fresh processes)");
    for name in &names {
        let (mut cold, mut cached, mut hit) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..samples {
            let out = Command::new(&exe)
                .args(["--one", name])
                .output()
                .unwrap_or_else(|e| fail(e.to_string()));
            if !out.status.success() {
                fail(String::from_utf8_lossy(&out.stderr).into_owned());
            }
            let line = String::from_utf8_lossy(&out.stdout).into_owned();
            let f: Vec<&str> = line.split_whitespace().collect();
            cold.push(f[1].parse::<f64>().unwrap_or(f64::NAN));
            cached.push(f[2].parse::<f64>().unwrap_or(f64::NAN));
            hit.push(f[3].parse::<f64>().unwrap_or(f64::NAN));
        }
        println!(
            "{name} {:.3} {:.3} {:.3}",
            median(&mut cold),
            median(&mut cached),
            median(&mut hit)
        );
    }
}
