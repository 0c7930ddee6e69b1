//! Our own f32 GEMM for x86-64 with AVX2 and FMA: BLIS-style blocking (pack a KC×NC panel of B
//! and an MC×KC block of A, then a 6×16 register-tile microkernel), row blocks of C in parallel.
//! Used for fp32-accumulated matmul when the CPU has AVX2+FMA; other CPUs use the `gemm` crate.
//!
//! Each C element is accumulated over k in the same order whatever the thread count (threads
//! split rows of C, never k), so results do not depend on parallelism.

use rayon::prelude::*;

const MR: usize = 6;
const NR: usize = 16;
const KC: usize = 256;
const MC_MAX: usize = 264; // multiple of MR; MC_MAX·KC·4 bytes fits a 512 KiB L2

/// 32-byte aligned storage for packed panels.
#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
struct Lane([f32; 8]);

fn aligned(n: usize) -> Vec<Lane> {
    vec![Lane::default(); n.div_ceil(8)]
}

fn as_f32(v: &mut [Lane]) -> &mut [f32] {
    // SAFETY: `Lane` is `repr(C)` around `[f32; 8]` with no padding (32 bytes, align 32), so a
    // slice of n lanes is exactly 8n contiguous, initialised f32s.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<f32>(), v.len() * 8) }
}

/// An input element the packing routines widen to f32 (exactly).
pub trait Elem: Copy + Sync {
    fn f32(self) -> f32;
}
impl Elem for f32 {
    #[inline(always)]
    fn f32(self) -> f32 {
        self
    }
}
impl Elem for half::bf16 {
    #[inline(always)]
    fn f32(self) -> f32 {
        self.to_f32()
    }
}
impl Elem for half::f16 {
    #[inline(always)]
    fn f32(self) -> f32 {
        self.to_f32()
    }
}

/// Whether this CPU can run the AVX2+FMA kernel.
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Packs all of B (row-major k×n) into NR-wide column panels of full depth: panel t holds, for
/// each kk in 0..k, the 16 values B[kk, 16t .. 16t+16] (zero padded). The KC-slice p0.. of
/// panel t is then the contiguous range `t·k·NR + p0·NR ..`.
fn pack_b<B: Elem>(b: &[B], k: usize, n: usize, out: &mut [f32]) {
    let work = |(t, dst): (usize, &mut [f32])| {
        let j = t * NR;
        let w = NR.min(n - j);
        for kk in 0..k {
            let row = &b[kk * n + j..kk * n + j + w];
            let d = &mut dst[kk * NR..kk * NR + NR];
            for (x, &v) in d[..w].iter_mut().zip(row) {
                *x = v.f32();
            }
            d[w..].fill(0.0);
        }
    };
    let out = &mut out[..n.div_ceil(NR) * k * NR];
    if k * n >= (1 << 16) {
        out.par_chunks_mut(k * NR).enumerate().for_each(work);
    } else {
        out.chunks_mut(k * NR).enumerate().for_each(work);
    }
}

/// Packs A[i0..i0+mc, p0..p0+kc] (row-major, leading dim `lda`) into MR-tall row panels:
/// panel s holds, for each kk, the 6 values A[i0+6s .. i0+6s+6, p0+kk] (zero padded).
fn pack_a<A: Elem>(
    a: &[A],
    lda: usize,
    i0: usize,
    mc: usize,
    p0: usize,
    kc: usize,
    out: &mut [f32],
) {
    let panels = mc.div_ceil(MR);
    for s in 0..panels {
        let i = i0 + s * MR;
        let h = MR.min(i0 + mc - i);
        let dst = &mut out[s * kc * MR..(s + 1) * kc * MR];
        for r in 0..MR {
            if r < h {
                let row = &a[(i + r) * lda + p0..(i + r) * lda + p0 + kc];
                for (kk, &v) in row.iter().enumerate() {
                    dst[kk * MR + r] = v.f32();
                }
            } else {
                for kk in 0..kc {
                    dst[kk * MR + r] = 0.0;
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
/// C[0..6, 0..16] (leading dim `ldc`) = (accumulate ? C : 0) + Ap·Bp over `kc`.
///
/// # Safety
/// `ap` holds 6·kc floats, `bp` 16·kc floats, `c` a 6×16 tile with row stride `ldc`.
unsafe fn kernel_6x16(
    kc: usize,
    ap: *const f32,
    bp: *const f32,
    c: *mut f32,
    ldc: usize,
    accumulate: bool,
) {
    use std::arch::x86_64::*;
    unsafe {
        let mut acc = [_mm256_setzero_ps(); 12];
        if accumulate {
            // Start pulling the C tile in while the k loop runs.
            for r in 0..MR {
                _mm_prefetch::<_MM_HINT_T0>(c.add(r * ldc).cast::<i8>());
                _mm_prefetch::<_MM_HINT_T0>(c.add(r * ldc + 15).cast::<i8>());
            }
        }
        let (mut a, mut b) = (ap, bp);
        macro_rules! step {
            () => {{
                let b0 = _mm256_load_ps(b);
                let b1 = _mm256_load_ps(b.add(8));
                let a0 = _mm256_broadcast_ss(&*a);
                acc[0] = _mm256_fmadd_ps(a0, b0, acc[0]);
                acc[1] = _mm256_fmadd_ps(a0, b1, acc[1]);
                let a1 = _mm256_broadcast_ss(&*a.add(1));
                acc[2] = _mm256_fmadd_ps(a1, b0, acc[2]);
                acc[3] = _mm256_fmadd_ps(a1, b1, acc[3]);
                let a2 = _mm256_broadcast_ss(&*a.add(2));
                acc[4] = _mm256_fmadd_ps(a2, b0, acc[4]);
                acc[5] = _mm256_fmadd_ps(a2, b1, acc[5]);
                let a3 = _mm256_broadcast_ss(&*a.add(3));
                acc[6] = _mm256_fmadd_ps(a3, b0, acc[6]);
                acc[7] = _mm256_fmadd_ps(a3, b1, acc[7]);
                let a4 = _mm256_broadcast_ss(&*a.add(4));
                acc[8] = _mm256_fmadd_ps(a4, b0, acc[8]);
                acc[9] = _mm256_fmadd_ps(a4, b1, acc[9]);
                let a5 = _mm256_broadcast_ss(&*a.add(5));
                acc[10] = _mm256_fmadd_ps(a5, b0, acc[10]);
                acc[11] = _mm256_fmadd_ps(a5, b1, acc[11]);
                a = a.add(MR);
                b = b.add(NR);
            }};
        }
        for _ in 0..kc / 4 {
            step!();
            step!();
            step!();
            step!();
        }
        for _ in 0..kc % 4 {
            step!();
        }
        for r in 0..MR {
            let p = c.add(r * ldc);
            let (mut v0, mut v1) = (acc[2 * r], acc[2 * r + 1]);
            if accumulate {
                v0 = _mm256_add_ps(v0, _mm256_loadu_ps(p));
                v1 = _mm256_add_ps(v1, _mm256_loadu_ps(p.add(8)));
            }
            _mm256_storeu_ps(p, v0);
            _mm256_storeu_ps(p.add(8), v1);
        }
    }
}

/// Multiplies the packed block into rows `i0..i0+mc` of C (`c_rows` starts at row i0).
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
fn macro_kernel(
    ap: &[f32],
    bp: &[f32],
    c_rows: &mut [f32],
    n: usize,
    mc: usize,
    k: usize,
    p0: usize,
    kc: usize,
) {
    let ldc = n;
    let accumulate = p0 > 0;
    let mut tile = [0.0f32; MR * NR];
    for t in 0..n.div_ceil(NR) {
        let j = t * NR;
        let w = NR.min(n - j);
        let off = t * k * NR + p0 * NR;
        let bpan = &bp[off..off + kc * NR];
        for s in 0..mc.div_ceil(MR) {
            let i = s * MR;
            let h = MR.min(mc - i);
            let apan = &ap[s * kc * MR..(s + 1) * kc * MR];
            if h == MR && w == NR {
                let dst = &mut c_rows[i * ldc + j..(i + MR - 1) * ldc + j + NR];
                // SAFETY: the panels hold 6·kc and 16·kc floats (sliced above); `dst` covers the
                // 6×16 tile at (i, j) with row stride ldc (its length is checked by the slice);
                // the caller verified AVX2 and FMA.
                unsafe {
                    kernel_6x16(
                        kc,
                        apan.as_ptr(),
                        bpan.as_ptr(),
                        dst.as_mut_ptr(),
                        ldc,
                        accumulate,
                    )
                };
            } else {
                // Edge tile: compute into a scratch tile, then add the valid part.
                // SAFETY: as above, with the 6×16 scratch tile (row stride 16) as C.
                unsafe {
                    kernel_6x16(
                        kc,
                        apan.as_ptr(),
                        bpan.as_ptr(),
                        tile.as_mut_ptr(),
                        NR,
                        false,
                    )
                };
                for r in 0..h {
                    let row = &mut c_rows[(i + r) * ldc + j..(i + r) * ldc + j + w];
                    for (x, &v) in row.iter_mut().zip(&tile[r * NR..r * NR + w]) {
                        *x = if accumulate { *x + v } else { v };
                    }
                }
            }
        }
    }
}

/// `c[m×n] = a[m×k] · b[k×n]`, all row-major and contiguous. Call only when [`available`].
/// Low-precision inputs (bf16, fp16) are widened while packing, so no f32 copy is made.
pub fn sgemm<A: Elem, B: Elem>(
    m: usize,
    n: usize,
    k: usize,
    a: &[A],
    b: &[B],
    c: &mut [f32],
    parallel: bool,
) {
    if m == 0 || n == 0 || a.len() < m * k || b.len() < k * n || c.len() < m * n {
        return;
    }
    if k == 0 {
        c[..m * n].fill(0.0);
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let threads = if parallel {
            rayon::current_num_threads().max(1)
        } else {
            1
        };
        // Row blocks of at most MC_MAX rows; when parallel, about 4 per thread (so a thread that
        // gets descheduled is covered by work stealing), but not below 4·MR rows each.
        let mut blocks = m.div_ceil(MC_MAX).max(1);
        if threads > 1 {
            blocks = blocks.max((4 * threads).min(m.div_ceil(4 * MR)));
        }
        let mc = m.div_ceil(blocks).div_ceil(MR) * MR;
        let c = &mut c[..m * n];
        let mut bp = aligned(n.div_ceil(NR) * NR * k);
        let bpf = as_f32(&mut bp);
        pack_b(b, k, n, bpf);
        let bpf: &[f32] = bpf;
        let work = |(blk, rows): (usize, &mut [f32])| {
            let i0 = blk * mc;
            let rows_here = rows.len() / n;
            let mut ap = aligned(KC * rows_here.div_ceil(MR) * MR);
            let apf = as_f32(&mut ap);
            for p0 in (0..k).step_by(KC) {
                let kc = KC.min(k - p0);
                pack_a(a, k, i0, rows_here, p0, kc, apf);
                macro_kernel(apf, bpf, rows, n, rows_here, k, p0, kc);
            }
        };
        if threads > 1 {
            c.par_chunks_mut(mc * n).enumerate().for_each(work);
        } else {
            c.chunks_mut(mc * n).enumerate().for_each(work);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = parallel;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_naive_on_edge_shapes() {
        if !available() {
            return;
        }
        let mut seed = 1u64;
        let mut rnd = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        };
        for &(m, k, n) in &[
            (1, 1, 1),
            (1, 33, 129),
            (7, 5, 17),
            (6, 256, 16),
            (13, 257, 31),
            (100, 70, 50),
            (300, 600, 20),
            (2, 1000, 4200),
        ] {
            let a: Vec<f32> = (0..m * k).map(|_| rnd()).collect();
            let b: Vec<f32> = (0..k * n).map(|_| rnd()).collect();
            for par in [false, true] {
                let mut c = vec![f32::NAN; m * n];
                sgemm(m, n, k, &a, &b, &mut c, par);
                for i in 0..m {
                    for j in 0..n {
                        let want: f64 = (0..k)
                            .map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j]))
                            .sum();
                        let got = f64::from(c[i * n + j]);
                        assert!(
                            (got - want).abs() <= 1e-5 * (k as f64).sqrt() + 1e-6,
                            "{m}x{k}x{n} ({i},{j}): {got} vs {want}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn same_bits_for_any_thread_count() {
        if !available() {
            return;
        }
        let (m, k, n) = (97, 700, 53);
        let a: Vec<f32> = (0..m * k)
            .map(|i| ((i * 7919) % 1000) as f32 / 997.0 - 0.5)
            .collect();
        let b: Vec<f32> = (0..k * n)
            .map(|i| ((i * 104729) % 1000) as f32 / 991.0 - 0.5)
            .collect();
        let run = |t: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .unwrap();
            let mut c = vec![0.0f32; m * n];
            pool.install(|| sgemm(m, n, k, &a, &b, &mut c, true));
            c.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        };
        assert_eq!(run(1), run(3));
    }
}
