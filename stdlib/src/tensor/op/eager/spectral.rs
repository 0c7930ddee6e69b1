//! Complex tensors and the FFT family: their arguments and the eager ops.

use super::*;

/// `complex(re, im)`: `re + im·j` (real parts, broadcast; c128 for fp64, else c64).
pub(crate) fn complex(_: &mut Interp, c: &Call) -> R {
    let (x, y) = (req(&c.a, 0)?, req(&c.a, 1)?);
    let (p, q) = (operand(&x.value, x.span)?, operand(&y.value, y.span)?);
    ok(rtm::complex(p.as_operand(), q.as_operand()))
}

/// `real`, `imag`, `conj`, `angle` of a tensor.
pub(crate) fn part(_: &mut Interp, c: &Call) -> R {
    let t = tens(&c.a, 0)?;
    ok(match c.row.name {
        "real" => rtm::real(&t),
        "imag" => rtm::imag(&t),
        "conj" => rtm::conj(&t),
        _ => rtm::angle(&t),
    })
}

/// The `norm=` argument of the FFTs: "backward" (the default, also for None), "ortho" or
/// "forward"; anything else is E0101 at the argument.
fn fft_norm(a: &[Option<Arg>], i: usize) -> Result<rtm::FftNorm, Diagnostic> {
    let Some(x) = opt(a, i) else {
        return Ok(rtm::FftNorm::Backward);
    };
    let Value::Str(s) = &x.value else {
        return Err(Diagnostic::new(
            Code::E0101,
            format!("norm must be a string, got {}", x.value.type_name()),
        )
        .at(x.span)
        .with_help("norm=\"backward\", \"ortho\" or \"forward\""));
    };
    rtm::FftNorm::parse(s).map_err(|e| rt(e).at(x.span))
}

/// The arguments of `fft ifft rfft irfft` after `x`: `n`, `axis`, `norm`.
pub(crate) struct Fft1Args {
    pub n: Option<i64>,
    pub axis: isize,
    pub norm: rtm::FftNorm,
}

pub(crate) fn fft1_args(c: &Call) -> Result<Fft1Args, Diagnostic> {
    Ok(Fft1Args {
        n: opt(&c.a, 1).map(|x| x.int("n")).transpose()?,
        axis: axis_opt(&c.a, 2)?.unwrap_or(-1),
        norm: fft_norm(&c.a, 3)?,
    })
}

/// The 1-D transform `c.row.name` of `t` (an abstract tensor gives the result's shape and
/// dtype: the traced form's rule), a bad length reported at `n`.
pub(crate) fn fft1_on(t: &Tensor, c: &Call, a: &Fft1Args) -> Result<Tensor, Diagnostic> {
    let f = match c.row.name {
        "fft" => rtm::fft,
        "ifft" => rtm::ifft,
        "rfft" => rtm::rfft,
        _ => rtm::irfft,
    };
    match (f(t, a.n, a.axis, a.norm), opt(&c.a, 1)) {
        (Ok(r), _) => Ok(r),
        // a bad length is the `n` argument's fault
        (Err(e), Some(nx)) if e.code == rtm::Code::E0200 => Err(rt(e).at(nx.span)),
        (Err(e), _) => Err(rt(e)),
    }
}

/// `fft ifft rfft irfft(x, n=None, axis=-1, norm='backward')`.
pub(crate) fn fft1(_: &mut Interp, c: &Call) -> R {
    let t = tens(&c.a, 0)?;
    let a = fft1_args(c)?;
    fft1_on(&t, c, &a).map(tensor_value)
}

/// The arguments of `fft2 ifft2 rfft2 irfft2` after `x`: `s`, `norm`.
pub(crate) fn fft2_args(c: &Call) -> Result<(Option<[i64; 2]>, rtm::FftNorm), Diagnostic> {
    let s = match opt(&c.a, 1) {
        Some(sx) => {
            let v = ints_arg(&sx.value, sx.span)?;
            let [a, b] = v[..] else {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!(
                        "s must give two lengths (the last two axes), got {}",
                        v.len()
                    ),
                )
                .at(sx.span));
            };
            Some([a, b])
        }
        None => None,
    };
    Ok((s, fft_norm(&c.a, 2)?))
}

/// The 2-D transform `c.row.name` of `t` (abstract: the traced form's shape rule).
pub(crate) fn fft2_on(
    t: &Tensor,
    c: &Call,
    s: Option<[i64; 2]>,
    norm: rtm::FftNorm,
) -> Result<Tensor, Diagnostic> {
    let kind = match c.row.name {
        "fft2" => rtm::Fft2Kind::Fft2,
        "ifft2" => rtm::Fft2Kind::Ifft2,
        "rfft2" => rtm::Fft2Kind::Rfft2,
        _ => rtm::Fft2Kind::Irfft2,
    };
    match (rtm::fft2d(t, kind, s, norm), opt(&c.a, 1)) {
        (Ok(r), _) => Ok(r),
        (Err(e), Some(sx))
            if e.code == rtm::Code::E0200 && s.is_some_and(|s| s.iter().any(|&v| v < 1)) =>
        {
            Err(rt(e).at(sx.span))
        }
        (Err(e), _) => Err(rt(e)),
    }
}

/// `fft2 ifft2 rfft2 irfft2(x, s=None, norm='backward')` over the last two axes.
pub(crate) fn fft2(_: &mut Interp, c: &Call) -> R {
    let t = tens(&c.a, 0)?;
    let (s, norm) = fft2_args(c)?;
    fft2_on(&t, c, s, norm).map(tensor_value)
}
