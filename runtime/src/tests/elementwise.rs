//! Elementwise ops: broadcasting, promotion, rounding, integer semantics, casts.

use super::*;
use crate::*;
use DType::*;

#[test]
fn broadcasting_add() {
    let a = t64(&[2, 1], &[1.0, 2.0], F32);
    let b = t64(&[3], &[10.0, 20.0, 30.0], F32);
    let c = a.add(&b).unwrap();
    assert_eq!(c.shape(), &[2, 3]);
    assert_eq!(vals(&c), vec![11.0, 21.0, 31.0, 12.0, 22.0, 32.0]);
    let e = c.add(&t64(&[4], &[0.0; 4], F32)).unwrap_err();
    assert_eq!(e.code, Code::E0200);
    assert!(e.message.contains("[2, 3]") && e.message.contains("[4]") && e.message.contains("add"));
    // Large broadcast runs the parallel path.
    let big = Tensor::ones(&[300, 400], F32).unwrap();
    let row = Tensor::arange(400, F32).unwrap();
    let s = big.add(&row).unwrap().sum(None, false).unwrap();
    assert_eq!(
        s.item().unwrap(),
        Scalar::Float(300.0 * 400.0 + 300.0 * (399.0 * 400.0 / 2.0))
    );
}

#[test]
fn scalar_promotion_in_ops() {
    let b = t64(&[2], &[1.5, 2.0], BF16);
    assert_eq!(b.mul(2.0).unwrap().dtype(), BF16);
    assert_eq!(binary(BinaryOp::Sub, 1.0, &b).unwrap().dtype(), BF16);
    assert_eq!(
        vals(&binary(BinaryOp::Sub, 1.0, &b).unwrap()),
        vec![-0.5, -1.0]
    );
    let i = ti(&[2], &[3, 4], I32);
    let f = i.mul(0.5).unwrap();
    assert_eq!(f.dtype(), F32);
    assert_eq!(vals(&f), vec![1.5, 2.0]);
    assert_eq!(i.add(1i64).unwrap().dtype(), I32);
    assert_eq!(i.div(&i).unwrap().dtype(), F32);
    let bools = Tensor::from_bool(&[2], vec![true, false]).unwrap();
    let s = bools.add(&bools).unwrap();
    assert_eq!((s.dtype(), ints(&s)), (I64, vec![2, 0]));
    assert_eq!(bools.add(1i64).unwrap().dtype(), I64);
    assert_eq!(
        t64(&[1], &[1.0], F16)
            .add(&t64(&[1], &[1.0], BF16))
            .unwrap()
            .dtype(),
        F32
    );
}

#[test]
fn low_precision_rounds_once() {
    // bf16: 1 + 2^-8 is a tie between 1 and 1 + 2^-7 -> 1.0 (computed in f32, rounded once).
    let a = t64(&[1], &[1.0], BF16);
    let b = t64(&[1], &[0.00390625], BF16);
    assert_eq!(vals(&a.add(&b).unwrap()), vec![1.0]);
    // fp8 e4m3 saturates: 300 * 2 = 448.
    let c = t64(&[1], &[256.0], F8E4M3);
    assert_eq!(vals(&c.mul(2.0).unwrap()), vec![448.0]);
    // tf32 results keep 10 mantissa bits.
    let d = t64(&[1], &[1.0], TF32).add(2f64.powi(-12)).unwrap();
    assert_eq!(vals(&d), vec![1.0]);
}

#[test]
fn integer_semantics() {
    let a = ti(&[1], &[127], I8);
    assert_eq!(ints(&a.add(1i64).unwrap()), vec![-128]);
    let x = ti(&[4], &[-7, 7, -7, 7], I64);
    let y = ti(&[4], &[2, 2, -2, -2], I64);
    assert_eq!(ints(&x.floordiv(&y).unwrap()), vec![-4, 3, 3, -4]);
    assert_eq!(ints(&x.rem(&y).unwrap()), vec![1, 1, -1, -1]);
    assert_eq!(
        ints(&ti(&[1], &[i64::MIN], I64).floordiv(-1i64).unwrap()),
        vec![i64::MIN]
    );
    let z = ti(&[2], &[1, 0], I32);
    assert_eq!(code(x.floordiv(&ti(&[1], &[0], I64))), Code::E0500);
    assert_eq!(code(ti(&[2], &[5, 6], I32).rem(&z)), Code::E0500);
    let e = ti(&[1], &[2], I64).pow(-1i64).unwrap_err();
    assert_eq!(e.code, Code::E0500);
    assert_eq!(
        ints(&ti(&[3], &[2, 3, -2], I64).pow(3i64).unwrap()),
        vec![8, 27, -8]
    );
    assert_eq!(
        ints(&ti(&[1], &[2], I32).pow(31i64).unwrap()),
        vec![i64::from(i32::MIN)]
    );
    assert_eq!(
        ints(&ti(&[1], &[i64::MIN], I64).neg().unwrap()),
        vec![i64::MIN]
    );
    assert_eq!(
        ints(&ti(&[3], &[-3, 0, 4], I8).relu().unwrap()),
        vec![0, 0, 4]
    );
    // Empty outputs never divide.
    assert!(Tensor::zeros(&[0], I64).unwrap().floordiv(0i64).is_ok());
}

#[test]
fn float_floor_and_mod() {
    let x = t64(&[6], &[-7.0, 7.5, 7.5, 1.0, 0.0, -1.0], F64);
    let y = t64(&[6], &[2.0, -2.0, 2.0, 0.0, 0.0, 0.0], F64);
    let q = vals(&x.floordiv(&y).unwrap());
    assert_eq!(&q[..4], &[-4.0, -4.0, 3.0, f64::INFINITY]);
    assert!(q[4].is_nan());
    assert_eq!(q[5], f64::NEG_INFINITY);
    let r = vals(&x.rem(&y).unwrap());
    assert_eq!(&r[..3], &[1.0, -0.5, 1.5]);
    assert!(r[3].is_nan());
    assert_eq!(vals(&x.div(&y).unwrap())[3], f64::INFINITY);
    // -0.0 remainder takes the divisor's sign.
    let r = vals(&t64(&[1], &[4.0], F32).rem(-2.0).unwrap());
    assert!(r[0] == 0.0 && r[0].is_sign_negative());
}

#[test]
fn comparisons_and_where() {
    let a = t64(&[3], &[1.0, f64::NAN, 3.0], F32);
    let b = t64(&[3], &[1.0, f64::NAN, 2.0], F32);
    assert_eq!(
        a.eq(&b).unwrap().to_bool_vec().unwrap(),
        vec![true, false, false]
    );
    assert_eq!(
        a.ne(&b).unwrap().to_bool_vec().unwrap(),
        vec![false, true, true]
    );
    assert_eq!(
        a.gt(2.0).unwrap().to_bool_vec().unwrap(),
        vec![false, false, true]
    );
    assert_eq!(a.le(1i64).unwrap().dtype(), Bool);
    let m = a.maximum(&b).unwrap();
    let mv = vals(&m);
    assert!(mv[1].is_nan());
    assert_eq!((mv[0], mv[2]), (1.0, 3.0));
    assert_eq!(vals(&a.minimum(2.0).unwrap())[2], 2.0);
    let cond = Tensor::from_bool(&[3], vec![true, false, true]).unwrap();
    let w = where_(&cond, &a, 0.0).unwrap();
    assert_eq!(w.dtype(), F32);
    assert_eq!(vals(&w), vec![1.0, 0.0, 3.0]);
    let w = where_(
        &cond.reshape(&[3, 1]).unwrap(),
        1i64,
        &ti(&[2], &[7, 8], I32),
    )
    .unwrap();
    assert_eq!((w.shape(), w.dtype()), (&[3usize, 2][..], I32));
    assert_eq!(ints(&w), vec![1, 1, 7, 8, 1, 1]);
    assert_eq!(
        cond.logical_not().unwrap().to_bool_vec().unwrap(),
        vec![false, true, false]
    );
}

#[test]
fn unary_functions() {
    let x = t64(&[4], &[0.0, 1.0, -1.0, f64::NAN], F64);
    let g = vals(&x.gelu().unwrap());
    assert_eq!(g[0], 0.0);
    assert!((g[1] - 0.8413447460685429).abs() < 1e-15);
    assert!((g[2] + 0.15865525393145707).abs() < 1e-15);
    let s = vals(&t64(&[1], &[2.0], F64).sigmoid().unwrap());
    assert!((s[0] - 0.8807970779778823).abs() < 1e-15);
    assert!(
        (vals(&t64(&[1], &[2.0], F32).silu().unwrap())[0] - 2.0 * 0.8807970779778823).abs() < 1e-6
    );
    assert!(vals(&x.relu().unwrap())[3].is_nan());
    assert_eq!(vals(&t64(&[1], &[4.0], F32).rsqrt().unwrap()), vec![0.5]);
    let e = ti(&[2], &[0, 1], I32).exp().unwrap();
    assert_eq!(e.dtype(), F32);
    assert_eq!(vals(&e), vec![1.0, std::f32::consts::E as f64]);
    assert!(vals(&t64(&[1], &[-1.0], BF16).log().unwrap())[0].is_nan());
    assert_eq!(t64(&[1], &[1.0], F16).tanh().unwrap().dtype(), F16);
}

#[test]
fn casting() {
    let x = t64(&[4], &[-2.7, 2.7, 0.0, 127.9], F32);
    assert_eq!(ints(&x.cast(I8).unwrap()), vec![-2, 2, 0, 127]);
    assert_eq!(code(t64(&[1], &[128.0], F32).cast(I8)), Code::E0500);
    assert_eq!(code(t64(&[1], &[f64::NAN], F32).cast(I64)), Code::E0500);
    assert_eq!(
        ints(&t64(&[1], &[-2147483648.9], F64).cast(I32).unwrap()),
        vec![-2147483648]
    );
    assert_eq!(
        x.cast(Bool).unwrap().to_bool_vec().unwrap(),
        vec![true, true, false, true]
    );
    assert_eq!(ints(&ti(&[1], &[300], I64).cast(I8).unwrap()), vec![44]);
    assert_eq!(
        vals(&ti(&[1], &[16_777_217], I64).cast(F32).unwrap()),
        vec![16_777_216.0]
    );
    assert_eq!(
        vals(&t64(&[2], &[1e6, -1e6], F32).cast(F8E5M2).unwrap()),
        vec![57344.0, -57344.0]
    );
    assert_eq!(
        vals(&t64(&[1], &[0.1], F64).cast(BF16).unwrap()),
        vec![0.10009765625]
    );
    let c = t64(&[1], &[1.0 + 2f64.powi(-8) + 2f64.powi(-40)], F64)
        .cast(BF16)
        .unwrap();
    assert_eq!(vals(&c), vec![1.0 + 2f64.powi(-7)]);
    assert!(vals(&t64(&[1], &[f64::NAN], F32).cast(F8E4M3).unwrap())[0].is_nan());
}
