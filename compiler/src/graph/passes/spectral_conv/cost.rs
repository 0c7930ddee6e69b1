//! The model's latency of a convolution computed directly (one direct convolution kernel) and
//! through the FFT (the kernels of the spectral rewrite, [`super`]): the choice that rewrite
//! makes for `algorithm="auto"`. It sits beside the rewrite, below Graph IR's passes, and the
//! cost model re-exports it as `cost::conv`.
//!
//! Each kernel is a roofline stage on the target's [`Spec`]: `LAUNCH_US + max(FLOPs at the
//! fp32 peak, bytes at the HBM bandwidth) / efficiency`, the efficiency each path's kernels
//! were measured to reach ([`DIRECT_EFFICIENCY`], [`FFT_EFFICIENCY`]). A complex transform of
//! length `n` costs `5·n·log2 n` FLOPs, a real one half that; the frequency-domain product `8`
//! FLOPs per complex multiply-add. Model figures, like everything in [`crate::cost`].

use crate::arch::{Spec, LAUNCH_US};
use crate::graph::ConvSizes;

/// A convolution as the model sees it, in its 2-D form (a 1-D one has `h = kh = oh = 1` and
/// a plane of one row).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvShape {
    pub size: ConvSizes,
    /// The transform plane (rows, columns) of the spectral form.
    pub plane: [usize; 2],
    /// Bytes per element of the real operands and result.
    pub elem_bytes: usize,
    /// Bytes per complex element (8 for c64, 16 for c128).
    pub complex_bytes: usize,
    /// Whether the convolution computed directly runs as the implicit GEMM on tensor cores
    /// (bf16/fp16 operands, `schedule::conv_mma_tile`) rather than the direct FMA kernel.
    pub tensor_cores: bool,
}

/// The model's latency of each way (µs) and the kernels the FFT way launches.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConvCost {
    pub direct_us: f64,
    pub fft_us: f64,
    pub fft_kernels: usize,
}

/// The fraction of the fp32 peak the direct convolution kernel reaches: 3.4 to 4.1 TFLOP/s
/// of 67 measured on an H200 (bench/RESULTS.md, 2026-11-26: 31x31 and 15x15 kernels on 16
/// channels, a bf16 3x3 layer at 128 channels), FMA loops reading the input from global memory.
pub const DIRECT_EFFICIENCY: f64 = 0.06;

/// The fraction of the roofline the spectral kernels reach: the 8 kernels of a 31x31
/// convolution took 2.7 to 3.3 times the launch-free roofline on an H200 (same entry; lines
/// along the middle axis are read with a stride).
pub const FFT_EFFICIENCY: f64 = 0.3;

/// The fraction of the bf16/fp16 tensor-core peak the implicit-GEMM convolution is assumed to
/// reach. **Not measured**: no GPU has run that kernel yet. The tensor-core matmul reached
/// 0.45-0.60 of PyTorch's (bench/RESULTS.md), so about a third of the peak; the convolution
/// gathers its operands through registers without asynchronous copies, so a third of that.
pub const IGEMM_EFFICIENCY: f64 = 0.1;

fn stage(spec: &Spec, flops: f64, bytes: f64, efficiency: f64) -> f64 {
    stage_at(spec, spec.peak_tflops.fp32, flops, bytes, efficiency)
}

fn stage_at(spec: &Spec, peak_tflops: f64, flops: f64, bytes: f64, efficiency: f64) -> f64 {
    let compute = flops / (peak_tflops * 1e6);
    let memory = bytes / (spec.hbm_gbps * 1e3);
    LAUNCH_US + compute.max(memory) / efficiency
}

fn log2(n: usize) -> f64 {
    (n.max(1) as f64).log2()
}

/// Both latencies of `s` on `spec`.
pub fn conv_cost(spec: &Spec, s: &ConvShape) -> ConvCost {
    let f = |v: usize| v as f64;
    let z = &s.size;
    let (n, c, o, g) = (f(z.batch), f(z.cin), f(z.cout), f(z.groups.max(1)));
    let cg = c / g;
    let [h, w] = z.input.map(f);
    let [kh, kw] = z.kernel.map(f);
    let [oh, ow] = z.output.map(f);
    let (eb, cb) = (f(s.elem_bytes), f(s.complex_bytes));
    let (peak, efficiency) = if s.tensor_cores {
        (spec.peak_tflops.bf16, IGEMM_EFFICIENCY)
    } else {
        (spec.peak_tflops.fp32, DIRECT_EFFICIENCY)
    };
    let direct = stage_at(
        spec,
        peak,
        2.0 * n * o * oh * ow * cg * kh * kw,
        (n * c * h * w + o * cg * kh * kw + n * o * oh * ow) * eb,
        efficiency,
    );

    let [p, q] = s.plane;
    let half = f(q / 2 + 1);
    let bins = f(p) * half;
    let row_fft = 2.5 * f(q) * log2(q);
    let col_fft = 5.0 * f(p) * log2(p);
    let mut fft = 0.0;
    let mut kernels = 0;
    let mut add = |flops: f64, bytes: f64| {
        fft += stage(spec, flops, bytes, FFT_EFFICIENCY);
        kernels += 1;
    };
    // forward transforms of the input (`imgs` planes of `rows × cols`) and of the kernel
    for (imgs, rows, cols) in [(n * c, h, w), (o * cg, kh, kw)] {
        add(imgs * rows * row_fft, imgs * rows * (cols * eb + half * cb));
        if p > 1 {
            add(imgs * half * col_fft, imgs * (rows * half + bins) * cb);
        }
    }
    // the product, summed over each group's channels
    add(
        8.0 * n * o * cg * bins,
        (n * c * bins + o * cg * bins + n * o * bins) * cb,
    );
    // back: columns, then rows to reals, then the strided window
    if p > 1 {
        add(n * o * half * col_fft, 2.0 * n * o * bins * cb);
    }
    let reals = f(p) * f(q);
    add(n * o * f(p) * row_fft, n * o * (bins * cb + reals * eb));
    add(0.0, n * o * (reals + oh * ow) * eb);
    ConvCost {
        direct_us: direct,
        fft_us: fft,
        fft_kernels: kernels,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::Target;

    fn shape(k: usize, c: usize) -> ConvShape {
        let out = 64;
        let span = out + k - 1;
        let plane = span.next_power_of_two();
        ConvShape {
            size: ConvSizes {
                batch: 2,
                cin: c,
                cout: c,
                groups: 1,
                input: [64, 64],
                kernel: [k, k],
                output: [out, out],
            },
            plane: [plane, plane],
            elem_bytes: 4,
            complex_bytes: 8,
            tensor_cores: false,
        }
    }

    #[test]
    fn the_choice_follows_the_measured_crossover() {
        // 2 images of 16 channels on 64x64, on an H200 (bench/RESULTS.md): the direct kernel
        // was faster up to 7x7 (15.6, 38.0, 75.3 µs against 88 µs), the FFT from 9x9 on
        // (88.4 against 106.8 µs, 91.2 against 279.1, 96.4 against 1094.0)
        let spec = Target::Sm90.spec();
        for k in [3, 5, 7] {
            let c = conv_cost(&spec, &shape(k, 16));
            assert!(c.direct_us < c.fft_us, "{k}: {c:?}");
        }
        for k in [9, 15, 31] {
            let c = conv_cost(&spec, &shape(k, 16));
            assert!(c.fft_us < c.direct_us, "{k}: {c:?}");
        }
        // 4 forward transforms, the product, 2 inverse ones and the window
        assert_eq!(conv_cost(&spec, &shape(31, 16)).fft_kernels, 8);
    }

    #[test]
    fn tensor_cores_make_the_direct_form_cheaper() {
        // the same bf16 convolution: the implicit GEMM's estimate is below the FMA kernel's,
        // so the crossover to the FFT moves to larger kernels
        let spec = Target::Sm90.spec();
        let mut s = shape(9, 64);
        s.elem_bytes = 2;
        let fma = conv_cost(&spec, &s);
        s.tensor_cores = true;
        let tc = conv_cost(&spec, &s);
        assert!(tc.direct_us < fma.direct_us, "{tc:?} {fma:?}");
        assert_eq!(tc.fft_us, fma.fft_us);
    }

    #[test]
    fn one_row_planes_skip_the_column_transforms() {
        let mut s = shape(31, 4);
        s.size.input = [1, 1000];
        s.size.kernel = [1, 31];
        s.size.output = [1, 970];
        s.plane = [1, 1024];
        assert_eq!(conv_cost(&Target::Sm90.spec(), &s).fft_kernels, 5);
    }
}
