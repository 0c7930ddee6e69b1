//! The sample kernels (Tile IR text in `compiler/tests/data/`) run in the emulator against fp64
//! CPU references on random inputs, including sizes that are not multiples of the tile/vector
//! widths. `gelu_affine`'s `a` and `b` are `u32` parameters holding f32 bits.

use half::{bf16, f16};
use tessera_compiler::backend::ptx::{Kernel, MmaKind};
use tessera_runtime::emu::{run, Arg, Launch};

#[path = "../../compiler/tests/common/samples.rs"]
mod samples;

struct Rng(u64);
impl Rng {
    fn f32(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    fn vec(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n).map(|_| self.f32() * scale).collect()
    }
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
fn ptr(buffer: usize) -> Arg {
    Arg::Ptr { buffer, offset: 0 }
}

fn sample(name: &str) -> Kernel {
    samples::sample(name).0
}

fn gelu64(v: f64) -> f64 {
    0.5 * v * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (v + 0.044715 * v * v * v)).tanh())
}

#[test]
fn gelu_affine_matches_fp64() {
    let k = sample("gelu_affine");
    let mut rng = Rng(1);
    for n in [1usize, 3, 4, 5, 8, 127, 1000, 1027] {
        let x = rng.vec(n, 4.0);
        let (a, b) = (1.5f32, -0.25f32);
        let mut bufs = vec![bytes(&x), vec![0u8; 4 * n]];
        let threads = n.div_ceil(4) as u32;
        let launch = Launch::linear(threads.div_ceil(256), 256);
        let args = [
            ptr(0),
            ptr(1),
            Arg::U32(a.to_bits()),
            Arg::U32(b.to_bits()),
            Arg::U32(n as u32),
        ];
        run(&k, launch, &args, &mut bufs).unwrap();
        let y = floats(&bufs[1]);
        for i in 0..n {
            let want = gelu64(f64::from(x[i]) * f64::from(a) + f64::from(b));
            let got = f64::from(y[i]);
            assert!(
                (got - want).abs() <= 1e-5 * (1.0 + want.abs()),
                "n={n} i={i}: {got} vs {want}"
            );
        }
    }
}

#[test]
fn softmax_rows_matches_fp64() {
    let k = sample("softmax_rows");
    let mut rng = Rng(2);
    for (rows, cols) in [(1usize, 1usize), (3, 33), (5, 100), (9, 7), (4, 64)] {
        let x = rng.vec(rows * cols, 5.0);
        let mut bufs = vec![bytes(&x), vec![0u8; 4 * rows * cols]];
        let launch = Launch::linear(rows.div_ceil(4) as u32, 128);
        let args = [ptr(0), ptr(1), Arg::U32(rows as u32), Arg::U32(cols as u32)];
        run(&k, launch, &args, &mut bufs).unwrap();
        let y = floats(&bufs[1]);
        for r in 0..rows {
            let row: Vec<f64> = x[r * cols..(r + 1) * cols]
                .iter()
                .map(|v| f64::from(*v))
                .collect();
            let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let s: f64 = row.iter().map(|v| (v - m).exp()).sum();
            for c in 0..cols {
                let want = (row[c] - m).exp() / s;
                let got = f64::from(y[r * cols + c]);
                assert!(
                    (got - want).abs() <= 2e-6 * (1.0 + want),
                    "({r},{c}): {got} vs {want}"
                );
            }
        }
    }
}

fn matmul_ref(a: &[f64], b: &[f64], m: usize, n: usize, k: usize) -> (Vec<f64>, Vec<f64>) {
    let mut c = vec![0.0; m * n];
    let mut mag = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            for p in 0..k {
                c[i * n + j] += a[i * k + p] * b[p * n + j];
                mag[i * n + j] += (a[i * k + p] * b[p * n + j]).abs();
            }
        }
    }
    (c, mag)
}

#[test]
fn matmul_f32_matches_fp64() {
    let kern = sample("matmul_f32");
    let mut rng = Rng(3);
    for (m, n, k) in [
        (64usize, 64usize, 16usize),
        (70, 50, 37),
        (1, 1, 1),
        (130, 67, 5),
        (3, 65, 33),
    ] {
        let a = rng.vec(m * k, 1.0);
        let b = rng.vec(k * n, 1.0);
        let mut bufs = vec![bytes(&a), bytes(&b), vec![0xffu8; 4 * m * n]];
        let launch = Launch {
            grid: [n.div_ceil(64) as u32, m.div_ceil(64) as u32, 1],
            block: [256, 1, 1],
        };
        let args = [
            ptr(0),
            ptr(1),
            ptr(2),
            Arg::U32(m as u32),
            Arg::U32(n as u32),
            Arg::U32(k as u32),
        ];
        run(&kern, launch, &args, &mut bufs).unwrap();
        let c = floats(&bufs[2]);
        let a64: Vec<f64> = a.iter().map(|v| f64::from(*v)).collect();
        let b64: Vec<f64> = b.iter().map(|v| f64::from(*v)).collect();
        let (want, mag) = matmul_ref(&a64, &b64, m, n, k);
        for i in 0..m * n {
            let tol = (k as f64 + 1.0) * f64::from(f32::EPSILON) * mag[i] + 1e-30;
            assert!(
                (f64::from(c[i]) - want[i]).abs() <= tol,
                "{m}x{n}x{k} [{i}]: {} vs {}",
                c[i],
                want[i]
            );
        }
    }
}

fn bf16_bytes(v: &[bf16]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect()
}

#[test]
fn matmul_bf16_matches_fp64() {
    let kern = sample("matmul_bf16");
    let mut rng = Rng(4);
    for (m, n, k) in [
        (64usize, 64usize, 32usize),
        (70, 50, 40),
        (17, 9, 3),
        (65, 129, 45),
    ] {
        let a: Vec<bf16> = rng
            .vec(m * k, 2.0)
            .into_iter()
            .map(bf16::from_f32)
            .collect();
        let b: Vec<bf16> = rng
            .vec(k * n, 2.0)
            .into_iter()
            .map(bf16::from_f32)
            .collect();
        let mut bufs = vec![bf16_bytes(&a), bf16_bytes(&b), vec![0xffu8; 4 * m * n]];
        let launch = Launch {
            grid: [n.div_ceil(64) as u32, m.div_ceil(64) as u32, 1],
            block: [128, 1, 1],
        };
        let args = [
            ptr(0),
            ptr(1),
            ptr(2),
            Arg::U32(m as u32),
            Arg::U32(n as u32),
            Arg::U32(k as u32),
        ];
        run(&kern, launch, &args, &mut bufs).unwrap();
        let c = floats(&bufs[2]);
        let a64: Vec<f64> = a.iter().map(|v| v.to_f64()).collect();
        let b64: Vec<f64> = b.iter().map(|v| v.to_f64()).collect();
        let (want, mag) = matmul_ref(&a64, &b64, m, n, k);
        for i in 0..m * n {
            let tol = (k as f64 + 1.0) * f64::from(f32::EPSILON) * mag[i] + 1e-30;
            assert!(
                (f64::from(c[i]) - want[i]).abs() <= tol,
                "{m}x{n}x{k} [{i}]: {} vs {}",
                c[i],
                want[i]
            );
        }
    }
}

#[test]
fn mma_tiles_match_fp64() {
    for kind in [
        MmaKind::M16n8k16Bf16,
        MmaKind::M16n8k16F16,
        MmaKind::M16n8k8Tf32,
    ] {
        let kern = sample(samples::mma_tile(kind));
        let kd = if kind == MmaKind::M16n8k8Tf32 { 8 } else { 16 };
        let mut rng = Rng(5);
        let a = rng.vec(16 * kd, 3.0);
        let b = rng.vec(kd * 8, 3.0);
        // The operands as the kernel rounds them: bf16/f16 to nearest even, tf32 ties away.
        let round = |x: f32| -> f64 {
            match kind {
                MmaKind::M16n8k16Bf16 => bf16::from_f32(x).to_f64(),
                MmaKind::M16n8k16F16 => f16::from_f32(x).to_f64(),
                MmaKind::M16n8k8Tf32 => {
                    f64::from(f32::from_bits(x.to_bits().wrapping_add(0x1000) & !0x1fff))
                }
            }
        };
        let mut bufs = vec![bytes(&a), bytes(&b), vec![0u8; 4 * 16 * 8]];
        run(
            &kern,
            Launch::linear(1, 32),
            &[ptr(0), ptr(1), ptr(2)],
            &mut bufs,
        )
        .unwrap();
        let d = floats(&bufs[2]);
        let a64: Vec<f64> = a.iter().map(|v| round(*v)).collect();
        let b64: Vec<f64> = b.iter().map(|v| round(*v)).collect();
        let (want, mag) = matmul_ref(&a64, &b64, 16, 8, kd);
        for i in 0..128 {
            let tol = (kd as f64) * f64::from(f32::EPSILON) * mag[i];
            assert!(
                (f64::from(d[i]) - want[i]).abs() <= tol,
                "{kind:?} [{i}]: {} vs {}",
                d[i],
                want[i]
            );
        }
    }
}

#[test]
fn runs_are_deterministic() {
    let kern = sample("matmul_f32");
    let mut rng = Rng(6);
    let (m, n, k) = (33usize, 70usize, 21usize);
    let a = rng.vec(m * k, 1.0);
    let b = rng.vec(k * n, 1.0);
    let launch = Launch {
        grid: [2, 1, 1],
        block: [256, 1, 1],
    };
    let args = [
        ptr(0),
        ptr(1),
        ptr(2),
        Arg::U32(m as u32),
        Arg::U32(n as u32),
        Arg::U32(k as u32),
    ];
    let mut first = vec![bytes(&a), bytes(&b), vec![0u8; 4 * m * n]];
    let s1 = run(&kern, launch, &args, &mut first).unwrap();
    let mut second = vec![bytes(&a), bytes(&b), vec![0u8; 4 * m * n]];
    let s2 = run(&kern, launch, &args, &mut second).unwrap();
    assert_eq!(first, second);
    assert_eq!(s1, s2);
    assert!(s1.barriers > 0);
}
