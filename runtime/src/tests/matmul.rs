//! Matmul: odd shapes, NumPy's semantics, dtypes and errors.

use super::*;
use crate::*;
use DType::*;

fn check_matmul(sa: &[usize], sb: &[usize], m: usize, k: usize, n: usize, seed: i64) {
    let a = Tensor::randn(sa, F32, seed).unwrap();
    let b = Tensor::randn(sb, F32, seed + 1).unwrap();
    let c = matmul(&a, &b, None).unwrap();
    let (av, bv) = (vals(&a), vals(&b));
    let want = naive(&av, &bv, m, k, n);
    // fp32 accumulation error bound: k·eps·Σ|a||b| (here ~1e-6 of the absolute sum).
    let abs: Vec<f64> = naive(
        &av.iter().map(|v| v.abs()).collect::<Vec<_>>(),
        &bv.iter().map(|v| v.abs()).collect::<Vec<_>>(),
        m,
        k,
        n,
    );
    for (i, ((g, w), s)) in vals(&c).iter().zip(&want).zip(&abs).enumerate() {
        assert!(
            (g - w).abs() <= 1e-6 * s * (k as f64).sqrt() + 1e-12,
            "element {i}: got {g}, want {w}"
        );
    }
}

#[test]
fn matmul_odd_shapes() {
    check_matmul(&[1, 33], &[33, 129], 1, 33, 129, 1);
    check_matmul(&[100, 70], &[70, 50], 100, 70, 50, 2);
    check_matmul(&[257, 300], &[300, 129], 257, 300, 129, 3);
}

#[test]
fn matmul_numpy_semantics() {
    let a = Tensor::randn(&[3, 1, 4, 5], F32, 9).unwrap();
    let b = Tensor::randn(&[2, 5, 6], F32, 10).unwrap();
    let c = matmul(&a, &b, None).unwrap();
    assert_eq!(c.shape(), &[3, 2, 4, 6]);
    let (av, bv, cv) = (vals(&a), vals(&b), vals(&c));
    for i in 0..3 {
        for j in 0..2 {
            let want = naive(&av[i * 20..i * 20 + 20], &bv[j * 30..j * 30 + 30], 4, 5, 6);
            let off = (i * 2 + j) * 24;
            assert_close(&cv[off..off + 24], &want, 1e-5, 1e-5);
        }
    }
    let v = t64(&[5], &[1.0, 2.0, 3.0, 4.0, 5.0], F64);
    let m = Tensor::arange(15, F64).unwrap().reshape(&[5, 3]).unwrap();
    let r = matmul(&v, &m, None).unwrap();
    assert_eq!(r.shape(), &[3]);
    assert_eq!(vals(&r), vec![120.0, 135.0, 150.0]);
    let r = matmul(&m.T().unwrap(), &v, None).unwrap();
    assert_eq!(
        (r.shape(), vals(&r)),
        (&[3usize][..], vec![120.0, 135.0, 150.0])
    );
    let r = matmul(&v, &v, None).unwrap();
    assert_eq!((r.shape(), vals(&r)), (&[][..], vec![55.0]));
    // Ints accumulate in int64; int8 results wrap.
    let a = ti(&[2, 2], &[100, 100, 1, 2], I8);
    let r = matmul(&a, &a, None).unwrap();
    assert_eq!(r.dtype(), I8);
    assert_eq!(
        ints(&r),
        vec![
            ((100 * 100 + 100) as i8) as i64,
            ((100 * 100 + 200) as i8) as i64,
            102,
            104
        ]
    );
    let r = matmul(&a, &a, Some(I64)).unwrap();
    assert_eq!(ints(&r), vec![10100, 10200, 102, 104]);
    // Empty and k = 0.
    let z = matmul(
        &Tensor::ones(&[3, 0], F32).unwrap(),
        &Tensor::ones(&[0, 4], F32).unwrap(),
        None,
    )
    .unwrap();
    assert_eq!((z.shape(), vals(&z)), (&[3usize, 4][..], vec![0.0; 12]));
    assert_eq!(
        matmul(
            &Tensor::ones(&[0, 2], F32).unwrap(),
            &Tensor::ones(&[2, 4], F32).unwrap(),
            None
        )
        .unwrap()
        .shape(),
        &[0, 4]
    );
}

#[test]
fn matmul_dtypes_and_errors() {
    let a = Tensor::randn(&[8, 16], BF16, 1).unwrap();
    let b = Tensor::randn(&[16, 4], BF16, 2).unwrap();
    let c = matmul(&a, &b, None).unwrap();
    assert_eq!(c.dtype(), BF16);
    let c32 = matmul(&a, &b, Some(F32)).unwrap();
    assert_eq!(c32.dtype(), F32);
    // The fp32-accumulated result, rounded once, is the bf16 result.
    assert_eq!(vals(&c32.cast(BF16).unwrap()), vals(&c));
    assert_close(
        &vals(&c32),
        &naive(&vals(&a), &vals(&b), 8, 16, 4),
        1e-5,
        1e-5,
    );
    let e = matmul(
        &Tensor::ones(&[2, 3], F32).unwrap(),
        &Tensor::ones(&[4, 5], F32).unwrap(),
        None,
    )
    .unwrap_err();
    assert_eq!(e.code, Code::E0200);
    assert!(
        e.message.contains("[2, 3]")
            && e.message.contains("[4, 5]")
            && e.message.starts_with("matmul"),
        "{}",
        e.message
    );
    assert_eq!(
        code(matmul(
            &Tensor::scalar(Scalar::Float(1.0), F32).unwrap(),
            &a,
            None
        )),
        Code::E0200
    );
    assert_eq!(
        code(matmul(
            &Tensor::ones(&[2, 2, 2], F32).unwrap(),
            &Tensor::ones(&[3, 2, 2], F32).unwrap(),
            None
        )),
        Code::E0200
    );
    assert_eq!(code(matmul(&a, &b, Some(I32))), Code::E0201);
    // tf32 rounds operand mantissas: (1 + 2^-12) rounds to 1.
    let x = t64(&[1, 1], &[1.0 + 2f64.powi(-12)], F32);
    assert_eq!(vals(&matmul(&x, &x, Some(TF32)).unwrap()), vec![1.0]);
    assert_eq!(
        matmul(
            &Tensor::ones(&[2, 2], F64).unwrap(),
            &Tensor::ones(&[2, 2], F32).unwrap(),
            None
        )
        .unwrap()
        .dtype(),
        F64
    );
}
