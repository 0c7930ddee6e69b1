//! Complex elementary functions with C99 Annex G's special values (as NumPy gets them from
//! the C library): no overflow in an intermediate when the result is finite (`sqrt` and `log`
//! of a number near the largest float, `exp` whose modulus overflows while a part does not),
//! and a part that is exactly zero stays zero instead of becoming `inf·0 = nan`
//! (`exp(100+0j)` is `inf+0j`). Everything computes in f64; c64 rounds the f64 result once,
//! which is at least as accurate as NumPy's f32 arithmetic and never overflows on the way.

use num_complex::Complex;

type C = Complex<f64>;

/// Above this `exp(x)` overflows f64 (`ln(f64::MAX)` ≈ 709.78); scaled below it.
const EXP_SAFE: f64 = 709.0;

/// `e^x · (c, s)` without overflowing `e^x` when the products are finite.
fn scaled_exp(x: f64, c: f64, s: f64) -> (f64, f64) {
    if x > EXP_SAFE {
        let e = (x * 0.5).exp();
        ((c * e) * e, (s * e) * e)
    } else {
        let e = x.exp();
        (c * e, s * e)
    }
}

/// `exp(z)`.
pub fn exp(z: C) -> C {
    let (x, y) = (z.re, z.im);
    if y == 0.0 {
        // real argument: the imaginary part keeps its (signed) zero, also for inf and nan
        return C::new(x.exp(), y);
    }
    if x.is_infinite() {
        if x < 0.0 {
            return if y.is_finite() {
                let (s, c) = y.sin_cos();
                C::new(0.0 * c, 0.0 * s)
            } else {
                C::new(0.0, 0.0)
            };
        }
        if !y.is_finite() {
            return C::new(f64::INFINITY, f64::NAN);
        }
        let (s, c) = y.sin_cos();
        return C::new(x * c, x * s);
    }
    if x.is_nan() || !y.is_finite() {
        return C::new(f64::NAN, f64::NAN);
    }
    let (s, c) = y.sin_cos();
    let (re, im) = scaled_exp(x, c, s);
    C::new(re, im)
}

/// `log(z)`: `ln|z|` computed without forming `|z|` where it could overflow or lose digits.
pub fn ln(z: C) -> C {
    let (x, y) = (z.re, z.im);
    let im = y.atan2(x);
    let (ax, ay) = (x.abs(), y.abs());
    if ax.is_infinite() || ay.is_infinite() {
        return C::new(f64::INFINITY, im);
    }
    if ax.is_nan() || ay.is_nan() {
        return C::new(f64::NAN, f64::NAN);
    }
    let (a, b) = if ax >= ay { (ax, ay) } else { (ay, ax) };
    if a == 0.0 {
        return C::new(f64::NEG_INFINITY, im);
    }
    let re = if (0.5..=2.0).contains(&a) {
        // |z|² − 1 without cancellation in the larger part
        0.5 * ((a - 1.0) * (a + 1.0) + b * b).ln_1p()
    } else {
        let r = b / a;
        a.ln() + 0.5 * (r * r).ln_1p()
    };
    C::new(re, im)
}

/// `sqrt(z)`: the principal root, `(|x| + |z|)/2` formed at a scale where it cannot overflow
/// or lose a subnormal's digits.
pub fn sqrt(z: C) -> C {
    let (x, y) = (z.re, z.im);
    if y.is_infinite() {
        return C::new(f64::INFINITY, y);
    }
    if x.is_nan() {
        return C::new(f64::NAN, f64::NAN);
    }
    if x.is_infinite() {
        return if x > 0.0 {
            C::new(x, if y.is_nan() { y } else { 0f64.copysign(y) })
        } else {
            C::new(if y.is_nan() { y } else { 0.0 }, f64::INFINITY.copysign(y))
        };
    }
    if y.is_nan() {
        return C::new(f64::NAN, f64::NAN);
    }
    if x == 0.0 && y == 0.0 {
        return C::new(0.0, y);
    }
    let m = x.abs().max(y.abs());
    // scale by an even power of two, exact, and undo it by its square root
    let (k, back) = if m > f64::MAX / 4.0 {
        (0.25, 2.0)
    } else if m < f64::MIN_POSITIVE * 4.0 {
        (2f64.powi(600), 2f64.powi(-300))
    } else {
        (1.0, 1.0)
    };
    let (xs, ys) = (x * k, y * k);
    let t = ((xs.abs() + xs.hypot(ys)) * 0.5).sqrt() * back;
    if x >= 0.0 {
        C::new(t, y / (2.0 * t))
    } else {
        C::new(y.abs() / (2.0 * t), t.copysign(y))
    }
}

/// `(cosh y, sinh y)` times `(p, q)`, scaled where `cosh` overflows but the products may not.
fn hyp_times(y: f64, p: f64, q: f64) -> (f64, f64) {
    if y.abs() > EXP_SAFE {
        // cosh y = sinh |y| = e^|y| / 2 to the last bit here
        scaled_exp(y.abs(), 0.5 * p, (0.5 * q).copysign(q * y.signum()))
    } else {
        (p * y.cosh(), q * y.sinh())
    }
}

/// `sin(z) = sin x cosh y + i cos x sinh y`; a zero part of `z` keeps its zero.
pub fn sin(z: C) -> C {
    let (x, y) = (z.re, z.im);
    if y == 0.0 {
        let im = if x.is_finite() { x.cos() * y } else { y };
        return C::new(x.sin(), im);
    }
    if x == 0.0 {
        return C::new(x, y.sinh());
    }
    let (s, c) = x.sin_cos();
    let (re, im) = hyp_times(y, s, c);
    C::new(re, im)
}

/// `cos(z) = cos x cosh y − i sin x sinh y`; a zero part of `z` keeps its zero.
pub fn cos(z: C) -> C {
    let (x, y) = (z.re, z.im);
    if y == 0.0 {
        let im = if x.is_finite() { -(x.sin() * y) } else { y };
        return C::new(x.cos(), im);
    }
    if x == 0.0 && !y.is_nan() {
        return C::new(y.cosh(), -(x * y.signum()));
    }
    let (s, c) = x.sin_cos();
    let (re, im) = hyp_times(y, c, s);
    C::new(re, -im)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(re: f64, im: f64) -> C {
        C::new(re, im)
    }

    /// Same value, or both nan, and the same sign of zero.
    fn same(a: f64, b: f64) -> bool {
        (a.is_nan() && b.is_nan())
            || (a == b && a.is_sign_negative() == b.is_sign_negative())
            || (a != 0.0 && ((a - b) / b).abs() < 1e-14)
    }

    fn check(f: fn(C) -> C, z: C, want: C) {
        let got = f(z);
        assert!(
            same(got.re, want.re) && same(got.im, want.im),
            "{z} -> {got}, want {want}"
        );
    }

    /// Values from NumPy 2 (glibc) for c128 and, rounded to f32, c64.
    #[test]
    fn numpy_edges() {
        let inf = f64::INFINITY;
        let nan = f64::NAN;
        check(
            sqrt,
            c(3e38, 3e38),
            c(1.9029767059950166e19, 7.882387605032136e18),
        );
        check(
            sqrt,
            c(1.7e308, 1.7e308),
            c(1.4325088230154573e154, 5.933645827121221e153),
        );
        check(
            sqrt,
            c(-1e308, 1e308),
            c(4.5508986056222734e153, 1.09868411346781e154),
        );
        check(sqrt, c(-4.0, -0.0), c(0.0, -2.0));
        check(sqrt, c(-inf, 1.0), c(0.0, inf));
        check(sqrt, c(0.0, inf), c(inf, inf));
        check(sqrt, c(nan, 0.0), c(nan, nan));
        check(
            ln,
            c(3e38, 3e38),
            c(88.94341941272182, std::f64::consts::FRAC_PI_4),
        );
        check(
            ln,
            c(1.7e308, 1.7e308),
            c(710.0734104835082, std::f64::consts::FRAC_PI_4),
        );
        check(ln, c(-1e308, 1e308), c(709.542782232446, 2.356194490192345));
        check(ln, c(0.0, 0.0), c(-inf, 0.0));
        check(ln, c(-inf, 1.0), c(inf, std::f64::consts::PI));
        check(
            ln,
            c(-4.0, -0.0),
            c(1.3862943611198906, -std::f64::consts::PI),
        );
        assert!(ln(c(0.6, 0.8)).re.abs() < 1e-16);
        check(exp, c(100.0, 0.0), c(2.6881171418161356e43, 0.0));
        check(exp, c(-4.0, -0.0), c(0.01831563888873418, -0.0));
        check(exp, c(inf, 0.0), c(inf, 0.0));
        check(exp, c(nan, 0.0), c(nan, 0.0));
        check(exp, c(-inf, 1.0), c(0.0, 0.0));
        check(exp, c(710.0, 0.5), c(inf, 1.0710341440060488e308));
        check(exp, c(0.0, inf), c(nan, nan));
        check(sin, c(0.0, 1000.0), c(0.0, inf));
        check(sin, c(-4.0, 0.0), c(0.7568024953079282, -0.0));
        check(sin, c(inf, 0.0), c(nan, 0.0));
        check(
            sin,
            c(710.0, 0.5),
            c(6.798311107414321e-05, 0.5210953045467275),
        );
        check(cos, c(0.0, 100.0), c(1.3440585709080678e43, -0.0));
        check(cos, c(0.0, 0.0), c(1.0, -0.0));
        check(cos, c(-4.0, -0.0), c(-0.6536436208636119, 0.0));
        check(cos, c(inf, 0.0), c(nan, 0.0));
        check(cos, c(0.0, inf), c(inf, -0.0));
        check(
            cos,
            c(89.0, 1.5),
            c(1.2001453859971682, -1.8313281157520638),
        );
        // large imaginary parts where cosh overflows but the product does not
        let z = sin(c(1e-300, 710.0));
        assert!(same(z.re, 1.1169973830808557e8) && z.im.is_finite(), "{z}");
        let z = cos(c(1.0, -710.0));
        assert!(z.re.is_finite() && z.im.is_finite() && z.im > 0.0, "{z}");
    }

    /// c64 rounds the f64 result: the parts that fit f32 stay finite.
    #[test]
    fn c64_rounding() {
        let z = sqrt(c(3e38f32 as f64, 3e38f32 as f64));
        assert_eq!((z.re as f32, z.im as f32), (1.9029767e19, 7.882388e18));
        let z = ln(c(3e38f32 as f64, 3e38f32 as f64));
        assert_eq!(
            (z.re as f32, z.im as f32),
            (88.94342, std::f32::consts::FRAC_PI_4)
        );
        let z = exp(c(100.0, 0.0));
        assert_eq!((z.re as f32, z.im as f32), (f32::INFINITY, 0.0));
    }
}
