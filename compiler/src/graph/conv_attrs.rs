//! The attributes of the convolution and FFT ops of Graph IR ([`super::Op::Conv`],
//! [`super::Op::Fft`]) and a convolution's sizes.

/// The attributes of a [`Op::Conv`], a 1-d one as 2-d with height 1 (all per (H, W)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConvAttrs {
    /// 1 (conv1d) or 2 (conv2d).
    pub dims: u8,
    pub stride: [usize; 2],
    /// Zeros (before, after) the input along H and W.
    pub pad: [(usize, usize); 2],
    pub dilation: [usize; 2],
    pub groups: usize,
    /// `algorithm=`: what the spectral rewrite may do with it.
    pub algorithm: ConvAlgorithm,
}

/// A convolution's sizes in its 2-d form (a 1-d one with height 1): what the cpu's plan,
/// the cost model and the spectral rewrite share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvSizes {
    pub batch: usize,
    pub cin: usize,
    pub cout: usize,
    pub groups: usize,
    /// input (H, W), kernel (kH, kW), output (OH, OW)
    pub input: [usize; 2],
    pub kernel: [usize; 2],
    pub output: [usize; 2],
}

/// A convolution's `algorithm=`: `Auto` lets the cost model choose between the direct kernel
/// and the spectral rewrite (`passes::spectral_conv`), the others force one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ConvAlgorithm {
    #[default]
    Auto,
    Direct,
    Fft,
}

impl ConvAlgorithm {
    pub fn name(self) -> &'static str {
        match self {
            ConvAlgorithm::Auto => "auto",
            ConvAlgorithm::Direct => "direct",
            ConvAlgorithm::Fft => "fft",
        }
    }
}

/// The transform of an [`Op::Fft`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FftKind {
    /// Complex to complex, `e^{-2πi jk/n}`.
    Forward,
    /// Complex to complex, `e^{+2πi jk/n}`.
    Inverse,
    /// Real to the `n/2 + 1` non-negative frequencies (NumPy's `rfft`).
    RealForward,
    /// Those frequencies to `n` reals (NumPy's `irfft`: the imaginary parts of the zero and
    /// Nyquist bins are ignored).
    RealInverse,
    /// The adjoint of `RealInverse` (what its derivative applies): `RealForward` of the `n`
    /// reals with the bins strictly between the zero and Nyquist frequencies doubled (the
    /// terms `irfft` counts twice, as a bin and its conjugate).
    RealInverseAdjoint,
}

impl FftKind {
    pub fn name(self) -> &'static str {
        match self {
            FftKind::Forward => "fft",
            FftKind::Inverse => "ifft",
            FftKind::RealForward => "rfft",
            FftKind::RealInverse => "irfft",
            FftKind::RealInverseAdjoint => "irfft_adjoint",
        }
    }
    pub fn inverse(self) -> bool {
        matches!(self, FftKind::Inverse | FftKind::RealInverse)
    }
    /// A real input (`rfft` and the adjoint of `irfft`).
    pub fn real_input(self) -> bool {
        matches!(self, FftKind::RealForward | FftKind::RealInverseAdjoint)
    }
    /// `n/2 + 1` output bins.
    pub fn half_output(self) -> bool {
        self.real_input()
    }
}

/// NumPy's `norm=`: which direction is scaled, by `1/n` (`Ortho`: both by `1/√n`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FftNorm {
    #[default]
    Backward,
    Ortho,
    Forward,
}

impl FftNorm {
    pub fn name(self) -> &'static str {
        match self {
            FftNorm::Backward => "backward",
            FftNorm::Ortho => "ortho",
            FftNorm::Forward => "forward",
        }
    }
    /// The factor a transform of length `n` in direction `inverse` multiplies by.
    pub fn scale(self, n: usize, inverse: bool) -> f64 {
        let n = n.max(1) as f64;
        match (self, inverse) {
            (FftNorm::Ortho, _) => 1.0 / n.sqrt(),
            (FftNorm::Backward, true) | (FftNorm::Forward, false) => 1.0 / n,
            _ => 1.0,
        }
    }
}

/// Where an [`Op::Fft`]'s input elements sit in its length-`n` line: element `j` at position
/// `lo + j·step`, the other positions zero, positions past `n` dropped. NumPy's zero padding
/// and truncation to `n` is `lo = 0, step = 1`; the spectral rewrite uses `lo` for a
/// convolution's leading padding and `step` for its dilation. (For `RealInverse` the input is
/// the `n/2 + 1` frequencies, always placed as NumPy places them.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FftEmbed {
    pub lo: usize,
    pub step: usize,
}

impl Default for FftEmbed {
    fn default() -> Self {
        FftEmbed { lo: 0, step: 1 }
    }
}

impl ConvAttrs {
    /// The output length along spatial dim `i` of an input `len` long with a kernel `k` long
    /// (`None`: the kernel spans more than the padded input).
    pub fn out_len(&self, i: usize, len: usize, k: usize) -> Option<usize> {
        let span = self.dilation[i]
            .checked_mul(k.checked_sub(1)?)?
            .checked_add(1)?;
        let padded = len.checked_add(self.pad[i].0)?.checked_add(self.pad[i].1)?;
        (padded >= span).then(|| (padded - span) / self.stride[i].max(1) + 1)
    }
}
