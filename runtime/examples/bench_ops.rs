//! CPU op benchmarks for `bench/cpu_ops.py`.
//!
//! `cargo run --release -p tessera-runtime --example bench_ops` prints medians on its own;
//! `... --example bench_ops -- --serve` reads commands `OP SIZE` on stdin (one timed run each,
//! answered with the seconds on stdout) so the Python script can interleave NumPy and Rust runs.
//!
//! Ops: `matmul_f32 N`, `matmul_f64 N`, `matmul_bf16 N` (bf16 inputs, fp32 accumulation, bf16 result),
//! `softmax_f32 N` (N×N rows), `layernorm_f32 N` (N×N rows, with weight and bias), `sum_f32 N`
//! (N×N, all elements), `conv2d_f32 N` (batch N of
//! 64×56×56 by 64×64×3×3, padding 1: ResNet's 3×3 layer), `conv2d_dw_f32 N` (batch N of
//! 64×56×56, depthwise 3×3, padding 1), `fft_c64 N` / `fft_c128 N`
//! (one complex FFT of length N of [`fft_input`], the data `bench/cpu_ops.py` gives NumPy),
//! `conv_k_direct K` / `conv_k_fft K` (batch 4 of 8×64×64 by 8×8×K×K, "same" padding, by
//! each algorithm: where the FFT starts to pay, printed only when run on its own).

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::time::Instant;

use tessera_runtime::{
    conv, conv_with, fft, layernorm, matmul, softmax, ConvAlgorithm, ConvPadding, ConvSpec, DType,
    FftNorm, Result, Tensor,
};

/// The 3×3, stride-1, padding-1 convolution of `groups` groups.
fn conv3x3(groups: usize) -> ConvSpec {
    ConvSpec {
        dims: 2,
        stride: vec![1, 1],
        padding: ConvPadding::Explicit(vec![(1, 1), (1, 1)]),
        dilation: vec![1, 1],
        groups,
    }
}

/// The FFT input of length `n`, exactly as `bench/cpu_ops.py` makes it for NumPy:
/// `re = (i·7919 mod 1000)/1000 − 0.5`, `im = (i·104729 mod 997)/997 − 0.5`, in f64, then
/// rounded to the dtype.
fn fft_input(n: usize, dtype: DType) -> Result<Tensor> {
    let part = |i: usize, k: usize, m: usize| ((i * k) % m) as f64 / m as f64 - 0.5;
    let re: Vec<f64> = (0..n).map(|i| part(i, 7919, 1000)).collect();
    let im: Vec<f64> = (0..n).map(|i| part(i, 104729, 997)).collect();
    let (re, im) = (
        Tensor::from_f64(&[n], re, DType::F64)?,
        Tensor::from_f64(&[n], im, DType::F64)?,
    );
    tessera_runtime::complex(&re, &im)?.cast(dtype)
}

struct Inputs {
    cache: HashMap<(String, usize), Vec<Tensor>>,
}

impl Inputs {
    fn get(&mut self, op: &str, n: usize) -> Result<&Vec<Tensor>> {
        let key = (op.to_string(), n);
        if !self.cache.contains_key(&key) {
            let v = match op {
                "matmul_f32" => vec![
                    Tensor::randn(&[n, n], DType::F32, 1)?,
                    Tensor::randn(&[n, n], DType::F32, 2)?,
                ],
                // Skinny products (a backward pass's, a classifier's): [n, n] @ [n, w] and
                // [n, 16] @ [16, n].
                "matmul_n16_f32" | "matmul_n64_f32" => vec![
                    Tensor::randn(&[n, n], DType::F32, 1)?,
                    Tensor::randn(
                        &[n, if op == "matmul_n16_f32" { 16 } else { 64 }],
                        DType::F32,
                        2,
                    )?,
                ],
                "matmul_k16_f32" => vec![
                    Tensor::randn(&[n, 16], DType::F32, 1)?,
                    Tensor::randn(&[16, n], DType::F32, 2)?,
                ],
                "matmul_f64" => vec![
                    Tensor::randn(&[n, n], DType::F64, 1)?,
                    Tensor::randn(&[n, n], DType::F64, 2)?,
                ],
                "matmul_bf16" => vec![
                    Tensor::randn(&[n, n], DType::BF16, 1)?,
                    Tensor::randn(&[n, n], DType::BF16, 2)?,
                ],
                "conv2d_f32" => vec![
                    Tensor::randn(&[n, 64, 56, 56], DType::F32, 1)?,
                    Tensor::randn(&[64, 64, 3, 3], DType::F32, 2)?,
                ],
                "conv_k_direct" | "conv_k_fft" => vec![
                    Tensor::randn(&[4, 8, 64, 64], DType::F32, 1)?,
                    Tensor::randn(&[8, 8, n, n], DType::F32, 2)?,
                ],
                "conv2d_dw_f32" => vec![
                    Tensor::randn(&[n, 64, 56, 56], DType::F32, 1)?,
                    Tensor::randn(&[64, 1, 3, 3], DType::F32, 2)?,
                ],
                "layernorm_f32" => vec![
                    Tensor::randn(&[n, n], DType::F32, 3)?,
                    Tensor::randn(&[n], DType::F32, 4)?,
                    Tensor::randn(&[n], DType::F32, 5)?,
                ],
                "add_f32" | "mul_bcast_f32" => vec![
                    Tensor::randn(&[n, n], DType::F32, 3)?,
                    if op == "add_f32" {
                        Tensor::randn(&[n, n], DType::F32, 4)?
                    } else {
                        Tensor::randn(&[n], DType::F32, 4)?
                    },
                ],
                "fft_c64" => vec![fft_input(n, DType::C64)?],
                "fft_c128" => vec![fft_input(n, DType::C128)?],
                _ => vec![Tensor::randn(&[n, n], DType::F32, 3)?],
            };
            self.cache.insert(key.clone(), v);
        }
        Ok(&self.cache[&key])
    }

    /// Runs `op` once and returns the seconds it took.
    fn run(&mut self, op: &str, n: usize) -> Result<f64> {
        let t = self.get(op, n)?.clone();
        let start = Instant::now();
        let out = match (op, t.as_slice()) {
            (
                "matmul_f32" | "matmul_f64" | "matmul_bf16" | "matmul_n16_f32" | "matmul_n64_f32"
                | "matmul_k16_f32",
                [a, b],
            ) => matmul(a, b, None)?,
            ("softmax_f32", [x]) => softmax(x, -1)?,
            ("layernorm_f32", [x, w, b]) => layernorm(x, Some(w), Some(b), 1e-5)?,
            ("sum_f32", [x]) => x.sum(None, false)?,
            ("sum_rows_f32", [x]) => x.sum(Some(-1), false)?,
            ("sum_cols_f32", [x]) => x.sum(Some(0), false)?,
            ("max_rows_f32", [x]) => x.max(Some(-1), false)?,
            ("add_f32", [x, y]) => x.add(y)?,
            ("mul_bcast_f32", [x, y]) => x.mul(y)?,
            ("relu_f32", [x]) => x.relu()?,
            ("exp_f32", [x]) => x.exp()?,
            ("tanh_f32", [x]) => x.tanh()?,
            ("gelu_f32", [x]) => x.gelu()?,
            ("conv2d_f32", [x, w]) => conv(x, w, None, &conv3x3(1))?,
            ("conv2d_dw_f32", [x, w]) => conv(x, w, None, &conv3x3(64))?,
            ("conv_k_direct" | "conv_k_fft", [x, w]) => {
                let spec = ConvSpec {
                    padding: ConvPadding::Same,
                    ..conv3x3(1)
                };
                let alg = if op == "conv_k_fft" {
                    ConvAlgorithm::Fft
                } else {
                    ConvAlgorithm::Direct
                };
                conv_with(x, w, None, &spec, alg)?
            }
            ("fft_c64" | "fft_c128", [x]) => fft(x, None, -1, FftNorm::Backward)?,
            _ => {
                return Err(tessera_runtime::RuntimeError::args(format!(
                    "unknown op {op}"
                )))
            }
        };
        let secs = start.elapsed().as_secs_f64();
        std::hint::black_box(out);
        Ok(secs)
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let mut inputs = Inputs {
        cache: HashMap::new(),
    };
    if std::env::args().any(|a| a == "--serve") {
        let stdin = std::io::stdin();
        let mut out = std::io::stdout();
        for line in stdin.lock().lines() {
            let line = line?;
            let mut it = line.split_whitespace();
            let (Some(op), Some(n)) = (it.next(), it.next()) else {
                break;
            };
            let n: usize = n.parse()?;
            match inputs.run(op, n) {
                Ok(s) => writeln!(out, "{s}")?,
                Err(e) => writeln!(out, "error {e}")?,
            }
            out.flush()?;
        }
        return Ok(());
    }
    let cases = [
        ("matmul_f32", 1024, 2.0 * 1024f64.powi(3)),
        ("matmul_f32", 2048, 2.0 * 2048f64.powi(3)),
        ("matmul_bf16", 1024, 2.0 * 1024f64.powi(3)),
        ("matmul_f64", 1024, 2.0 * 1024f64.powi(3)),
        ("matmul_n16_f32", 1024, 2.0 * 1024f64.powi(2) * 16.0),
        ("matmul_n64_f32", 1024, 2.0 * 1024f64.powi(2) * 64.0),
        ("matmul_k16_f32", 1024, 2.0 * 1024f64.powi(2) * 16.0),
        ("softmax_f32", 4096, 0.0),
        ("layernorm_f32", 4096, 0.0),
        ("sum_f32", 4096, 0.0),
        ("sum_rows_f32", 1024, 0.0),
        ("sum_rows_f32", 4096, 0.0),
        ("sum_cols_f32", 1024, 0.0),
        ("sum_cols_f32", 4096, 0.0),
        ("max_rows_f32", 1024, 0.0),
        ("max_rows_f32", 4096, 0.0),
        ("add_f32", 1024, 0.0),
        ("add_f32", 4096, 0.0),
        ("mul_bcast_f32", 1024, 0.0),
        ("mul_bcast_f32", 4096, 0.0),
        ("relu_f32", 1024, 0.0),
        ("relu_f32", 4096, 0.0),
        ("exp_f32", 1024, 0.0),
        ("tanh_f32", 1024, 0.0),
        ("gelu_f32", 1024, 0.0),
        ("conv2d_f32", 8, 2.0 * 8.0 * 64.0 * 56.0 * 56.0 * 64.0 * 9.0),
        ("conv2d_dw_f32", 8, 2.0 * 8.0 * 64.0 * 56.0 * 56.0 * 9.0),
        ("fft_c64", 1 << 20, 5.0 * 20.0 * (1u64 << 20) as f64),
        ("fft_c128", 1 << 20, 5.0 * 20.0 * (1u64 << 20) as f64),
    ];
    let conv_k = |k: usize| 2.0 * 4.0 * 8.0 * 64.0 * 64.0 * 8.0 * (k * k) as f64;
    let cases: Vec<(&str, usize, f64)> = cases
        .into_iter()
        .chain([3, 7, 15, 31].into_iter().flat_map(|k| {
            [
                ("conv_k_direct", k, conv_k(k)),
                ("conv_k_fft", k, conv_k(k)),
            ]
        }))
        .collect();
    let only = std::env::var("BENCH_ONLY").ok();
    for (op, n, flops) in cases {
        let alone = op.starts_with("conv_k_");
        if only.as_deref().map_or(alone, |o| o != op) {
            continue;
        }
        inputs.run(op, n)?;
        inputs.run(op, n)?;
        let times: Vec<f64> = (0..15).map(|_| inputs.run(op, n)).collect::<Result<_>>()?;
        let m = median(times);
        if flops > 0.0 {
            println!(
                "{op:12} {n:5}  {:9.3} ms  {:8.1} GFLOP/s",
                m * 1e3,
                flops / m / 1e9
            );
        } else {
            println!(
                "{op:12} {n:5}  {:9.3} ms  {:8.2} GB/s (read+write fp32)",
                m * 1e3,
                (n * n * 8) as f64 / m / 1e9
            );
        }
    }
    Ok(())
}
