//! The cpu convolution against its definition, and its shape rule.
use super::*;

/// The definition, one output element at a time, in f64.
fn naive(p: &ConvPlan, x: &[f64], w: &[f64], bias: Option<&[f64]>) -> Vec<f64> {
    let ([ih, iw], [kh, kw], [oh, ow]) = (p.size.input, p.size.kernel, p.size.output);
    let (cin_g, cout_g) = (p.size.cin / p.size.groups, p.size.cout / p.size.groups);
    let mut out = vec![0.0; p.size.batch * p.size.cout * oh * ow];
    for n in 0..p.size.batch {
        for oc in 0..p.size.cout {
            let g = oc / cout_g;
            for r in 0..oh {
                for q in 0..ow {
                    let mut s = bias.map_or(0.0, |b| b[oc]);
                    for c in 0..cin_g {
                        for i in 0..kh {
                            for j in 0..kw {
                                let y = (r * p.stride[0] + i * p.dilation[0]) as isize
                                    - p.pad[0] as isize;
                                let xx = (q * p.stride[1] + j * p.dilation[1]) as isize
                                    - p.pad[1] as isize;
                                if y < 0 || xx < 0 || y >= ih as isize || xx >= iw as isize {
                                    continue;
                                }
                                let xi = ((n * p.size.cin + g * cin_g + c) * ih + y as usize) * iw
                                    + xx as usize;
                                let wi = ((oc * cin_g + c) * kh + i) * kw + j;
                                s += x[xi] * w[wi];
                            }
                        }
                    }
                    out[((n * p.size.cout + oc) * oh + r) * ow + q] = s;
                }
            }
        }
    }
    out
}

fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 33) as f64 / (1u64 << 31) as f64) - 0.5
        })
        .collect()
}

fn check(x: &[usize], w: &[usize], bias: bool, spec: ConvSpec) {
    let p = plan(x, w, bias.then_some(&w[..1]), &spec).expect("plan");
    let xv = values(x.iter().product(), 1);
    let wv = values(w.iter().product(), 2);
    let bv = values(w[0], 3);
    let want = naive(&p, &xv, &wv, bias.then_some(&bv[..]));
    let got = run(&p, &xv, &wv, bias.then_some(&bv[..]));
    assert_eq!(got.len(), want.len());
    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
        assert!((a - b).abs() < 1e-12, "{spec:?} element {i}: {a} vs {b}");
    }
    let x32: Vec<f32> = xv.iter().map(|&v| v as f32).collect();
    let w32: Vec<f32> = wv.iter().map(|&v| v as f32).collect();
    let b32: Vec<f32> = bv.iter().map(|&v| v as f32).collect();
    let got = run(&p, &x32, &w32, bias.then_some(&b32[..]));
    for (a, b) in got.iter().zip(&want) {
        assert!(
            (f64::from(*a) - b).abs() < 1e-4,
            "{spec:?} fp32: {a} vs {b}"
        );
    }
}

fn spec2(s: [usize; 2], pad: ConvPadding, d: [usize; 2], groups: usize) -> ConvSpec {
    ConvSpec {
        dims: 2,
        stride: s.to_vec(),
        padding: pad,
        dilation: d.to_vec(),
        groups,
    }
}

#[test]
fn matches_the_definition() {
    let e = |a: usize, b: usize| ConvPadding::Explicit(vec![(a, a), (b, b)]);
    let same = || ConvPadding::Same;
    // (x, w, bias, stride, padding, dilation, groups)
    type Case = (
        &'static [usize],
        &'static [usize],
        bool,
        [usize; 2],
        ConvPadding,
        [usize; 2],
        usize,
    );
    #[rustfmt::skip]
    let cases: [Case; 9] = [
        (&[2, 3, 7, 9], &[4, 3, 3, 3], true, [1, 1], e(0, 0), [1, 1], 1),
        (&[2, 3, 7, 9], &[4, 3, 3, 2], false, [2, 3], e(1, 2), [1, 1], 1),
        (&[1, 4, 11, 10], &[6, 2, 3, 3], true, [1, 2], e(2, 1), [2, 1], 2),
        (&[2, 4, 8, 8], &[4, 1, 3, 3], true, [1, 1], same(), [1, 1], 4),
        (&[2, 4, 9, 8], &[8, 1, 5, 3], false, [2, 2], e(2, 1), [1, 2], 4),
        (&[1, 3, 5, 5], &[5, 3, 1, 1], true, [1, 1], e(0, 0), [1, 1], 1),
        (&[1, 2, 6, 6], &[3, 2, 4, 4], false, [1, 1], same(), [2, 1], 1),
        // padding past the kernel: whole rows and columns of taps read only zeros
        (&[1, 2, 5, 4], &[3, 2, 3, 2], true, [2, 3], e(4, 3), [1, 1], 1),
        (&[1, 2, 5, 4], &[2, 1, 3, 2], true, [2, 1], e(4, 3), [1, 2], 2),
    ];
    for (x, w, bias, stride, pad, dil, groups) in cases {
        check(x, w, bias, spec2(stride, pad, dil, groups));
    }
    let s1 = ConvSpec {
        dims: 1,
        stride: vec![2],
        padding: ConvPadding::Explicit(vec![(1, 1)]),
        dilation: vec![3],
        groups: 1,
    };
    check(&[3, 2, 17], &[4, 2, 3], true, s1);
}

#[test]
fn shapes_and_errors() {
    let s = spec2([1, 1], ConvPadding::Same, [1, 1], 1);
    let p = plan(&[3, 8, 8], &[5, 3, 3, 3], None, &s).expect("unbatched");
    assert_eq!(p.out_shape, vec![5, 8, 8]);
    let p = plan(&[1, 3, 8, 9], &[5, 3, 4, 4], None, &s).expect("even same");
    assert_eq!(p.out_shape, vec![1, 5, 8, 9]);
    assert_eq!(p.pad, [1, 1]);
    let e = |x: &[usize], w: &[usize], s: &ConvSpec| plan(x, w, None, s).expect_err("error");
    assert!(e(&[1, 4, 8, 8], &[5, 3, 3, 3], &s)
        .message
        .contains("input channels"));
    let g = spec2([1, 1], ConvPadding::Same, [1, 1], 3);
    assert!(e(&[1, 4, 8, 8], &[6, 1, 3, 3], &g)
        .message
        .contains("groups=3"));
    let strided = spec2([2, 1], ConvPadding::Same, [1, 1], 1);
    assert!(e(&[1, 3, 8, 8], &[5, 3, 3, 3], &strided)
        .message
        .contains("stride 1"));
    let valid = spec2(
        [1, 1],
        ConvPadding::Explicit(vec![(0, 0), (0, 0)]),
        [1, 1],
        1,
    );
    assert!(e(&[1, 3, 2, 8], &[5, 3, 3, 3], &valid)
        .message
        .contains("spans 3"));
    assert!(e(&[8, 8], &[5, 3, 3, 3], &valid)
        .message
        .contains("expected"));
}
