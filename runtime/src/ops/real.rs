//! `Real`: the float operations the f32 and f64 compute domains share.

use std::ops::{Add, Div, Mul, Neg, Rem, Sub};

pub trait Real:
    Copy
    + Send
    + Sync
    + Default
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Rem<Output = Self>
    + Neg<Output = Self>
{
    const ZERO: Self;
    const ONE: Self;
    const HALF: Self;
    const NAN: Self;
    fn from_f64(x: f64) -> Self;
    fn is_nan(self) -> bool;
    fn floor(self) -> Self;
    fn ceil(self) -> Self;
    /// To the nearest integer, ties to even (NumPy's `round`).
    fn round_even(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn is_finite(self) -> bool;
    fn abs(self) -> Self;
    fn copysign(self, s: Self) -> Self;
    fn powf(self, e: Self) -> Self;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn sqrt(self) -> Self;
    fn tanh(self) -> Self;
    fn erf(self) -> Self;

    /// NaN-propagating maximum.
    #[inline]
    fn nan_max(self, o: Self) -> Self {
        if self.is_nan() || o.is_nan() {
            Self::NAN
        } else if o > self {
            o
        } else {
            self
        }
    }

    /// NaN-propagating minimum.
    #[inline]
    fn nan_min(self, o: Self) -> Self {
        if self.is_nan() || o.is_nan() {
            Self::NAN
        } else if o < self {
            o
        } else {
            self
        }
    }

    /// NumPy's `divmod` for floats: (floor quotient, remainder with the divisor's sign).
    #[inline]
    fn py_divmod(self, b: Self) -> (Self, Self) {
        let a = self;
        let m = a % b;
        if b == Self::ZERO {
            return (a / b, m);
        }
        let mut div = (a - m) / b;
        let mut m = m;
        if m != Self::ZERO {
            if (b < Self::ZERO) != (m < Self::ZERO) {
                m = m + b;
                div = div - Self::ONE;
            }
        } else {
            m = Self::ZERO.copysign(b);
        }
        let fd = if div != Self::ZERO {
            let mut f = div.floor();
            if div - f > Self::HALF {
                f = f + Self::ONE;
            }
            f
        } else {
            Self::ZERO.copysign(a / b)
        };
        (fd, m)
    }
}

impl Real for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
    const HALF: f32 = 0.5;
    const NAN: f32 = f32::NAN;
    #[inline]
    fn from_f64(x: f64) -> f32 {
        x as f32
    }
    #[inline]
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
    #[inline]
    fn floor(self) -> f32 {
        f32::floor(self)
    }
    #[inline]
    fn ceil(self) -> f32 {
        f32::ceil(self)
    }
    #[inline]
    fn round_even(self) -> f32 {
        f32::round_ties_even(self)
    }
    #[inline]
    fn sin(self) -> f32 {
        f32::sin(self)
    }
    #[inline]
    fn cos(self) -> f32 {
        f32::cos(self)
    }
    #[inline]
    fn is_finite(self) -> bool {
        f32::is_finite(self)
    }
    #[inline]
    fn abs(self) -> f32 {
        f32::abs(self)
    }
    #[inline]
    fn copysign(self, s: f32) -> f32 {
        f32::copysign(self, s)
    }
    #[inline]
    fn powf(self, e: f32) -> f32 {
        f32::powf(self, e)
    }
    #[inline(always)]
    fn exp(self) -> f32 {
        super::vmath::exp_f32(self)
    }
    #[inline]
    fn ln(self) -> f32 {
        f32::ln(self)
    }
    #[inline]
    fn sqrt(self) -> f32 {
        f32::sqrt(self)
    }
    #[inline(always)]
    fn tanh(self) -> f32 {
        super::vmath::tanh_f32(self)
    }
    #[inline(always)]
    fn erf(self) -> f32 {
        super::vmath::erf_f32(self)
    }
}

impl Real for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
    const HALF: f64 = 0.5;
    const NAN: f64 = f64::NAN;
    #[inline]
    fn from_f64(x: f64) -> f64 {
        x
    }
    #[inline]
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    #[inline]
    fn floor(self) -> f64 {
        f64::floor(self)
    }
    #[inline]
    fn ceil(self) -> f64 {
        f64::ceil(self)
    }
    #[inline]
    fn round_even(self) -> f64 {
        f64::round_ties_even(self)
    }
    #[inline]
    fn sin(self) -> f64 {
        f64::sin(self)
    }
    #[inline]
    fn cos(self) -> f64 {
        f64::cos(self)
    }
    #[inline]
    fn is_finite(self) -> bool {
        f64::is_finite(self)
    }
    #[inline]
    fn abs(self) -> f64 {
        f64::abs(self)
    }
    #[inline]
    fn copysign(self, s: f64) -> f64 {
        f64::copysign(self, s)
    }
    #[inline]
    fn powf(self, e: f64) -> f64 {
        f64::powf(self, e)
    }
    #[inline]
    fn exp(self) -> f64 {
        f64::exp(self)
    }
    #[inline]
    fn ln(self) -> f64 {
        f64::ln(self)
    }
    #[inline]
    fn sqrt(self) -> f64 {
        f64::sqrt(self)
    }
    #[inline]
    fn tanh(self) -> f64 {
        f64::tanh(self)
    }
    #[inline]
    fn erf(self) -> f64 {
        libm::erf(self)
    }
}
