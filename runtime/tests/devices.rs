//! One test suite for every device ([`tessera_runtime::device`]): each case is a Graph IR
//! program lowered for sm_90 and run by the interpreter with the device launching every
//! kernel; the result must equal the cpu's (the interpreter alone) within the dtype's
//! tolerance, and on a device other than the cpu every kernel must have been launched there
//! (no case passes by falling back to the cpu).
//!
//! The cross-check, a device that wraps the cpu and another, runs the suite too.
//!
//! `cpu` and `emu` run in every test run. `cuda` needs an NVIDIA GPU and its driver; its test
//! is ignored by default and fails if no GPU opens:
//! `cargo test -p tessera-runtime --test devices -- --ignored` on a machine with one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use tessera_compiler::backend::ptx::Target;
use tessera_compiler::graph::pipeline::{optimize, Options};
use tessera_compiler::graph::update::{update_graph, Rule};
use tessera_compiler::graph::{BinaryOp, DType, Graph, Op, ReduceOp, TensorType, UnaryOp};
use tessera_compiler::pipeline::lower;
use tessera_compiler::schedule::Directives;
use tessera_lang::{SourceMap, Span};
use tessera_runtime::device::{
    self, registry, CrossCheck, Device, DeviceError, Executable, GraphOp, Keep, Launched, PtxImage,
};
use tessera_runtime::{allclose, RuntimeError, Tensor};

/// A case: its graph (with sources for spans) and its inputs.
struct Case {
    name: &'static str,
    graph: Graph,
    inputs: Vec<Tensor>,
    tol: f64,
}

fn graph(name: &str) -> (Graph, Span) {
    (Graph::new(name), Span::new(0, 0, 1))
}

fn ty(shape: &[usize], d: DType) -> TensorType {
    TensorType::new(shape.to_vec(), d)
}

/// `a op b` of two params of type `t`.
fn binary(name: &str, op: BinaryOp, t: TensorType) -> Graph {
    let (mut g, s) = graph(name);
    let a = g.add_param(t.clone(), s);
    let b = g.add_param(t.clone(), s);
    let o = g.push(Op::Binary { op, a, b }, t, s);
    g.outputs = vec![o];
    g
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    // relu(x) * y + x, fp32, one fused elementwise kernel or a chain
    {
        let (mut g, s) = graph("ew");
        let t = ty(&[37, 129], DType::F32);
        let x = g.add_param(t.clone(), s);
        let y = g.add_param(t.clone(), s);
        let r = g.push(
            Op::Unary {
                op: UnaryOp::Relu,
                x,
            },
            t.clone(),
            s,
        );
        let m = g.push(
            Op::Binary {
                op: BinaryOp::Mul,
                a: r,
                b: y,
            },
            t.clone(),
            s,
        );
        let o = g.push(
            Op::Binary {
                op: BinaryOp::Add,
                a: m,
                b: x,
            },
            t.clone(),
            s,
        );
        g.outputs = vec![o];
        out.push(Case {
            name: "elementwise fp32",
            graph: g,
            inputs: vec![
                randn(&[37, 129], DType::F32, 1),
                randn(&[37, 129], DType::F32, 2),
            ],
            tol: 1e-6,
        });
    }
    // int32 floor division (a kernel with a status word: division by zero is the cpu's error)
    {
        let g = binary("idiv", BinaryOp::FloorDiv, ty(&[300], DType::I32));
        let ints = |seed: i64, lo: i64| {
            let v: Vec<i64> = (0..300).map(|i| (i * 7919 + seed * 31) % 97 - 48).collect();
            let v = v.into_iter().map(|x| if x == 0 { lo } else { x }).collect();
            Tensor::from_i64(&[300], v, DType::I32).unwrap()
        };
        out.push(Case {
            name: "int32 floor division",
            graph: g,
            inputs: vec![ints(1, 5), ints(2, 3)],
            tol: 0.0,
        });
    }
    // bf16 matmul on tensor cores
    {
        let (mut g, s) = graph("mm");
        let a = g.add_param(ty(&[64, 96], DType::BF16), s);
        let b = g.add_param(ty(&[96, 80], DType::BF16), s);
        let o = g.push(
            Op::Matmul {
                a,
                b,
                accum: None,
                epilogue: vec![],
                tile: None,
            },
            ty(&[64, 80], DType::BF16),
            s,
        );
        g.outputs = vec![o];
        out.push(Case {
            name: "matmul bf16",
            graph: g,
            inputs: vec![
                randn(&[64, 96], DType::BF16, 3),
                randn(&[96, 80], DType::BF16, 4),
            ],
            tol: 2e-2,
        });
    }
    // softmax over the last axis and a sum over the middle axis, fp32
    {
        let (mut g, s) = graph("rows");
        let t = ty(&[6, 50, 33], DType::F32);
        let x = g.add_param(t.clone(), s);
        let sm = g.push(
            Op::Row {
                f: tessera_compiler::graph::RowFn::Softmax,
                x,
                axis: 2,
                keepdim: false,
            },
            t,
            s,
        );
        let o = g.push(
            Op::Reduce {
                op: ReduceOp::Sum,
                x: sm,
                axis: Some(1),
                keepdim: false,
            },
            ty(&[6, 33], DType::F32),
            s,
        );
        g.outputs = vec![o];
        out.push(Case {
            name: "softmax + axis sum",
            graph: g,
            inputs: vec![randn(&[6, 50, 33], DType::F32, 5)],
            tol: 1e-5,
        });
    }
    // a transpose (copy kernel) of bf16
    {
        let (mut g, s) = graph("tr");
        let x = g.add_param(ty(&[3, 40, 24], DType::BF16), s);
        let o = g.push(
            Op::Transpose {
                x,
                perm: vec![2, 0, 1],
            },
            ty(&[24, 3, 40], DType::BF16),
            s,
        );
        g.outputs = vec![o];
        out.push(Case {
            name: "transpose bf16",
            graph: g,
            inputs: vec![randn(&[3, 40, 24], DType::BF16, 6)],
            tol: 0.0,
        });
    }
    // causal FlashAttention, bf16 (tensor cores)
    {
        let (mut g, s) = graph("att");
        let t = ty(&[2, 40, 32], DType::BF16);
        let q = g.add_param(t.clone(), s);
        let k = g.add_param(t.clone(), s);
        let v = g.add_param(t.clone(), s);
        let o = g.push(
            Op::FlashAttention {
                q,
                k,
                v,
                causal: true,
                scale: 1.0 / (32f64).sqrt(),
            },
            t,
            s,
        );
        g.outputs = vec![o];
        out.push(Case {
            name: "flash attention bf16 causal",
            graph: g,
            inputs: (7..10)
                .map(|i| randn(&[2, 40, 32], DType::BF16, i))
                .collect(),
            tol: 2e-2,
        });
    }
    // take along a middle axis (negative and repeated indices) and its adjoint, scatter_add
    {
        let (mut g, s) = graph("take");
        let x = g.add_param(ty(&[3, 7, 5], DType::F32), s);
        let i = g.add_param(ty(&[2, 3], DType::I32), s);
        let t = g.push(
            Op::Take {
                x,
                index: i,
                axis: 1,
            },
            ty(&[3, 2, 3, 5], DType::F32),
            s,
        );
        let sc = g.push(
            Op::ScatterAdd {
                index: i,
                src: t,
                axis: 1,
            },
            ty(&[3, 7, 5], DType::F32),
            s,
        );
        g.outputs = vec![t, sc];
        let idx = Tensor::from_i64(&[2, 3], vec![6, 0, -1, 2, 2, 0], DType::I32).unwrap();
        out.push(Case {
            name: "take and scatter_add",
            graph: g,
            inputs: vec![randn(&[3, 7, 5], DType::F32, 1), idx],
            tol: 0.0,
        });
    }
    // a sum over a middle axis fused into the kernel of its operand (read elsewhere too: the
    // kernel writes it), a broadcast input, bf16 values
    {
        let (mut g, s) = graph("fused_reduce");
        let x = g.add_param(ty(&[2, 9, 40], DType::BF16), s);
        let w = g.add_param(ty(&[40], DType::BF16), s);
        let th = g.push(
            Op::Unary {
                op: UnaryOp::Tanh,
                x,
            },
            ty(&[2, 9, 40], DType::BF16),
            s,
        );
        let dz = g.push(
            Op::Binary {
                op: BinaryOp::Mul,
                a: th,
                b: w,
            },
            ty(&[2, 9, 40], DType::BF16),
            s,
        );
        let r = g.push(
            Op::Reduce {
                op: ReduceOp::Sum,
                x: dz,
                axis: Some(1),
                keepdim: false,
            },
            ty(&[2, 40], DType::BF16),
            s,
        );
        g.outputs = vec![r, dz];
        optimize(&mut g, &Options::default(), &SourceMap::new()).unwrap();
        let r = g.outputs[0];
        assert!(matches!(g.op(r), Some(Op::FusedReduce { .. })), "fused");
        assert_eq!(g.result_types(r).len(), 2);
        out.push(Case {
            name: "fused reduction",
            graph: g,
            inputs: vec![
                randn(&[2, 9, 40], DType::BF16, 1),
                randn(&[40], DType::BF16, 2),
            ],
            tol: 2e-2,
        });
    }
    // an Adam update of a bf16 parameter: one fused kernel with three results (the new
    // parameter in bf16, the two fp32 moments)
    {
        let rule = Rule::Adam {
            lr: 0.01,
            b1: 0.9,
            b2: 0.999,
            eps: 1e-8,
            wd: 0.1,
        };
        let t = ty(&[37, 129], DType::BF16);
        let mut g = update_graph(rule, &t, DType::BF16, false, Span::new(0, 0, 1)).unwrap();
        optimize(&mut g, &Options::default(), &SourceMap::new()).unwrap();
        let fused: Vec<_> = g
            .ids()
            .filter(|id| matches!(g.op(*id), Some(Op::FusedElementwise { .. })))
            .collect();
        assert_eq!(fused.len(), 1, "one kernel");
        assert_eq!(g.result_types(fused[0]).len(), 3, "three results");
        let moments = (3..5)
            .map(|i| {
                tessera_runtime::unary(UnaryOp::Abs, &randn(&[37, 129], DType::F32, i)).unwrap()
            })
            .collect::<Vec<_>>();
        let scalar =
            |c: f64| Tensor::scalar(tessera_runtime::Scalar::Float(c), DType::F32).unwrap();
        out.push(Case {
            name: "multi-output fused update",
            graph: g,
            inputs: vec![
                randn(&[37, 129], DType::BF16, 1),
                randn(&[37, 129], DType::BF16, 2),
                moments[0].clone(),
                moments[1].clone(),
                scalar(1.0 - 0.9f64.powi(3)),
                scalar(1.0 - 0.999f64.powi(3)),
            ],
            tol: 1e-2,
        });
    }
    out
}

fn randn(shape: &[usize], d: DType, seed: i64) -> Tensor {
    Tensor::randn(shape, d, seed).unwrap()
}

/// Runs every case on `dev` and compares with the cpu; returns the kernels launched there.
fn suite(dev: &mut dyn Device) -> usize {
    let mut sources = SourceMap::new();
    sources.add("devices.tsr", "y = f(x)\n");
    let mut launched = 0;
    for case in cases() {
        let l = lower(&case.graph, &Directives::default(), Target::Sm90)
            .unwrap_or_else(|d| panic!("{}: {}", case.name, d.message));
        for c in &l.kernels {
            assert!(
                c.not_lowered.is_none(),
                "{}: kernel {} not lowered: {:?}",
                case.name,
                c.index,
                c.not_lowered
            );
        }
        let cpu = tessera_runtime::interp::run(&l.program.graph, &case.inputs, &[])
            .unwrap_or_else(|e| panic!("{}: cpu: {}", case.name, e.message));
        let mut here = 0;
        let mut hook = |id, operands: &[Tensor]| -> Option<Result<Vec<Tensor>, RuntimeError>> {
            let (k, c) = l.kernel_at(id)?;
            let t = c.target.as_ref()?;
            let ptx = (dev.code() == device::Code::Ptx)
                .then(|| PtxImage::print(t, Target::Sm90, &sources).unwrap());
            let x = Executable {
                lowered: t,
                ptx: ptx.as_ref(),
                spirv: None,
                op: Some(GraphOp {
                    graph: &l.program.graph,
                    root: id,
                    captures: &[],
                }),
            };
            match dev.launch(&x, operands, &l.program.graph.result_types(id)) {
                Ok(Some(Launched { outs, .. })) => {
                    here += 1;
                    Some(Ok(outs))
                }
                Ok(None) => None,
                Err(e) => panic!("{}: kernel {} failed: {e}", case.name, k.name),
            }
        };
        let got = tessera_runtime::interp::run_with(&l.program.graph, &case.inputs, &[], &mut hook)
            .unwrap_or_else(|e| panic!("{}: {}", case.name, e.message));
        assert_eq!(
            here,
            l.kernels.len(),
            "{}: every kernel runs on {}",
            case.name,
            dev.name()
        );
        launched += here;
        assert_eq!(cpu.len(), got.len(), "{}", case.name);
        for (a, b) in cpu.iter().zip(&got) {
            assert_eq!(a.shape(), b.shape(), "{}", case.name);
            assert!(
                allclose(a, b, case.tol, case.tol).unwrap(),
                "{} on {}: differs from the cpu",
                case.name,
                dev.name()
            );
        }
    }
    launched
}

#[test]
fn cpu_runs_the_suite() {
    let mut d = device::open("cpu").unwrap();
    assert_eq!(d.name(), "cpu");
    assert_eq!(d.code(), device::Code::None);
    assert!(suite(d.as_mut()) >= cases().len());
}

/// A cross-check of `checked` against the cpu, counting the launches it compared.
fn cross_suite(checked: &mut dyn Device, keep: Keep) -> (usize, usize) {
    let mut compared = 0;
    let mut compare = |_: &Executable, r: &[Tensor], c: Option<&Launched>| {
        let c = c.expect("a result from the checked device");
        assert_eq!(r.len(), c.outs.len());
        for (r, o) in r.iter().zip(&c.outs) {
            assert!(allclose(r, o, 2e-2, 2e-2).unwrap());
        }
        compared += 1;
        Ok(())
    };
    let mut cpu = device::Cpu;
    let mut cross = CrossCheck {
        reference: &mut cpu,
        checked,
        compare: &mut compare,
        keep,
    };
    assert_eq!(cross.name(), "emu");
    let launched = suite(&mut cross);
    (launched, compared)
}

#[test]
fn the_cross_check_is_a_device_that_wraps_two() {
    for keep in [Keep::Reference, Keep::Checked] {
        let (launched, compared) = cross_suite(&mut device::Emu, keep);
        assert!(launched >= cases().len());
        assert_eq!(launched, compared, "every launch is compared");
    }
}

/// The emulator with every result off by one.
struct OffByOne;

impl Device for OffByOne {
    fn entry(&self) -> &'static registry::Entry {
        registry::find("emu").unwrap()
    }
    fn launch(
        &mut self,
        k: &Executable,
        inputs: &[Tensor],
        outs: &[TensorType],
    ) -> Result<Option<Launched>, DeviceError> {
        let r = device::Emu.launch(k, inputs, outs)?;
        Ok(r.map(|l| Launched {
            outs: l
                .outs
                .iter()
                .map(|o| {
                    tessera_runtime::binary(BinaryOp::Add, o, tessera_runtime::Scalar::Float(1.0))
                        .unwrap()
                })
                .collect(),
            counters: l.counters,
        }))
    }
}

#[test]
fn a_cross_check_reports_what_its_comparison_finds() {
    let g = binary("add", BinaryOp::Add, ty(&[8], DType::F32));
    let l = lower(&g, &Directives::default(), Target::Sm90).unwrap();
    let k = &l.program.kernels[0];
    let x = Executable {
        lowered: l.kernels[0].target.as_ref().unwrap(),
        ptx: None,
        spirv: None,
        op: Some(GraphOp {
            graph: &l.program.graph,
            root: k.root,
            captures: &[],
        }),
    };
    let inputs = [randn(&[8], DType::F32, 1), randn(&[8], DType::F32, 2)];
    let mut compare = |_: &Executable, r: &[Tensor], c: Option<&Launched>| {
        if allclose(&r[0], &c.unwrap().outs[0], 1e-5, 1e-5).unwrap() {
            Ok(())
        } else {
            Err(DeviceError::Op(RuntimeError::new(
                tessera_runtime::Code::E0800,
                "apart",
            )))
        }
    };
    let (mut cpu, mut bad) = (device::Cpu, OffByOne);
    let mut cross = CrossCheck {
        reference: &mut cpu,
        checked: &mut bad,
        compare: &mut compare,
        keep: Keep::Reference,
    };
    match cross.launch(&x, &inputs, std::slice::from_ref(&k.ty)) {
        Err(DeviceError::Op(e)) => assert_eq!(e.message, "apart"),
        other => panic!(
            "expected the comparison's error, got {:?}",
            other.map(|_| ())
        ),
    }
    // the same launch against the emulator itself agrees and returns the cpu's result
    let mut emu = device::Emu;
    let mut cross = CrossCheck {
        reference: &mut cpu,
        checked: &mut emu,
        compare: &mut compare,
        keep: Keep::Reference,
    };
    let got = cross
        .launch(&x, &inputs, std::slice::from_ref(&k.ty))
        .unwrap()
        .unwrap();
    let cpu_alone = tessera_runtime::interp::run(&g, &inputs, &[]).unwrap();
    assert_eq!(
        got.outs[0].to_f64_vec().unwrap(),
        cpu_alone[0].to_f64_vec().unwrap()
    );
    assert!(
        got.counters.is_some(),
        "the checked device's counters come along"
    );
}

#[test]
fn emu_runs_the_suite() {
    let mut d = device::open("emu").unwrap();
    assert!(suite(d.as_mut()) >= cases().len());
}

#[test]
#[ignore = "needs an NVIDIA GPU: cargo test -p tessera-runtime --test devices -- --ignored"]
fn cuda_runs_the_suite() {
    let mut d = match device::open("cuda") {
        Ok(d) => d,
        Err(e) => panic!("no CUDA device opens: {e}"),
    };
    assert!(suite(d.as_mut()) >= cases().len());
}

#[test]
fn a_status_error_leaves_the_op_to_the_cpu() {
    // int32 division by zero: the kernel's status word is set, the device gives no result and
    // the interpreter's cpu evaluation reports the error
    let g = binary("div0", BinaryOp::FloorDiv, ty(&[4], DType::I32));
    let l = lower(&g, &Directives::default(), Target::Sm90).unwrap();
    let k = &l.program.kernels[0];
    let x = Executable {
        lowered: l.kernels[0].target.as_ref().unwrap(),
        ptx: None,
        spirv: None,
        op: None,
    };
    let ints = |v: Vec<i64>| Tensor::from_i64(&[4], v, DType::I32).unwrap();
    let inputs = [ints(vec![1, 2, 3, 4]), ints(vec![1, 0, 1, 1])];
    let r = device::Emu
        .launch(&x, &inputs, std::slice::from_ref(&k.ty))
        .unwrap();
    assert!(r.is_none());
    let cpu = tessera_runtime::interp::run(&g, &inputs, &[]);
    assert!(cpu.is_err());
}
