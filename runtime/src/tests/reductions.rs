//! Reductions: values, shapes, accumulation, determinism.

use super::*;
use crate::*;
use DType::*;

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
