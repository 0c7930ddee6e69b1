//! Our own GEMM for f32 and f64 on every CPU: BLIS-style blocking (pack a KC-deep panel of B
//! and an MC×KC block of A, then an MR×NR register-tile micro-kernel per ISA, see
//! `gemm_kernels`), row blocks of C in parallel. bf16 and fp16 operands are widened to f32 while
//! packing, so no f32 copy of them is made.
//!
//! Each C element is accumulated over k in the same order whatever the thread count (threads
//! split rows of C, never k) and whatever the ISA (every kernel runs the same fused multiply-adds
//! over the same KC blocks), so results depend on neither.

use super::gemm_kernels::{GemmScalar, Kernel, RowsFn};
use crate::isa::Isa;
use rayon::prelude::*;

/// The k block: fixed for every ISA, since it decides where the partial sums are added to C.
const KC: usize = 256;
/// Bytes of one packed A block (MC×KC) to keep in L2.
const A_BLOCK_BYTES: usize = 256 * 1024;

/// The widest B (columns) for which f32/f64 A is read in place rather than packed. Packing A
/// pays when each packed element is used by many column panels; for a narrow B it cost as much
/// as the products (1024² × 1024×16 fp32: 0.49 ms packed, 0.24 ms in place; at n = 1024 the
/// two are equal, bench/RESULTS.md).
const IN_PLACE_MAX_N: usize = 256;

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
    /// The slice as `T`s when the element is `T` itself (so the kernels may read it in place).
    fn as_compute(_: &[Self]) -> Option<&[T]> {
        None
    }
}
impl Elem<f32> for f32 {
    #[inline(always)]
    fn widen(self) -> f32 {
        self
    }
    fn as_compute(s: &[f32]) -> Option<&[f32]> {
        Some(s)
    }
}
impl Elem<f64> for f64 {
    #[inline(always)]
    fn widen(self) -> f64 {
        self
    }
    fn as_compute(s: &[f64]) -> Option<&[f64]> {
        Some(s)
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

/// How the operands are packed for a kernel: `DEPTH` k values per packed element (1: each
/// element widened to the compute type; 2: bf16 pairs for `vdpbf16ps`).
trait Packing<T: GemmScalar>: Sync {
    const DEPTH: usize;
    /// The element counts of A and B.
    fn lens(&self) -> (usize, usize);
    /// All of B, in `NR`-wide panels of `k.div_ceil(DEPTH)` steps (see [`pack_b`]).
    fn pack_b<const NR: usize>(&self, k: usize, n: usize, out: &mut [T], parallel: bool);
    /// The block of A `blk` names, in `MR`-tall panels of `blk.kc.div_ceil(DEPTH)` steps (see
    /// [`pack_a`]).
    fn pack_a<const MR: usize>(&self, blk: ABlock, out: &mut [T]);
    /// A itself (row-major, row stride k) when a kernel can read it without repacking.
    fn a_in_place(&self) -> Option<&[T]> {
        None
    }
}

/// A block of A to pack: rows i0..i0+mc, columns p0..p0+kc (`p0` a multiple of the packing's
/// `DEPTH`), row stride `lda`.
#[derive(Clone, Copy)]
struct ABlock {
    lda: usize,
    i0: usize,
    mc: usize,
    p0: usize,
    kc: usize,
}

/// Operands widened to the compute type, one k per packed element.
struct Widen<'a, A, B> {
    a: &'a [A],
    b: &'a [B],
}

impl<T: GemmScalar, A: Elem<T>, B: Elem<T>> Packing<T> for Widen<'_, A, B> {
    const DEPTH: usize = 1;
    fn lens(&self) -> (usize, usize) {
        (self.a.len(), self.b.len())
    }
    fn pack_b<const NR: usize>(&self, k: usize, n: usize, out: &mut [T], parallel: bool) {
        pack_b::<T, NR>(k, n, out, parallel, |kk, j, d| {
            let row = &self.b[kk * n + j..kk * n + j + d.len().min(n - j)];
            for (x, &v) in d.iter_mut().zip(row) {
                *x = v.widen();
            }
            d[row.len()..].fill(T::default());
        })
    }
    fn pack_a<const MR: usize>(&self, blk: ABlock, out: &mut [T]) {
        let ABlock { lda, p0, .. } = blk;
        pack_a::<T, MR>(blk.i0, blk.mc, blk.kc, out, |i, kk| {
            self.a[i * lda + p0 + kk].widen()
        })
    }
    fn a_in_place(&self) -> Option<&[T]> {
        A::as_compute(self.a)
    }
}

/// bf16 × bf16 for the pair kernels: each packed f32 slot holds the bits of two bf16 values,
/// k = 2q in the high half (the one `vdpbf16ps` adds first) and k = 2q+1 in the low half (zero
/// past the end of k).
struct Bf16Pairs<'a> {
    a: &'a [half::bf16],
    b: &'a [half::bf16],
}

/// The slot holding `first` (high half) and `second`.
#[inline(always)]
fn pair(first: half::bf16, second: half::bf16) -> f32 {
    f32::from_bits((u32::from(first.to_bits()) << 16) | u32::from(second.to_bits()))
}

impl Packing<f32> for Bf16Pairs<'_> {
    const DEPTH: usize = 2;
    fn lens(&self) -> (usize, usize) {
        (self.a.len(), self.b.len())
    }
    fn pack_b<const NR: usize>(&self, k: usize, n: usize, out: &mut [f32], parallel: bool) {
        let zero = half::bf16::ZERO;
        pack_b::<f32, NR>(k.div_ceil(2), n, out, parallel, |q, j, d| {
            let w = d.len().min(n - j);
            let first = &self.b[2 * q * n + j..2 * q * n + j + w];
            if 2 * q + 1 < k {
                let second = &self.b[(2 * q + 1) * n + j..(2 * q + 1) * n + j + w];
                for ((x, &f), &s) in d.iter_mut().zip(first).zip(second) {
                    *x = pair(f, s);
                }
            } else {
                for (x, &f) in d.iter_mut().zip(first) {
                    *x = pair(f, zero);
                }
            }
            d[w..].fill(0.0);
        })
    }
    fn pack_a<const MR: usize>(&self, blk: ABlock, out: &mut [f32]) {
        let ABlock { lda, p0, kc, .. } = blk;
        let zero = half::bf16::ZERO;
        pack_a::<f32, MR>(blk.i0, blk.mc, kc.div_ceil(2), out, |i, q| {
            let at = |kk: usize| {
                if kk < kc {
                    self.a[i * lda + p0 + kk]
                } else {
                    zero
                }
            };
            pair(at(2 * q), at(2 * q + 1))
        })
    }
}

/// Rows of B (or columns of A) a packing routine copies together: each source row is read in
/// runs of this many rows so the reads stay sequential and the writes land in one small range.
const PACK_ROWS: usize = 16;

/// Packs all of B into `nr`-wide column panels of `steps` packed elements each: panel t holds,
/// for each step q, `row(q, nr·t, dst)`'s `nr` values (the caller zero-pads past n). The
/// KC-slice from step q0 of panel t is then the contiguous range `t·steps·nr + q0·nr ..`.
///
/// Work goes by groups of panels (one task each when parallel) and, within a group, by runs of
/// [`PACK_ROWS`] steps: a run reads that many rows of the group's columns (sequential within
/// each row) and writes one contiguous `PACK_ROWS·nr` range per panel. Panel by panel, whole
/// depth (one cache line from every row, a row stride apart), was about 4% of a 2048³ product.
fn pack_b<T: GemmScalar, const NR: usize>(
    steps: usize,
    n: usize,
    out: &mut [T],
    parallel: bool,
    row: impl Fn(usize, usize, &mut [T]) + Sync,
) {
    let panels = n.div_ceil(NR);
    let out = &mut out[..panels * steps * NR];
    // Groups of about 256 columns (a run of rows reads 1 KiB of f32 from each row), fewer
    // when parallel so that every thread gets about two groups.
    let threads = if parallel {
        rayon::current_num_threads().max(1)
    } else {
        1
    };
    let group = (256 / NR).min(panels.div_ceil(2 * threads)).max(1);
    let work = |(g, dst): (usize, &mut [T])| {
        for q0 in (0..steps).step_by(PACK_ROWS) {
            let q1 = (q0 + PACK_ROWS).min(steps);
            for (dt, pan) in dst.chunks_exact_mut(steps * NR).enumerate() {
                let j = (g * group + dt) * NR;
                for q in q0..q1 {
                    row(q, j, &mut pan[q * NR..q * NR + NR]);
                }
            }
        }
    };
    if parallel && steps * n >= (1 << 16) {
        out.par_chunks_mut(group * steps * NR)
            .enumerate()
            .for_each(work);
    } else {
        out.chunks_mut(group * steps * NR)
            .enumerate()
            .for_each(work);
    }
}

/// Packs rows i0..i0+mc of A into `mr`-tall row panels of `steps` packed elements: panel s
/// holds, for each step q, `at(i0+mr·s+r, q)` for r in 0..mr (zero past row i0+mc).
///
/// Each panel is written in order (q outer, its `mr` values inner), so the stores are
/// sequential and the loads `mr` sequential streams.
fn pack_a<T: GemmScalar, const MR: usize>(
    i0: usize,
    mc: usize,
    steps: usize,
    out: &mut [T],
    at: impl Fn(usize, usize) -> T,
) {
    for s in 0..mc.div_ceil(MR) {
        let i = i0 + s * MR;
        let h = MR.min(i0 + mc - i);
        let dst = &mut out[s * steps * MR..(s + 1) * steps * MR];
        for (q, d) in dst.chunks_exact_mut(MR).enumerate() {
            for (r, x) in d.iter_mut().enumerate() {
                *x = if r < h { at(i + r, q) } else { T::default() };
            }
        }
    }
}

/// Where [`macro_kernel`] reads A from.
#[derive(Clone, Copy)]
enum ASrc<'a, T> {
    /// The packed block: `MR`-tall panels of `kc` steps each.
    Packed(&'a [T]),
    /// A's rows in place, from the block's first row (row stride `lda`; the k block starts at
    /// column `p0`), through the kernel's `rows` entry; `edge` is the block's last row panel
    /// packed, when the block's rows are not a multiple of `MR`.
    Rows {
        a: &'a [T],
        lda: usize,
        p0: usize,
        rows: RowsFn<T>,
        edge: &'a [T],
    },
}

/// Multiplies the block of A into rows `0..mc` of `c_rows` (row stride n). `k`, `p0` and `kc`
/// count packed steps (k values per step: the packing's `DEPTH`).
#[allow(clippy::too_many_arguments)]
fn macro_kernel<T: GemmScalar, const MR: usize, const NR: usize>(
    kern: Kernel<T>,
    src: ASrc<'_, T>,
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
    // The scratch tile on the stack: 512 elements hold the largest tile (14×32).
    const { assert!(MR * NR <= 512) };
    let mut tile = [T::default(); 512];
    let tile = &mut tile[..mr * nr];
    for t in 0..n.div_ceil(nr) {
        let j = t * nr;
        let w = nr.min(n - j);
        let off = t * k * nr + p0 * nr;
        let bpan = &bp[off..off + kc * nr];
        for s in 0..mc.div_ceil(mr) {
            let i = s * mr;
            let h = mr.min(mc - i);
            // The tile into `dst` (row stride `ld`), from whichever A the block has.
            // SAFETY (each call): the A panel holds mr·kc elements (a packed panel, sliced here)
            // or, in place, mr rows of kc from column `a_p0` a row stride `lda` apart (the slice
            // ends at the last row's last element; only full panels are read in place); the B
            // panel holds nr·kc elements (sliced above); `dst` is an mr×nr tile with row stride
            // `ld` (the callers' slices); `kern` is the kernel of an ISA this CPU supports
            // (`gemm` checked), and `rows` its in-place entry.
            let run = |dst: *mut T, ld: usize, acc: bool| unsafe {
                match src {
                    ASrc::Rows {
                        a,
                        lda,
                        p0: a_p0,
                        rows,
                        ..
                    } if h == mr => {
                        let at = i * lda + a_p0;
                        let apan = &a[at..at + (mr - 1) * lda + kc];
                        rows(kc, apan.as_ptr(), lda, bpan.as_ptr(), dst, ld, acc)
                    }
                    ASrc::Rows { edge, .. } => {
                        let apan = &edge[..kc * mr];
                        (kern.f)(kc, apan.as_ptr(), bpan.as_ptr(), dst, ld, acc)
                    }
                    ASrc::Packed(ap) => {
                        let apan = &ap[s * kc * mr..(s + 1) * kc * mr];
                        (kern.f)(kc, apan.as_ptr(), bpan.as_ptr(), dst, ld, acc)
                    }
                }
            };
            if h == mr && w == nr {
                let dst = &mut c_rows[i * ldc + j..(i + mr - 1) * ldc + j + nr];
                run(dst.as_mut_ptr(), ldc, accumulate);
            } else {
                // Edge tile: compute into a scratch tile, then add the valid part.
                run(tile.as_mut_ptr(), nr, false);
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
    let isa = if isa.supported() { isa } else { Isa::best() };
    let pk = &Widen { a, b };
    run(T::kernel(isa), m, n, k, pk, c, parallel, IN_PLACE_MAX_N)
}

/// `c[m×n] = a[m×k] · b[k×n]` for bf16 operands with f32 accumulation: on an ISA with bf16 dot
/// products ([`Isa::Avx512Bf16`]) through them (pairs of k per instruction), else as
/// [`gemm_with`] (widened to f32 while packing). Both add each product in the same order;
/// where they can differ is in docs/decisions.md ("bf16 dot products").
#[allow(clippy::too_many_arguments)]
pub fn gemm_bf16(
    isa: Isa,
    m: usize,
    n: usize,
    k: usize,
    a: &[half::bf16],
    b: &[half::bf16],
    c: &mut [f32],
    parallel: bool,
) {
    match super::gemm_kernels::bf16_dot_kernel(isa) {
        Some(kern) => run(kern, m, n, k, &Bf16Pairs { a, b }, c, parallel, 0),
        None => gemm_with(isa, m, n, k, a, b, c, parallel),
    }
}

/// Runs `kern` on A and B as `pk` packs them (nothing when a slice is shorter than its shape),
/// A read in place where B has at most `in_place_max_n` columns and the kernel and packing
/// allow it (the same bits either way).
#[allow(clippy::too_many_arguments)]
fn run<T: GemmScalar, P: Packing<T>>(
    kern: Kernel<T>,
    m: usize,
    n: usize,
    k: usize,
    pk: &P,
    c: &mut [T],
    parallel: bool,
    in_place_max_n: usize,
) {
    let (a_len, b_len) = pk.lens();
    if m == 0 || n == 0 || a_len < m * k || b_len < k * n || c.len() < m * n {
        return;
    }
    if k == 0 {
        c[..m * n].fill(T::default());
        return;
    }
    // The tile shape as constants, so the packing and tile loops know their strides.
    macro_rules! shapes {
        ($(($mr:literal, $nr:literal)),*) => {
            match (kern.mr, kern.nr) {
                $(($mr, $nr) => drive::<T, P, $mr, $nr>(kern, m, n, k, pk, c, parallel, in_place_max_n),)*
                _ => unreachable!("no GEMM kernel has a {}x{} tile", kern.mr, kern.nr),
            }
        };
    }
    shapes!((6, 16), (6, 8), (14, 32), (14, 16), (8, 12), (8, 6), (4, 4))
}

/// [`run`] for one kernel whose tile is MR×NR.
#[allow(clippy::too_many_arguments)]
fn drive<T: GemmScalar, P: Packing<T>, const MR: usize, const NR: usize>(
    kern: Kernel<T>,
    m: usize,
    n: usize,
    k: usize,
    pk: &P,
    c: &mut [T],
    parallel: bool,
    in_place_max_n: usize,
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
    // k and the k block in packed elements.
    let (steps, kc_steps) = (k.div_ceil(P::DEPTH), KC / P::DEPTH);
    // A read in place instead of packed, when the kernel can and packing would not pay.
    let in_place = match (kern.rows, pk.a_in_place()) {
        (Some(rows), Some(a)) if n <= in_place_max_n => Some((rows, a)),
        _ => None,
    };
    with_scratch::<T, _>(&SCRATCH_B, n.div_ceil(nr) * nr * steps, |bpf| {
        pk.pack_b::<NR>(k, n, bpf, threads > 1);
        let bpf: &[T] = bpf;
        let work = |(blk, rows): (usize, &mut [T])| {
            let i0 = blk * mc;
            let rows_here = rows.len() / n;
            // In place, only a last part-filled row panel is packed.
            let (first, packed) = match in_place {
                Some(_) => (rows_here / mr * mr, rows_here % mr),
                None => (0, rows_here),
            };
            with_scratch::<T, _>(&SCRATCH_A, kc_steps * packed.div_ceil(mr) * mr, |apf| {
                for p0 in (0..k).step_by(KC) {
                    let kc = KC.min(k - p0);
                    if packed > 0 {
                        let blk = ABlock {
                            lda: k,
                            i0: i0 + first,
                            mc: packed,
                            p0,
                            kc,
                        };
                        pk.pack_a::<MR>(blk, apf);
                    }
                    let src = match in_place {
                        Some((rows, a)) => ASrc::Rows {
                            a: &a[i0 * k..],
                            lda: k,
                            p0,
                            rows,
                            edge: apf,
                        },
                        None => ASrc::Packed(apf),
                    };
                    let (q0, qc) = (p0 / P::DEPTH, kc.div_ceil(P::DEPTH));
                    macro_kernel::<T, MR, NR>(kern, src, bpf, rows, n, rows_here, steps, q0, qc);
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
                // bf16 × bf16: the pair kernel on an ISA with bf16 dot products.
                let bh: Vec<half::bf16> = b.iter().map(|&x| half::bf16::from_f32(x)).collect();
                let mut chh = vec![0.0f32; m * n];
                gemm_bf16(isa, m, n, k, &ah, &bh, &mut chh, true);
                let mut bits: Vec<u64> = c32.iter().map(|x| u64::from(x.to_bits())).collect();
                bits.extend(c64.iter().map(|x| x.to_bits()));
                bits.extend(ch.iter().map(|x| u64::from(x.to_bits())));
                bits.extend(chh.iter().map(|x| u64::from(x.to_bits())));
                bits
            };
            let want = run(Isa::Scalar);
            for &isa in &isas {
                assert!(run(isa) == want, "{isa} differs from scalar at {m}x{k}x{n}");
            }
        }
    }

    /// The bf16 pair kernels to check: the model of `vdpbf16ps` everywhere, the instruction
    /// itself where this CPU has it.
    fn pair_kernels() -> Vec<(&'static str, Kernel<f32>)> {
        use crate::ops::gemm_kernels::{bf16_dot_kernel, dot_model};
        let mut v = vec![("model", dot_model::bf16_dot_model_kernel())];
        v.extend(bf16_dot_kernel(Isa::Avx512Bf16).map(|k| ("avx512bf16", k)));
        eprintln!(
            "bf16 pair kernels: {:?}",
            v.iter().map(|x| x.0).collect::<Vec<_>>()
        );
        v
    }

    fn bf16s(v: &[f32]) -> Vec<half::bf16> {
        v.iter().map(|&x| half::bf16::from_f32(x)).collect()
    }

    /// Away from the subnormal range the pairs give the widened kernels' bits: odd k (a padded
    /// last pair), several k blocks, edge tiles, one thread and many.
    #[test]
    fn bf16_pairs_give_the_widened_bits() {
        for (name, kern) in pair_kernels() {
            for &(m, k, n) in &SHAPES {
                let (a, b) = (bf16s(&values(m * k, 5)), bf16s(&values(k * n, 6)));
                let mut want = vec![0.0f32; m * n];
                gemm_with(Isa::Scalar, m, n, k, &a, &b, &mut want, false);
                for par in [false, true] {
                    let mut got = vec![f32::NAN; m * n];
                    run(kern, m, n, k, &Bf16Pairs { a: &a, b: &b }, &mut got, par, 0);
                    let same = got
                        .iter()
                        .zip(&want)
                        .all(|(x, y)| x.to_bits() == y.to_bits());
                    assert!(same, "{name} {m}x{k}x{n} (parallel {par}) differs");
                }
            }
        }
    }

    /// Where they differ, as docs/decisions.md says: a product or sum below 2^-126 is flushed
    /// to zero by the pairs and kept (subnormal) by the fp32 kernels, and a subnormal input
    /// counts as zero.
    #[test]
    fn bf16_pairs_flush_subnormals() {
        // 2^e exactly (powi may overflow on the way to a subnormal).
        let p = |e: i32| {
            f32::from_bits(if e >= -126 {
                ((e + 127) as u32) << 23
            } else {
                1 << (e + 149)
            })
        };
        // (a, b, the widened kernels' result): one product 2^-140, a subnormal bf16 input
        // (2^-130) times 2^100.
        let cases = [(p(-70), p(-70), p(-140)), (p(-130), p(100), p(-30))];
        for (name, kern) in pair_kernels() {
            for (x, y, wide) in cases {
                let (a, b) = (bf16s(&[x]), bf16s(&[y]));
                let (mut widened, mut pairs) = ([0.0f32], [1.0f32]);
                gemm_with(Isa::Scalar, 1, 1, 1, &a, &b, &mut widened, false);
                run(
                    kern,
                    1,
                    1,
                    1,
                    &Bf16Pairs { a: &a, b: &b },
                    &mut pairs,
                    false,
                    0,
                );
                assert_eq!(widened[0], wide, "{name} {x:e}·{y:e}");
                assert_eq!(pairs[0].to_bits(), 0, "{name} {x:e}·{y:e}: {}", pairs[0]);
            }
        }
    }

    /// A read in place gives the packed path's bits, on every ISA, f32 and f64, edge rows and
    /// columns, one k block and several, one thread and many.
    #[test]
    fn a_in_place_gives_the_packed_bits() {
        for isa in Isa::available() {
            for &(m, k, n) in &SHAPES {
                let (a, b) = (values(m * k, 7), values(k * n, 8));
                let ad: Vec<f64> = a.iter().map(|&x| f64::from(x) * 0.3).collect();
                let bd: Vec<f64> = b.iter().map(|&x| f64::from(x) + 0.25).collect();
                for par in [false, true] {
                    let [packed, in_place] = [0, usize::MAX].map(|max_n| {
                        let mut c32 = vec![f32::NAN; m * n];
                        let kern = f32::kernel(isa);
                        run(kern, m, n, k, &Widen { a: &a, b: &b }, &mut c32, par, max_n);
                        let mut c64 = vec![f64::NAN; m * n];
                        let pk = &Widen { a: &ad, b: &bd };
                        run(f64::kernel(isa), m, n, k, pk, &mut c64, par, max_n);
                        let bits = c32.iter().map(|x| u64::from(x.to_bits()));
                        bits.chain(c64.iter().map(|x| x.to_bits()))
                            .collect::<Vec<_>>()
                    });
                    assert!(packed == in_place, "{isa} {m}x{k}x{n} (parallel {par})");
                }
            }
        }
    }

    #[test]
    fn same_bits_for_any_thread_count() {
        // k·n over 2^16, so B is packed in parallel too: by groups of 16 panels on 1 thread,
        // of fewer (down to one, part-filled at the end) on more.
        let (m, k, n) = (97, 700, 150);
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
        let one = run(1);
        for t in [3, 16] {
            assert!(run(t) == one, "{t} threads differ from one");
        }
    }
}
