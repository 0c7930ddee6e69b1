//! Softmax, the norms and attention against f64 references.

use super::*;
use crate::*;
use DType::*;

fn softmax_ref(x: &[f64], d: usize) -> Vec<f64> {
    x.chunks(d)
        .flat_map(|r| {
            let m = r.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = r.iter().map(|v| (v - m).exp()).collect();
            let s: f64 = e.iter().sum();
            e.into_iter().map(move |v| v / s)
        })
        .collect()
}

#[test]
fn softmax_matches_f64_reference() {
    for (rows, d) in [(3, 1), (7, 13), (64, 1000), (5, 4096)] {
        let x = Tensor::randn(&[rows, d], F32, d as i64)
            .unwrap()
            .mul(4.0)
            .unwrap();
        let y = softmax(&x, -1).unwrap();
        assert_close(&vals(&y), &softmax_ref(&vals(&x), d), 2e-6, 1e-9);
    }
    // Along axis 0 equals softmax of the transpose.
    let x = Tensor::randn(&[5, 3], F32, 1).unwrap();
    let a = softmax(&x, 0).unwrap();
    let b = softmax(&x.T().unwrap(), 1).unwrap().T().unwrap();
    assert_eq!(vals(&a), vals(&b));
    // -inf entries get 0; a NaN row is NaN; bf16 rounds once.
    let m = t64(
        &[2, 3],
        &[0.0, f64::NEG_INFINITY, 0.0, 1.0, f64::NAN, 2.0],
        F32,
    );
    let s = vals(&softmax(&m, -1).unwrap());
    assert_eq!(&s[..3], &[0.5, 0.0, 0.5]);
    assert!(s[3..].iter().all(|v| v.is_nan()));
    let b = Tensor::randn(&[4, 33], BF16, 3).unwrap();
    let sb = softmax(&b, -1).unwrap();
    assert_eq!(sb.dtype(), BF16);
    let want: Vec<f64> = softmax_ref(&vals(&b), 33)
        .iter()
        .map(|&v| cast::round_to(v, BF16))
        .collect();
    assert_close(&vals(&sb), &want, 2f64.powi(-8), 0.0);
    let f = Tensor::randn(&[3, 9], F64, 4).unwrap();
    assert_close(
        &vals(&softmax(&f, 1).unwrap()),
        &softmax_ref(&vals(&f), 9),
        1e-14,
        0.0,
    );
    assert_eq!(
        code(softmax(
            &Tensor::scalar(Scalar::Float(1.0), F32).unwrap(),
            0
        )),
        Code::E0200
    );
    assert_eq!(
        softmax(&Tensor::zeros(&[2, 0], F32).unwrap(), -1)
            .unwrap()
            .shape(),
        &[2, 0]
    );
}

#[test]
fn layernorm_and_rmsnorm() {
    let (rows, d) = (6, 37);
    let x = Tensor::randn(&[rows, d], F32, 11).unwrap();
    let w = Tensor::randn(&[d], F32, 12).unwrap();
    let b = Tensor::randn(&[d], F32, 13).unwrap();
    let (xv, wv, bv) = (vals(&x), vals(&w), vals(&b));
    let mut want = Vec::new();
    let mut want_rms = Vec::new();
    for r in xv.chunks(d) {
        let mean = r.iter().sum::<f64>() / d as f64;
        let var = r.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / d as f64;
        let ms = r.iter().map(|v| v * v).sum::<f64>() / d as f64;
        for i in 0..d {
            want.push((r[i] - mean) / (var + 1e-5).sqrt() * wv[i] + bv[i]);
            want_rms.push(r[i] / (ms + 1e-6).sqrt() * wv[i]);
        }
    }
    assert_close(
        &vals(&layernorm(&x, Some(&w), Some(&b), 1e-5).unwrap()),
        &want,
        1e-5,
        1e-5,
    );
    assert_close(
        &vals(&rmsnorm(&x, Some(&w), 1e-6).unwrap()),
        &want_rms,
        1e-5,
        1e-5,
    );
    let plain = layernorm(&x, None, None, 1e-5).unwrap();
    let m = plain.mean(Some(-1), false).unwrap();
    assert!(vals(&m).iter().all(|v| v.abs() < 1e-6));
    let e = layernorm(&x, Some(&Tensor::ones(&[5], F32).unwrap()), None, 1e-5).unwrap_err();
    assert_eq!(e.code, Code::E0200);
    assert!(e.message.contains("weight"));
    assert_eq!(
        layernorm(&x.cast(BF16).unwrap(), None, None, 1e-5)
            .unwrap()
            .dtype(),
        BF16
    );
}

#[test]
fn attention_matches_reference() {
    let (s, d) = (5, 8);
    let q = Tensor::randn(&[2, s, d], F32, 1).unwrap();
    let k = Tensor::randn(&[2, s, d], F32, 2).unwrap();
    let v = Tensor::randn(&[2, s, d], F32, 3).unwrap();
    for causal in [false, true] {
        let o = flash_attention(&q, &k, &v, causal, None).unwrap();
        assert_eq!(o.shape(), &[2, s, d]);
        let (qv, kv, vv) = (vals(&q), vals(&k), vals(&v));
        let mut want = Vec::new();
        for bb in 0..2 {
            let off = bb * s * d;
            for i in 0..s {
                let sc: Vec<f64> = (0..s)
                    .map(|j| {
                        if causal && j > i {
                            f64::NEG_INFINITY
                        } else {
                            (0..d)
                                .map(|t| qv[off + i * d + t] * kv[off + j * d + t])
                                .sum::<f64>()
                                / (d as f64).sqrt()
                        }
                    })
                    .collect();
                let p = softmax_ref(&sc, s);
                for t in 0..d {
                    want.push((0..s).map(|j| p[j] * vv[off + j * d + t]).sum());
                }
            }
        }
        assert_close(&vals(&o), &want, 1e-5, 1e-5);
    }
    // Row 0 of causal attention is exactly v[0].
    let o = flash_attention(&q, &k, &v, true, Some(0.3)).unwrap();
    assert_close(&vals(&o)[..d], &vals(&v)[..d], 1e-6, 1e-7);
    assert_eq!(
        code(flash_attention(
            &q,
            &Tensor::ones(&[2, s, 3], F32).unwrap(),
            &v,
            false,
            None
        )),
        Code::E0200
    );
}
