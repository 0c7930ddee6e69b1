//! The elementwise complex ops of Graph IR ([`super::Op::Complex`]): the parts of a complex
//! tensor (`real imag conj angle abs`), `complex(re, im)`, and the arithmetic the derivatives
//! of the FFT family build with (`+ - *` and negation with a complex operand).
//!
//! They are ops of their own rather than [`super::Op::Unary`]/[`super::Op::Binary`] rows so
//! that the elementwise fusion, which works on real values, never puts a complex value into
//! a fused body: each is one kernel over interleaved (re, im) pairs
//! (`kernels::complex`).

use super::DType;

/// What an [`super::Op::Complex`] computes, elementwise (NumPy broadcasting between the two
/// operands of a binary one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ComplexOp {
    /// The real part (fp32 of c64, fp64 of c128).
    Real,
    /// The imaginary part.
    Imag,
    /// The conjugate.
    Conj,
    /// `atan2(im, re)` in the parts' precision.
    Angle,
    /// The modulus `|z|` (NumPy's `abs` of a complex number).
    Abs,
    /// `re + im·j` of two real operands: c128 when their promoted dtype is fp64, else c64.
    Make,
    /// `a + b`, `a − b`, `a · b` with at least one complex operand (a real operand is `x + 0j`).
    Add,
    Sub,
    Mul,
    /// `−z`.
    Neg,
}

impl ComplexOp {
    pub fn name(self) -> &'static str {
        match self {
            ComplexOp::Real => "real",
            ComplexOp::Imag => "imag",
            ComplexOp::Conj => "conj",
            ComplexOp::Angle => "angle",
            ComplexOp::Abs => "complex_abs",
            ComplexOp::Make => "complex",
            ComplexOp::Add => "complex_add",
            ComplexOp::Sub => "complex_sub",
            ComplexOp::Mul => "complex_mul",
            ComplexOp::Neg => "complex_neg",
        }
    }

    /// Whether the op takes two operands.
    pub fn binary(self) -> bool {
        matches!(
            self,
            ComplexOp::Make | ComplexOp::Add | ComplexOp::Sub | ComplexOp::Mul
        )
    }

    /// The result dtype for operands of dtypes `a` (and `b`), `None` where they do not fit:
    /// a unary op needs a complex operand, `Make` two real ones, the arithmetic at least one
    /// complex one.
    pub fn result_dtype(self, a: DType, b: Option<DType>) -> Option<DType> {
        let real = |d: DType| !d.is_complex();
        match (self, b) {
            (ComplexOp::Real | ComplexOp::Imag | ComplexOp::Angle | ComplexOp::Abs, None)
                if a.is_complex() =>
            {
                Some(a.real_part())
            }
            (ComplexOp::Conj | ComplexOp::Neg, None) if a.is_complex() => Some(a),
            (ComplexOp::Make, Some(b)) if real(a) && real(b) => {
                Some(DType::promote(a, b).to_complex())
            }
            (ComplexOp::Add | ComplexOp::Sub | ComplexOp::Mul, Some(b))
                if a.is_complex() || b.is_complex() =>
            {
                Some(DType::promote(a, b))
            }
            _ => None,
        }
    }
}
