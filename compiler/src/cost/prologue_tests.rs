//! The cost model of a matmul with a norm prologue against the unfused pair (a layernorm
//! kernel, then the matmul): `gelu(layernorm(x, g, b) @ w + bias)` with x bf16[256,512],
//! w bf16[512,256] on sm_90 (H100 SXM5: 132 SMs, fp32 CUDA cores 66.9 TFLOP/s), default
//! schedule (128×128×32 tiles: 2×2 blocks), registers fixed at 128.

use super::*;
use crate::graph::pipeline::{optimize, Fusion, Options};
use crate::graph::{BinaryOp, DType, Graph, Op, TensorType, UnaryOp, ValueId};
use crate::pipeline::lower;
use crate::schedule::Directives;
use tessera_lang::{SourceMap, Span};

fn bf16(shape: &[usize]) -> TensorType {
    TensorType::new(shape.to_vec(), DType::BF16)
}

/// `gelu(layernorm(x, g, b) @ w + bias)`, the normalised tensor also returned when `pair`
/// (so that the prologue does not fire: the unfused pair, epilogue kept).
fn ln_linear(pair: bool) -> Graph {
    let sp = Span::new(0, 0, 1);
    let mut g = Graph::new("ln_linear");
    let x = g.add_param(bf16(&[256, 512]), sp);
    let gm = g.add_param(bf16(&[512]), sp);
    let bt = g.add_param(bf16(&[512]), sp);
    let w = g.add_param(bf16(&[512, 256]), sp);
    let bias = g.add_param(bf16(&[256]), sp);
    let n = g.push(
        Op::LayerNorm {
            x,
            weight: Some(gm),
            bias: Some(bt),
            eps: 1e-5,
        },
        bf16(&[256, 512]),
        sp,
    );
    let mm = g.push(
        Op::Matmul {
            a: n,
            b: w,
            accum: None,
            epilogue: vec![],
            tile: None,
        },
        bf16(&[256, 256]),
        sp,
    );
    let add = |g: &mut Graph, a: ValueId| {
        g.push(
            Op::Binary {
                op: BinaryOp::Add,
                a,
                b: bias,
            },
            bf16(&[256, 256]),
            sp,
        )
    };
    let s = add(&mut g, mm);
    let y = g.push(
        Op::Unary {
            op: UnaryOp::Gelu,
            x: s,
        },
        bf16(&[256, 256]),
        sp,
    );
    g.outputs = if pair { vec![y, n] } else { vec![y] };
    g
}

/// The estimates of every kernel of the optimised graph.
fn estimates(mut g: Graph) -> Vec<Estimate> {
    let opts = Options {
        fusion: Fusion::Auto,
        target: Target::Sm90,
    };
    optimize(&mut g, &opts, &SourceMap::new()).expect("optimises");
    let l = lower(&g, &Directives::default(), Target::Sm90).expect("lowers");
    (0..l.program.kernels.len())
        .map(|i| estimate(&l, i, Target::Sm90, Some(128)).expect("estimate"))
        .collect()
}

fn close(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= want.abs() * 2e-3,
        "{what}: model {got}, by hand {want}"
    );
}

#[test]
fn the_fused_kernel_reads_a_twice_and_never_writes_the_normalised_tensor() {
    let fused = estimates(ln_linear(false));
    let pair = estimates(ln_linear(true));
    assert_eq!((fused.len(), pair.len()), (1, 2));
    let (f, ln, mm) = (&fused[0], &pair[0], &pair[1]);
    // Fused: both row panels of x (128×512 bf16 = 131072 B) twice (statistics, k loop) =
    // 524288, both column panels of w 262144, the result 131072, g, b and the bias 2560.
    close(f.bytes, 920_064.0, "fused bytes");
    // The pair: the layernorm reads x and writes the normalised tensor (262144 each) and reads
    // g, b (2048); the matmul reads the normalised tensor's panels once (262144), w, the
    // result and the bias as above.
    close(ln.bytes, 526_336.0, "layernorm bytes");
    close(mm.bytes, 655_872.0, "matmul bytes");
    // 262144 B saved: the normalised tensor's write, its read replaced by x's second read
    close(ln.bytes + mm.bytes - f.bytes, 262_144.0, "bytes saved");
    // FLOPs: the product and two epilogue steps, plus the prologue's 8 per element of each
    // row panel in each of the 2 blocks of its row (the statistics are computed per block).
    let mmf = 2.0 * 256.0 * 256.0 * 512.0 + 2.0 * 256.0 * 256.0;
    close(mm.flops, mmf, "matmul flops");
    close(f.flops, mmf + 2.0 * 256.0 * 512.0 * 8.0, "fused flops");
    // Time: one launch instead of two; the prologue's CUDA-core work (128·512·8 FLOPs per
    // block at 66.9/132 TFLOP/s per SM: 1.034 µs) adds to the fused matmul's compute.
    let per_sm = target_fp32() / 132.0;
    close(
        f.compute_us - mm.compute_us,
        128.0 * 512.0 * 8.0 / per_sm * 1e6,
        "prologue compute",
    );
    assert!(
        f.latency_us < ln.latency_us + mm.latency_us,
        "fused {} µs, pair {} + {} µs",
        f.latency_us,
        ln.latency_us,
        mm.latency_us
    );
}

fn target_fp32() -> f64 {
    Target::Sm90.spec().peak_tflops.fp32 * 1e12
}
