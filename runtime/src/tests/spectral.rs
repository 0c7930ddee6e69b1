//! Complex dtypes and the FFT family: promotion, casts, printing, complex arithmetic, and the
//! transforms against a naive O(n²) DFT in f64 (odd, prime and large lengths).

use super::*;
use num_complex::{Complex32, Complex64};
use std::f64::consts::PI;

fn c128(shape: &[usize], v: &[(f64, f64)]) -> Tensor {
    Tensor::from_c128(
        shape,
        v.iter().map(|&(re, im)| Complex64::new(re, im)).collect(),
    )
    .unwrap()
}

fn cvals(t: &Tensor) -> Vec<Complex64> {
    t.to_c128_vec().unwrap()
}

/// A deterministic test signal of length `n` with nonzero imaginary parts.
fn signal(n: usize) -> Vec<Complex64> {
    (0..n)
        .map(|i| {
            let x = i as f64;
            Complex64::new(
                (0.37 * x).sin() + 0.1 * x / (n as f64),
                (1.3 * x).cos() - 0.25,
            )
        })
        .collect()
}

/// `sum_j x[j]·exp(∓2πi·jk/n)` (the inverse unscaled), in f64.
fn dft(x: &[Complex64], inverse: bool) -> Vec<Complex64> {
    let n = x.len();
    let sign = if inverse { 1.0 } else { -1.0 };
    (0..n)
        .map(|k| {
            x.iter()
                .enumerate()
                .map(|(j, &v)| {
                    let a = sign * 2.0 * PI * ((j * k) % n) as f64 / n as f64;
                    v * Complex64::new(a.cos(), a.sin())
                })
                .sum()
        })
        .collect()
}

fn assert_cclose(got: &[Complex64], want: &[Complex64], tol: f64) {
    assert_eq!(got.len(), want.len());
    let scale = want.iter().map(|z| z.norm()).fold(1.0, f64::max);
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).norm() <= tol * scale,
            "element {i}: got {g}, want {w} (tolerance {tol}·{scale})"
        );
    }
}

#[test]
fn promotion_with_complex() {
    use DType::*;
    let cases = [
        (F32, C64, C64),
        (BF16, C64, C64),
        (F16, C64, C64),
        (F64, C64, C128),
        (I64, C64, C64),
        (Bool, C64, C64),
        (I8, C128, C128),
        (C64, C128, C128),
        (F32, C128, C128),
    ];
    for (a, b, r) in cases {
        assert_eq!(DType::promote(a, b), r, "{a} with {b}");
        assert_eq!(DType::promote(b, a), r, "{b} with {a}");
    }
    assert_eq!(DType::promote_scalar(C64, ScalarKind::Float), C64);
    assert_eq!(DType::promote_scalar(C128, ScalarKind::Int), C128);
    assert_eq!(DType::parse("complex64"), Some(C64));
    assert_eq!(DType::parse("c128"), Some(C128));
    assert_eq!(C64.size_bytes(), 8);
    assert_eq!(C128.size_bytes(), 16);
}

#[test]
fn casts_and_printing() {
    let z = c128(&[3], &[(1.0, 2.0), (-2.5, -0.0), (f64::NAN, f64::INFINITY)]);
    assert_eq!(
        z.repr(),
        "tensor([1.0000+2.0000j, -2.5000-0.0000j, nan+infj], dtype=c128)"
    );
    let small = c128(&[2], &[(1e-9, 1.0), (0.0, 0.0)]);
    assert_eq!(
        small.repr(),
        "tensor([1.0000e-09+1.0000e+00j, 0.0000e+00+0.0000e+00j], dtype=c128)"
    );
    // complex to real keeps the real part; to bool is "nonzero"; real to complex has im 0
    let r = z.cast(DType::F32).unwrap();
    assert_eq!(vals(&r)[..2], [1.0, -2.5]);
    let b = c128(&[2], &[(0.0, 1.0), (0.0, 0.0)])
        .cast(DType::Bool)
        .unwrap();
    assert_eq!(b.to_bool_vec().unwrap(), vec![true, false]);
    let c = t64(&[2], &[1.5, -3.0], DType::F64)
        .cast(DType::C64)
        .unwrap();
    assert_eq!(
        c.repr(),
        "tensor([1.5000+0.0000j, -3.0000+0.0000j], dtype=c64)"
    );
    assert_eq!(
        code(c128(&[1], &[(1e30, 0.0)]).cast(DType::I32)),
        Code::E0500
    );
    assert_eq!(
        c128(&[], &[(1.0, 2.0)]).item().unwrap_err().code,
        Code::E0201
    );
    assert_eq!(z.tolist().unwrap_err().code, Code::E0201);
    // c64 rounds each part once
    let w = c128(&[1], &[(0.1, 0.2)]).cast(DType::C64).unwrap();
    assert_eq!(
        w.to_c64_vec().unwrap(),
        vec![Complex32::new(0.1f32, 0.2f32)]
    );
}

#[test]
fn complex_arithmetic() {
    let a = c128(&[2], &[(1.0, 2.0), (3.0, -1.0)]);
    let b = c128(&[2], &[(0.5, -1.0), (0.0, 2.0)]);
    let want = |f: fn(Complex64, Complex64) -> Complex64| {
        cvals(&a)
            .iter()
            .zip(cvals(&b))
            .map(|(&x, y)| f(x, y))
            .collect::<Vec<_>>()
    };
    assert_cclose(&cvals(&a.add(&b).unwrap()), &want(|x, y| x + y), 1e-15);
    assert_cclose(&cvals(&a.sub(&b).unwrap()), &want(|x, y| x - y), 1e-15);
    assert_cclose(&cvals(&a.mul(&b).unwrap()), &want(|x, y| x * y), 1e-15);
    assert_cclose(&cvals(&a.div(&b).unwrap()), &want(|x, y| x / y), 1e-15);
    assert_cclose(&cvals(&a.pow(2i64).unwrap()), &want(|x, _| x * x), 1e-15);
    // a real tensor and a scalar promote into the complex dtype
    let r = t64(&[2], &[2.0, 4.0], DType::F32);
    let s = a.mul(&r).unwrap();
    assert_eq!(s.dtype(), DType::C128);
    let s = b
        .cast(DType::C64)
        .unwrap()
        .add(&r)
        .unwrap()
        .add(1.0)
        .unwrap();
    assert_eq!(s.dtype(), DType::C64);
    assert_eq!(
        a.neg().unwrap().repr(),
        "tensor([-1.0000-2.0000j, -3.0000+1.0000j], dtype=c128)"
    );
    let m = a.abs().unwrap();
    assert_eq!(m.dtype(), DType::F64);
    assert_close(&vals(&m), &[5f64.sqrt(), 10f64.sqrt()], 1e-15, 0.0);
    assert_eq!(
        a.cast(DType::C64).unwrap().abs().unwrap().dtype(),
        DType::F32
    );
    assert_eq!(a.eq(&a).unwrap().to_bool_vec().unwrap(), vec![true, true]);
    assert_eq!(a.ne(&b).unwrap().to_bool_vec().unwrap(), vec![true, true]);
    // undefined on complex numbers: E0201, never a panic
    for r in [
        a.lt(&b),
        a.maximum(&b),
        a.floordiv(&b),
        a.rem(&b),
        a.relu(),
        a.sigmoid(),
        a.max(None, false),
        sort(&a, -1, false),
        matmul(&a, &a, None),
        softmax(&a, -1),
        cumsum(&a, None),
    ] {
        assert_eq!(code(r), Code::E0201);
    }
    // allclose and max_abs_diff compare by the modulus of the difference
    assert!(allclose(&a.div(&b).unwrap().mul(&b).unwrap(), &a, 1e-12, 0.0).unwrap());
    assert!(!allclose(&a, &conj(&a).unwrap(), 1e-5, 1e-8).unwrap());
    assert_eq!(max_abs_diff(&a, &conj(&a).unwrap()).unwrap(), 4.0);
    // sum and mean
    let s = a.sum(None, false).unwrap();
    assert_eq!(cvals(&s), vec![Complex64::new(4.0, 1.0)]);
    let m = a.mean(None, false).unwrap();
    assert_eq!(cvals(&m), vec![Complex64::new(2.0, 0.5)]);
}

#[test]
fn parts_and_complex() {
    let re = t64(&[2, 1], &[1.0, -1.0], DType::F32);
    let im = t64(&[3], &[0.0, 2.0, -0.5], DType::F32);
    let z = complex(&re, &im).unwrap();
    assert_eq!(z.shape(), &[2, 3]);
    assert_eq!(z.dtype(), DType::C64);
    assert_eq!(real(&z).unwrap().dtype(), DType::F32);
    assert_eq!(
        vals(&imag(&z).unwrap()),
        vec![0.0, 2.0, -0.5, 0.0, 2.0, -0.5]
    );
    assert_eq!(
        vals(&real(&z).unwrap()),
        vec![1.0, 1.0, 1.0, -1.0, -1.0, -1.0]
    );
    assert_eq!(cvals(&conj(&z).unwrap())[1], Complex64::new(1.0, -2.0));
    let a = angle(&complex(-1.0, 0.0).unwrap()).unwrap();
    assert_eq!(vals(&a), vec![f64::from(std::f32::consts::PI)]);
    let w = complex(&t64(&[1], &[1.0], DType::F64), 2i64).unwrap();
    assert_eq!(w.dtype(), DType::C128);
    assert_eq!(code(complex(&z, &re)), Code::E0201);
    // imag of a real tensor is zeros of its dtype; real/conj return it
    assert_eq!(vals(&imag(&re).unwrap()), vec![0.0, 0.0]);
    assert_eq!(vals(&conj(&re).unwrap()), vec![1.0, -1.0]);
}

#[test]
fn fft_matches_the_dft_at_every_length() {
    for n in [1usize, 2, 3, 7, 8, 12, 97, 1000] {
        let x = signal(n);
        let t = Tensor::from_c128(&[n], x.clone()).unwrap();
        let y = fft(&t, None, -1, FftNorm::Backward).unwrap();
        assert_eq!(y.dtype(), DType::C128);
        assert_cclose(&cvals(&y), &dft(&x, false), 1e-12);
        // round trip
        let back = ifft(&y, None, -1, FftNorm::Backward).unwrap();
        assert_cclose(&cvals(&back), &x, 1e-12);
        // c64 computes in f32
        let y32 = fft(&t.cast(DType::C64).unwrap(), None, -1, FftNorm::Backward).unwrap();
        assert_eq!(y32.dtype(), DType::C64);
        assert_cclose(&cvals(&y32), &dft(&x, false), 1e-5);
    }
}

#[test]
fn known_sequences() {
    // an impulse transforms to ones; ones to an impulse of height n
    let mut d = vec![Complex64::new(0.0, 0.0); 5];
    d[0] = Complex64::new(1.0, 0.0);
    let y = fft(
        &Tensor::from_c128(&[5], d).unwrap(),
        None,
        0,
        FftNorm::Backward,
    )
    .unwrap();
    assert_cclose(&cvals(&y), &[Complex64::new(1.0, 0.0); 5], 1e-15);
    let y = fft(
        &t64(&[4], &[1.0; 4], DType::F64),
        None,
        -1,
        FftNorm::Backward,
    )
    .unwrap();
    assert_eq!(
        cvals(&y),
        vec![
            Complex64::new(4.0, 0.0),
            Complex64::new(0.0, 0.0),
            Complex64::new(0.0, 0.0),
            Complex64::new(0.0, 0.0)
        ]
    );
    // int input gives c128; fp32 gives c64
    assert_eq!(
        fft(
            &ti(&[3], &[1, 2, 3], DType::I64),
            None,
            -1,
            FftNorm::Backward
        )
        .unwrap()
        .dtype(),
        DType::C128
    );
    assert_eq!(
        fft(
            &t64(&[3], &[1.0; 3], DType::BF16),
            None,
            -1,
            FftNorm::Backward
        )
        .unwrap()
        .dtype(),
        DType::C64
    );
}

#[test]
fn norms_crop_pad_and_axes() {
    let x = signal(6);
    let t = Tensor::from_c128(&[6], x.clone()).unwrap();
    let plain = dft(&x, false);
    let ortho = fft(&t, None, -1, FftNorm::Ortho).unwrap();
    let s = 6f64.sqrt();
    assert_cclose(
        &cvals(&ortho),
        &plain.iter().map(|z| z / s).collect::<Vec<_>>(),
        1e-12,
    );
    let fwd = fft(&t, None, -1, FftNorm::Forward).unwrap();
    assert_cclose(
        &cvals(&fwd),
        &plain.iter().map(|z| z / 6.0).collect::<Vec<_>>(),
        1e-12,
    );
    for norm in [FftNorm::Backward, FftNorm::Ortho, FftNorm::Forward] {
        let back = ifft(&fft(&t, None, -1, norm).unwrap(), None, -1, norm).unwrap();
        assert_cclose(&cvals(&back), &x, 1e-12);
    }
    // crop to 4 and pad to 9
    let crop = fft(&t, Some(4), -1, FftNorm::Backward).unwrap();
    assert_cclose(&cvals(&crop), &dft(&x[..4], false), 1e-12);
    let mut padded = x.clone();
    padded.resize(9, Complex64::new(0.0, 0.0));
    let pad = fft(&t, Some(9), -1, FftNorm::Backward).unwrap();
    assert_cclose(&cvals(&pad), &dft(&padded, false), 1e-12);
    // along axis 0 of a [6, 2] tensor: each column on its own
    let cols: Vec<Complex64> = x.iter().flat_map(|&z| [z, z * 2.0]).collect();
    let m = Tensor::from_c128(&[6, 2], cols).unwrap();
    let y = fft(&m, None, 0, FftNorm::Backward).unwrap();
    assert_eq!(y.shape(), &[6, 2]);
    let got = cvals(&y);
    let col0: Vec<Complex64> = got.iter().step_by(2).copied().collect();
    let col1: Vec<Complex64> = got.iter().skip(1).step_by(2).copied().collect();
    assert_cclose(&col0, &plain, 1e-12);
    assert_cclose(
        &col1,
        &plain.iter().map(|z| z * 2.0).collect::<Vec<_>>(),
        1e-12,
    );
    let y2 = fft(&m, Some(3), -2, FftNorm::Backward).unwrap();
    assert_eq!(y2.shape(), &[3, 2]);
    // lengths below 1 and bad axes
    assert_eq!(code(fft(&t, Some(0), -1, FftNorm::Backward)), Code::E0200);
    assert_eq!(
        code(irfft(
            &t64(&[1], &[1.0], DType::F64),
            None,
            -1,
            FftNorm::Backward
        )),
        Code::E0200
    );
    assert_eq!(code(fft(&t, None, 1, FftNorm::Backward)), Code::E0500);
    assert_eq!(FftNorm::parse("orto").unwrap_err().code, Code::E0101);
}

#[test]
fn real_transforms() {
    for n in [1usize, 2, 5, 8, 97] {
        let x: Vec<f64> = signal(n).iter().map(|z| z.re).collect();
        let t = t64(&[n], &x, DType::F64);
        let y = rfft(&t, None, -1, FftNorm::Backward).unwrap();
        assert_eq!(y.shape(), &[n / 2 + 1]);
        let full = dft(
            &x.iter()
                .map(|&v| Complex64::new(v, 0.0))
                .collect::<Vec<_>>(),
            false,
        );
        assert_cclose(&cvals(&y), &full[..n / 2 + 1], 1e-12);
        let back = irfft(&y, Some(n as i64), -1, FftNorm::Backward).unwrap();
        assert_eq!(back.dtype(), DType::F64);
        assert_close(&vals(&back), &x, 1e-12, 1e-12);
    }
    // irfft's default length is 2·(m − 1); the imaginary parts of the DC and Nyquist terms are
    // ignored
    let spec = c128(&[3], &[(4.0, 7.0), (1.0, -1.0), (2.0, 5.0)]);
    let y = irfft(&spec, None, -1, FftNorm::Backward).unwrap();
    assert_eq!(y.shape(), &[4]);
    let clean = c128(&[3], &[(4.0, 0.0), (1.0, -1.0), (2.0, 0.0)]);
    let y0 = irfft(&clean, None, -1, FftNorm::Backward).unwrap();
    assert_eq!(vals(&y), vals(&y0));
    // rfft of fp32 is c64, irfft of c64 is fp32; complex input to rfft is E0201
    let f = t64(&[4], &[1.0, 2.0, 3.0, 4.0], DType::F32);
    let r = rfft(&f, None, -1, FftNorm::Backward).unwrap();
    assert_eq!(r.dtype(), DType::C64);
    assert_eq!(
        irfft(&r, None, -1, FftNorm::Backward).unwrap().dtype(),
        DType::F32
    );
    assert_eq!(code(rfft(&r, None, -1, FftNorm::Backward)), Code::E0201);
}

#[test]
fn two_dimensional() {
    let x: Vec<Complex64> = signal(12);
    let t = Tensor::from_c128(&[3, 4], x.clone()).unwrap();
    let y = fft2d(&t, Fft2Kind::Fft2, None, FftNorm::Backward).unwrap();
    // rows then columns with the naive DFT
    let mut rows: Vec<Complex64> = x.chunks(4).flat_map(|r| dft(r, false)).collect();
    for c in 0..4 {
        let col: Vec<Complex64> = (0..3).map(|r| rows[r * 4 + c]).collect();
        for (r, v) in dft(&col, false).into_iter().enumerate() {
            rows[r * 4 + c] = v;
        }
    }
    assert_cclose(&cvals(&y), &rows, 1e-12);
    let back = fft2d(&y, Fft2Kind::Ifft2, None, FftNorm::Backward).unwrap();
    assert_cclose(&cvals(&back), &x, 1e-12);
    // s crops and pads; rfft2/irfft2 round trip with s
    let s = fft2d(&t, Fft2Kind::Fft2, Some([2, 5]), FftNorm::Ortho).unwrap();
    assert_eq!(s.shape(), &[2, 5]);
    let r: Vec<f64> = x.iter().map(|z| z.re).collect();
    let rt = t64(&[3, 4], &r, DType::F64);
    let spec = fft2d(&rt, Fft2Kind::Rfft2, None, FftNorm::Forward).unwrap();
    assert_eq!(spec.shape(), &[3, 3]);
    let back = fft2d(&spec, Fft2Kind::Irfft2, Some([3, 4]), FftNorm::Forward).unwrap();
    assert_close(&vals(&back), &r, 1e-12, 1e-12);
    assert_eq!(
        code(fft2d(
            &t64(&[3], &[1.0; 3], DType::F64),
            Fft2Kind::Fft2,
            None,
            FftNorm::Backward
        )),
        Code::E0200
    );
    // a batch of transforms (more rows than one parallel task) equals the transforms one by one
    let big = signal(64 * 700);
    let bt = Tensor::from_c128(&[700, 64], big.clone()).unwrap();
    let by = cvals(&fft(&bt, None, -1, FftNorm::Backward).unwrap());
    for r in [0usize, 1, 511, 512, 699] {
        let want = dft(&big[r * 64..(r + 1) * 64], false);
        assert_cclose(&by[r * 64..(r + 1) * 64], &want, 1e-12);
    }
}

#[test]
fn abstract_and_empty() {
    let a = Tensor::abstract_tensor(&[4, 10], DType::F32).unwrap();
    let y = rfft(&a, None, -1, FftNorm::Backward).unwrap();
    assert!(y.is_abstract());
    assert_eq!((y.shape(), y.dtype()), (&[4usize, 6][..], DType::C64));
    let e = Tensor::zeros(&[0, 5], DType::C64).unwrap();
    let y = fft(&e, None, -1, FftNorm::Backward).unwrap();
    assert_eq!(y.shape(), &[0, 5]);
    let y = fft(&e, Some(3), 0, FftNorm::Backward).unwrap();
    assert_eq!(y.shape(), &[3, 5]);
    assert_eq!(cvals(&y), vec![Complex64::new(0.0, 0.0); 15]);
}
