//! Crate-level tests of the public API: real values, edge cases and errors.

use crate::*;
use DType::*;

fn t64(shape: &[usize], v: &[f64], d: DType) -> Tensor {
    Tensor::from_f64(shape, v.to_vec(), d).unwrap()
}
fn ti(shape: &[usize], v: &[i64], d: DType) -> Tensor {
    Tensor::from_i64(shape, v.to_vec(), d).unwrap()
}
fn vals(t: &Tensor) -> Vec<f64> {
    t.to_f64_vec().unwrap()
}
fn ints(t: &Tensor) -> Vec<i64> {
    t.to_i64_vec().unwrap()
}
fn code(r: Result<Tensor>) -> Code {
    r.unwrap_err().code
}

/// Naive f64 triple loop for `[m,k] @ [k,n]`.
fn naive(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).map(|kk| a[i * k + kk] * b[kk * n + j]).sum();
        }
    }
    c
}

fn assert_close(got: &[f64], want: &[f64], rtol: f64, atol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= atol + rtol * w.abs(),
            "element {i}: got {g}, want {w}"
        );
    }
}

// ----- elementwise ---------------------------------------------------------------------------

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

// ----- matmul --------------------------------------------------------------------------------

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

// ----- reductions ----------------------------------------------------------------------------

#[test]
fn reductions_values_and_shapes() {
    let x = Tensor::arange(24, F32)
        .unwrap()
        .reshape(&[2, 3, 4])
        .unwrap();
    assert_eq!(
        x.sum(None, false).unwrap().item().unwrap(),
        Scalar::Float(276.0)
    );
    let s = x.sum(Some(1), false).unwrap();
    assert_eq!(s.shape(), &[2, 4]);
    assert_eq!(
        vals(&s),
        vec![12.0, 15.0, 18.0, 21.0, 48.0, 51.0, 54.0, 57.0]
    );
    let s = x.sum(Some(-1), true).unwrap();
    assert_eq!(s.shape(), &[2, 3, 1]);
    assert_eq!(vals(&s), vec![6.0, 22.0, 38.0, 54.0, 70.0, 86.0]);
    assert_eq!(x.sum(None, true).unwrap().shape(), &[1, 1, 1]);
    assert_eq!(
        vals(&x.max(Some(0), false).unwrap())[..4],
        [12.0, 13.0, 14.0, 15.0]
    );
    assert_eq!(
        vals(&x.min(Some(2), false).unwrap()),
        vec![0.0, 4.0, 8.0, 12.0, 16.0, 20.0]
    );
    assert_eq!(
        vals(&x.mean(Some(2), false).unwrap()),
        vec![1.5, 5.5, 9.5, 13.5, 17.5, 21.5]
    );
    let i = ti(&[3], &[1, 2, 4], I8);
    assert_eq!(i.sum(None, false).unwrap().dtype(), I64);
    assert_eq!(i.mean(None, false).unwrap().dtype(), F32);
    assert_eq!(i.max(None, false).unwrap().item().unwrap(), Scalar::Int(4));
    let b = Tensor::from_bool(&[3], vec![true, true, false]).unwrap();
    assert_eq!(b.sum(None, false).unwrap().item().unwrap(), Scalar::Int(2));
    let n = t64(&[3], &[1.0, f64::NAN, 3.0], F32);
    assert!(vals(&n.max(None, false).unwrap())[0].is_nan());
    assert!(vals(&n.min(None, false).unwrap())[0].is_nan());
    assert_eq!(code(x.sum(Some(3), false)), Code::E0500);
    let e = Tensor::zeros(&[0, 3], F32).unwrap();
    assert_eq!(
        e.sum(None, false).unwrap().item().unwrap(),
        Scalar::Float(0.0)
    );
    assert_eq!(vals(&e.sum(Some(0), false).unwrap()), vec![0.0; 3]);
    assert!(vals(&e.mean(Some(0), false).unwrap())[0].is_nan());
    assert_eq!(code(e.max(Some(0), false)), Code::E0500);
    assert_eq!(e.max(Some(1), false).unwrap().shape(), &[0]);
    // 0-d.
    let z = Tensor::scalar(Scalar::Float(2.5), F16).unwrap();
    assert_eq!(
        z.sum(None, false).unwrap().item().unwrap(),
        Scalar::Float(2.5)
    );
    assert_eq!(code(z.sum(Some(0), false)), Code::E0500);
}

#[test]
fn reductions_accumulate_in_f64() {
    // 2^24 + 1 + 1 ... is lost in f32 accumulation but not in f64.
    let mut v = vec![1.0f64; 10_001];
    v[0] = 16_777_216.0;
    let t = t64(&[v.len()], &v, F32);
    assert_eq!(
        t.sum(None, false).unwrap().item().unwrap(),
        Scalar::Float(16_787_216.0)
    );
    let b = Tensor::full(&[1000], Scalar::Float(0.1), BF16).unwrap();
    let s = b.sum(None, false).unwrap();
    assert_eq!(s.dtype(), BF16);
    assert_eq!(
        vals(&s),
        vec![cast::round_to(1000.0 * cast::round_to(0.1, BF16), BF16)]
    );
}

#[test]
fn reductions_deterministic_across_thread_counts() {
    let x = Tensor::randn(&[1_000_003], F32, 5).unwrap();
    let m = Tensor::randn(&[517, 2049], F32, 6).unwrap();
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut bits = Vec::new();
            for t in [
                x.sum(None, false),
                x.mean(None, false),
                m.sum(Some(0), false),
                m.sum(Some(1), false),
                m.mean(Some(0), true),
            ] {
                bits.extend(t.unwrap().to_f32_vec().unwrap().iter().map(|f| f.to_bits()));
            }
            bits
        })
    };
    let one = run(1);
    assert_eq!(one, run(2));
    assert_eq!(one, run(5));
}

// ----- softmax and norms ---------------------------------------------------------------------

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

// ----- shapes, indexing, values --------------------------------------------------------------

#[test]
fn slicing_semantics() {
    use IndexItem::*;
    let sl = |start: Option<i64>, stop: Option<i64>, step: Option<i64>| Slice { start, stop, step };
    let x = Tensor::arange(10, I64).unwrap();
    assert_eq!(
        ints(&x.index(&[sl(Some(1), Some(-1), None)]).unwrap()),
        (1..9).collect::<Vec<_>>()
    );
    assert_eq!(
        ints(&x.index(&[sl(None, None, Some(-1))]).unwrap()),
        (0..10).rev().collect::<Vec<_>>()
    );
    assert_eq!(
        ints(&x.index(&[sl(None, None, Some(-3))]).unwrap()),
        vec![9, 6, 3, 0]
    );
    assert_eq!(
        ints(&x.index(&[sl(Some(5), Some(1), Some(-2))]).unwrap()),
        vec![5, 3]
    );
    assert_eq!(
        ints(&x.index(&[sl(Some(-100), Some(100), Some(4))]).unwrap()),
        vec![0, 4, 8]
    );
    assert_eq!(
        x.index(&[sl(Some(5), Some(2), None)]).unwrap().shape(),
        &[0]
    );
    assert_eq!(code(x.index(&[sl(None, None, Some(0))])), Code::E0500);
    let e = x.index(&[Int(10)]).unwrap_err();
    assert_eq!(e.code, Code::E0500);
    assert!(
        e.message.contains("10") && e.message.contains("size 10"),
        "{}",
        e.message
    );
    assert_eq!(x.index(&[Int(-1)]).unwrap().item().unwrap(), Scalar::Int(9));
    assert_eq!(code(x.index(&[Int(-11)])), Code::E0500);
    let m = Tensor::arange(12, I64).unwrap().reshape(&[3, 4]).unwrap();
    let r = m.index(&[sl(Some(0), Some(2), None), Int(-1)]).unwrap();
    assert_eq!((r.shape(), ints(&r)), (&[2usize][..], vec![3, 7]));
    let r = m.index(&[Ellipsis, sl(None, None, Some(2))]).unwrap();
    assert_eq!(
        (r.shape(), ints(&r)),
        (&[3usize, 2][..], vec![0, 2, 4, 6, 8, 10])
    );
    let r = m.index(&[NewAxis, Int(1)]).unwrap();
    assert_eq!((r.shape(), ints(&r)), (&[1usize, 4][..], vec![4, 5, 6, 7]));
    assert_eq!(code(m.index(&[Int(0), Int(0), Int(0)])), Code::E0500);
    assert_eq!(m.index(&[Int(2), Int(3)]).unwrap().shape(), &[] as &[usize]);
}

#[test]
fn transpose_reshape_concat() {
    let m = Tensor::arange(6, F32).unwrap().reshape(&[2, 3]).unwrap();
    let t = m.T().unwrap();
    assert_eq!(
        (t.shape(), vals(&t)),
        (&[3usize, 2][..], vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0])
    );
    let x = Tensor::arange(24, I32)
        .unwrap()
        .reshape(&[2, 3, 4])
        .unwrap();
    let p = x.transpose(Some(&[1, 2, 0])).unwrap();
    assert_eq!(p.shape(), &[3, 4, 2]);
    assert_eq!(ints(&p)[..4], [0, 12, 1, 13]);
    assert_eq!(code(x.transpose(Some(&[0, 0, 1]))), Code::E0500);
    assert_eq!(x.reshape(&[-1, 4]).unwrap().shape(), &[6, 4]);
    assert_eq!(code(x.reshape(&[-1, 5])), Code::E0200);
    assert_eq!(code(x.reshape(&[-1, -1])), Code::E0200);
    assert_eq!(code(x.reshape(&[25])), Code::E0200);
    let a = ti(&[2, 2], &[1, 2, 3, 4], I32);
    let b = t64(&[2, 1], &[5.5, 6.5], F32);
    let c = concat(&[a.clone(), b], 1).unwrap();
    assert_eq!((c.shape(), c.dtype()), (&[2usize, 3][..], F32));
    assert_eq!(vals(&c), vec![1.0, 2.0, 5.5, 3.0, 4.0, 6.5]);
    let c = concat(&[a.clone(), a.clone()], -2).unwrap();
    assert_eq!(
        (c.shape(), ints(&c)),
        (&[4usize, 2][..], vec![1, 2, 3, 4, 1, 2, 3, 4])
    );
    assert_eq!(
        code(concat(&[a.clone(), ti(&[3], &[1, 2, 3], I32)], 0)),
        Code::E0200
    );
    assert_eq!(code(concat(&[], 0)), Code::E0101);
}

#[test]
fn values_out() {
    let t = t64(&[2, 2], &[0.1, 2.0, 3.0, 4.0], BF16);
    assert_eq!(
        t.tolist().unwrap(),
        Nested::List(vec![
            Nested::List(vec![Nested::Float(0.10009765625), Nested::Float(2.0)]),
            Nested::List(vec![Nested::Float(3.0), Nested::Float(4.0)]),
        ])
    );
    assert_eq!(
        Tensor::scalar(Scalar::Int(7), I8)
            .unwrap()
            .tolist()
            .unwrap(),
        Nested::Int(7)
    );
    assert_eq!(ti(&[1, 1], &[7], I32).item().unwrap(), Scalar::Int(7));
    let e = t.item().unwrap_err();
    assert_eq!(e.code, Code::E0200);
    assert_eq!(
        Tensor::zeros(&[0, 2], F32).unwrap().tolist().unwrap(),
        Nested::List(vec![])
    );
    let n = Nested::List(vec![
        Nested::List(vec![Nested::Int(1), Nested::Float(2.5)]),
        Nested::List(vec![Nested::Int(3), Nested::Int(4)]),
    ]);
    let t = Tensor::from_nested(&n, None).unwrap();
    assert_eq!(
        (t.shape(), t.dtype(), vals(&t)),
        (&[2usize, 2][..], F32, vec![1.0, 2.5, 3.0, 4.0])
    );
    let t = Tensor::from_nested(&Nested::List(vec![Nested::Int(1), Nested::Int(2)]), None).unwrap();
    assert_eq!(t.dtype(), I64);
    let ragged = Nested::List(vec![Nested::List(vec![Nested::Int(1)]), Nested::Int(2)]);
    assert_eq!(code(Tensor::from_nested(&ragged, None)), Code::E0200);
    assert_eq!(code(Tensor::from_f64(&[3], vec![1.0], F32)), Code::E0200);
    assert!(allclose(
        &t64(&[2], &[1.0, 2.0], F32),
        &t64(&[1], &[1.0], F32),
        0.0,
        1.0
    )
    .unwrap());
    assert!(!allclose(
        &t64(&[1], &[f64::NAN], F32),
        &t64(&[1], &[f64::NAN], F32),
        1e-5,
        1e-8
    )
    .unwrap());
    assert!(allclose(
        &t64(&[1], &[f64::INFINITY], F32),
        &t64(&[1], &[f64::INFINITY], F64),
        1e-5,
        1e-8
    )
    .unwrap());
    assert!(allclose(
        &t64(&[1], &[1.0 + 1e-6], F64),
        &t64(&[1], &[1.0], F64),
        1e-5,
        1e-8
    )
    .unwrap());
    assert_eq!(
        max_abs_diff(&t64(&[2], &[1.0, 5.0], F32), &t64(&[2], &[1.5, 3.0], F32)).unwrap(),
        2.0
    );
}

#[test]
fn constructors() {
    assert_eq!(
        ints(&Tensor::eye(3, I64).unwrap()),
        vec![1, 0, 0, 0, 1, 0, 0, 0, 1]
    );
    assert_eq!(Tensor::arange(-3, I64).unwrap().shape(), &[0]);
    assert_eq!(
        vals(&Tensor::full(&[2], Scalar::Float(1e9), F8E4M3).unwrap()),
        vec![448.0, 448.0]
    );
    assert_eq!(
        code(Tensor::full(&[1], Scalar::Float(f64::NAN), I32)),
        Code::E0500
    );
    assert_eq!(
        Tensor::ones(&[], F16).unwrap().item().unwrap(),
        Scalar::Float(1.0)
    );
    let r = Tensor::rand(&[3], F32, 0).unwrap();
    assert_eq!(vals(&r)[..2], [0.6524484753608704, 0.034011662006378174]);
    let r = Tensor::randn(&[2], F64, 0).unwrap();
    assert_eq!(vals(&r), vec![0.9031242066134643, 0.11493113170609602]);
    let r = Tensor::randn(&[2], BF16, 0).unwrap();
    assert_eq!(
        vals(&r),
        vec![
            cast::round_to(0.9031242066134643, BF16),
            cast::round_to(0.11493113170609602, BF16)
        ]
    );
    // Big tensors (parallel path) give the same values as element-by-element generation.
    let big = Tensor::rand(&[100_000], F16, 3).unwrap();
    assert_eq!(vals(&big)[99_999], rng::uniform(3, 99_999, 11));
    assert_eq!(code(Tensor::rand(&[2], I32, 0)), Code::E0201);
    assert_eq!(code(Tensor::randn(&[2], Bool, 0)), Code::E0201);
}

#[test]
fn memory_guard() {
    for r in [
        Tensor::zeros(&[1 << 20, 1 << 20, 1 << 10], F32),
        Tensor::rand(&[1 << 40], F32, 0),
        Tensor::eye(1 << 30, F64),
        Tensor::arange(i64::MAX, I64),
    ] {
        let e = r.unwrap_err();
        assert_eq!(e.code, Code::E0700);
        assert!(
            e.message.contains("bytes") && e.message.contains("limit"),
            "{}",
            e.message
        );
    }
    assert_eq!(code(Tensor::zeros(&[usize::MAX, 3], F32)), Code::E0700);
    // A huge abstract tensor is fine; materialising from it is checked before allocating.
    let a = Tensor::abstract_tensor(&[1_000_000, 1_000_000], BF16).unwrap();
    assert!(a.is_abstract());
    assert_eq!(a.numel(), 1_000_000_000_000);
    let w = Tensor::ones(&[1, 1], BF16).unwrap();
    let big = Tensor::abstract_tensor(&[1 << 20, 1], BF16).unwrap();
    let out = matmul(&big, &w.reshape(&[1, 1]).unwrap(), None).unwrap();
    assert!(out.is_abstract());
    let e = Tensor::ones(&[1 << 21, 1], F32)
        .unwrap()
        .matmul(&Tensor::ones(&[1, 1 << 21], F32).unwrap())
        .unwrap_err();
    assert_eq!(e.code, Code::E0700);
}

#[test]
fn abstract_tensors_propagate() {
    let a = Tensor::abstract_tensor(&[4, 8], BF16).unwrap();
    let c = Tensor::ones(&[8], F32).unwrap();
    let checks: Vec<(Tensor, &[usize], DType)> = vec![
        (a.add(&c).unwrap(), &[4, 8], F32),
        (a.mul(2.0).unwrap(), &[4, 8], BF16),
        (a.exp().unwrap(), &[4, 8], BF16),
        (a.lt(0.0).unwrap(), &[4, 8], Bool),
        (
            matmul(&a, &Tensor::ones(&[8, 3], BF16).unwrap(), Some(F32)).unwrap(),
            &[4, 3],
            F32,
        ),
        (a.sum(Some(0), false).unwrap(), &[8], BF16),
        (a.mean(None, true).unwrap(), &[1, 1], BF16),
        (softmax(&a, -1).unwrap(), &[4, 8], BF16),
        (layernorm(&a, None, None, 1e-5).unwrap(), &[4, 8], BF16),
        (a.T().unwrap(), &[8, 4], BF16),
        (a.reshape(&[-1]).unwrap(), &[32], BF16),
        (a.index(&[IndexItem::Int(1)]).unwrap(), &[8], BF16),
        (
            concat(&[a.clone(), Tensor::zeros(&[1, 8], F16).unwrap()], 0).unwrap(),
            &[5, 8],
            F32,
        ),
        (a.cast(F8E4M3).unwrap(), &[4, 8], F8E4M3),
        (where_(&a.gt(0.0).unwrap(), &a, 0.0).unwrap(), &[4, 8], BF16),
        (
            flash_attention(&a, &a, &a, true, None).unwrap(),
            &[4, 8],
            BF16,
        ),
    ];
    for (t, shape, dtype) in checks {
        assert!(t.is_abstract());
        assert_eq!((t.shape(), t.dtype()), (shape, dtype));
    }
    // Errors still come from shapes.
    assert_eq!(code(a.add(&Tensor::ones(&[3], F32).unwrap())), Code::E0200);
    let one = Tensor::abstract_tensor(&[1, 1], F32).unwrap();
    for e in [
        a.tolist().unwrap_err(),
        one.item().unwrap_err(),
        allclose(&a, &c, 1e-5, 1e-8).unwrap_err(),
        a.to_f64_vec().unwrap_err(),
    ] {
        assert_eq!(e.code, Code::E0700);
        assert_eq!(e.message, "abstract tensor has no data");
    }
}

#[test]
fn inference_helpers() {
    let (s, d) = infer_binary(
        BinaryOp::Div,
        (&[2, 1], OperandType::Tensor(I32)),
        (&[3], OperandType::Scalar(ScalarKind::Int)),
    )
    .unwrap();
    assert_eq!((s, d), (vec![2, 3], F32));
    assert_eq!(infer_unary(UnaryOp::Exp, I64), F32);
    assert_eq!(
        infer_matmul((&[5, 2, 3], BF16), (&[3, 4], BF16), None).unwrap(),
        (vec![5, 2, 4], BF16)
    );
    assert_eq!(
        infer_reduce(ReduceOp::Mean, &[2, 3], I32, Some(-1), true).unwrap(),
        (vec![2, 1], F32)
    );
}

/// Every op on awkward inputs (0-d, empty, size-1, odd axes and indices) returns Ok or Err,
/// never panics.
#[test]
fn no_panics_on_awkward_inputs() {
    let shapes: &[&[usize]] = &[
        &[],
        &[0],
        &[1],
        &[3],
        &[0, 3],
        &[3, 0],
        &[2, 3],
        &[1, 1, 1],
        &[2, 0, 2],
        &[4, 1, 3],
    ];
    let dtypes = [F32, BF16, F8E5M2, I8, I64, Bool, F64];
    let mut tensors = Vec::new();
    for (i, s) in shapes.iter().enumerate() {
        for d in dtypes {
            let n: usize = s.iter().product();
            let v: Vec<i64> = (0..n as i64).map(|x| x - 1).collect();
            tensors.push(Tensor::from_i64(s, v, d).unwrap());
            if i % 3 == 0 {
                tensors.push(Tensor::abstract_tensor(s, d).unwrap());
            }
        }
    }
    let ops = [
        BinaryOp::Add,
        BinaryOp::Div,
        BinaryOp::FloorDiv,
        BinaryOp::Mod,
        BinaryOp::Pow,
        BinaryOp::Maximum,
        BinaryOp::Lt,
    ];
    for a in &tensors {
        let _ = a.repr();
        let _ = a.tolist();
        let _ = a.item();
        for d in dtypes {
            let _ = a.cast(d);
        }
        for ax in -4..4isize {
            for keep in [false, true] {
                for op in [ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min] {
                    let _ = reduce(a, op, Some(ax), keep);
                }
            }
            let _ = softmax(a, ax);
            let _ = concat(&[a.clone(), a.clone()], ax);
        }
        let _ = reduce(a, ReduceOp::Max, None, false);
        let _ = layernorm(a, None, None, 1e-5);
        let _ = rmsnorm(a, Some(a), 1e-6);
        let _ = a.T();
        let _ = a.transpose(Some(&[0]));
        let _ = a.reshape(&[-1]);
        let _ = a.reshape(&[-1, 0]);
        let _ = a.reshape(&[2, -1]);
        for u in [
            UnaryOp::Neg,
            UnaryOp::Exp,
            UnaryOp::Gelu,
            UnaryOp::Not,
            UnaryOp::Relu,
        ] {
            let _ = unary(u, a);
        }
        for items in [
            vec![IndexItem::Int(0)],
            vec![IndexItem::Int(-1), IndexItem::Int(5)],
            vec![IndexItem::Ellipsis, IndexItem::Int(0)],
            vec![IndexItem::NewAxis, IndexItem::Ellipsis, IndexItem::NewAxis],
            vec![IndexItem::Slice {
                start: Some(i64::MIN),
                stop: Some(i64::MAX),
                step: Some(i64::MIN),
            }],
            vec![IndexItem::Slice {
                start: None,
                stop: None,
                step: Some(i64::MAX),
            }],
            vec![IndexItem::Ellipsis, IndexItem::Ellipsis],
        ] {
            let _ = a.index(&items);
        }
        for b in tensors.iter().step_by(5) {
            for op in ops {
                let _ = binary(op, a, b);
            }
            let _ = matmul(a, b, None);
            let _ = matmul(a, b, Some(F32));
            let _ = where_(a, a, b);
            let _ = allclose(a, b, 1e-5, 1e-8);
            let _ = max_abs_diff(a, b);
            let _ = flash_attention(a, b, b, true, None);
        }
        let _ = binary(BinaryOp::Pow, a, Scalar::Int(i64::MAX));
        let _ = binary(BinaryOp::FloorDiv, Scalar::Int(i64::MIN), a);
    }
}

#[test]
fn a_last_two_axes_transpose_equals_the_strided_one() {
    // against element-by-element indexing: several planes, odd sizes, ints
    for (b, r, c) in [
        (1usize, 1usize, 1usize),
        (3, 37, 70),
        (2, 64, 33),
        (1, 5, 200),
    ] {
        let x = Tensor::randn(&[b, r, c], DType::F32, 7).unwrap();
        let t = x.transpose(Some(&[0, 2, 1])).unwrap();
        assert_eq!(t.shape(), &[b, c, r]);
        let xv = x.to_f32_vec().unwrap();
        let tv = t.to_f32_vec().unwrap();
        for p in 0..b {
            for i in 0..r {
                for j in 0..c {
                    assert_eq!(tv[(p * c + j) * r + i], xv[(p * r + i) * c + j]);
                }
            }
        }
        let ti = Tensor::from_i64(&[r, c], (0..(r * c) as i64).collect(), DType::I32).unwrap();
        let tt = ti.T().unwrap().to_i64_vec().unwrap();
        for i in 0..r {
            for j in 0..c {
                assert_eq!(tt[j * r + i], (i * c + j) as i64);
            }
        }
    }
}
