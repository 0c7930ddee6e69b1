//! Unit tests of the norm prologue rule: where it fires (layernorm, rmsnorm, with an
//! epilogue after it) and each near miss.

use super::run;
use crate::graph::passes::{dce, PassCx};
use crate::graph::pipeline::{optimize, Options};
use crate::graph::print::print;
use crate::graph::verify::verify;
use crate::graph::{
    prologue_of, BinaryOp, DType, Epilogue, EpilogueStep, Fired, Graph, NormKind, Op, TensorType,
    UnaryOp, ValueId,
};
use tessera_lang::{SourceMap, Span};

const SRC: &str = "line one\nline two\nline three\nline four\nline five\n";

fn sources() -> SourceMap {
    let mut sm = SourceMap::new();
    sm.add("t.tsr", SRC);
    sm
}

/// A real span at `line` (1-based), column 1.
fn at(line: usize) -> Span {
    let lo: usize = SRC.lines().take(line - 1).map(|l| l.len() + 1).sum();
    Span::new(0, lo, lo + 4)
}

fn t(shape: &[usize], d: DType) -> TensorType {
    TensorType::new(shape.to_vec(), d)
}

/// `x [8, 16]`, `g`, `b [16]`, `w [16, 4]` of `d`: params 0..4.
fn params(g: &mut Graph, d: DType) -> [ValueId; 4] {
    [
        g.add_param(t(&[8, 16], d), at(1)),
        g.add_param(t(&[16], d), at(1)),
        g.add_param(t(&[16], d), at(1)),
        g.add_param(t(&[16, 4], d), at(1)),
    ]
}

fn layernorm(g: &mut Graph, x: ValueId, w: ValueId, b: ValueId) -> ValueId {
    let ty = g.ty(x).cloned().unwrap();
    g.push(
        Op::LayerNorm {
            x,
            weight: Some(w),
            bias: Some(b),
            eps: 1e-5,
        },
        ty,
        at(2),
    )
}

fn matmul(g: &mut Graph, a: ValueId, b: ValueId, ty: TensorType) -> ValueId {
    g.push(
        Op::Matmul {
            a,
            b,
            accum: None,
            epilogue: vec![],
            tile: None,
        },
        ty,
        at(3),
    )
}

/// The rule, then DCE; the graph verified after.
fn fuse(g: &mut Graph) -> Fired {
    let cx = PassCx::default();
    let f = run(g, &cx);
    dce::run(g, &cx);
    verify(g).unwrap();
    f
}

#[test]
fn a_layernorm_read_by_a_matmul_becomes_its_prologue() {
    let mut g = Graph::new("f");
    let [x, gm, bt, w] = params(&mut g, DType::BF16);
    let n = layernorm(&mut g, x, gm, bt);
    let y = matmul(&mut g, n, w, t(&[8, 4], DType::BF16));
    g.outputs = vec![y];
    let f = fuse(&mut g);
    assert_eq!(f.rules, vec![("prologue_layernorm".to_string(), at(2))]);
    let out = g.outputs[0];
    let Some(Op::Matmul { a, epilogue, .. }) = g.op(out) else {
        panic!("not a matmul: {:?}", g.op(out))
    };
    assert_eq!(*a, x, "the matmul reads x itself");
    let p = prologue_of(g.op(out).unwrap()).expect("a prologue");
    assert_eq!(p.norm, NormKind::LayerNorm);
    assert_eq!((p.weight, p.bias, p.eps), (Some(gm), Some(bt), 1e-5));
    assert_eq!(epilogue.len(), 1);
    // one kernel: the norm is gone
    assert!(!g
        .ids()
        .any(|id| matches!(g.op(id), Some(Op::LayerNorm { .. }))));
    assert_eq!(
        print(&g, &sources()),
        "graph @f(%0: bf16[8,16], %1: bf16[16], %2: bf16[16], %3: bf16[16,4]) {
  %4 = matmul %0, %3 {accum = fp32, prologue = [layernorm %1, %2 {eps = 1e-5}]} : bf16[8,4]   loc(fused[\"t.tsr\":3:1, \"t.tsr\":2:1])
  return %4
}
"
    );
}

#[test]
fn an_rmsnorm_becomes_a_prologue_and_the_epilogue_follows() {
    // rmsnorm(x, g) @ w + bias, then gelu, through the whole pipeline
    let mut g = Graph::new("f");
    let [x, gm, bias, w] = params(&mut g, DType::F32);
    let n = g.push(
        Op::RmsNorm {
            x,
            weight: Some(gm),
            eps: 1e-6,
        },
        t(&[8, 16], DType::F32),
        at(2),
    );
    let y = matmul(&mut g, n, w, t(&[8, 4], DType::F32));
    let b4 = g.add_param(t(&[4], DType::F32), at(1));
    let s = g.push(
        Op::Binary {
            op: BinaryOp::Add,
            a: y,
            b: b4,
        },
        t(&[8, 4], DType::F32),
        at(4),
    );
    let r = g.push(
        Op::Unary {
            op: UnaryOp::Gelu,
            x: s,
        },
        t(&[8, 4], DType::F32),
        at(5),
    );
    g.outputs = vec![r];
    let _ = bias;
    let fired = optimize(&mut g, &Options::default(), &sources()).unwrap();
    let rules: Vec<&str> = fired.rules.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        rules,
        ["prologue_rmsnorm", "epilogue_bias", "epilogue_activation"]
    );
    let out = g.outputs[0];
    let Some(Op::Matmul { epilogue, .. }) = g.op(out) else {
        panic!("not a matmul")
    };
    assert!(matches!(
        epilogue.as_slice(),
        [
            EpilogueStep {
                step: Epilogue::Prologue(_),
                ..
            },
            EpilogueStep {
                step: Epilogue::Binary { .. },
                ..
            },
            EpilogueStep {
                step: Epilogue::Unary(UnaryOp::Gelu),
                ..
            }
        ]
    ));
    let text = print(&g, &sources());
    assert!(
        text.contains(
            "prologue = [rmsnorm %1 {eps = 1e-6}], epilogue = [add %4, gelu]} : fp32[8,4]"
        ),
        "{text}"
    );
}

/// What the rule reports for a graph it leaves alone: (rule, reason) of each near miss.
fn misses(g: &mut Graph) -> Vec<(String, String)> {
    let before = g.clone();
    let f = run(g, &PassCx::default());
    assert!(f.rules.is_empty(), "{f:?}");
    assert_eq!(*g, before, "the graph is unchanged");
    f.near_misses
        .into_iter()
        .map(|m| (m.rule, m.reason))
        .collect()
}

#[test]
fn a_normalised_tensor_with_another_reader_stays_a_kernel() {
    let mut g = Graph::new("f");
    let [x, gm, bt, w] = params(&mut g, DType::BF16);
    let n = layernorm(&mut g, x, gm, bt);
    let y = matmul(&mut g, n, w, t(&[8, 4], DType::BF16));
    let e = g.push(
        Op::Unary {
            op: UnaryOp::Exp,
            x: n,
        },
        t(&[8, 16], DType::BF16),
        at(4),
    );
    g.outputs = vec![y, e];
    assert_eq!(
        misses(&mut g),
        [(
            "prologue_layernorm".to_string(),
            "the normalised tensor has 2 users, so it is written out anyway".to_string()
        )]
    );
    // returned as well
    let mut g = Graph::new("f");
    let [x, gm, bt, w] = params(&mut g, DType::BF16);
    let n = layernorm(&mut g, x, gm, bt);
    let y = matmul(&mut g, n, w, t(&[8, 4], DType::BF16));
    g.outputs = vec![y, n];
    assert_eq!(
        misses(&mut g)[0].1,
        "the normalised tensor is also returned, so it is written out anyway"
    );
}

#[test]
fn a_normalised_b_is_no_prologue() {
    let mut g = Graph::new("f");
    let w = g.add_param(t(&[4, 8], DType::F32), at(1));
    let x = g.add_param(t(&[8, 16], DType::F32), at(1));
    let n = g.push(
        Op::RmsNorm {
            x,
            weight: None,
            eps: 1e-6,
        },
        t(&[8, 16], DType::F32),
        at(2),
    );
    let y = matmul(&mut g, w, n, t(&[4, 16], DType::F32));
    g.outputs = vec![y];
    let m = misses(&mut g);
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].0, "prologue_rmsnorm");
    assert!(m[0].1.starts_with("B is the normalised operand"), "{m:?}");
}

#[test]
fn a_norm_over_another_axis_than_k_is_no_prologue() {
    // layernorm(x).T @ w: the norm runs over A's rows, not along K
    let mut g = Graph::new("f");
    let x = g.add_param(t(&[16, 8], DType::F32), at(1));
    let w = g.add_param(t(&[16, 4], DType::F32), at(1));
    let n = g.push(
        Op::LayerNorm {
            x,
            weight: None,
            bias: None,
            eps: 1e-5,
        },
        t(&[16, 8], DType::F32),
        at(2),
    );
    let nt = g.push(
        Op::Transpose {
            x: n,
            perm: vec![1, 0],
        },
        t(&[8, 16], DType::F32),
        at(2),
    );
    let y = matmul(&mut g, nt, w, t(&[8, 4], DType::F32));
    g.outputs = vec![y];
    assert_eq!(
        misses(&mut g),
        [(
            "prologue_layernorm".to_string(),
            "the norm runs over axis 0 of A, not its contraction axis K (axis 1)".to_string()
        )]
    );
}

#[test]
fn a_norm_of_integers_is_no_prologue() {
    // layernorm of int32 gives fp32: A's dtype would change
    let mut g = Graph::new("f");
    let x = g.add_param(t(&[8, 16], DType::I32), at(1));
    let w = g.add_param(t(&[16, 4], DType::F32), at(1));
    let n = g.push(
        Op::LayerNorm {
            x,
            weight: None,
            bias: None,
            eps: 1e-5,
        },
        t(&[8, 16], DType::F32),
        at(2),
    );
    let y = matmul(&mut g, n, w, t(&[8, 4], DType::F32));
    g.outputs = vec![y];
    let m = misses(&mut g);
    assert!(m[0].1.starts_with("a norm of int32 giving fp32"), "{m:?}");
}

#[test]
fn the_verifier_admits_a_prologue_only_first_and_over_k() {
    let mut g = Graph::new("f");
    let [x, gm, bt, w] = params(&mut g, DType::F32);
    let n = layernorm(&mut g, x, gm, bt);
    let y = matmul(&mut g, n, w, t(&[8, 4], DType::F32));
    g.outputs = vec![y];
    fuse(&mut g);
    let out = g.outputs[0];
    let Some(Op::Matmul {
        a,
        b,
        accum,
        mut epilogue,
        ..
    }) = g.op(out).cloned()
    else {
        panic!("not a matmul")
    };
    // second instead of first
    let p = epilogue.remove(0);
    let bad = vec![
        EpilogueStep {
            step: Epilogue::Unary(UnaryOp::Relu),
            span: at(4),
        },
        p.clone(),
    ];
    let ty = g.ty(out).cloned().unwrap();
    let mut g2 = g.clone();
    g2.replace(
        out,
        Op::Matmul {
            a,
            b,
            accum,
            epilogue: bad,
            tile: None,
        },
        ty.clone(),
    );
    let e = verify(&g2).unwrap_err();
    assert!(
        e.message.contains("prologue is its first step"),
        "{}",
        e.message
    );
    // a weight that is not [K]
    let Epilogue::Prologue(mut pr) = p.step else {
        panic!("not a prologue")
    };
    pr.weight = Some(w);
    g.replace(
        out,
        Op::Matmul {
            a,
            b,
            accum,
            epilogue: vec![EpilogueStep {
                step: Epilogue::Prologue(pr),
                span: p.span,
            }],
            tile: None,
        },
        ty,
    );
    let e = verify(&g).unwrap_err();
    assert!(e.message.contains("is not [16]"), "{}", e.message);
}
