//! The memory guard, abstract tensors, inference helpers, and no panics on awkward inputs.

use super::*;
use crate::*;
use DType::*;

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
