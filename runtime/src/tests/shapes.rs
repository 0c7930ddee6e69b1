//! Shapes, indexing and values out: slicing, transpose, reshape, concat, constructors.

use super::*;
use crate::*;
use DType::*;

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
