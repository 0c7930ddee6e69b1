//! Numbers as text and the axes of a plot: linear and log ticks, SVG escaping.

// ---- numbers as text ----

/// `x` with `sig` significant digits, like C's `%g`: trailing zeros dropped, an exponent for
/// very small or large magnitudes.
pub fn fmt_g(x: f64, sig: usize) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let sig = sig.max(1);
    let e = format!("{:.*e}", sig - 1, x);
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= sig as i32 + 2 {
        return format!("{}e{exp}", trim_zeros(mant));
    }
    let decimals = (sig as i32 - 1 - exp).max(0) as usize;
    trim_zeros(&format!("{x:.decimals$}"))
}

pub(super) fn trim_zeros(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s.to_string()
    }
}

/// A pixel coordinate: one decimal, never `-0.0`.
pub(super) fn px(v: f64) -> String {
    let s = format!("{v:.1}");
    if s == "-0.0" {
        "0.0".into()
    } else {
        s
    }
}

/// `10^k`, the same bits everywhere (products and one division of exact powers).
pub(super) fn pow10(k: i32) -> f64 {
    let mut p = 1.0f64;
    for _ in 0..k.unsigned_abs() {
        p *= 10.0;
    }
    if k < 0 {
        1.0 / p
    } else {
        p
    }
}

/// The decimal exponent of `x > 0` (from its correctly rounded text, not a libm logarithm).
pub(super) fn exponent(x: f64) -> i32 {
    let e = format!("{x:e}");
    e.split_once('e')
        .and_then(|(_, k)| k.parse().ok())
        .unwrap_or(0)
}

/// Text for an SVG (XML) text node or attribute: markup characters escaped, and characters
/// XML 1.0 cannot hold at all (control characters other than tab and newline, U+FFFE, U+FFFF)
/// replaced by U+FFFD, so the file always parses.
pub(super) fn escape(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\t' | '\n' => c,
            '\r' => ' ',
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => '\u{fffd}',
            c => c,
        })
        .collect::<String>()
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

// ---- axes ----

/// A linear axis: its ends and its ticks (value, label).
pub(super) struct Axis {
    pub(super) lo: f64,
    pub(super) hi: f64,
    pub(super) ticks: Vec<(f64, String)>,
}

/// A linear axis over `[min, max]` with about five ticks at multiples of 1, 2 or 5 × 10^k;
/// the axis ends on ticks.
pub(super) fn linear_axis(min: f64, max: f64) -> Axis {
    let (min, max) = if min == max {
        (min - 1.0, max + 1.0)
    } else {
        (min, max)
    };
    // (each divided first: `max - min` of 1e308 and -1e308 overflows)
    let raw = max / 5.0 - min / 5.0;
    let k = exponent(raw);
    let m = raw / pow10(k);
    let (m, k) = if m <= 1.5 {
        (1.0, k)
    } else if m <= 3.0 {
        (2.0, k)
    } else if m <= 7.0 {
        (5.0, k)
    } else {
        (1.0, k + 1)
    };
    let step = m * pow10(k);
    let first = (min / step).floor() as i64;
    let last = (max / step).ceil() as i64;
    if !(last as f64 * step).is_finite()
        || !(first as f64 * step).is_finite()
        || last.saturating_sub(first) > 100
    {
        // a span near the largest float: the round ticks past the data would overflow; the
        // axis ends on the data instead
        return Axis {
            lo: min,
            hi: max,
            ticks: vec![(min, fmt_g(min, 3)), (max, fmt_g(max, 3))],
        };
    }
    let decimals = if k < 0 { (-k) as usize } else { 0 };
    let ticks = (first..=last)
        .map(|i| {
            // i × m / 10^-k keeps decimal steps exact where they can be
            let v = if k < 0 {
                i as f64 * m / pow10(-k)
            } else {
                i as f64 * step
            };
            // (`i = 0` gives +0.0: no label reads `-0`)
            let label = if (-5..=5).contains(&k) {
                format!("{v:.decimals$}")
            } else {
                fmt_g(v, 3)
            };
            (v, label)
        })
        .collect();
    Axis {
        lo: first as f64 * step,
        hi: last as f64 * step,
        ticks,
    }
}

/// A log10 axis over `[min, max]` (both > 0): whole decades, a tick per decade (or per few
/// decades when there are many), labelled `0.001`, `1`, `100`, `1e3`, `1e-5`. Values on it
/// are log10 of the data.
pub(super) fn log_axis(min: f64, max: f64) -> Axis {
    let lo = exponent(min);
    let mut hi = exponent(max);
    if pow10(hi) < max {
        hi += 1;
    }
    if hi <= lo {
        hi = lo + 1;
    }
    let every = ((hi - lo) as usize).div_ceil(8).max(1);
    let ticks = (lo..=hi)
        .step_by(every)
        .map(|k| (k as f64, fmt_g(pow10(k), 1)))
        .collect();
    Axis {
        lo: lo as f64,
        hi: hi as f64,
        ticks,
    }
}
