//! The GEMM register-tile micro-kernels, one generic body over a vector type per ISA.
//!
//! A kernel computes an MR×NR tile of C from an MR-tall panel of A (packed, or read in place
//! from A's rows) and an NR-wide packed panel of B over `kc` steps. Every output element is `fma(a[k], b[k], acc)` for k = 0, 1, …,
//! starting from zero, then `C + acc` when the tile accumulates: the same operations in the same
//! order whatever the vector width, so every ISA gives the same bits (`TESSERA_CPU_ISA`).
//!
//! Per ISA only the vector type's six operations are written by hand ([`Lanes`]); the loop is
//! shared, so a new ISA cannot get the order wrong.

/// One SIMD register of `W` elements of `T` and the operations the micro-kernel needs.
///
/// # Safety
/// The functions are `unsafe` because they may execute instructions the CPU must support and
/// because `load`/`store` take raw pointers to `W` valid elements; callers check both.
pub trait Lanes: Copy {
    type T: Copy;
    const W: usize;
    unsafe fn zero() -> Self;
    unsafe fn splat(p: *const Self::T) -> Self;
    unsafe fn load(p: *const Self::T) -> Self;
    unsafe fn store(self, p: *mut Self::T);
    /// `a·b + self`, rounded once; for the bf16 pair vectors (`Avx512Bf16Dot`) the two products
    /// of each pair added in turn, each rounded once.
    unsafe fn fma(self, a: Self, b: Self) -> Self;
    unsafe fn add(self, b: Self) -> Self;
    /// A hint to bring the cache line at `p` in (no effect where there is no such instruction).
    #[inline(always)]
    unsafe fn prefetch(_p: *const Self::T) {}
}

/// `C[0..MR, 0..NV·W]` (row stride `ldc`) = (`accumulate` ? C : 0) + A·Bp over `kc` steps,
/// where A's element (r, q) is at `ap + r·a_rs + q·a_cs`: (1, MR) for a packed panel, (lda, 1)
/// for A's rows in place.
///
/// # Safety
/// `ap` holds every element those strides name for r < MR, q < kc; `bp` NV·W·kc elements; `c`
/// an MR×(NV·W) tile with row stride `ldc`; and the CPU runs `V`'s instructions (the caller is
/// a `#[target_feature]` function for them).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn tile<V: Lanes, const MR: usize, const NV: usize>(
    kc: usize,
    ap: *const V::T,
    (a_rs, a_cs): (usize, usize),
    bp: *const V::T,
    c: *mut V::T,
    ldc: usize,
    accumulate: bool,
) {
    unsafe {
        let mut acc = [[V::zero(); NV]; MR];
        if accumulate {
            // Start pulling the C tile in while the k loop runs: its rows are a row stride apart
            // (often a page), and the loads at the end would otherwise wait for each.
            for r in 0..MR {
                V::prefetch(c.add(r * ldc));
                V::prefetch(c.add(r * ldc + NV * V::W - 1));
            }
        }
        let (mut a, mut b) = (ap, bp);
        for _ in 0..kc / 4 {
            for _ in 0..4 {
                step::<V, MR, NV>(a, a_rs, b, &mut acc);
                a = a.add(a_cs);
                b = b.add(NV * V::W);
            }
        }
        for _ in 0..kc % 4 {
            step::<V, MR, NV>(a, a_rs, b, &mut acc);
            a = a.add(a_cs);
            b = b.add(NV * V::W);
        }
        for (r, row) in acc.iter().enumerate() {
            let p = c.add(r * ldc);
            for (v, &x) in row.iter().enumerate() {
                let q = p.add(v * V::W);
                let out = if accumulate { x.add(V::load(q)) } else { x };
                out.store(q);
            }
        }
    }
}

/// One k step of [`tile`]: NV vectors of B, MR broadcasts of A (a row stride `a_rs` apart),
/// MR·NV fused multiply-adds.
#[inline(always)]
unsafe fn step<V: Lanes, const MR: usize, const NV: usize>(
    a: *const V::T,
    a_rs: usize,
    b: *const V::T,
    acc: &mut [[V; NV]; MR],
) {
    unsafe {
        let mut bv = [V::zero(); NV];
        for (v, x) in bv.iter_mut().enumerate() {
            *x = V::load(b.add(v * V::W));
        }
        for (r, row) in acc.iter_mut().enumerate() {
            let av = V::splat(a.add(r * a_rs));
            for (x, &bb) in row.iter_mut().zip(&bv) {
                *x = x.fma(av, bb);
            }
        }
    }
}

/// A micro-kernel entry point: `tile` compiled for one ISA, element type and tile shape, on a
/// packed A panel: (kc, ap, bp, c, ldc, accumulate).
pub type KernelFn<T> = unsafe fn(usize, *const T, *const T, *mut T, usize, bool);
/// The same kernel reading A's rows in place: (kc, a, lda, bp, c, ldc, accumulate), `a` the
/// first row's first element, `lda` the row stride.
pub type RowsFn<T> = unsafe fn(usize, *const T, usize, *const T, *mut T, usize, bool);

/// Defines a packed and an in-place entry point of one `tile` instance.
macro_rules! entries {
    ($(#[$attr:meta])* $packed:ident, $rows:ident, $v:ty, $t:ty, $mr:literal, $nv:literal) => {
        $(#[$attr])*
        pub unsafe fn $packed(
            kc: usize,
            ap: *const $t,
            bp: *const $t,
            c: *mut $t,
            ldc: usize,
            acc: bool,
        ) {
            unsafe { tile::<$v, $mr, $nv>(kc, ap, (1, $mr), bp, c, ldc, acc) }
        }
        $(#[$attr])*
        pub unsafe fn $rows(
            kc: usize,
            a: *const $t,
            lda: usize,
            bp: *const $t,
            c: *mut $t,
            ldc: usize,
            acc: bool,
        ) {
            unsafe { tile::<$v, $mr, $nv>(kc, a, (lda, 1), bp, c, ldc, acc) }
        }
    };
}

/// The portable "vector" of one element: `mul_add` is a correctly rounded fused multiply-add on
/// every target, so it matches the SIMD paths bit for bit.
#[derive(Clone, Copy)]
pub struct One<T>(T);

macro_rules! one_impl {
    ($t:ty) => {
        impl Lanes for One<$t> {
            type T = $t;
            const W: usize = 1;
            #[inline(always)]
            unsafe fn zero() -> Self {
                One(0.0)
            }
            #[inline(always)]
            unsafe fn splat(p: *const $t) -> Self {
                One(unsafe { *p })
            }
            #[inline(always)]
            unsafe fn load(p: *const $t) -> Self {
                One(unsafe { *p })
            }
            #[inline(always)]
            unsafe fn store(self, p: *mut $t) {
                unsafe { *p = self.0 }
            }
            #[inline(always)]
            unsafe fn fma(self, a: Self, b: Self) -> Self {
                One(a.0.mul_add(b.0, self.0))
            }
            #[inline(always)]
            unsafe fn add(self, b: Self) -> Self {
                One(self.0 + b.0)
            }
        }
    };
}
one_impl!(f32);
one_impl!(f64);

/// Defines a `Lanes` impl from intrinsic names: (type, element, width, zero, splat, load, store,
/// fma(a, b, c) = a·b + c, add).
#[allow(unused_macros)]
macro_rules! simd_impl {
    ($name:ident, $v:ty, $t:ty, $w:expr, $zero:ident, $splat:ident, $load:ident, $store:ident,
     $fma:ident, $add:ident) => {
        simd_impl!(
            $name,
            $v,
            $t,
            $w,
            $zero,
            $splat,
            $load,
            $store,
            $fma,
            $add,
            no_prefetch
        );
    };
    ($name:ident, $v:ty, $t:ty, $w:expr, $zero:ident, $splat:ident, $load:ident, $store:ident,
     $fma:ident, $add:ident, $prefetch:ident) => {
        #[derive(Clone, Copy)]
        pub struct $name($v);
        impl Lanes for $name {
            type T = $t;
            const W: usize = $w;
            #[inline(always)]
            unsafe fn zero() -> Self {
                $name(unsafe { $zero() })
            }
            #[inline(always)]
            unsafe fn splat(p: *const $t) -> Self {
                $name(unsafe { $splat(*p) })
            }
            #[inline(always)]
            unsafe fn load(p: *const $t) -> Self {
                $name(unsafe { $load(p) })
            }
            #[inline(always)]
            unsafe fn store(self, p: *mut $t) {
                unsafe { $store(p, self.0) }
            }
            #[inline(always)]
            unsafe fn fma(self, a: Self, b: Self) -> Self {
                $name(unsafe { $fma(a.0, b.0, self.0) })
            }
            #[inline(always)]
            unsafe fn add(self, b: Self) -> Self {
                $name(unsafe { $add(self.0, b.0) })
            }
            #[inline(always)]
            unsafe fn prefetch(p: *const $t) {
                unsafe { $prefetch(p) }
            }
        }
    };
}

#[allow(dead_code)]
#[inline(always)]
unsafe fn no_prefetch<T>(_: *const T) {}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::*;
    use std::arch::x86_64::*;

    #[inline(always)]
    unsafe fn pf<T>(p: *const T) {
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>()) }
    }

    simd_impl!(
        Avx2F32,
        __m256,
        f32,
        8,
        _mm256_setzero_ps,
        _mm256_set1_ps,
        _mm256_loadu_ps,
        _mm256_storeu_ps,
        _mm256_fmadd_ps,
        _mm256_add_ps,
        pf
    );
    simd_impl!(
        Avx2F64,
        __m256d,
        f64,
        4,
        _mm256_setzero_pd,
        _mm256_set1_pd,
        _mm256_loadu_pd,
        _mm256_storeu_pd,
        _mm256_fmadd_pd,
        _mm256_add_pd,
        pf
    );
    simd_impl!(
        Avx512F32,
        __m512,
        f32,
        16,
        _mm512_setzero_ps,
        _mm512_set1_ps,
        _mm512_loadu_ps,
        _mm512_storeu_ps,
        _mm512_fmadd_ps,
        _mm512_add_ps,
        pf
    );
    simd_impl!(
        Avx512F64,
        __m512d,
        f64,
        8,
        _mm512_setzero_pd,
        _mm512_set1_pd,
        _mm512_loadu_pd,
        _mm512_storeu_pd,
        _mm512_fmadd_pd,
        _mm512_add_pd,
        pf
    );

    /// `vdpbf16ps` in the operand order `simd_impl!` calls fma with: `c` plus the products of
    /// `a`'s and `b`'s bf16 pairs (each 32-bit slot a pair, the one to add first in the high
    /// half), lane by lane what `DotModel` (the tests' model) does.
    #[inline(always)]
    unsafe fn dp_bf16(a: __m512, b: __m512, c: __m512) -> __m512 {
        // SAFETY: __m512 and __m512bh are both 64 bytes of lanes; the bits are the pairs.
        let pairs = |v: __m512| unsafe { std::mem::transmute::<__m512, __m512bh>(v) };
        unsafe { _mm512_dpbf16_ps(c, pairs(a), pairs(b)) }
    }

    // 16 fp32 lanes of bf16 pairs: the AVX-512 f32 vector with `vdpbf16ps` as its fma.
    simd_impl!(
        Avx512Bf16Dot,
        __m512,
        f32,
        16,
        _mm512_setzero_ps,
        _mm512_set1_ps,
        _mm512_loadu_ps,
        _mm512_storeu_ps,
        dp_bf16,
        _mm512_add_ps,
        pf
    );
    // As avx512_f32, each step two k (a bf16 pair) deep.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub unsafe fn avx512_bf16_dot(
        kc: usize,
        ap: *const f32,
        bp: *const f32,
        c: *mut f32,
        ldc: usize,
        acc: bool,
    ) {
        unsafe { tile::<Avx512Bf16Dot, 14, 2>(kc, ap, (1, 14), bp, c, ldc, acc) }
    }

    // 16 ymm registers: 6×2 accumulators, 2 B vectors, 1 broadcast A value.
    entries!(
        #[target_feature(enable = "avx2,fma")]
        avx2_f32,
        avx2_f32_rows,
        Avx2F32,
        f32,
        6,
        2
    );
    entries!(
        #[target_feature(enable = "avx2,fma")]
        avx2_f64,
        avx2_f64_rows,
        Avx2F64,
        f64,
        6,
        2
    );
    // 32 zmm registers: 14×2 accumulators, 2 B vectors, 1 broadcast A value.
    entries!(
        #[target_feature(enable = "avx512f")]
        avx512_f32,
        avx512_f32_rows,
        Avx512F32,
        f32,
        14,
        2
    );
    entries!(
        #[target_feature(enable = "avx512f")]
        avx512_f64,
        avx512_f64_rows,
        Avx512F64,
        f64,
        14,
        2
    );
}

#[cfg(target_arch = "aarch64")]
mod arm {
    use super::*;
    use std::arch::aarch64::*;

    #[inline(always)]
    unsafe fn st_f32(p: *mut f32, v: float32x4_t) {
        unsafe { vst1q_f32(p, v) }
    }
    #[inline(always)]
    unsafe fn st_f64(p: *mut f64, v: float64x2_t) {
        unsafe { vst1q_f64(p, v) }
    }
    #[inline(always)]
    unsafe fn zero_f32() -> float32x4_t {
        unsafe { vdupq_n_f32(0.0) }
    }
    #[inline(always)]
    unsafe fn zero_f64() -> float64x2_t {
        unsafe { vdupq_n_f64(0.0) }
    }
    // vfmaq(c, a, b) = c + a·b; the macro passes (a, b, c).
    #[inline(always)]
    unsafe fn fma_f32(a: float32x4_t, b: float32x4_t, c: float32x4_t) -> float32x4_t {
        unsafe { vfmaq_f32(c, a, b) }
    }
    #[inline(always)]
    unsafe fn fma_f64(a: float64x2_t, b: float64x2_t, c: float64x2_t) -> float64x2_t {
        unsafe { vfmaq_f64(c, a, b) }
    }

    simd_impl!(
        NeonF32,
        float32x4_t,
        f32,
        4,
        zero_f32,
        vdupq_n_f32,
        vld1q_f32,
        st_f32,
        fma_f32,
        vaddq_f32
    );
    simd_impl!(
        NeonF64,
        float64x2_t,
        f64,
        2,
        zero_f64,
        vdupq_n_f64,
        vld1q_f64,
        st_f64,
        fma_f64,
        vaddq_f64
    );

    // 32 q registers: 8×3 accumulators, 3 B vectors, 1 broadcast A value.
    entries!(
        #[target_feature(enable = "neon")]
        neon_f32,
        neon_f32_rows,
        NeonF32,
        f32,
        8,
        3
    );
    entries!(
        #[target_feature(enable = "neon")]
        neon_f64,
        neon_f64_rows,
        NeonF64,
        f64,
        8,
        3
    );
}

/// The bf16 pair kernel of `isa`, if it has one: C (f32) from packed bf16 pairs, `kc` counting
/// pairs.
pub fn bf16_dot_kernel(isa: crate::isa::Isa) -> Option<Kernel<f32>> {
    match isa {
        #[cfg(target_arch = "x86_64")]
        crate::isa::Isa::Avx512Bf16 if isa.supported() => Some(Kernel {
            f: x86::avx512_bf16_dot,
            rows: None,
            mr: 14,
            nr: 32,
        }),
        _ => None,
    }
}

/// The tests' model of `vdpbf16ps`, the reference its kernel is checked against.
#[cfg(test)]
pub mod dot_model {
    use super::*;

    /// One lane of `vdpbf16ps` in portable Rust. A packed operand holds two bf16 values in an
    /// f32's bits, the one to add first in the high half. The lane adds the product of the two
    /// first values to the accumulator, rounded once (to nearest even), then the product of the
    /// two second ones, rounded once. Inputs (the accumulator too) below 2^-126 in magnitude
    /// count as zero and such results are flushed to zero, whatever MXCSR says. A bf16 product
    /// is exact in f32, so away from that range this is the same pair of fused multiply-adds, in
    /// the same order, as the widened fp32 kernels run.
    #[derive(Clone, Copy)]
    pub struct DotModel(f32);

    /// `x`, or a zero of its sign where it is subnormal (`vdpbf16ps`' DAZ and FTZ).
    fn flush(x: f32) -> f32 {
        if x.is_subnormal() {
            0.0f32.copysign(x)
        } else {
            x
        }
    }

    /// The bf16 in the high (`first`) or low half of `pair`'s bits, as an f32, flushed.
    pub fn pair_half(pair: f32, first: bool) -> f32 {
        let bits = pair.to_bits();
        flush(f32::from_bits(if first {
            bits & 0xffff_0000
        } else {
            bits << 16
        }))
    }

    /// One `vdpbf16ps` lane (see [`DotModel`]).
    pub fn dot_pair(acc: f32, a: f32, b: f32) -> f32 {
        let t = flush(pair_half(a, true).mul_add(pair_half(b, true), flush(acc)));
        flush(pair_half(a, false).mul_add(pair_half(b, false), t))
    }

    impl Lanes for DotModel {
        type T = f32;
        const W: usize = 1;
        #[inline(always)]
        unsafe fn zero() -> Self {
            DotModel(0.0)
        }
        #[inline(always)]
        unsafe fn splat(p: *const f32) -> Self {
            DotModel(unsafe { *p })
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            DotModel(unsafe { *p })
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut f32) {
            unsafe { *p = self.0 }
        }
        #[inline(always)]
        unsafe fn fma(self, a: Self, b: Self) -> Self {
            DotModel(dot_pair(self.0, a.0, b.0))
        }
        #[inline(always)]
        unsafe fn add(self, b: Self) -> Self {
            DotModel(self.0 + b.0)
        }
    }

    /// [`DotModel`]'s kernel (4×4), the portable stand-in for
    /// [`bf16_dot_kernel`].
    pub fn bf16_dot_model_kernel() -> Kernel<f32> {
        unsafe fn model(
            kc: usize,
            ap: *const f32,
            bp: *const f32,
            c: *mut f32,
            ldc: usize,
            a: bool,
        ) {
            unsafe { tile::<DotModel, 4, 4>(kc, ap, (1, 4), bp, c, ldc, a) }
        }
        Kernel {
            f: model,
            rows: None,
            mr: 4,
            nr: 4,
        }
    }
}

// The scalar tiles: 4×4, small enough for any register file.
entries!(scalar_f32, scalar_f32_rows, One<f32>, f32, 4, 4);
entries!(scalar_f64, scalar_f64_rows, One<f64>, f64, 4, 4);

/// A micro-kernel and its tile shape.
#[derive(Clone, Copy)]
pub struct Kernel<T> {
    pub f: KernelFn<T>,
    /// The same kernel on A's rows in place (none for kernels whose A must be repacked).
    pub rows: Option<RowsFn<T>>,
    pub mr: usize,
    pub nr: usize,
}

/// An element type with a kernel per ISA.
///
/// # Safety
/// Implemented only for plain floats (f32, f64): every bit pattern is a valid value, so the GEMM
/// may view reused scratch memory as a slice of them.
pub unsafe trait GemmScalar: Copy + Default + Send + Sync + 'static {
    /// The kernel for `isa`; callers pass an ISA this CPU supports ([`crate::isa::current`]).
    fn kernel(isa: crate::isa::Isa) -> Kernel<Self>;
    fn plus(self, b: Self) -> Self;
}

// SAFETY: f32 is a plain float.
unsafe impl GemmScalar for f32 {
    fn kernel(isa: crate::isa::Isa) -> Kernel<f32> {
        use crate::isa::Isa;
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => Kernel {
                f: x86::avx2_f32,
                rows: Some(x86::avx2_f32_rows),
                mr: 6,
                nr: 16,
            },
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 | Isa::Avx512Bf16 => Kernel {
                f: x86::avx512_f32,
                rows: Some(x86::avx512_f32_rows),
                mr: 14,
                nr: 32,
            },
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => Kernel {
                f: arm::neon_f32,
                rows: Some(arm::neon_f32_rows),
                mr: 8,
                nr: 12,
            },
            _ => Kernel {
                f: scalar_f32,
                rows: Some(scalar_f32_rows),
                mr: 4,
                nr: 4,
            },
        }
    }
    fn plus(self, b: f32) -> f32 {
        self + b
    }
}

// SAFETY: f64 is a plain float.
unsafe impl GemmScalar for f64 {
    fn kernel(isa: crate::isa::Isa) -> Kernel<f64> {
        use crate::isa::Isa;
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => Kernel {
                f: x86::avx2_f64,
                rows: Some(x86::avx2_f64_rows),
                mr: 6,
                nr: 8,
            },
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 | Isa::Avx512Bf16 => Kernel {
                f: x86::avx512_f64,
                rows: Some(x86::avx512_f64_rows),
                mr: 14,
                nr: 16,
            },
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => Kernel {
                f: arm::neon_f64,
                rows: Some(arm::neon_f64_rows),
                mr: 8,
                nr: 6,
            },
            _ => Kernel {
                f: scalar_f64,
                rows: Some(scalar_f64_rows),
                mr: 4,
                nr: 4,
            },
        }
    }
    fn plus(self, b: f64) -> f64 {
        self + b
    }
}
