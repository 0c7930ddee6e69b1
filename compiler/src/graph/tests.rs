//! Unit tests of Graph IR: graphs built by hand, checked by their printed text.

use super::passes::{dce, flash_attention, fuse_elementwise, fuse_epilogue, PassCx};
use super::pipeline::{optimize, Fusion, Options};
use super::print::print;
use super::verify::verify;
use super::*;
use tessera_lang::{SourceMap, Span};

const SRC: &str = "line one\nline two\nline three\nline four\n";

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

fn f32t(shape: &[usize]) -> TensorType {
    t(shape, DType::F32)
}

fn konst(g: &mut Graph, v: f64, d: DType, line: usize) -> ValueId {
    g.push(
        Op::Const {
            value: Scalar::Float(v),
        },
        t(&[], d),
        at(line),
    )
}

fn bin(
    g: &mut Graph,
    op: BinaryOp,
    a: ValueId,
    b: ValueId,
    ty: TensorType,
    line: usize,
) -> ValueId {
    g.push(Op::Binary { op, a, b }, ty, at(line))
}

fn mm(g: &mut Graph, a: ValueId, b: ValueId, ty: TensorType, line: usize) -> ValueId {
    g.push(
        Op::Matmul {
            a,
            b,
            accum: None,
            epilogue: vec![],
            tile: None,
        },
        ty,
        at(line),
    )
}

fn cx() -> PassCx {
    PassCx::default()
}

/// `gelu(x @ w + b)` in bf16.
fn mlp() -> Graph {
    let mut g = Graph::new("mlp");
    let x = g.add_param(t(&[64, 128], DType::BF16), at(1));
    let w = g.add_param(t(&[128, 256], DType::BF16), at(1));
    let b = g.add_param(t(&[256], DType::BF16), at(1));
    let h = mm(&mut g, x, w, t(&[64, 256], DType::BF16), 2);
    let s = bin(&mut g, BinaryOp::Add, h, b, t(&[64, 256], DType::BF16), 3);
    let y = g.push(
        Op::Unary {
            op: UnaryOp::Gelu,
            x: s,
        },
        t(&[64, 256], DType::BF16),
        at(4),
    );
    g.outputs.push(y);
    g
}

#[test]
fn prints_with_locs_and_renumbers() {
    let g = mlp();
    assert_eq!(verify(&g), Ok(()));
    assert_eq!(
        print(&g, &sources()),
        "graph @mlp(%0: bf16[64,128], %1: bf16[128,256], %2: bf16[256]) {
  %3 = matmul %0, %1 {accum = fp32} : bf16[64,256]   loc(\"t.tsr\":2:1)
  %4 = add %3, %2 : bf16[64,256]   loc(\"t.tsr\":3:1)
  %5 = gelu %4 : bf16[64,256]   loc(\"t.tsr\":4:1)
  return %5
}
"
    );
}

#[test]
fn verifier_rejects_missing_span() {
    let mut g = Graph::new("f");
    let x = g.add_param(f32t(&[4]), at(1));
    let y = g.push(
        Op::Unary {
            op: UnaryOp::Exp,
            x,
        },
        f32t(&[4]),
        Span::default(),
    );
    g.outputs.push(y);
    let e = verify(&g).unwrap_err();
    assert!(e.message.contains("has no source span"), "{}", e.message);
}

#[test]
fn verifier_rejects_bad_types_and_order() {
    let mut g = Graph::new("f");
    let x = g.add_param(f32t(&[4, 8]), at(1));
    let w = g.add_param(f32t(&[4, 8]), at(1));
    let y = mm(&mut g, x, w, f32t(&[4, 8]), 2);
    g.outputs.push(y);
    let e = verify(&g).unwrap_err();
    assert!(
        e.message.contains("inner dimensions 8 and 4"),
        "{}",
        e.message
    );

    let mut g = Graph::new("f");
    let x = g.add_param(f32t(&[4]), at(1));
    let y = g.push(
        Op::Unary {
            op: UnaryOp::Exp,
            x: ValueId(2),
        },
        f32t(&[4]),
        at(2),
    );
    g.outputs.push(x);
    g.outputs.push(y);
    let e = verify(&g).unwrap_err();
    assert!(e.message.contains("before it is defined"), "{}", e.message);

    let mut g = Graph::new("f");
    let x = g.add_param(t(&[4], DType::I32), at(1));
    let y = g.push(
        Op::Unary {
            op: UnaryOp::Exp,
            x,
        },
        t(&[4], DType::I32),
        at(2),
    );
    g.outputs.push(y);
    let e = verify(&g).unwrap_err();
    assert!(e.message.contains("operands give fp32[4]"), "{}", e.message);
}

#[test]
fn promotion_matches_the_decisions() {
    use DType::*;
    assert_eq!(DType::promote(F16, BF16), F32);
    assert_eq!(DType::promote(F8E4M3, F8E5M2), F16);
    assert_eq!(DType::promote(I32, BF16), BF16);
    assert_eq!(DType::promote(Bool, I8), I8);
    assert_eq!(DType::promote_scalar(BF16, Scalar::Float(2.0).kind()), BF16);
    assert_eq!(DType::promote_scalar(I32, Scalar::Float(2.0).kind()), F32);
    assert_eq!(DType::promote_scalar(Bool, Scalar::Int(2).kind()), I64);
    assert_eq!(BinaryOp::Div.result_dtype(I32, I32), F32);
    assert_eq!(BinaryOp::Add.result_dtype(Bool, Bool), I64);
}

#[test]
fn epilogue_fuses_bias_and_activation() {
    let mut g = mlp();
    let f = fuse_epilogue::run(&mut g, &cx());
    dce::run(&mut g, &cx());
    assert_eq!(verify(&g), Ok(()));
    let rules: Vec<&str> = f.rules.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(rules, ["epilogue_bias", "epilogue_activation"]);
    assert_eq!(
        print(&g, &sources()),
        "graph @mlp(%0: bf16[64,128], %1: bf16[128,256], %2: bf16[256]) {
  %3 = matmul %0, %1 {accum = fp32, epilogue = [add %2, gelu]} : bf16[64,256]   loc(fused[\"t.tsr\":2:1, \"t.tsr\":3:1, \"t.tsr\":4:1])
  return %3
}
"
    );
}

#[test]
fn epilogue_not_fused_when_matmul_used_twice() {
    let mut g = Graph::new("f");
    let x = g.add_param(f32t(&[4, 8]), at(1));
    let w = g.add_param(f32t(&[8, 4]), at(1));
    let h = mm(&mut g, x, w, f32t(&[4, 4]), 2);
    let r = g.push(
        Op::Unary {
            op: UnaryOp::Relu,
            x: h,
        },
        f32t(&[4, 4]),
        at(3),
    );
    g.outputs = vec![r, h];
    let before = g.clone();
    let f = fuse_epilogue::run(&mut g, &cx());
    assert!(f.rules.is_empty());
    assert_eq!(g, before);
    assert_eq!(f.near_misses.len(), 1);
    assert_eq!(
        f.near_misses[0].reason,
        "matmul result used 2 times, epilogue not fused"
    );
}

/// `softmax(q @ k^T <scale>) @ v`, the scale built by `scale`.
fn attention(scale: impl Fn(&mut Graph, ValueId) -> ValueId, axis: usize) -> Graph {
    let mut g = Graph::new("attn");
    let q = g.add_param(f32t(&[16, 8]), at(1));
    let k = g.add_param(f32t(&[16, 8]), at(1));
    let v = g.add_param(f32t(&[16, 8]), at(1));
    let kt = g.push(
        Op::Transpose {
            x: k,
            perm: vec![1, 0],
        },
        f32t(&[8, 16]),
        at(2),
    );
    let s = mm(&mut g, q, kt, f32t(&[16, 16]), 2);
    let s = scale(&mut g, s);
    let p = g.push(
        Op::Row {
            f: crate::graph::RowFn::Softmax,
            x: s,
            axis,
            keepdim: false,
        },
        f32t(&[16, 16]),
        at(3),
    );
    let o = mm(&mut g, p, v, f32t(&[16, 8]), 4);
    g.outputs.push(o);
    g
}

#[test]
fn flash_attention_with_scale_multiplied_or_divided() {
    for (div, want) in [(false, "0.125"), (true, "0.125")] {
        let mut g = attention(
            |g, s| {
                let c = konst(g, if div { 8.0 } else { 0.125 }, DType::F32, 2);
                let op = if div { BinaryOp::Div } else { BinaryOp::Mul };
                bin(g, op, s, c, f32t(&[16, 16]), 2)
            },
            1,
        );
        let f = flash_attention::run(&mut g, &cx());
        dce::run(&mut g, &cx());
        assert_eq!(verify(&g), Ok(()));
        assert_eq!(f.rules.len(), 1);
        assert_eq!(
            print(&g, &sources()),
            format!(
                "graph @attn(%0: fp32[16,8], %1: fp32[16,8], %2: fp32[16,8]) {{
  %3 = flash_attention %0, %1, %2 {{causal = false, scale = {want}}} : fp32[16,8]   loc(\"t.tsr\":4:1)
  return %3
}}
"
            )
        );
    }
}

#[test]
fn flash_attention_near_misses() {
    let mut g = attention(|_, s| s, 0);
    let f = flash_attention::run(&mut g, &cx());
    assert!(f.rules.is_empty());
    assert_eq!(
        f.near_misses[0].reason,
        "softmax over axis 0, not the key axis 1"
    );

    let mut g = attention(
        |g, s| {
            let c = g.add_param(f32t(&[]), at(1));
            bin(g, BinaryOp::Mul, s, c, f32t(&[16, 16]), 2)
        },
        1,
    );
    let f = flash_attention::run(&mut g, &cx());
    assert!(f.rules.is_empty());
    assert_eq!(
        f.near_misses[0].reason,
        "the scale is a tensor, not a scalar"
    );
}

#[test]
fn elementwise_chain_fuses_and_dce_renumbers() {
    let mut g = Graph::new("f");
    let x = g.add_param(f32t(&[8]), at(1));
    let dead = g.push(
        Op::Unary {
            op: UnaryOp::Log,
            x,
        },
        f32t(&[8]),
        at(2),
    );
    let _ = dead;
    let e = g.push(
        Op::Unary {
            op: UnaryOp::Exp,
            x,
        },
        f32t(&[8]),
        at(2),
    );
    let c = konst(&mut g, 2.0, DType::F32, 3);
    let y = bin(&mut g, BinaryOp::Mul, e, c, f32t(&[8]), 3);
    g.outputs.push(y);
    let opts = Options::default();
    let f = optimize(&mut g, &opts, &sources()).unwrap();
    let rules: Vec<&str> = f.rules.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(rules, ["elementwise_chain"]);
    assert_eq!(
        print(&g, &sources()),
        "graph @f(%0: fp32[8]) {
  %1 = fused_elementwise(%0) {
    ^(%2: fp32[8]):
    %3 = exp %2 : fp32[8]   loc(\"t.tsr\":2:1)
    %4 = const 2.0 : fp32[]   loc(\"t.tsr\":3:1)
    %5 = mul %3, %4 : fp32[8]   loc(\"t.tsr\":3:1)
    yield %5
  } : fp32[8]   loc(\"t.tsr\":3:1)
  return %1
}
"
    );
}

#[test]
fn fusion_none_runs_only_dce() {
    let mut g = mlp();
    let opts = Options {
        fusion: Fusion::None,
        ..Options::default()
    };
    let f = optimize(&mut g, &opts, &sources()).unwrap();
    assert!(f.rules.is_empty());
    assert_eq!(g, mlp());
}

#[test]
fn fusion_depth_limits_groups() {
    let mut g = Graph::new("f");
    let x = g.add_param(f32t(&[8]), at(1));
    let mut v = x;
    for op in [UnaryOp::Exp, UnaryOp::Tanh, UnaryOp::Relu] {
        v = g.push(Op::Unary { op, x: v }, f32t(&[8]), at(2));
    }
    g.outputs.push(v);
    let f = fuse_elementwise::run(
        &mut g,
        &PassCx {
            max_fused_ops: Some(1),
            ..PassCx::default()
        },
    );
    assert!(f.rules.is_empty());
    let f = fuse_elementwise::run(
        &mut g,
        &PassCx {
            max_fused_ops: Some(2),
            ..PassCx::default()
        },
    );
    dce::run(&mut g, &cx());
    assert_eq!(verify(&g), Ok(()));
    assert_eq!(f.rules.len(), 1);
    assert_eq!(g.len(), 3); // param, exp, fused(tanh, relu)
}

#[test]
fn internal_error_carries_the_dump() {
    let mut g = Graph::new("f");
    let x = g.add_param(f32t(&[4]), at(1));
    let y = g.push(
        Op::Unary {
            op: UnaryOp::Exp,
            x,
        },
        f32t(&[5]),
        at(2),
    );
    g.outputs.push(y);
    let e = optimize(&mut g, &Options::default(), &sources()).unwrap_err();
    let d = e.to_diagnostic();
    assert!(
        d.message.starts_with("internal compiler error"),
        "{}",
        d.message
    );
    assert!(d.notes[0].contains("graph @f"));
}

#[test]
fn unary_table_rows_are_in_declaration_order() {
    for (i, r) in crate::graph::types::UNARY_OPS.iter().enumerate() {
        assert_eq!(r.op as usize, i, "{}", r.name);
        assert_eq!(r.op.row().name, r.name);
        assert_eq!(UnaryOp::from_name(r.name), Some(r.op));
    }
    assert_eq!(UnaryOp::Exp.result_dtype(DType::I32), DType::F32);
    assert_eq!(UnaryOp::Neg.result_dtype(DType::Bool), DType::I64);
    assert_eq!(UnaryOp::Not.result_dtype(DType::F32), DType::Bool);
}

#[test]
fn binary_table_rows_are_in_declaration_order_and_map_the_operators() {
    use crate::graph::types::BINARY_OPS;
    use tessera_lang::ast::{BinOp, CmpOp};
    for (i, r) in BINARY_OPS.iter().enumerate() {
        assert_eq!(r.op as usize, i, "{}", r.name);
        assert_eq!(BinaryOp::ALL[i], r.op);
        assert_eq!(r.op.name(), r.name);
        assert_eq!(BinaryOp::function(r.name), r.function.then_some(r.op));
    }
    assert_eq!(
        BinaryOp::of_operator(BinOp::FloorDiv),
        Some(BinaryOp::FloorDiv)
    );
    assert_eq!(BinaryOp::of_operator(BinOp::Pow), Some(BinaryOp::Pow));
    assert_eq!(BinaryOp::of_operator(BinOp::MatMul), None);
    assert_eq!(BinaryOp::of_comparison(CmpOp::Le), Some(BinaryOp::Le));
    assert_eq!(BinaryOp::of_comparison(CmpOp::Is), None);
    assert_eq!(BinaryOp::Div.result_for(DType::I32), DType::F32);
    assert_eq!(BinaryOp::Add.result_for(DType::Bool), DType::I64);
    assert_eq!(BinaryOp::Maximum.result_for(DType::Bool), DType::Bool);
    assert_eq!(BinaryOp::Lt.result_for(DType::F16), DType::Bool);
}

#[test]
fn reduce_table_rows_are_in_declaration_order() {
    for (i, r) in crate::graph::types::REDUCE_OPS.iter().enumerate() {
        assert_eq!(r.op as usize, i, "{}", r.name);
        assert_eq!(ReduceOp::from_name(r.name), Some(r.op));
    }
    assert_eq!(ReduceOp::Sum.result_dtype(DType::Bool), DType::I64);
    assert_eq!(ReduceOp::Mean.result_dtype(DType::I32), DType::F32);
    assert_eq!(ReduceOp::Max.result_dtype(DType::I8), DType::I8);
    assert_eq!(ReduceOp::Sum.result_dtype(DType::BF16), DType::BF16);
}
