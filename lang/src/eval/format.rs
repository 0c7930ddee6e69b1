//! Python-compatible text: `repr` of floats and strings, and the format-spec mini-language
//! used by f-strings (`{x:.3f}`, `{n:>8}`, `{i:d}`).

use super::value::Value;
use crate::diag::{Code, Diagnostic};

/// Python's `repr(float)`: the shortest string that round-trips, positional for exponents in
/// -4..16, scientific otherwise (`1e-05`, `1e+16`), always with a `.0` or an exponent.
pub fn float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    // Rust's `{:e}` gives a shortest round-trip digit string ("1.2345e3", "-5e-7"), but where
    // two strings of that length round-trip it may not pick the nearest one. Python picks the
    // correctly rounded one: reformat exactly at that many digits (round half to even).
    let shortest = format!("{x:e}");
    let n_digits = shortest
        .split('e')
        .next()
        .map(|m| m.chars().filter(|c| c.is_ascii_digit()).count())
        .unwrap_or(1)
        .max(1);
    let exact = format!("{x:.prec$e}", prec = n_digits - 1);
    // The nearest string of that length may not round-trip (a tie that reads back as the
    // neighbouring float): then the shortest one is the only choice.
    let sci = if exact.parse::<f64>().ok() == Some(x) {
        exact
    } else {
        shortest
    };
    let (mant, exp) = match sci.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (sci.as_str(), 0),
    };
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if (-4..16).contains(&exp) {
        let n = digits.len() as i32;
        if exp >= 0 {
            let int_len = (exp + 1) as usize;
            if digits.len() <= int_len {
                out.push_str(&digits);
                for _ in 0..(int_len - digits.len()) {
                    out.push('0');
                }
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        } else {
            out.push_str("0.");
            for _ in 0..(-exp - 1) {
                out.push('0');
            }
            out.push_str(&digits);
        }
        let _ = n;
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exp.abs()));
    }
    out
}

/// Python's `repr(str)`: single quotes unless the text has `'` and no `"`.
pub fn str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if !printable(c) => out.push_str(&escape(c)),
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// `ascii(x)` from `repr(x)`: every non-ASCII character escaped, as Python's `!a` does.
pub fn ascii_escaped(repr: &str) -> String {
    let mut out = String::with_capacity(repr.len());
    for c in repr.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            out.push_str(&escape(c));
        }
    }
    out
}

/// `\xNN`, `\uNNNN` or `\UNNNNNNNN`, as Python writes a character its `repr` escapes.
fn escape(c: char) -> String {
    match c as u32 {
        n @ 0..=0xff => format!("\\x{n:02x}"),
        n @ 0x100..=0xffff => format!("\\u{n:04x}"),
        n => format!("\\U{n:08x}"),
    }
}

/// Whether `repr` shows `c` as it is: not a control, format, separator (but the space),
/// private-use or unassigned character in Python's sense. The Unicode tables are not here, so
/// this names the ranges that occur in practice (controls, no-break and typographic spaces,
/// zero-width and direction marks, line and paragraph separators, the BOM, private use).
fn printable(c: char) -> bool {
    !matches!(c as u32,
        0..=0x1f | 0x7f..=0xa0 | 0xad | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x1680
        | 0x180e | 0x2000..=0x200f | 0x2028..=0x202f | 0x205f..=0x2064 | 0x2066..=0x206f
        | 0x3000 | 0xd800..=0xf8ff | 0xfeff | 0xfff9..=0xfffb | 0xf0000..)
}

/// A parsed format spec: `[[fill]align][sign][#][0][width][,|_][.precision][type]`.
#[derive(Debug, Default)]
struct Spec {
    fill: Option<char>,
    align: Option<char>,
    sign: Option<char>,
    /// `#`: the alternate form (`0x` prefixes, a decimal point that stays).
    alt: bool,
    zero: bool,
    width: usize,
    grouping: Option<char>,
    precision: Option<usize>,
    ty: Option<char>,
}

fn parse_spec(spec: &str) -> Option<Spec> {
    let chars: Vec<char> = spec.chars().collect();
    let mut i = 0;
    let mut s = Spec::default();
    let is_align = |c: char| matches!(c, '<' | '>' | '^' | '=');
    if chars.len() >= 2 && is_align(chars[1]) {
        s.fill = Some(chars[0]);
        s.align = Some(chars[1]);
        i = 2;
    } else if !chars.is_empty() && is_align(chars[0]) {
        s.align = Some(chars[0]);
        i = 1;
    }
    if let Some(&c) = chars.get(i) {
        if matches!(c, '+' | '-' | ' ') {
            s.sign = Some(c);
            i += 1;
        }
    }
    if chars.get(i) == Some(&'#') {
        s.alt = true;
        i += 1;
    }
    if chars.get(i) == Some(&'0') {
        s.zero = true;
        i += 1;
    }
    let start = i;
    while chars.get(i).is_some_and(|c| c.is_ascii_digit()) {
        i += 1;
    }
    if i > start {
        s.width = chars[start..i].iter().collect::<String>().parse().ok()?;
        if s.width > 10_000 {
            return None;
        }
    }
    if let Some(&c) = chars.get(i) {
        if c == ',' || c == '_' {
            s.grouping = Some(c);
            i += 1;
        }
    }
    if chars.get(i) == Some(&'.') {
        i += 1;
        let start = i;
        while chars.get(i).is_some_and(|c| c.is_ascii_digit()) {
            i += 1;
        }
        if i == start {
            return None;
        }
        let p: usize = chars[start..i].iter().collect::<String>().parse().ok()?;
        if p > 1000 {
            return None;
        }
        s.precision = Some(p);
    }
    if let Some(&c) = chars.get(i) {
        s.ty = Some(c);
        i += 1;
    }
    if i != chars.len() {
        return None;
    }
    Some(s)
}

fn group_digits(int_part: &str, sep: char) -> String {
    let bytes: Vec<char> = int_part.chars().collect();
    let mut out = String::new();
    for (i, c) in bytes.iter().enumerate() {
        if i > 0 && (bytes.len() - i).is_multiple_of(3) {
            out.push(sep);
        }
        out.push(*c);
    }
    out
}

/// `format(x, spec)` for the builtin scalar types. Host objects are formatted through their
/// `str` and only accept alignment specs.
pub fn format_value(v: &Value, spec: &str) -> Result<String, Diagnostic> {
    if spec.is_empty() {
        return Ok(v.to_str());
    }
    if let Value::Host(h) = v {
        if let Some(n) = h.as_number() {
            return format_value(&n, spec);
        }
    }
    let bad = || {
        Diagnostic::new(
            Code::E0101,
            format!(
                "invalid format specifier '{spec}' for a value of type {}",
                v.type_name()
            ),
        )
    };
    let s = parse_spec(spec).ok_or_else(bad)?;
    let numeric = matches!(v, Value::Int(_) | Value::Float(_) | Value::Bool(_));
    let (body, sign_str, default_right) = match v {
        Value::Int(_) | Value::Bool(_) | Value::Float(_) => {
            let as_int = match v {
                Value::Int(i) => Some(*i),
                Value::Bool(b) => Some(i64::from(*b)),
                _ => None,
            };
            let text = match (s.ty, as_int) {
                (None | Some('d') | Some('n'), Some(i)) if s.precision.is_none() => {
                    let t = i.unsigned_abs().to_string();
                    (t, i < 0)
                }
                (Some('d'), None) => return Err(bad()),
                (Some('x'), Some(i)) => (format!("{:x}", i.unsigned_abs()), i < 0),
                (Some('X'), Some(i)) => (format!("{:X}", i.unsigned_abs()), i < 0),
                (Some('b'), Some(i)) => (format!("{:b}", i.unsigned_abs()), i < 0),
                (Some('o'), Some(i)) => (format!("{:o}", i.unsigned_abs()), i < 0),
                (Some('c'), Some(i)) => match u32::try_from(i).ok().and_then(char::from_u32) {
                    Some(c) => (c.to_string(), false),
                    None => return Err(bad()),
                },
                (ty, _) => {
                    let x = match v {
                        Value::Int(i) => *i as f64,
                        Value::Bool(b) => f64::from(u8::from(*b)),
                        Value::Float(f) => *f,
                        _ => 0.0,
                    };
                    let neg = x.is_sign_negative() && !x.is_nan();
                    let a = x.abs();
                    // `#` keeps the decimal point where a precision of 0 drops it.
                    let point = |t: String| {
                        if s.alt && a.is_finite() && !t.contains('.') {
                            match t.find(['e', '%']) {
                                Some(k) => format!("{}.{}", &t[..k], &t[k..]),
                                None => format!("{t}."),
                            }
                        } else {
                            t
                        }
                    };
                    let t = match ty {
                        Some('f') | Some('F') => point(fixed(a, s.precision.unwrap_or(6))),
                        Some('e') | Some('E') => point(sci(a, s.precision.unwrap_or(6))),
                        Some('%') => {
                            point(format!("{}%", fixed(a * 100.0, s.precision.unwrap_or(6))))
                        }
                        Some('g') | Some('G') => {
                            point(general(a, s.precision.unwrap_or(6), false, s.alt))
                        }
                        None => match s.precision {
                            Some(p) => point(general(a, p.max(1), true, s.alt)),
                            None => float_repr(a),
                        },
                        Some(_) => return Err(bad()),
                    };
                    let t = if matches!(ty, Some('E' | 'F' | 'G')) {
                        t.to_uppercase()
                    } else {
                        t
                    };
                    (t, neg)
                }
            };
            let (mut t, neg) = text;
            if let Some(g) = s.grouping {
                let (ip, rest) = match t.find(|c: char| !c.is_ascii_digit()) {
                    Some(k) => (t[..k].to_string(), t[k..].to_string()),
                    None => (t.clone(), String::new()),
                };
                t = format!("{}{}", group_digits(&ip, g), rest);
            }
            let sign = if neg {
                "-"
            } else {
                match s.sign {
                    Some('+') => "+",
                    Some(' ') => " ",
                    _ => "",
                }
            };
            // `#x`: the base's prefix, between the sign and any zero padding.
            let prefix = match (s.alt, s.ty) {
                (true, Some('x')) => "0x",
                (true, Some('X')) => "0X",
                (true, Some('b')) => "0b",
                (true, Some('o')) => "0o",
                _ => "",
            };
            (t, format!("{sign}{prefix}"), true)
        }
        Value::Str(st) => {
            if !matches!(s.ty, None | Some('s')) || s.sign.is_some() {
                return Err(bad());
            }
            let mut t = st.to_string();
            if let Some(p) = s.precision {
                t = t.chars().take(p).collect();
            }
            (t, String::new(), false)
        }
        other => {
            if s.ty.is_some() || s.precision.is_some() || s.sign.is_some() {
                return Err(bad());
            }
            (other.to_str(), String::new(), false)
        }
    };
    let len = body.chars().count() + sign_str.chars().count();
    if len >= s.width {
        return Ok(format!("{sign_str}{body}"));
    }
    let pad = s.width - len;
    let (fill, align) = if s.zero && s.align.is_none() && numeric {
        ('0', '=')
    } else {
        (
            s.fill.unwrap_or(' '),
            s.align.unwrap_or(if default_right { '>' } else { '<' }),
        )
    };
    let fills = |n: usize| std::iter::repeat_n(fill, n).collect::<String>();
    Ok(match align {
        '<' => format!("{sign_str}{body}{}", fills(pad)),
        '^' => format!("{}{sign_str}{body}{}", fills(pad / 2), fills(pad - pad / 2)),
        '=' => format!("{sign_str}{}{body}", fills(pad)),
        _ => format!("{}{sign_str}{body}", fills(pad)),
    })
}

/// `'%.{p}f' % x` for a non-negative `x` (nan/inf spelled as Python does).
pub fn fixed(x: f64, p: usize) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return "inf".into();
    }
    format!("{x:.p$}")
}

fn sci(x: f64, p: usize) -> String {
    if !x.is_finite() {
        return fixed(x, p);
    }
    let t = format!("{x:.p$e}");
    match t.split_once('e') {
        Some((m, e)) => {
            let e: i32 = e.parse().unwrap_or(0);
            format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
        }
        None => t,
    }
}

/// Python's `g` presentation (and the no-type presentation with a precision when
/// `repr_like`); `alt` (`#`) keeps the trailing zeros.
fn general(x: f64, p: usize, repr_like: bool, alt: bool) -> String {
    if !x.is_finite() {
        return fixed(x, p);
    }
    let p = p.max(1);
    if x == 0.0 {
        return match (alt, repr_like) {
            (true, _) => fixed(0.0, p - 1),
            (false, true) => "0.0".into(),
            (false, false) => "0".into(),
        };
    }
    let t = format!("{x:.prec$e}", prec = p - 1);
    let exp: i32 = t
        .split_once('e')
        .and_then(|(_, e)| e.parse().ok())
        .unwrap_or(0);
    let strip = |s: String| -> String {
        if s.contains('.') && !alt {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if exp >= -4 && exp < p as i32 {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        let s = strip(format!("{x:.decimals$}"));
        if repr_like && !s.contains('.') {
            format!("{s}.0")
        } else {
            s
        }
    } else {
        let (m, _) = t.split_once('e').unwrap_or((&t, ""));
        let m = strip(m.to_string());
        format!("{m}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
    }
}

#[cfg(test)]
// The literals are the inputs under test: exact decimal expansions and a truncated pi.
#[allow(clippy::excessive_precision, clippy::approx_constant)]
mod tests {
    use super::*;

    #[test]
    fn float_repr_matches_python() {
        let cases = [
            (7.0, "7.0"),
            (0.1, "0.1"),
            (1e-5, "1e-05"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (123.456, "123.456"),
            (-2.5, "-2.5"),
            (1.5e-7, "1.5e-07"),
            (2.0f64.powi(70), "1.1805916207174113e+21"),
            (1.0 / 3.0, "0.3333333333333333"),
            (0.00100040435791015625, "0.0010004043579101562"),
            (2f64.powi(-24), "5.960464477539063e-08"),
        ];
        for (x, want) in cases {
            assert_eq!(float_repr(x), want, "{x}");
        }
    }

    #[test]
    fn format_specs() {
        let f = |v: Value, s: &str| format_value(&v, s).unwrap_or_else(|d| d.message);
        assert_eq!(f(Value::Float(3.14159), ".3f"), "3.142");
        assert_eq!(f(Value::Int(42), ">8"), "      42");
        assert_eq!(f(Value::Int(42), "d"), "42");
        assert_eq!(f(Value::Int(-42), "05d"), "-0042");
        assert_eq!(f(Value::Int(1234567), ","), "1,234,567");
        assert_eq!(f(Value::str("ab"), "^6"), "  ab  ");
        assert_eq!(f(Value::Float(0.5), ".1%"), "50.0%");
        assert_eq!(f(Value::Float(12345.678), ".2e"), "1.23e+04");
        assert_eq!(f(Value::Float(0.0001234), "g"), "0.0001234");
        assert_eq!(f(Value::Float(2.5), "+.1f"), "+2.5");
    }
}
