//! Printing (docs/decisions.md "Tensor printing"): one line, `'%.4f'` floats, dimensions longer
//! than 6 summarised as first 3, `...`, last 3. Python's float `repr` for messages is
//! [`crate::dtype::python_float`].

use std::fmt;

use crate::dtype::Scalar;
use crate::shape::fmt_shape;
use crate::tensor::Tensor;

/// Python's `'%.4f' % x`: `-0.0000`, `nan`, `inf`, `-inf`.
pub fn format_4f(x: f64) -> String {
    if x.is_nan() {
        "nan".to_string()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        format!("{x:.4}")
    }
}

/// Python's `'%.4e' % x`: `1.0000e-10`, `-2.5000e+03`, `nan`, `inf`.
pub fn format_4e(x: f64) -> String {
    if !x.is_finite() {
        return format_4f(x);
    }
    let s = format!("{x:.4e}");
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mant}e{sign}{:02}", exp.abs())
}

/// Whether a tensor whose printed float elements are `shown` prints in scientific notation:
/// when a nonzero value would show as `0.0000`, the nonzero magnitudes span more than 10^8
/// (SPEC §4), or the largest is over 10^8 (PyTorch's rule: `1e20` is `1.0000e+20`, not 21
/// digits and four decimals).
pub fn use_scientific(shown: &[f64]) -> bool {
    let mags = || {
        shown
            .iter()
            .filter(|x| x.is_finite() && **x != 0.0)
            .map(|x| x.abs())
    };
    let Some(min) = mags().reduce(f64::min) else {
        return false;
    };
    let max = mags().fold(0.0, f64::max);
    format_4f(min) == "0.0000" || max / min > 1e8 || max > 1e8
}

fn format_elem(s: Scalar, scientific: bool) -> String {
    match s {
        Scalar::Float(x) if scientific => format_4e(x),
        Scalar::Float(x) => format_4f(x),
        Scalar::Int(i) => i.to_string(),
        Scalar::Bool(true) => "True".into(),
        Scalar::Bool(false) => "False".into(),
    }
}

/// A complex element, `'%.4f%+.4fj' % (re, im)` as Python formats the parts (`1.0000+2.0000j`,
/// `1.0000-2.0000j`, `nan+nanj`, `0.0000+infj`); with `scientific`, `'%.4e'` parts.
pub fn format_complex(re: f64, im: f64, scientific: bool) -> String {
    let part = |x: f64| {
        if scientific {
            format_4e(x)
        } else {
            format_4f(x)
        }
    };
    let sign = if im.is_sign_negative() && !im.is_nan() {
        '-'
    } else {
        '+'
    };
    let imag = if im.is_nan() {
        part(im)
    } else {
        part(im.abs())
    };
    format!("{}{sign}{imag}j", part(re))
}

const EDGE: usize = 3;
const MAX_SHOWN: usize = 6;

impl Tensor {
    /// The one-line `repr`/`str` of docs/decisions.md.
    pub fn repr(&self) -> String {
        let name = self.dtype().name();
        let Ok(st) = self.storage("repr") else {
            return format!(
                "tensor(shape={}, dtype={name}, abstract)",
                fmt_shape(self.shape())
            );
        };
        let shape = self.shape();
        let mut out = String::from("tensor(");
        let strides = crate::shape::contiguous_strides(shape);
        // The offsets of the elements printed (first and last 3 of long dimensions).
        fn shown(shape: &[usize], strides: &[usize], base: usize, out: &mut Vec<usize>) {
            let (Some(&d), Some(&stride)) = (shape.first(), strides.first()) else {
                out.push(base);
                return;
            };
            let idx: Vec<usize> = if d > MAX_SHOWN {
                (0..EDGE).chain(d - EDGE..d).collect()
            } else {
                (0..d).collect()
            };
            for i in idx {
                shown(&shape[1..], &strides[1..], base + i * stride, out);
            }
        }
        let dt = self.dtype();
        let scientific = (dt.is_float() || dt.is_complex()) && {
            let mut offsets = Vec::new();
            shown(shape, &strides, 0, &mut offsets);
            // a complex tensor decides on the real and imaginary parts together
            let vals: Vec<f64> = offsets
                .iter()
                .flat_map(|&o| match st.get_complex(o) {
                    Some((re, im)) => vec![re, im],
                    None => match st.get(o, dt) {
                        Some(Scalar::Float(x)) => vec![x],
                        _ => vec![],
                    },
                })
                .collect();
            use_scientific(&vals)
        };
        #[allow(clippy::too_many_arguments)]
        fn rec(
            out: &mut String,
            st: &crate::storage::Storage,
            dt: crate::dtype::DType,
            shape: &[usize],
            strides: &[usize],
            base: usize,
            sci: bool,
        ) {
            let (Some(&d), Some(&stride)) = (shape.first(), strides.first()) else {
                let e = match st.get_complex(base) {
                    Some((re, im)) => Some(format_complex(re, im, sci)),
                    None => st.get(base, dt).map(|x| format_elem(x, sci)),
                };
                out.push_str(&e.unwrap_or_default());
                return;
            };
            out.push('[');
            let idx: Vec<Option<usize>> = if d > MAX_SHOWN {
                (0..EDGE)
                    .map(Some)
                    .chain([None])
                    .chain((d - EDGE..d).map(Some))
                    .collect()
            } else {
                (0..d).map(Some).collect()
            };
            for (k, i) in idx.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                match i {
                    Some(i) => rec(
                        out,
                        st,
                        dt,
                        &shape[1..],
                        &strides[1..],
                        base + i * stride,
                        sci,
                    ),
                    None => out.push_str("..."),
                }
            }
            out.push(']');
        }
        rec(&mut out, st, self.dtype(), shape, &strides, 0, scientific);
        // An empty tensor whose brackets do not show every dimension (`[0, 3]` prints `[]`)
        // names its shape, as PyTorch's `size=` does.
        if shape
            .iter()
            .position(|&d| d == 0)
            .is_some_and(|z| z + 1 < shape.len())
        {
            out.push_str(", shape=");
            out.push_str(&fmt_shape(shape));
        }
        out.push_str(", dtype=");
        out.push_str(name);
        out.push(')');
        out
    }
}

impl fmt::Display for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.repr())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;

    #[test]
    fn four_decimals_like_python() {
        // python3 -c "print('%.4f'%0.03125, '%.4f'%-0.00001, '%.4f'%0.00005, '%.4f'%1.00005)"
        // -> 0.0312 -0.0000 0.0001 1.0001
        assert_eq!(format_4f(0.03125), "0.0312");
        assert_eq!(format_4f(-0.00001), "-0.0000");
        assert_eq!(format_4f(-0.0), "-0.0000");
        assert_eq!(format_4f(0.00005), "0.0001");
        assert_eq!(format_4f(1.00005), "1.0001");
        assert_eq!(format_4f(1e20), "100000000000000000000.0000");
        assert_eq!(format_4f(f64::NAN), "nan");
        assert_eq!(format_4f(-f64::NAN), "nan");
        assert_eq!(format_4f(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn huge_values_print_scientific() {
        // PyTorch: torch.tensor([1e20], dtype=torch.float64) -> tensor([1.0000e+20], ...)
        assert!(use_scientific(&[1e20]));
        assert!(use_scientific(&[1e308, 0.0]));
        assert!(use_scientific(&[1.5e8]));
        assert!(!use_scientific(&[1e8, 1.0]));
        assert!(!use_scientific(&[12345678.0]));
        let t = Tensor::from_f64(&[2], vec![1e308, -1.0], DType::F64).unwrap();
        assert_eq!(t.repr(), "tensor([1.0000e+308, -1.0000e+00], dtype=fp64)");
    }

    #[test]
    fn tensor_repr_formats() {
        let t = Tensor::from_f64(&[2, 2], vec![1.0, 2.0, 3.0, 4.0], DType::F32).unwrap();
        assert_eq!(
            t.repr(),
            "tensor([[1.0000, 2.0000], [3.0000, 4.0000]], dtype=fp32)"
        );
        let t = Tensor::from_f64(&[], vec![3.0], DType::F32).unwrap();
        assert_eq!(t.repr(), "tensor(3.0000, dtype=fp32)");
        let t = Tensor::arange(10, DType::I64).unwrap();
        assert_eq!(t.repr(), "tensor([0, 1, 2, ..., 7, 8, 9], dtype=int64)");
        let t = Tensor::arange(6, DType::I32).unwrap();
        assert_eq!(t.repr(), "tensor([0, 1, 2, 3, 4, 5], dtype=int32)");
        let t = Tensor::from_bool(&[2], vec![true, false]).unwrap();
        assert_eq!(t.repr(), "tensor([True, False], dtype=bool)");
        let t = Tensor::zeros(&[2, 0], DType::BF16).unwrap();
        assert_eq!(t.repr(), "tensor([[], []], dtype=bf16)");
        let t = Tensor::zeros(&[0], DType::F32).unwrap();
        assert_eq!(t.repr(), "tensor([], dtype=fp32)");
        let t = Tensor::zeros(&[0, 3], DType::F32).unwrap();
        assert_eq!(t.repr(), "tensor([], shape=[0, 3], dtype=fp32)");
        let t = Tensor::zeros(&[2, 0, 3], DType::I64).unwrap();
        assert_eq!(t.repr(), "tensor([[], []], shape=[2, 0, 3], dtype=int64)");
        let t = Tensor::abstract_tensor(&[1000, 1000], DType::BF16).unwrap();
        assert_eq!(t.repr(), "tensor(shape=[1000, 1000], dtype=bf16, abstract)");
        assert_eq!(format!("{t}"), t.repr());
        let t =
            Tensor::from_f64(&[3], vec![-0.0, f64::NAN, f64::NEG_INFINITY], DType::F16).unwrap();
        assert_eq!(t.repr(), "tensor([-0.0000, nan, -inf], dtype=fp16)");
        let t = Tensor::from_f64(&[1], vec![1000.0], DType::F8E4M3).unwrap();
        assert_eq!(t.repr(), "tensor([448.0000], dtype=fp8_e4m3)");
    }

    #[test]
    fn summarises_every_level() {
        let t = Tensor::arange(8 * 7, DType::I64)
            .unwrap()
            .reshape(&[8, 7])
            .unwrap();
        let row = |r: i64| {
            let b = r * 7;
            format!(
                "[{}, {}, {}, ..., {}, {}, {}]",
                b,
                b + 1,
                b + 2,
                b + 4,
                b + 5,
                b + 6
            )
        };
        let expect = format!(
            "tensor([{}, {}, {}, ..., {}, {}, {}], dtype=int64)",
            row(0),
            row(1),
            row(2),
            row(5),
            row(6),
            row(7)
        );
        assert_eq!(t.repr(), expect);
    }
}
