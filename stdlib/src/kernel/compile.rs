//! Compiling a kernel call: tracing, the compiler pipeline, IR dumps, the PTX written out.

use super::*;

/// A traced call: the Graph IR as traced (differentiated for a gradient), what it captured,
/// its directives and how its result is shaped.
pub struct Traced {
    pub graph: Graph,
    pub captures: Vec<Tensor>,
    /// The sharded tensors the body captured, in the order of their graph params (after the
    /// arguments' params).
    pub sharded: Vec<Value>,
    pub directives: Directives,
    pub(super) out: OutShape,
}

impl Traced {
    /// The kernel's result from its output values, shaped like the traced function's.
    pub fn shape_result(&self, vals: Vec<Value>) -> Value {
        shape_result(&self.out, vals)
    }

    /// The position of the first gradient among the graph's outputs (after the value that
    /// `graph.value_and_grad` returns too); the output count when there are none.
    pub fn first_grad(&self) -> usize {
        match self.out {
            OutShape::Grad { value, .. } => usize::from(value),
            _ => self.graph.outputs.len(),
        }
    }
}

/// Traces `f` with `args` and runs the Graph IR pipeline.
pub fn compile(
    it: &mut Interp,
    session: &Rc<Session>,
    f: &Value,
    args: &CallArgs,
    grad: Option<&GradSpec>,
) -> Result<Compiled, Diagnostic> {
    let t = trace_call(it, f, args, grad)?;
    compile_traced(it, session, t, args.span)
}

/// Runs the Graph IR pipeline and the lowering on a traced call.
pub fn compile_traced(
    it: &mut Interp,
    session: &Session,
    t: Traced,
    span: Span,
) -> Result<Compiled, Diagnostic> {
    if !t.sharded.is_empty() {
        return Err(reads_sharded(span));
    }
    let Traced {
        graph: traced,
        captures,
        directives,
        out,
        ..
    } = t;
    let mut graph = traced.clone();
    let target = session.target.get();
    let opts = Options {
        fusion: directives.fusion,
        target,
    };
    let fired = optimize(&mut graph, &opts, &it.sources).map_err(|e| {
        let d = e.to_diagnostic();
        if d.span.is_none() {
            d.at(span)
        } else {
            d
        }
    })?;
    let lowered = lower(&graph, &directives.at_call(span), target)?;
    Ok(Compiled::new(
        KernelCode {
            traced,
            graph,
            fired,
            directives,
            lowered,
            out,
            ptx: RefCell::default(),
        },
        captures,
    ))
}

/// Compiles a graph built by the runtime itself (an optimizer's update, [`crate::optim`]) like a
/// traced kernel: the Graph IR pipeline, lowering for the session's target, the dumps; its
/// result is the tuple of the graph's outputs. Errors without a span are put at `span`.
pub fn compile_graph(
    it: &mut Interp,
    session: &Session,
    graph: Graph,
    span: Span,
) -> Result<Compiled, Diagnostic> {
    let traced = graph;
    let mut graph = traced.clone();
    let fired = optimize(&mut graph, &Options::default(), &it.sources)
        .map_err(|e| e.to_diagnostic().or_at(span))?;
    let directives = Directives::default();
    let lowered = lower(&graph, &directives.at_call(span), session.target.get())?;
    let out = OutShape::Tuple(graph.outputs.len());
    let c = Compiled::new(
        KernelCode {
            traced,
            graph,
            fired,
            directives,
            lowered,
            out,
            ptx: RefCell::default(),
        },
        vec![],
    );
    emit_dumps(it, session, &c, span)?;
    Ok(c)
}

/// Traces `f` with `args` (tensor arguments become the graph's params, in order) and, for a
/// gradient, differentiates the traced graph.
pub fn trace_call(
    it: &mut Interp,
    f: &Value,
    args: &CallArgs,
    grad: Option<&GradSpec>,
) -> Result<Traced, Diagnostic> {
    let (t, param_of) = trace_body(it, f, args, grad.is_some())?;
    match grad {
        Some(spec) => differentiate(t, &param_of, args, spec),
        None => Ok(t),
    }
}

/// Traces `f`'s body with `args`: the graph as recorded (not differentiated), and the graph
/// param of each positional argument that is a tensor.
pub(super) fn trace_body(
    it: &mut Interp,
    f: &Value,
    args: &CallArgs,
    grad: bool,
) -> Result<(Traced, Vec<Option<usize>>), Diagnostic> {
    let name = func_name(f);
    let op_span = match f {
        Value::Function(func) => func.def.name.span,
        _ => args.span,
    };
    let ctx = TraceCtx::new(&name, op_span);
    ctx.grad.set(grad);
    let mut targs = CallArgs::new(args.span);
    // the graph param of each positional argument that is a tensor
    let mut param_of: Vec<Option<usize>> = Vec::new();
    for (i, (v, s)) in args.positional.iter().enumerate() {
        if let Some(t) = as_tensor(v) {
            param_of.push(Some(param_of.iter().flatten().count()));
            let p = ctx.param(&t, param_span(f, Some(i), None, *s))?;
            targs.positional.push((p, *s));
        } else {
            param_of.push(None);
            targs.positional.push((v.clone(), *s));
        }
    }
    for (k, v, s) in &args.keywords {
        if let Some(t) = as_tensor(v) {
            let p = ctx.param(&t, param_span(f, None, Some(k), *s))?;
            targs.keywords.push((k.clone(), p, *s));
        } else {
            targs.keywords.push((k.clone(), v.clone(), *s));
        }
    }
    crate::tensor::trace::push_trace(ctx.clone());
    let result = {
        let _tracing = crate::tensor::trace::TracingGuard::enter();
        it.call(f, targs)
    };
    crate::tensor::trace::pop_trace();
    ctx.active.set(false);
    let ret = result?;
    let (items, out) = match &ret {
        Value::Tuple(t) => (t.as_ref().clone(), OutShape::Tuple(t.len())),
        Value::List(l) => {
            let v = l.borrow().clone();
            let n = v.len();
            (v, OutShape::List(n))
        }
        other => (vec![other.clone()], OutShape::One),
    };
    let mut outputs: Vec<ValueId> = Vec::new();
    for v in &items {
        if let Some(s) = as_sym(v) {
            if Rc::ptr_eq(&s.ctx, &ctx) {
                outputs.push(s.id);
                continue;
            }
        }
        if crate::tensor::sharded::as_sharded(v).is_some() {
            // A sharded tensor computed from captured ones: the call runs on their mesh.
            if let crate::tensor::trace::TArg::Sym(id, _) = ctx.sharded_param(v, op_span)? {
                outputs.push(id);
                continue;
            }
        }
        if let Some(t) = as_tensor(v) {
            // A concrete tensor returned as is: a capture.
            let index = {
                let mut c = ctx.captures.borrow_mut();
                c.push(t.clone());
                c.len() - 1
            };
            let ty = TensorType::new(t.shape().to_vec(), t.dtype());
            outputs.push(
                ctx.graph
                    .borrow_mut()
                    .push(Op::Capture { index }, ty, op_span),
            );
            continue;
        }
        return Err(Diagnostic::new(
            Code::E0101,
            format!(
                "a kernel must return a tensor or a tuple of tensors, not {}",
                crate::tensor::kind_name(v)
            ),
        )
        .at(args.span)
        .with_secondary(op_span, "this kernel"));
    }
    if outputs.is_empty() {
        return Err(
            Diagnostic::new(Code::E0101, "a kernel must return at least one tensor").at(args.span),
        );
    }
    // the trace has ended (`ctx.active` is false): its record is taken, not copied
    let mut graph = ctx.graph.replace(Graph::new(name.as_str()));
    graph.outputs = outputs;
    let directives = ctx.directives.borrow().clone();
    let captures = std::mem::take(&mut *ctx.captures.borrow_mut());
    let sharded = ctx
        .sharded
        .borrow()
        .iter()
        .map(|(v, _)| v.clone())
        .collect();
    Ok((
        Traced {
            graph,
            captures,
            sharded,
            directives,
            out,
        },
        param_of,
    ))
}

/// The gradient of a traced call: its graph differentiated with respect to the arguments
/// `spec.argnums` names.
pub(super) fn differentiate(
    t: Traced,
    param_of: &[Option<usize>],
    args: &CallArgs,
    spec: &GradSpec,
) -> Result<Traced, Diagnostic> {
    let Traced {
        graph: traced,
        captures,
        sharded,
        directives,
        ..
    } = t;
    let mut wrt = Vec::with_capacity(spec.argnums.len());
    for &k in &spec.argnums {
        match param_of.get(k) {
            Some(Some(p)) => wrt.push(*p),
            Some(None) => {
                let (v, s) = &args.positional[k];
                return Err(Diagnostic::new(
                        Code::E0101,
                        format!(
                            "argnums names argument {k}, a {}: gradients are taken with respect to tensors",
                            v.type_name()
                        ),
                    )
                    .at(*s));
            }
            None => {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!(
                        "argnums names argument {k}, but the call passes {} positional arguments",
                        args.positional.len()
                    ),
                )
                .at(args.span));
            }
        }
    }
    let traced =
        tessera_compiler::graph::autodiff::grad(&traced, &wrt, spec.with_value).map_err(|e| {
            let d = e.to_diagnostic();
            if d.span.is_none() {
                d.at(args.span)
            } else {
                d.with_secondary(args.span, "in this call of the gradient")
            }
        })?;
    let out = OutShape::Grad {
        value: spec.with_value,
        tuple: spec.tuple,
    };
    Ok(Traced {
        graph: traced,
        captures,
        sharded,
        directives,
        out,
    })
}

/// A kernel compiled for one device whose body reads sharded tensors: it runs on their mesh
/// when called, and has no one-device form to show or time.
pub(super) fn reads_sharded(span: Span) -> Diagnostic {
    Diagnostic::new(
        Code::E0400,
        "this function reads sharded tensors it captured: it runs on their mesh when called, \
         and has no one-device kernel to compile here",
    )
    .at(span)
    .with_note("pass the sharded tensors as arguments to compile it for one device")
}

/// `--dump LEVEL` and `--emit-ptx DIR` of a freshly compiled kernel (after autotuning, so the
/// IR shown is the IR that runs).
pub fn emit_dumps(
    it: &mut Interp,
    session: &Session,
    c: &Compiled,
    span: Span,
) -> Result<(), Diagnostic> {
    if session.dump.iter().any(|d| d == "graph") {
        let text = print(&c.graph, &it.sources);
        dump_out(it, "graph", &text);
    }
    for level in &session.dump {
        if level != "graph" {
            let text = c.lowered.text(level, &it.sources)?;
            dump_out(it, level, &text);
        }
    }
    if let Some(dir) = &session.emit_ptx {
        let target = session.target.get();
        emit_ptx(dir, &c.lowered, target, &it.sources).map_err(|d| d.or_at(span))?;
    }
    if let Some(dir) = &*session.emit_spirv.borrow() {
        emit_spirv(dir, &c.lowered).map_err(|d| d.or_at(span))?;
    }
    Ok(())
}

/// The warning for kernel `k` running on the cpu because it has no Target IR (or abstract
/// inputs), the first time only in a session.
pub(super) fn cpu_fallback_warning(
    session: &Session,
    k: &tessera_compiler::schedule::Kernel,
    ck: &tessera_compiler::pipeline::Compiled,
) -> Option<String> {
    session.warned.borrow_mut().insert(k.name.clone()).then(|| {
        format!(
            "warning: kernel '{}' ({}) is not lowered to Target IR yet ({}); it runs on the cpu\n",
            k.name,
            k.kind.name(),
            ck.not_lowered.as_deref().unwrap_or("abstract inputs")
        )
    })
}

/// Where `--dump LEVEL` goes: stderr, or appended to the file `$TESSERA_DUMP_DIR/LEVEL` when
/// that variable is set (`tessera test` snapshots keep dumps apart from the script's stderr).
/// "stderr" is the interpreter's error sink: a notebook session shows it as its stderr stream.
pub(super) fn dump_out(it: &mut Interp, level: &str, text: &str) {
    match std::env::var_os("TESSERA_DUMP_DIR") {
        Some(dir) if !dir.is_empty() => {
            use std::io::Write as _;
            let path = std::path::Path::new(&dir).join(level);
            let r = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut f| f.write_all(text.as_bytes()));
            if let Err(e) = r {
                it.write_err(&format!(
                    "warning: TESSERA_DUMP_DIR: cannot write {}: {e}\n",
                    path.display()
                ));
            }
        }
        _ => it.write_err(text),
    }
}

/// Writes `DIR/<kernel>.ptx` for every kernel that reached Target IR.
pub(super) fn emit_ptx(
    dir: &std::path::Path,
    l: &Lowered,
    target: Target,
    sources: &tessera_lang::SourceMap,
) -> Result<(), Diagnostic> {
    let io = |e: std::io::Error| {
        Diagnostic::new(Code::E0500, format!("--emit-ptx {}: {e}", dir.display()))
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    if target.is_spirv() {
        return Ok(());
    }
    for c in &l.kernels {
        if let Some(t) = &c.target {
            let text =
                tessera_compiler::backend::ptx::print::print_verified(&t.kernel, target, sources)
                    .map_err(|e| e.to_diagnostic())?;
            std::fs::write(dir.join(format!("{}.ptx", t.kernel.name)), text).map_err(io)?;
            // the compiler's register estimate beside it (tests compare it with ptxas')
            let regs = tessera_compiler::cost::regs::estimate(&t.kernel);
            std::fs::write(
                dir.join(format!("{}.regs", t.kernel.name)),
                format!("{regs}\n"),
            )
            .map_err(io)?;
        }
    }
    Ok(())
}

/// Writes `DIR/<kernel>.spv` for every kernel translated to SPIR-V (the spirv target).
pub(super) fn emit_spirv(dir: &std::path::Path, l: &Lowered) -> Result<(), Diagnostic> {
    let io = |e: std::io::Error| {
        Diagnostic::new(Code::E0500, format!("--emit-spirv {}: {e}", dir.display()))
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    for c in &l.kernels {
        if let Some(s) = &c.spirv {
            // named after the kernel: every module's entry point is `main`
            let kernel = l.program.kernels.get(c.index).map(|k| k.name.as_str());
            let kernel = kernel.unwrap_or(tessera_compiler::backend::spirv::ENTRY);
            // an ASCII file name, as --emit-ptx writes (a kernel may be named `核函数`)
            let kernel = tessera_compiler::backend::ptx::ptx_name(kernel);
            let bytes: Vec<u8> = s.words.iter().flat_map(|w| w.to_le_bytes()).collect();
            std::fs::write(dir.join(format!("{kernel}.spv")), bytes).map_err(io)?;
            if let Some(w) = &s.shared_warps {
                let bytes: Vec<u8> = w.iter().flat_map(|w| w.to_le_bytes()).collect();
                let name = format!("{kernel}.shared-warps.spv");
                std::fs::write(dir.join(name), bytes).map_err(io)?;
            }
        }
    }
    Ok(())
}
