//! Convolutions: their arguments (stride, padding, dilation, groups, algorithm) and the eager op.

use super::*;

/// `stride`, `dilation` or an explicit `padding` of a `dims`-d convolution: an int for every
/// dim, or a tuple/list of `dims` ints; each at least `min`.
fn conv_ints(x: &Arg, what: &str, dims: usize, min: i64) -> Result<Vec<usize>, Diagnostic> {
    let bad = || {
        let kind = if min > 0 { "positive" } else { "non-negative" };
        let form = if dims == 1 {
            format!("a {kind} int")
        } else {
            format!("a {kind} int or a pair of them")
        };
        Diagnostic::new(
            Code::E0101,
            format!("{what} must be {form}, not {}", x.value.repr()),
        )
        .at(x.span)
    };
    let items: Vec<Value> = match &x.value {
        Value::Int(_) => vec![x.value.clone(); dims],
        Value::Tuple(t) => t.as_ref().clone(),
        Value::List(l) => l.borrow().clone(),
        _ => return Err(bad()),
    };
    if items.len() != dims {
        return Err(bad());
    }
    items
        .iter()
        .map(|v| match v {
            Value::Int(i) if *i >= min => usize::try_from(*i).map_err(|_| bad()),
            _ => Err(bad()),
        })
        .collect()
}

/// The spec of a `conv1d`/`conv2d` call (slots 3 to 6: stride, padding, dilation, groups;
/// x, w and bias are slots 0 to 2, `algorithm` slot 7).
pub(crate) fn conv_spec(c: &Call, dims: usize) -> Result<rtm::ConvSpec, Diagnostic> {
    let ints = |i: usize, what: &str, min: i64| -> Result<Vec<usize>, Diagnostic> {
        match opt(&c.a, i) {
            Some(x) => conv_ints(x, what, dims, min),
            None => Ok(vec![if min > 0 { 1 } else { 0 }; dims]),
        }
    };
    let stride = ints(3, "stride", 1)?;
    let padding = match opt(&c.a, 4) {
        Some(x) => match &x.value {
            Value::Str(s) if s.as_ref() == "same" => rtm::ConvPadding::Same,
            Value::Str(s) if s.as_ref() == "valid" => {
                rtm::ConvPadding::Explicit(vec![(0, 0); dims])
            }
            Value::Str(s) => {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!("padding must be an int, a pair, \"same\" or \"valid\", not \"{s}\""),
                )
                .at(x.span))
            }
            _ => rtm::ConvPadding::Explicit(
                conv_ints(x, "padding", dims, 0)?
                    .into_iter()
                    .map(|p| (p, p))
                    .collect(),
            ),
        },
        None => rtm::ConvPadding::Explicit(vec![(0, 0); dims]),
    };
    let dilation = ints(5, "dilation", 1)?;
    let groups = match opt(&c.a, 6) {
        Some(x) => {
            let g = x.int("groups")?;
            usize::try_from(g).ok().filter(|&g| g > 0).ok_or_else(|| {
                Diagnostic::new(
                    Code::E0101,
                    format!("groups must be a positive int, not {g}"),
                )
                .at(x.span)
            })?
        }
        None => 1,
    };
    Ok(rtm::ConvSpec {
        dims,
        stride,
        padding,
        dilation,
        groups,
    })
}

/// `algorithm="auto"|"direct"|"fft"` of a convolution (slot 7).
pub(crate) fn conv_algorithm(c: &Call) -> Result<rtm::ConvAlgorithm, Diagnostic> {
    let Some(x) = opt(&c.a, 7) else {
        return Ok(rtm::ConvAlgorithm::Auto);
    };
    match &x.value {
        Value::Str(s) if s.as_ref() == "auto" => Ok(rtm::ConvAlgorithm::Auto),
        Value::Str(s) if s.as_ref() == "direct" => Ok(rtm::ConvAlgorithm::Direct),
        Value::Str(s) if s.as_ref() == "fft" => Ok(rtm::ConvAlgorithm::Fft),
        v => Err(Diagnostic::new(
            Code::E0101,
            format!(
                "algorithm must be \"auto\", \"direct\" or \"fft\", not {}",
                v.repr()
            ),
        )
        .at(x.span)),
    }
}

fn conv(c: &Call, dims: usize) -> R {
    let spec = conv_spec(c, dims)?;
    let alg = conv_algorithm(c)?;
    let (x, w, b) = (tens(&c.a, 0)?, tens(&c.a, 1)?, tens_opt(&c.a, 2)?);
    ok(rtm::conv_with(&x, &w, b.as_ref(), &spec, alg))
}

pub(crate) fn conv1d(_: &mut Interp, c: &Call) -> R {
    conv(c, 1)
}

pub(crate) fn conv2d(_: &mut Interp, c: &Call) -> R {
    conv(c, 2)
}
