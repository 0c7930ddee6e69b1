//! Tests of the tracer and the CPU executor that need what scripts cannot reach yet
//! (abstract tensors come from `dist.tensor`, a later module).

use crate::tensor::{as_tensor, tensor_value};
use tessera_lang::eval::Interp;
use tessera_lang::parse;
use tessera_runtime::{DType, Tensor};

fn run(src: &str, globals: Vec<(&str, Tensor)>) -> Interp {
    let mut it = Interp::new();
    crate::install(&mut it, &crate::Config::default()).unwrap();
    for (n, t) in globals {
        it.set_global(n, tensor_value(t));
    }
    let file = it.sources.add("t.tsr", src.to_string());
    let m = parse::parse_module(src, file).unwrap();
    if let Err(d) = it.exec_module(&m) {
        panic!("{}", d.render(&it.sources, false));
    }
    it
}

#[test]
fn abstract_inputs_trace_and_give_abstract_results() {
    let w = Tensor::abstract_tensor(&[100_000, 100_000], DType::BF16).unwrap();
    let x = Tensor::abstract_tensor(&[64, 100_000], DType::BF16).unwrap();
    let b = Tensor::abstract_tensor(&[100_000], DType::BF16).unwrap();
    let it = run(
        "@op.kernel\ndef f(x, w, b):\n    return op.gelu(x @ w + b)\n\
         y = f(x, w, b)\nfused = graph.fusions(f, x, w, b)\n",
        vec![("x", x), ("w", w), ("b", b)],
    );
    let y = it.get_global("y").unwrap();
    let y = as_tensor(&y).unwrap();
    assert!(y.is_abstract());
    assert_eq!(y.shape(), &[64, 100_000]);
    assert_eq!(y.dtype(), DType::BF16);
    assert_eq!(
        it.get_global("fused").unwrap().repr(),
        "['epilogue_bias', 'epilogue_activation']"
    );
}

#[test]
fn captured_tensors_are_operands() {
    let it = run(
        "c = op.full((3,), 2.0)\n\
         @op.kernel\ndef f(x):\n    return x * c + op.ones((3,))\n\
         y = f(op.tensor([1.0, 2.0, 3.0]))\n",
        vec![],
    );
    let y = it.get_global("y").unwrap();
    assert_eq!(y.repr(), "tensor([3.0000, 5.0000, 7.0000], dtype=fp32)");
}

#[test]
fn each_session_has_its_own_random_generator() {
    // two sessions in one process (REPL, Jupyter kernels, tests) draw the same sequence
    let src = "a = op.randn((3,))\nb = op.randn((3,))\n";
    let (one, two) = (run(src, vec![]), run(src, vec![]));
    let get = |it: &Interp, n: &str| it.get_global(n).unwrap().repr();
    assert_eq!(get(&one, "a"), get(&two, "a"));
    assert_eq!(get(&one, "b"), get(&two, "b"));
    assert_ne!(get(&one, "a"), get(&one, "b"));
    // a draw in one session does not move the other's generator
    let mut it = run("x = op.rand((2,))\n", vec![]);
    let other = run("y = op.rand((2,))\nz = op.rand((2,))\n", vec![]);
    let file = it.sources.add("u.tsr", "w = op.rand((2,))\n".to_string());
    let m = parse::parse_module("w = op.rand((2,))\n", file).unwrap();
    it.exec_module(&m).unwrap();
    assert_eq!(get(&it, "w"), get(&other, "z"));
}
