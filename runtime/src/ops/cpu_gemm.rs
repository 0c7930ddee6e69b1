//! Our own GEMM for f32 and f64 on every CPU: BLIS-style blocking (pack a KC-deep panel of B
//! and an MC×KC block of A, then an MR×NR register-tile micro-kernel per ISA, see
//! `gemm_kernels`), row blocks of C in parallel. bf16 and fp16 operands are widened to f32 while
//! packing, so no f32 copy of them is made.
//!
//! Each C element is accumulated over k in the same order whatever the thread count (threads
//! split rows of C, never k) and whatever the ISA (every kernel runs the same fused multiply-adds
//! over the same KC blocks), so results depend on neither.

use super::gemm_kernels::{GemmScalar, Kernel};
use crate::isa::Isa;
use rayon::prelude::*;

/// The k block: fixed for every ISA, since it decides where the partial sums are added to C.
const KC: usize = 256;
/// Bytes of one packed A block (MC×KC) to keep in L2.
const A_BLOCK_BYTES: usize = 256 * 1024;

/// One cache line of scratch memory.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

thread_local! {
    /// The packed B panel of the GEMM this thread calls, kept between calls (up to
    /// [`KEEP_BYTES`]) so that repeated GEMMs do not fault fresh pages in.
    static SCRATCH_B: std::cell::RefCell<Vec<Line>> = const { std::cell::RefCell::new(Vec::new()) };
    /// The packed A block of the row blocks this thread works on.
    static SCRATCH_A: std::cell::RefCell<Vec<Line>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The most scratch memory a thread keeps between calls.
const KEEP_BYTES: usize = 64 << 20;

/// Runs `f` on `len` elements of 64-byte aligned scratch memory from `slot` (or a fresh buffer
/// when the slot is in use further up this thread's stack, or the request is large). The
/// contents are whatever the last user left: callers write before they read.
fn with_scratch<T: GemmScalar, R>(
    slot: &'static std::thread::LocalKey<std::cell::RefCell<Vec<Line>>>,
    len: usize,
    f: impl FnOnce(&mut [T]) -> R,
) -> R {
    let bytes = len * std::mem::size_of::<T>();
    let lines = bytes.div_ceil(64);
    let view = |v: &mut [Line]| -> &mut [T] {
        // SAFETY: `v` holds `lines` initialised 64-byte lines, at least `len` elements of T;
        // a line's alignment (64) is a multiple of T's, and T is f32 or f64 (`GemmScalar` is an
        // unsafe trait for plain floats), for which every bit pattern is a valid value.
        unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<T>(), len) }
    };
    slot.with(|cell| match cell.try_borrow_mut() {
        Ok(mut v) if bytes <= KEEP_BYTES => {
            if v.len() < lines {
                v.resize(lines, Line([0; 64]));
            }
            f(view(&mut v[..lines]))
        }
        _ => f(view(&mut vec![Line([0; 64]); lines])),
    })
}

/// An input element the packing routines widen (exactly) to the compute type `T`.
pub trait Elem<T>: Copy + Sync {
    fn widen(self) -> T;
}
impl Elem<f32> for f32 {
    #[inline(always)]
    fn widen(self) -> f32 {
        self
    }
}
impl Elem<f64> for f64 {
    #[inline(always)]
    fn widen(self) -> f64 {
        self
    }
}
impl Elem<f32> for half::bf16 {
    #[inline(always)]
    fn widen(self) -> f32 {
        self.to_f32()
    }
}
impl Elem<f32> for half::f16 {
    #[inline(always)]
    fn widen(self) -> f32 {
        self.to_f32()
    }
}

/// Packs all of B (row-major k×n) into `nr`-wide column panels of full depth: panel t holds, for
/// each kk in 0..k, the values B[kk, nr·t .. nr·t+nr] (zero padded). The KC-slice p0.. of panel
/// t is then the contiguous range `t·k·nr + p0·nr ..`.
fn pack_b<T: GemmScalar, B: Elem<T>, const NR: usize>(b: &[B], k: usize, n: usize, out: &mut [T]) {
    let nr = NR;
    let work = |(t, dst): (usize, &mut [T])| {
        let j = t * nr;
        let w = nr.min(n - j);
        for kk in 0..k {
            let row = &b[kk * n + j..kk * n + j + w];
            let d = &mut dst[kk * nr..kk * nr + nr];
            for (x, &v) in d[..w].iter_mut().zip(row) {
                *x = v.widen();
            }
            d[w..].fill(T::default());
        }
    };
    let out = &mut out[..n.div_ceil(nr) * k * nr];
    if k * n >= (1 << 16) {
        out.par_chunks_mut(k * nr).enumerate().for_each(work);
    } else {
        out.chunks_mut(k * nr).enumerate().for_each(work);
    }
}

/// Packs A[i0..i0+mc, p0..p0+kc] (row-major, leading dim `lda`) into `mr`-tall row panels:
/// panel s holds, for each kk, the values A[i0+mr·s .. i0+mr·s+mr, p0+kk] (zero padded).
fn pack_a<T: GemmScalar, A: Elem<T>, const MR: usize>(
    a: &[A],
    lda: usize,
    i0: usize,
    mc: usize,
    p0: usize,
    kc: usize,
    out: &mut [T],
) {
    let mr = MR;
    for s in 0..mc.div_ceil(mr) {
        let i = i0 + s * mr;
        let h = mr.min(i0 + mc - i);
        let dst = &mut out[s * kc * mr..(s + 1) * kc * mr];
        for r in 0..mr {
            if r < h {
                let row = &a[(i + r) * lda + p0..(i + r) * lda + p0 + kc];
                for (kk, &v) in row.iter().enumerate() {
                    dst[kk * mr + r] = v.widen();
                }
            } else {
                for kk in 0..kc {
                    dst[kk * mr + r] = T::default();
                }
            }
        }
    }
}

/// Multiplies the packed block into rows `0..mc` of `c_rows` (row stride n).
#[allow(clippy::too_many_arguments)]
fn macro_kernel<T: GemmScalar, const MR: usize, const NR: usize>(
    kern: Kernel<T>,
    ap: &[T],
    bp: &[T],
    c_rows: &mut [T],
    n: usize,
    mc: usize,
    k: usize,
    p0: usize,
    kc: usize,
) {
    let (mr, nr) = (MR, NR);
    let ldc = n;
    let accumulate = p0 > 0;
    let mut tile = vec![T::default(); mr * nr];
    for t in 0..n.div_ceil(nr) {
        let j = t * nr;
        let w = nr.min(n - j);
        let off = t * k * nr + p0 * nr;
        let bpan = &bp[off..off + kc * nr];
        for s in 0..mc.div_ceil(mr) {
            let i = s * mr;
            let h = mr.min(mc - i);
            let apan = &ap[s * kc * mr..(s + 1) * kc * mr];
            if h == mr && w == nr {
                let dst = &mut c_rows[i * ldc + j..(i + mr - 1) * ldc + j + nr];
                // SAFETY: the panels hold mr·kc and nr·kc elements (sliced above); `dst` covers
                // the mr×nr tile at (i, j) with row stride ldc (its length is checked by the
                // slice); `kern` is the kernel of an ISA this CPU supports (`gemm` checked).
                unsafe {
                    (kern.f)(
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
                // SAFETY: as above, with the mr×nr scratch tile (row stride nr) as C.
                unsafe {
                    (kern.f)(
                        kc,
                        apan.as_ptr(),
                        bpan.as_ptr(),
                        tile.as_mut_ptr(),
                        nr,
                        false,
                    )
                };
                for r in 0..h {
                    let row = &mut c_rows[(i + r) * ldc + j..(i + r) * ldc + j + w];
                    for (x, &v) in row.iter_mut().zip(&tile[r * nr..r * nr + w]) {
                        *x = if accumulate { x.plus(v) } else { v };
                    }
                }
            }
        }
    }
}

/// `c[m×n] = a[m×k] · b[k×n]`, all row-major and contiguous, with the ISA [`crate::isa::current`]
/// names (read once here, on the calling thread).
pub fn gemm<T: GemmScalar, A: Elem<T>, B: Elem<T>>(
    m: usize,
    n: usize,
    k: usize,
    a: &[A],
    b: &[B],
    c: &mut [T],
    parallel: bool,
) {
    gemm_with(crate::isa::current(), m, n, k, a, b, c, parallel)
}

/// [`gemm`] with the ISA given; one this CPU cannot run is replaced by the best it can.
#[allow(clippy::too_many_arguments)]
pub fn gemm_with<T: GemmScalar, A: Elem<T>, B: Elem<T>>(
    isa: Isa,
    m: usize,
    n: usize,
    k: usize,
    a: &[A],
    b: &[B],
    c: &mut [T],
    parallel: bool,
) {
    if m == 0 || n == 0 || a.len() < m * k || b.len() < k * n || c.len() < m * n {
        return;
    }
    if k == 0 {
        c[..m * n].fill(T::default());
        return;
    }
    let isa = if isa.supported() { isa } else { Isa::best() };
    let kern = T::kernel(isa);
    // The tile shape as constants, so the packing and tile loops know their strides.
    macro_rules! shapes {
        ($(($mr:literal, $nr:literal)),*) => {
            match (kern.mr, kern.nr) {
                $(($mr, $nr) => drive::<T, A, B, $mr, $nr>(kern, m, n, k, a, b, c, parallel),)*
                _ => drive::<T, A, B, 4, 4>(T::kernel(Isa::Scalar), m, n, k, a, b, c, parallel),
            }
        };
    }
    shapes!((6, 16), (6, 8), (14, 32), (14, 16), (8, 12), (8, 6), (4, 4))
}

/// [`gemm_with`] for one kernel whose tile is MR×NR.
#[allow(clippy::too_many_arguments)]
fn drive<T: GemmScalar, A: Elem<T>, B: Elem<T>, const MR: usize, const NR: usize>(
    kern: Kernel<T>,
    m: usize,
    n: usize,
    k: usize,
    a: &[A],
    b: &[B],
    c: &mut [T],
    parallel: bool,
) {
    debug_assert!(kern.mr == MR && kern.nr == NR);
    let (mr, nr) = (MR, NR);
    let threads = if parallel {
        rayon::current_num_threads().max(1)
    } else {
        1
    };
    // Row blocks of at most mc_max rows; when parallel, about 4 per thread (so a thread that
    // gets descheduled is covered by work stealing), but not below 4·mr rows each.
    let mc_max = (A_BLOCK_BYTES / (KC * std::mem::size_of::<T>())).max(mr);
    let mut blocks = m.div_ceil(mc_max).max(1);
    if threads > 1 {
        blocks = blocks.max((4 * threads).min(m.div_ceil(4 * mr)));
    }
    let mc = m.div_ceil(blocks).div_ceil(mr) * mr;
    let c = &mut c[..m * n];
    with_scratch::<T, _>(&SCRATCH_B, n.div_ceil(nr) * nr * k, |bpf| {
        pack_b::<T, B, NR>(b, k, n, bpf);
        let bpf: &[T] = bpf;
        let work = |(blk, rows): (usize, &mut [T])| {
            let i0 = blk * mc;
            let rows_here = rows.len() / n;
            with_scratch::<T, _>(&SCRATCH_A, KC * rows_here.div_ceil(mr) * mr, |apf| {
                for p0 in (0..k).step_by(KC) {
                    let kc = KC.min(k - p0);
                    pack_a::<T, A, MR>(a, k, i0, rows_here, p0, kc, apf);
                    macro_kernel::<T, MR, NR>(kern, apf, bpf, rows, n, rows_here, k, p0, kc);
                }
            })
        };
        if threads > 1 {
            c.par_chunks_mut(mc * n).enumerate().for_each(work);
        } else {
            c.chunks_mut(mc * n).enumerate().for_each(work);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
            })
            .collect()
    }

    const SHAPES: [(usize, usize, usize); 9] = [
        (1, 1, 1),
        (1, 33, 129),
        (7, 5, 17),
        (6, 256, 16),
        (13, 257, 31),
        (14, 300, 32),
        (100, 70, 50),
        (300, 600, 20),
        (2, 1000, 4200),
    ];

    #[test]
    fn matches_naive_on_edge_shapes_on_every_isa() {
        for isa in Isa::available() {
            for &(m, k, n) in &SHAPES {
                let a = values(m * k, 1);
                let b = values(k * n, 2);
                for par in [false, true] {
                    let mut c = vec![f32::NAN; m * n];
                    gemm_with(isa, m, n, k, &a, &b, &mut c, par);
                    for i in 0..m {
                        for j in 0..n {
                            let want: f64 = (0..k)
                                .map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j]))
                                .sum();
                            let got = f64::from(c[i * n + j]);
                            assert!(
                                (got - want).abs() <= 1e-5 * (k as f64).sqrt() + 1e-6,
                                "{isa} {m}x{k}x{n} ({i},{j}): {got} vs {want}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// The contract of `TESSERA_CPU_ISA`: every path this CPU runs gives the scalar path's bits,
    /// for f32, f64 and widened bf16, on shapes with edge tiles and several k blocks.
    #[test]
    fn every_isa_gives_the_same_bits() {
        let isas = Isa::available();
        eprintln!("comparing {isas:?} with scalar");
        for &(m, k, n) in &SHAPES {
            let a = values(m * k, 3);
            let b = values(k * n, 4);
            let ad: Vec<f64> = a.iter().map(|&x| f64::from(x) / 3.0).collect();
            let bd: Vec<f64> = b.iter().map(|&x| f64::from(x) * 1.7).collect();
            let ah: Vec<half::bf16> = a.iter().map(|&x| half::bf16::from_f32(x)).collect();
            let run = |isa: Isa| {
                let mut c32 = vec![0.0f32; m * n];
                gemm_with(isa, m, n, k, &a, &b, &mut c32, true);
                let mut c64 = vec![0.0f64; m * n];
                gemm_with(isa, m, n, k, &ad, &bd, &mut c64, true);
                let mut ch = vec![0.0f32; m * n];
                gemm_with(isa, m, n, k, &ah, &b, &mut ch, false);
                let mut bits: Vec<u64> = c32.iter().map(|x| u64::from(x.to_bits())).collect();
                bits.extend(c64.iter().map(|x| x.to_bits()));
                bits.extend(ch.iter().map(|x| u64::from(x.to_bits())));
                bits
            };
            let want = run(Isa::Scalar);
            for &isa in &isas {
                assert!(run(isa) == want, "{isa} differs from scalar at {m}x{k}x{n}");
            }
        }
    }

    #[test]
    fn same_bits_for_any_thread_count() {
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
            pool.install(|| gemm(m, n, k, &a, &b, &mut c, true));
            c.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        };
        assert_eq!(run(1), run(3));
    }
}
