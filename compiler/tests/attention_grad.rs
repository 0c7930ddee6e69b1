//! The backward graph of FlashAttention holds no `sq × sk` value: `graph.grad` differentiates
//! `flash_attention` into its row log-sum-exp and one recomputing kernel per operand, so every
//! value of the optimised backward graph (fused bodies included) is O(seq·d). The gradient of
//! the written-out formula `softmax(q·kᵀ)·v`, differentiated the same way, does hold one: the
//! check can fail. Every kernel of the flash backward is lowered to Target IR.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use tessera_compiler::backend::ptx::Target;
use tessera_compiler::graph::autodiff::grad;
use tessera_compiler::graph::pipeline::{optimize, Options};
use tessera_compiler::graph::{DType, Graph, Op, ReduceOp, TensorType};
use tessera_compiler::pipeline::lower;
use tessera_compiler::schedule::Directives;
use tessera_lang::{SourceMap, Span};

const SQ: usize = 96;
const SK: usize = 80;

/// `sum(attention(q, k, v) * w)` over `[2, 96, 16]·[2, 80, 16]ᵀ·[2, 80, 8]`, the attention
/// either `flash_attention` or written out.
fn loss(flash: bool, causal: bool, span: Span) -> Graph {
    let mut g = Graph::new("loss");
    let t = |s: &[usize]| TensorType::new(s.to_vec(), DType::F32);
    let q = g.add_param(t(&[2, SQ, 16]), span);
    let k = g.add_param(t(&[2, SK, 16]), span);
    let v = g.add_param(t(&[2, SK, 8]), span);
    let w = g.add_param(t(&[2, SQ, 8]), span);
    let o = if flash {
        g.push(
            Op::FlashAttention {
                q,
                k,
                v,
                causal,
                scale: 0.25,
            },
            t(&[2, SQ, 8]),
            span,
        )
    } else {
        let kt = g.push(
            Op::Transpose {
                x: k,
                perm: vec![0, 2, 1],
            },
            t(&[2, 16, SK]),
            span,
        );
        let s = g.push(
            Op::Matmul {
                a: q,
                b: kt,
                accum: None,
                epilogue: vec![],
                tile: None,
            },
            t(&[2, SQ, SK]),
            span,
        );
        let p = g.push(
            Op::Row {
                f: tessera_compiler::graph::RowFn::Softmax,
                x: s,
                axis: 2,
                keepdim: false,
            },
            t(&[2, SQ, SK]),
            span,
        );
        g.push(
            Op::Matmul {
                a: p,
                b: v,
                accum: None,
                epilogue: vec![],
                tile: None,
            },
            t(&[2, SQ, 8]),
            span,
        )
    };
    let ow = g.push(
        Op::Binary {
            op: tessera_compiler::graph::BinaryOp::Mul,
            a: o,
            b: w,
        },
        t(&[2, SQ, 8]),
        span,
    );
    let l = g.push(
        Op::Reduce {
            op: ReduceOp::Sum,
            x: ow,
            axis: None,
            keepdim: false,
        },
        t(&[]),
        span,
    );
    g.outputs = vec![l];
    g
}

/// The largest value of `g` and of its fused bodies, in elements of one batch problem.
fn largest(g: &Graph) -> usize {
    let mut m = 0;
    for id in g.ids() {
        if let Some(t) = g.ty(id) {
            let n: usize = t.shape.iter().product();
            let batch = if t.shape.len() == 3 { t.shape[0] } else { 1 };
            m = m.max(n / batch.max(1));
        }
        if let Some(Op::FusedElementwise { body, .. }) = g.op(id) {
            m = m.max(largest(body));
        }
    }
    m
}

fn backward(flash: bool, causal: bool) -> (Graph, SourceMap) {
    let mut sources = SourceMap::new();
    let f = sources.add("att.tsr", "l = loss(q, k, v, w)\n");
    let span = Span::new(f, 4, 20);
    let fwd = loss(flash, causal, span);
    let mut g = grad(&fwd, &[0, 1, 2], false).expect("differentiable");
    optimize(&mut g, &Options::default(), &sources).expect("optimises");
    (g, sources)
}

#[test]
fn flash_attention_backward_holds_no_seq_by_seq_value() {
    for causal in [false, true] {
        let (g, _) = backward(true, causal);
        let names: Vec<&str> = g.ids().filter_map(|i| g.op(i)).map(Op::name).collect();
        for n in [
            "flash_attention_lse",
            "flash_attention_dq",
            "flash_attention_dk",
            "flash_attention_dv",
        ] {
            assert!(names.contains(&n), "{n} missing from {names:?}");
        }
        // q is [96, 16] per problem: nothing larger than that, far below 96 × 80
        assert_eq!(largest(&g), SQ * 16, "causal {causal}");
        let l = lower(&g, &Directives::default(), Target::Sm90).expect("schedules");
        for c in &l.kernels {
            assert!(
                c.target.is_some(),
                "kernel not lowered: {:?}",
                c.not_lowered
            );
        }
    }
}

#[test]
fn the_written_out_formula_backward_holds_the_probabilities() {
    let (g, _) = backward(false, false);
    assert_eq!(largest(&g), SQ * SK);
}
