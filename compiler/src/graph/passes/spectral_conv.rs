//! `conv1d`/`conv2d` → transforms, a frequency-domain product and the inverse transforms (the
//! spectral rewrite, SPEC §5), when `algorithm="fft"` or, for `algorithm="auto"`, when the
//! cost model ([`cost`], the model of the two ways) predicts it faster on the target than the direct kernel.
//!
//! ```text
//! %2 = conv %0, %1 {stride = 1, padding = 15, dilation = 1, groups = 1} : fp32[8,16,64,64]
//!   ─▶
//! %2 = rfft %0 {axis = 3, n = 128, embed = [15, 1]} : c64[8,16,64,65]
//! %3 = fft %2 {axis = 2, n = 128, embed = [15, 1]} : c64[8,16,128,65]
//! %4 = rfft %1 {axis = 3, n = 128} : c64[16,16,31,65]
//! %5 = fft %4 {axis = 2, n = 128} : c64[16,16,128,65]
//! %6 = spectral_mul %3, %5 {groups = 1} : c64[8,16,128,65]
//! %7 = ifft %6 {axis = 2, n = 128} : c64[8,16,128,65]
//! %8 = irfft %7 {axis = 3, n = 128} : fp32[8,16,128,128]
//! %9 = slice %8[:, :, 0:64:1, 0:64:1] : fp32[8,16,64,64]
//! ```
//!
//! The input is placed at its leading padding and the kernel's taps at multiples of the
//! dilation in a plane of `P × Q` (powers of two, what the FFT kernel transforms), at least
//! `(OH−1)·sh + dh·(kh−1) + 1` rows by the same in columns: the circular correlation
//! `ifft(X · conj(W))` then never wraps for the outputs the stride samples, so the result is
//! exact up to rounding. The transforms run in c64 (c128 for fp64 results); the bound is the
//! FFT's, `|y_fft − y| ≤ 6·u·log2(P·Q)·Σ_c ‖x_c‖₂·‖w_c‖₂` per output (`u` the unit roundoff of
//! the transforms' precision, the sum over the group's channels of the output's window), which
//! [`bound_text`] states in `graph.fusions`.
//!
//! Near misses: `algorithm="auto"` with the direct kernel cheaper in the model (both latencies
//! given), a plane past [`MAX_PLANE`] (the FFT kernel's longest line).

pub mod cost;

use super::{copy_op, finish_rebuild, PassCx};
use crate::graph::infer::infer;
use crate::graph::{
    BinaryOp, ConvAlgorithm, ConvAttrs, ConvSizes, DType, FftEmbed, FftKind, FftNorm, Fired, Graph,
    Op, SliceItem, TensorType, ValueId,
};
use cost::{conv_cost, ConvShape};
use tessera_lang::Span;

pub const RULE: &str = "spectral_conv";

/// The longest transform line the rewrite plans for `algorithm="auto"` (the FFT kernel's
/// limit for one block).
pub const MAX_PLANE: usize = 4096;

/// One convolution's plan in its 2-D form.
#[derive(Clone, Debug)]
struct Plan {
    shape: ConvShape,
    attrs: ConvAttrs,
    x: TensorType,
    w: TensorType,
    out: TensorType,
    /// The real dtype of the transforms (fp32 or fp64) and its complex one.
    real: DType,
    complex: DType,
}

fn plan(g: &Graph, x: ValueId, w: ValueId, out: ValueId, attrs: &ConvAttrs) -> Option<Plan> {
    let (tx, tw, to) = (g.ty(x)?.clone(), g.ty(w)?.clone(), g.ty(out)?.clone());
    let d = usize::from(attrs.dims);
    let batched = tx.shape.len() == d + 2;
    let xs = &tx.shape[usize::from(batched)..];
    let (cin, cout) = (xs[0], tw.shape[0]);
    let two = |v: &[usize]| if d == 2 { [v[0], v[1]] } else { [1, v[0]] };
    let input = two(&xs[1..]);
    let kernel = two(&tw.shape[2..]);
    let output = two(&to.shape[to.shape.len() - d..]);
    let span =
        |i: usize| (output[i] - 1) * attrs.stride[i] + attrs.dilation[i] * (kernel[i] - 1) + 1;
    let plane = [0, 1].map(|i| span(i).next_power_of_two());
    let real = if to.dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let complex = real.to_complex();
    Some(Plan {
        shape: ConvShape {
            size: ConvSizes {
                batch: if batched { tx.shape[0] } else { 1 },
                cin,
                cout,
                groups: attrs.groups,
                input,
                kernel,
                output,
            },
            plane,
            elem_bytes: to.dtype.size_bytes(),
            complex_bytes: complex.size_bytes(),
            tensor_cores: crate::graph::kind::conv_tensor_cores(
                tx.dtype,
                tw.dtype,
                cin / attrs.groups.max(1),
                cout / attrs.groups.max(1),
            ),
        },
        attrs: *attrs,
        x: tx,
        w: tw,
        out: to,
        real,
        complex,
    })
}

/// The error bound of a rewritten convolution, as `graph.fusions` states it.
pub fn bound_text(plane: [usize; 2], complex: DType) -> String {
    let (u, name) = if complex == DType::C128 {
        ("2^-53", "c128")
    } else {
        ("2^-24", "c64")
    };
    let lg = ((plane[0] * plane[1]) as f64).log2();
    format!(
        "|y_fft - y| <= 6*u*log2(P*Q)*sum_c |x_c|*|w_c| = {:.0}*u*sum_c |x_c|*|w_c| per output \
         (u = {u}, {name} transforms over a {}x{} plane)",
        6.0 * lg,
        plane[0],
        plane[1]
    )
}

fn kernel_text(p: &Plan) -> String {
    let [kh, kw] = p.shape.size.kernel;
    if p.attrs.dims == 1 {
        format!("conv1d {kw}")
    } else {
        format!("conv2d {kh}x{kw}")
    }
}

/// Pushes `op` onto `g` typed by the rules (`declared` for casts and reshapes).
fn emit(g: &mut Graph, op: Op, declared: TensorType, span: Span) -> Option<ValueId> {
    let t = infer(g, &op, &declared).ok()?;
    Some(g.push(op, t, span))
}

/// The rewritten form of plan `p` in `g` on operands `x`, `w`, `bias` (already in `g`);
/// returns the value equal to the convolution.
fn expand(
    g: &mut Graph,
    p: &Plan,
    [x, w]: [ValueId; 2],
    bias: Option<ValueId>,
    span: Span,
) -> Option<ValueId> {
    let s = &p.shape;
    let [ph, pw] = [p.attrs.pad[0].0, p.attrs.pad[1].0];
    let [dh, dw] = p.attrs.dilation;
    let [pp, pq] = s.plane;
    let cg = s.size.cin / s.size.groups.max(1);
    let real_of = |g: &mut Graph, v: ValueId, t: &TensorType, shape: Vec<usize>| {
        // in the transforms' precision, as a 4-d [N, C, H, W] / [O, C/g, kH, kW] tensor
        let mut v = v;
        if t.dtype.to_complex() != p.complex {
            v = emit(
                g,
                Op::Cast { x: v },
                TensorType::new(t.shape.clone(), p.real),
                span,
            )?;
        }
        if t.shape != shape {
            let d = g.ty(v)?.dtype;
            v = emit(g, Op::Reshape { x: v }, TensorType::new(shape, d), span)?;
        }
        Some(v)
    };
    let [h, wd] = s.size.input;
    let [kh, kw] = s.size.kernel;
    let x4 = real_of(g, x, &p.x, vec![s.size.batch, s.size.cin, h, wd])?;
    let w4 = real_of(g, w, &p.w, vec![s.size.cout, cg, kh, kw])?;
    let none = TensorType::new(vec![], p.complex);
    let fft = |g: &mut Graph, x: ValueId, kind: FftKind, axis: usize, n: usize, embed: FftEmbed| {
        let op = Op::Fft {
            x,
            kind,
            axis,
            n,
            norm: FftNorm::Backward,
            embed,
        };
        emit(g, op, none.clone(), span)
    };
    let forward = |g: &mut Graph, v: ValueId, lo: [usize; 2], step: [usize; 2]| {
        let r = fft(
            g,
            v,
            FftKind::RealForward,
            3,
            pq,
            FftEmbed {
                lo: lo[1],
                step: step[1],
            },
        )?;
        if pp > 1 {
            fft(
                g,
                r,
                FftKind::Forward,
                2,
                pp,
                FftEmbed {
                    lo: lo[0],
                    step: step[0],
                },
            )
        } else {
            Some(r)
        }
    };
    let xf = forward(g, x4, [ph, pw], [1, 1])?;
    let wf = forward(g, w4, [0, 0], [dh, dw])?;
    let prod = emit(
        g,
        Op::SpectralMul {
            x: xf,
            w: wf,
            groups: s.size.groups,
        },
        none.clone(),
        span,
    )?;
    let back = if pp > 1 {
        fft(g, prod, FftKind::Inverse, 2, pp, FftEmbed::default())?
    } else {
        prod
    };
    let z = fft(g, back, FftKind::RealInverse, 3, pq, FftEmbed::default())?;
    let [oh, ow] = s.size.output;
    let [sh, sw] = p.attrs.stride;
    let all = SliceItem::Range {
        start: None,
        stop: None,
        step: None,
    };
    let every = |o: usize, st: usize| SliceItem::Range {
        start: Some(0),
        stop: Some(((o - 1) * st + 1) as i64),
        step: Some(st as i64),
    };
    let items = vec![all.clone(), all, every(oh, sh), every(ow, sw)];
    let mut y = emit(g, Op::Slice { x: z, items }, none, span)?;
    if let Some(b) = bias {
        let tb = g.ty(b)?.clone();
        let b3 = emit(
            g,
            Op::Reshape { x: b },
            TensorType::new(vec![s.size.cout, 1, 1], tb.dtype),
            span,
        )?;
        let declared = g.ty(y)?.clone();
        y = emit(
            g,
            Op::Binary {
                op: BinaryOp::Add,
                a: y,
                b: b3,
            },
            declared,
            span,
        )?;
    }
    let ty = g.ty(y)?.clone();
    if ty.dtype != p.out.dtype {
        y = emit(
            g,
            Op::Cast { x: y },
            TensorType::new(ty.shape.clone(), p.out.dtype),
            span,
        )?;
    }
    if ty.shape != p.out.shape {
        y = emit(g, Op::Reshape { x: y }, p.out.clone(), span)?;
    }
    (g.ty(y)? == &p.out).then_some(y)
}

pub fn run(g: &mut Graph, cx: &PassCx) -> Fired {
    let mut fired = Fired::default();
    let spec = cx.target.spec();
    let mut chosen: Vec<(ValueId, Plan)> = Vec::new();
    for id in g.ids() {
        let Some(Op::Conv { x, w, attrs, .. }) = g.op(id) else {
            continue;
        };
        if attrs.algorithm == ConvAlgorithm::Direct {
            continue;
        }
        let Some(p) = plan(g, *x, *w, id, attrs) else {
            continue;
        };
        let span = g.span(id);
        if attrs.algorithm == ConvAlgorithm::Auto {
            let [pp, pq] = p.shape.plane;
            if pp.max(pq) > MAX_PLANE {
                fired.miss(
                    RULE,
                    format!(
                        "{}: its {pp}x{pq} transform plane is past the FFT kernel's {MAX_PLANE} (algorithm=\"fft\" forces it)",
                        kernel_text(&p)
                    ),
                    span,
                );
                continue;
            }
            let c = conv_cost(&spec, &p.shape);
            if c.direct_us <= c.fft_us {
                fired.miss(
                    RULE,
                    format!(
                        "{}: direct is {:.1}x cheaper ({:.1} µs against {:.1} µs in {} kernels through the FFT on {}, model)",
                        kernel_text(&p),
                        c.fft_us / c.direct_us,
                        c.direct_us,
                        c.fft_us,
                        c.fft_kernels,
                        spec.gpu
                    ),
                    span,
                );
                continue;
            }
        }
        chosen.push((id, p));
    }
    if chosen.is_empty() {
        return fired;
    }
    let mut ng = Graph::new(g.name.clone());
    let mut map: Vec<Option<ValueId>> = vec![None; g.len()];
    let mut done = Vec::new();
    for id in g.ids() {
        let rewritten = chosen.iter().find(|(c, _)| *c == id).and_then(|(_, p)| {
            let Some(Op::Conv { x, w, bias, .. }) = g.op(id) else {
                return None;
            };
            let get = |v: ValueId| map.get(v.index()).copied().flatten();
            let bias = match bias {
                Some(b) => Some(get(*b)?),
                None => None,
            };
            // on a copy: a plan that does not type leaves the convolution as it is
            let mut trial = ng.clone();
            let y = expand(&mut trial, p, [get(*x)?, get(*w)?], bias, g.span(id))?;
            Some((trial, y, p))
        });
        match rewritten {
            Some((trial, y, p)) => {
                ng = trial;
                map[id.index()] = Some(y);
                done.push((g.span(id), p.shape.plane, p.complex));
            }
            None => {
                if copy_op(g, &mut ng, &mut map, id).is_none() {
                    return fired;
                }
            }
        }
    }
    if finish_rebuild(g, &mut ng, &map).is_none() {
        return fired;
    }
    *g = ng;
    for (span, plane, complex) in done {
        fired.fire_with(RULE, bound_text(plane, complex), span);
    }
    fired
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::passes::test_util::f32t;
    use crate::graph::verify::verify;
    use tessera_lang::Span;

    fn at() -> Span {
        Span::new(0, 0, 1)
    }

    /// `conv2d(x [8,16,64,64], w [16,16,k,k], b, padding="same")`.
    fn conv(k: usize, algorithm: ConvAlgorithm) -> Graph {
        let mut g = Graph::new("f");
        let x = g.add_param(f32t(&[8, 16, 64, 64]), at());
        let w = g.add_param(f32t(&[16, 16, k, k]), at());
        let b = g.add_param(f32t(&[16]), at());
        let p = (k - 1) / 2;
        let attrs = ConvAttrs {
            dims: 2,
            stride: [1, 1],
            pad: [(p, k - 1 - p); 2],
            dilation: [1, 1],
            groups: 1,
            algorithm,
        };
        let y = g.push(
            Op::Conv {
                x,
                w,
                bias: Some(b),
                attrs,
            },
            f32t(&[8, 16, 64, 64]),
            at(),
        );
        g.outputs.push(y);
        g
    }

    fn names(g: &Graph) -> Vec<&'static str> {
        g.ids().filter_map(|v| g.op(v)).map(Op::name).collect()
    }

    #[test]
    fn a_large_kernel_is_rewritten_and_a_small_one_is_not() {
        let mut g = conv(31, ConvAlgorithm::Auto);
        let f = run(&mut g, &PassCx::default());
        verify(&g).unwrap();
        assert_eq!(f.rules.len(), 1, "{f:?}");
        assert!(f.notes[0].reason.contains("128x128 plane"), "{f:?}");
        let ops = names(&g);
        assert!(!ops.contains(&"conv2d"), "{ops:?}");
        for op in [
            "rfft",
            "fft",
            "spectral_mul",
            "ifft",
            "irfft",
            "slice",
            "add",
        ] {
            assert!(ops.contains(&op), "{op} missing from {ops:?}");
        }
        assert_eq!(g.ty(g.outputs[0]).unwrap(), &f32t(&[8, 16, 64, 64]));

        let mut g = conv(3, ConvAlgorithm::Auto);
        let before = g.clone();
        let f = run(&mut g, &PassCx::default());
        assert!(f.rules.is_empty());
        assert_eq!(g, before);
        assert!(
            f.near_misses[0].reason.starts_with("conv2d 3x3: direct is"),
            "{f:?}"
        );
    }

    #[test]
    fn algorithm_overrides_the_model() {
        let mut g = conv(3, ConvAlgorithm::Fft);
        assert_eq!(run(&mut g, &PassCx::default()).rules.len(), 1);
        verify(&g).unwrap();
        let mut g = conv(31, ConvAlgorithm::Direct);
        let f = run(&mut g, &PassCx::default());
        assert!(f.rules.is_empty() && f.near_misses.is_empty());
    }

    #[test]
    fn the_plane_covers_the_strided_dilated_span() {
        let mut g = Graph::new("f");
        let x = g.add_param(f32t(&[3, 4, 37]), at());
        let w = g.add_param(f32t(&[6, 2, 5]), at());
        let attrs = ConvAttrs {
            dims: 1,
            stride: [1, 2],
            pad: [(0, 0), (3, 3)],
            dilation: [1, 2],
            groups: 2,
            algorithm: ConvAlgorithm::Fft,
        };
        // (43 − 9)/2 + 1 = 18 outputs; span (18−1)·2 + 2·4 + 1 = 43 → 64
        let y = g.push(
            Op::Conv {
                x,
                w,
                bias: None,
                attrs,
            },
            f32t(&[3, 6, 18]),
            at(),
        );
        g.outputs.push(y);
        let f = run(&mut g, &PassCx::default());
        verify(&g).unwrap();
        assert!(f.notes[0].reason.contains("1x64 plane"), "{f:?}");
        // one-row planes: no column transforms
        let ops = names(&g);
        assert!(!ops.contains(&"fft") && !ops.contains(&"ifft"), "{ops:?}");
    }
}
