//! fp32 `exp`, `erf` and `tanh` that vectorise: computed in f64 without branches or table
//! lookups (a range reduction, polynomials by Horner's rule, selects), then rounded to f32
//! once. The f64 value is within about 1e-12 (relative) of the exact one, so the f32 result
//! is the correctly rounded one except where the exact value lies within that distance of a
//! halfway point between two floats, and then it is the other neighbour: never more than
//! 0.5 ulp plus 1e-4 ulp away. The libm functions these replace (glibc's `expf` and `tanhf`,
//! the `libm` crate's `erff`) are scalar calls per element; inlined into a loop compiled per ISA
//! (`isa_versions!`) these run several lanes per instruction. Plain multiplies and adds, no
//! `mul_add`: Rust never fuses them, so every ISA gives the same bits, and the portable path
//! (x86-64 without FMA) does not call libm's `fma` for each term (docs/decisions.md, "fp32
//! exp, erf and tanh").

/// 1.5·2^52: adding it rounds an f64 below 2^51 in magnitude to an integer held in the low
/// bits of the sum's mantissa.
const SHIFT: f64 = 6_755_399_441_055_744.0;
/// ln 2 split: `LN2_HI` has 32 significant bits, so `n·LN2_HI` is exact for |n| < 2^21.
const LN2_HI: f64 = 6.931_471_803_691_238e-1;
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;

/// 1/k! for k = 12 down to 0: the Taylor polynomial of e^r, accurate to 2e-16 for |r| ≤ ln2/2.
const EXP_TAYLOR: [f64; 13] = [
    2.087_675_698_786_81e-9,
    2.505_210_838_544_172e-8,
    2.755_731_922_398_589e-7,
    2.755_731_922_398_589_3e-6,
    2.480_158_730_158_73e-5,
    1.984_126_984_126_984e-4,
    1.388_888_888_888_889e-3,
    8.333_333_333_333_333e-3,
    4.166_666_666_666_666_4e-2,
    1.666_666_666_666_666_6e-1,
    0.5,
    1.0,
    1.0,
];

/// Horner's rule over the coefficients `$c[i]` for the listed `i` (highest degree first),
/// written out term by term: as a loop, LLVM may leave it rolled, and a loop inside the
/// element loop keeps that from vectorising.
macro_rules! horner {
    ($c:expr, $x:expr; $($i:literal)*) => {{
        let (c, x): (&[f64], f64) = (&$c, $x);
        let mut p = 0.0f64;
        $(p = p * x + c[$i];)*
        p
    }};
}

/// The polynomial `$c` (highest degree first) at `x` as even(x²) + x·odd(x²): the indices of
/// its even-degree coefficients, then of its odd-degree ones. Two independent chains of half
/// the length: the latency of one long chain, not the count of operations, bounds a vector
/// loop of these.
macro_rules! poly {
    ($c:expr, $x:expr; $($e:literal)*; $($o:literal)*) => {{
        let x: f64 = $x;
        let x2 = x * x;
        horner!($c, x2; $($e)*) + x * horner!($c, x2; $($o)*)
    }};
}

/// e^y for y in [-740, 700]: y = n·ln2 + r with n = round(y/ln2), e^r by its Taylor
/// polynomial, 2^n built in the exponent bits.
#[inline(always)]
fn exp_f64(y: f64) -> f64 {
    let k = y * std::f64::consts::LOG2_E + SHIFT;
    let n = k - SHIFT;
    // n·LN2_HI is exact and so is the difference (y is within ln2 of it); n·LN2_LO is tiny
    let r = (y - n * LN2_HI) - n * LN2_LO;
    let p = poly!(EXP_TAYLOR, r; 0 2 4 6 8 10 12; 1 3 5 7 9 11);
    // n sits in the low bits of k's mantissa: k's bits minus SHIFT's are n
    let e = (k.to_bits() as i64).wrapping_sub(SHIFT.to_bits() as i64);
    p * f64::from_bits((e.wrapping_add(1023) << 52) as u64)
}

/// e^x, rounded to f32 (NaN stays NaN; overflow gives +inf, underflow 0 or a subnormal).
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    // e^±110 is far outside f32's range, and inside exp_f64's; NaN passes through clamp
    exp_f64(f64::from(x).clamp(-110.0, 110.0)) as f32
}

/// erf(x)/x as a polynomial in x² for |x| < 0.75 (degree 8, highest first; relative error
/// below 1e-14).
const ERF_SMALL: [f64; 9] = [
    1.286_319_752_679_923_9e-6,
    -1.456_769_428_870_875_7e-5,
    1.203_576_608_909_803_6e-4,
    -8.547_701_079_806_88e-4,
    5.223_965_899_326_407e-3,
    -2.686_616_942_387_413e-2,
    1.128_379_166_473_428_1e-1,
    -3.761_263_890_306_967e-1,
    1.128_379_167_095_511,
];

/// erfc(x)·e^(x²) on [0.75, 4] as a polynomial in s = (x − 2.375)/1.625 (degree 18, highest
/// first; a Chebyshev fit, relative error below 2e-12).
const ERFCX_LARGE: [f64; 19] = [
    1.973_282_777_135_304_5e-7,
    -5.363_930_676_307_247e-7,
    5.440_578_815_514_864e-7,
    -1.472_276_542_485_800_2e-6,
    5.575_250_861_677_671e-6,
    -1.417_326_377_638_576_5e-5,
    3.360_688_596_178_126_4e-5,
    -8.226_809_267_911_755e-5,
    1.977_905_640_830_658e-4,
    -4.613_795_671_380_224e-4,
    1.048_384_501_162_919e-3,
    -2.318_207_512_914_327e-3,
    4.976_336_443_311_009e-3,
    -1.034_581_478_556_710_3e-2,
    2.077_438_325_700_401e-2,
    -4.015_740_961_349_222e-2,
    7.442_604_346_564_977e-2,
    -1.315_878_348_285_834_4e-1,
    2.205_056_922_048_595_5e-1,
];

/// erf(x), rounded to f32. Both branches are computed and one is selected, so a loop of these
/// has no branches; past |x| = 4 the result rounds to ±1 (erf(3.92) already does).
#[inline(always)]
pub fn erf_f32(x: f32) -> f32 {
    let a = f64::from(x).abs();
    let small = poly!(ERF_SMALL, a * a; 0 2 4 6 8; 1 3 5 7) * a;
    // a·a is exact: x has 24 significant bits
    let t = a.min(4.0);
    let q = poly!(ERFCX_LARGE, (t - 2.375) * (1.0 / 1.625); 0 2 4 6 8 10 12 14 16 18; 1 3 5 7 9 11 13 15 17);
    let large = 1.0 - exp_f64(-(t * t)) * q;
    let v = if a < 0.75 { small } else { large };
    let r = v.copysign(f64::from(x)) as f32;
    if x.is_nan() {
        x
    } else {
        r
    }
}

/// tanh(x)/x as a polynomial in x² for |x| < 0.55 (degree 9, highest first; relative error
/// below 3e-15).
const TANH_SMALL: [f64; 10] = [
    -1.339_848_731_967_961_7e-4,
    5.307_112_557_151_387e-4,
    -1.436_246_509_531_166e-3,
    3.588_137_886_075_277e-3,
    -8.862_728_846_106_713e-3,
    2.186_944_938_949_986e-2,
    -5.396_825_224_555_85e-2,
    1.333_333_332_956_956e-1,
    -3.333_333_333_330_341e-1,
    1.000_000_000_000_000_2,
];

/// tanh(x), rounded to f32: an odd polynomial near 0, 1 − 2/(e^(2|x|) + 1) elsewhere (no
/// cancellation there: the result is above 0.5), both computed and one selected; past |x| = 10
/// the result rounds to ±1 (tanh(9.1) already does).
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    let a = f64::from(x).abs();
    let small = poly!(TANH_SMALL, a * a; 1 3 5 7 9; 0 2 4 6 8) * a;
    let t = a.min(10.0);
    let large = 1.0 - 2.0 / (exp_f64(2.0 * t) + 1.0);
    let v = if a < 0.55 { small } else { large };
    let r = v.copysign(f64::from(x)) as f32;
    if x.is_nan() {
        x
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ulps(a: f32, b: f32) -> u32 {
        (a.to_bits() as i32).abs_diff(b.to_bits() as i32)
    }

    /// Every `stride`-th f32 from `lo` up to `hi` (bit patterns of the same sign).
    fn sweep(lo: f32, hi: f32, stride: u32) -> impl Iterator<Item = f32> {
        let (a, b) = (lo.to_bits(), hi.to_bits());
        let (a, b) = (a.min(b), a.max(b));
        (a..=b).step_by(stride as usize).map(f32::from_bits)
    }

    /// Compares `f` with `reference` (an f64 function, rounded to f32) over `xs`: returns the
    /// number of points and of those that differ, and fails on any that is more than one ulp
    /// off.
    fn compare(
        xs: impl Iterator<Item = f32>,
        f: fn(f32) -> f32,
        reference: fn(f64) -> f64,
    ) -> (usize, usize) {
        let (mut n, mut off) = (0, 0);
        for x in xs {
            let (got, want) = (f(x), reference(f64::from(x)) as f32);
            n += 1;
            if got.to_bits() != want.to_bits() {
                off += 1;
                assert!(
                    ulps(got, want) <= 1 && got.is_finite() == want.is_finite(),
                    "x = {x:e}: {got:e}, want {want:e}"
                );
            }
        }
        (n, off)
    }

    /// `f` against `reference` rounded to f32: every `stride`-th f32 of both signs over
    /// `1e-30 ≤ |x| ≤ max` (over a million points; at most one in 100 000 may round the other
    /// way, none by more than an ulp), every 7th around `dense` (a branch point, or subnormal
    /// results), and `cases` exactly; NaN stays NaN.
    fn check(
        f: fn(f32) -> f32,
        reference: fn(f64) -> f64,
        (max, stride): (f32, u32),
        dense: (f32, f32),
        cases: &[(f32, f32)],
    ) {
        let (mut n, mut off) = (0, 0);
        for (lo, hi) in [(-max, -1e-30), (1e-30, max)] {
            let (a, b) = compare(sweep(lo, hi, stride), f, reference);
            (n, off) = (n + a, off + b);
        }
        assert!(n > 1_000_000, "{n} points");
        assert!(off * 100_000 < n, "{off} of {n} differ");
        let (n, off) = compare(sweep(dense.0, dense.1, 7), f, reference);
        assert!(
            n > 10_000 && off * 10_000 < n,
            "{off} of {n} differ near {dense:?}"
        );
        for &(x, want) in cases {
            assert_eq!(f(x).to_bits(), want.to_bits(), "f({x:e}) = {:e}", f(x));
        }
        assert!(f(f32::NAN).is_nan());
    }

    #[test]
    fn exp_is_the_rounded_f64_exp() {
        // e^-103.9 … e^-87.4: subnormal results round as the exact value does
        let cases = [
            (0.0f32, 1.0f32),
            (-0.0, 1.0),
            (1.0, std::f32::consts::E),
            (f32::INFINITY, f32::INFINITY),
            (f32::NEG_INFINITY, 0.0),
            (89.0, f32::INFINITY),
            (-103.0, 1.4e-45),
            (-104.0, 0.0),
            (f32::MAX, f32::INFINITY),
        ];
        check(exp_f32, f64::exp, (104.0, 257), (-103.9, -103.0), &cases);
    }

    #[test]
    fn erf_is_the_rounded_f64_erf() {
        let tiny = (f64::from(1e-40f32) * std::f64::consts::FRAC_2_SQRT_PI) as f32;
        let cases = [
            (0.0f32, 0.0f32),
            (-0.0, -0.0),
            (4.0, 1.0),
            (-1e30, -1.0),
            (f32::INFINITY, 1.0),
            (f32::NEG_INFINITY, -1.0),
            (1e-40, tiny),
        ];
        check(erf_f32, libm::erf, (5.0, 1009), (0.7, 0.8), &cases);
    }

    #[test]
    fn tanh_is_the_rounded_f64_tanh() {
        let cases = [
            (0.0f32, 0.0f32),
            (-0.0, -0.0),
            (10.0, 1.0),
            (-1e30, -1.0),
            (f32::INFINITY, 1.0),
            (f32::NEG_INFINITY, -1.0),
            (1e-40, 1e-40),
        ];
        check(tanh_f32, f64::tanh, (12.0, 1009), (0.5, 0.6), &cases);
    }
}
