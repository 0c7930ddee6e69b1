//! `@op.kernel` and `@op.autotune`: kernel objects, their compile cache and their CPU run.
//!
//! Calling a kernel with tensors looks up its compile cache by signature — each tensor
//! argument's shape and dtype, the `repr` of each other argument (they are static, baked into
//! the trace), the target name and a hash of the function's source. A miss traces the body
//! (see [`crate::trace`]), runs the Graph IR pipeline and stores the result; a hit does neither.
//! Schedule directives are recorded by the trace, so they are a function of the key. Then the
//! optimised graph runs on the CPU ([`crate::exec`]).
//!
//! Called with traced tensors (from inside another kernel), a kernel is inlined.

use crate::schedule::Directives;
use crate::tensor::as_tensor;
use crate::trace::{as_sym, TraceCtx};
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::rc::Rc;
use tessera_compiler::graph::pipeline::{optimize, Options};
use tessera_compiler::graph::print::print;
use tessera_compiler::graph::{Fired, Graph, Op, TensorType, ValueId};
use tessera_compiler::pipeline::{lower, Lowered};
use tessera_compiler::schedule::Directives as SchedDirectives;
use tessera_compiler::target::Target;
use tessera_lang::diag::{Code, Diagnostic};
use tessera_lang::eval::{CallArgs, HostObject, HostResult, Interp, Value};
use tessera_lang::Span;
use tessera_runtime::Tensor;

mod devices;
mod session;

pub use session::{parse_target, DeviceKind, Session, DEFAULT_TARGET};

/// How the kernel's result is shaped.
#[derive(Clone, Debug, PartialEq)]
enum OutShape {
    One,
    Tuple(usize),
    List(usize),
}

/// A traced and optimised kernel.
pub struct Compiled {
    /// The graph as traced.
    pub traced: Graph,
    /// After the Graph IR passes.
    pub graph: Graph,
    pub fired: Fired,
    pub captures: Vec<Tensor>,
    pub directives: Directives,
    /// Schedule, Tile and Target IR of every kernel of `graph` for the session's target.
    pub lowered: Lowered,
    out: OutShape,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum ArgKey {
    Tensor(Vec<usize>, &'static str),
    Static(String),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    args: Vec<ArgKey>,
    kwargs: Vec<(String, ArgKey)>,
    target: Target,
    source: u64,
}

/// A function decorated with `@op.kernel`.
pub struct KernelObj {
    pub func: Value,
    pub name: String,
    /// `@op.autotune(cache=...)`: the cache name.
    pub autotune_cache: RefCell<Option<String>>,
    /// Decorated with `@op.autotune` (or the body calls `schedule.autotune`): tuned on the
    /// first call of each signature (see [`crate::autotune`]).
    pub autotune: Cell<bool>,
    session: Rc<Session>,
    cache: RefCell<HashMap<Key, Rc<Compiled>>>,
}

fn func_name(f: &Value) -> String {
    match f {
        Value::Function(func) => func.def.name.name.to_string(),
        Value::Native(n) => n.name.to_string(),
        other => other.type_name().to_string(),
    }
}

fn arg_key(v: &Value) -> ArgKey {
    match as_tensor(v) {
        Some(t) => ArgKey::Tensor(t.shape().to_vec(), t.dtype().name()),
        None => ArgKey::Static(v.repr()),
    }
}

/// A hash of the function's source text (its `def` line to the end of its body).
fn source_hash(it: &Interp, f: &Value) -> u64 {
    let mut h = DefaultHasher::new();
    if let Value::Function(func) = f {
        let lo = func.def.span.lo as usize;
        let hi = func
            .def
            .body
            .last()
            .map(|s| s.span.hi as usize)
            .unwrap_or(func.def.span.hi as usize);
        if let Some(file) = it.sources.get(func.def.span.file) {
            file.text.get(lo..hi).unwrap_or("").hash(&mut h);
        }
    }
    h.finish()
}

/// The span of parameter `i` (or keyword `name`) of `f`, else `fallback`.
fn param_span(f: &Value, i: Option<usize>, name: Option<&str>, fallback: Span) -> Span {
    if let Value::Function(func) = f {
        let p = match (i, name) {
            (Some(i), _) => func.def.params.get(i),
            (None, Some(n)) => func.def.params.iter().find(|p| &*p.name.name == n),
            (None, None) => None,
        };
        if let Some(p) = p {
            return p.name.span;
        }
    }
    fallback
}

fn is_tensor_like(v: &Value) -> bool {
    as_tensor(v).is_some()
}

/// Traces `f` with `args` and runs the Graph IR pipeline.
pub fn compile(
    it: &mut Interp,
    session: &Rc<Session>,
    f: &Value,
    args: &CallArgs,
) -> Result<Compiled, Diagnostic> {
    let name = func_name(f);
    let op_span = match f {
        Value::Function(func) => func.def.name.span,
        _ => args.span,
    };
    let ctx = TraceCtx::new(&name, op_span);
    let mut targs = CallArgs::new(args.span);
    for (i, (v, s)) in args.positional.iter().enumerate() {
        if let Some(t) = as_tensor(v) {
            let p = ctx.param(t, param_span(f, Some(i), None, *s))?;
            targs.positional.push((p, *s));
        } else {
            targs.positional.push((v.clone(), *s));
        }
    }
    for (k, v, s) in &args.keywords {
        if let Some(t) = as_tensor(v) {
            let p = ctx.param(t, param_span(f, None, Some(k), *s))?;
            targs.keywords.push((k.clone(), p, *s));
        } else {
            targs.keywords.push((k.clone(), v.clone(), *s));
        }
    }
    session.traces.borrow_mut().push(ctx.clone());
    let result = it.call(f, targs);
    session.traces.borrow_mut().pop();
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
                v.type_name()
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
    let mut traced = ctx.graph.borrow().clone();
    traced.outputs = outputs;
    let directives = ctx.directives.borrow().clone();
    let mut graph = traced.clone();
    let opts = Options {
        fusion: directives.fusion,
    };
    let fired = optimize(&mut graph, &opts, &it.sources).map_err(|e| {
        let d = e.to_diagnostic();
        if d.span.is_none() {
            d.at(args.span)
        } else {
            d
        }
    })?;
    let target = session.target.get();
    let lowered = lower(&graph, &sched_directives(&directives, args.span), target)?;
    let captures = ctx.captures.borrow().clone();
    Ok(Compiled {
        traced,
        graph,
        fired,
        captures,
        directives,
        lowered,
        out,
    })
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
    Ok(())
}

/// The warning for kernel `k` running on the cpu because it has no Target IR (or abstract
/// inputs), the first time only in a session.
fn cpu_fallback_warning(
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
fn dump_out(it: &mut Interp, level: &str, text: &str) {
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

/// The compiler's view of the `schedule.*` directives.
pub(crate) fn sched_directives(d: &Directives, span: Span) -> SchedDirectives {
    let u = |v: i64| u32::try_from(v).unwrap_or(u32::MAX);
    SchedDirectives {
        tile: d.tile.map(|(t, _)| t.map(u)),
        warp: d.tile.and_then(|(_, w)| w.map(|w| w.map(u))),
        tensor_cores: d.tensor_cores,
        stages: d.pipeline_stages.map(u),
        async_copy: d.async_copy,
        vectorize: d.vectorize.map(u),
        span: Some(span),
        tile_span: d.span_of("tile"),
        stages_span: d.span_of("pipeline_stages"),
        tensor_cores_span: d.span_of("use_tensor_cores"),
    }
}

/// Writes `DIR/<kernel>.ptx` for every kernel that reached Target IR.
fn emit_ptx(
    dir: &std::path::Path,
    l: &Lowered,
    target: Target,
    sources: &tessera_lang::SourceMap,
) -> Result<(), Diagnostic> {
    let io = |e: std::io::Error| {
        Diagnostic::new(Code::E0500, format!("--emit-ptx {}: {e}", dir.display()))
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    for c in &l.kernels {
        if let Some(t) = &c.target {
            let text = tessera_compiler::target::ptx::print_verified(&t.kernel, target, sources)
                .map_err(|e| e.to_diagnostic())?;
            std::fs::write(dir.join(format!("{}.ptx", t.kernel.name)), text).map_err(io)?;
        }
    }
    Ok(())
}

impl KernelObj {
    pub fn new(func: Value, session: Rc<Session>) -> KernelObj {
        KernelObj {
            name: func_name(&func),
            func,
            autotune_cache: RefCell::new(None),
            autotune: Cell::new(false),
            session,
            cache: RefCell::new(HashMap::new()),
        }
    }

    /// The compiled kernel for these arguments, from the cache or freshly compiled.
    pub fn compiled(&self, it: &mut Interp, args: &CallArgs) -> Result<Rc<Compiled>, Diagnostic> {
        let key = Key {
            args: args.positional.iter().map(|(v, _)| arg_key(v)).collect(),
            kwargs: args
                .keywords
                .iter()
                .map(|(k, v, _)| (k.to_string(), arg_key(v)))
                .collect(),
            target: self.session.target.get(),
            source: source_hash(it, &self.func),
        };
        if let Some(c) = self.cache.borrow().get(&key) {
            self.session.hits.set(self.session.hits.get() + 1);
            return Ok(c.clone());
        }
        self.session.misses.set(self.session.misses.get() + 1);
        let mut c = compile(it, &self.session, &self.func, args)?;
        if self.autotune.get() || c.directives.autotune.is_some() {
            self.tune(it, args, &mut c)?;
        }
        emit_dumps(it, &self.session, &c, args.span)?;
        let c = Rc::new(c);
        self.cache.borrow_mut().insert(key, c.clone());
        Ok(c)
    }

    /// Chooses the schedule of an autotuned kernel (the cache, else a search).
    fn tune(&self, it: &Interp, args: &CallArgs, c: &mut Compiled) -> Result<(), Diagnostic> {
        let tensors = args
            .positional
            .iter()
            .map(|(v, _)| v)
            .chain(args.keywords.iter().map(|(_, v, _)| v))
            .filter_map(as_tensor);
        let (shapes, dtypes) = tensors
            .map(|t| (t.shape().to_vec(), t.dtype().name().to_string()))
            .unzip();
        let source = match &self.func {
            Value::Function(func) => {
                let lo = func.def.span.lo as usize;
                let hi = func
                    .def
                    .body
                    .last()
                    .map_or(func.def.span.hi as usize, |s| s.span.hi as usize);
                it.sources
                    .get(func.def.span.file)
                    .and_then(|f| f.text.get(lo..hi))
                    .unwrap_or("")
                    .to_string()
            }
            _ => String::new(),
        };
        let sig = crate::autotune::Sig {
            op: self.name.clone(),
            shapes,
            dtypes,
            source: tessera_compiler::tune::cache::stable_hash(&source),
        };
        let base = sched_directives(&c.directives, args.span);
        let cache = self.autotune_cache.borrow().clone();
        if self.session.tune.borrow().timer.is_some() {
            *self.session.cuda_sources.borrow_mut() = it.sources.clone();
        }
        crate::autotune::tune(&self.session, sig, cache.as_deref(), &base, c, args.span)
    }

    fn invoke(&self, it: &mut Interp, args: CallArgs) -> Result<Value, Diagnostic> {
        let traced_arg = args.positional.iter().any(|(v, _)| as_sym(v).is_some())
            || args.keywords.iter().any(|(_, v, _)| as_sym(v).is_some());
        if traced_arg {
            // Inside another kernel's trace: inline the body.
            return it.call(&self.func, args);
        }
        if crate::dist::call_is_sharded(&args) {
            return self.invoke_on_mesh(it, args);
        }
        let c = self.compiled(it, &args)?;
        let inputs: Vec<Tensor> = args
            .positional
            .iter()
            .map(|(v, _)| v)
            .chain(args.keywords.iter().map(|(_, v, _)| v))
            .filter(|v| is_tensor_like(v))
            .filter_map(|v| as_tensor(v).cloned())
            .collect();
        let on_emu = self.session.device.get() == DeviceKind::Emu;
        let on_cuda = self.session.device.get() == DeviceKind::Cuda;
        let profiling = self.session.profile.borrow().active;
        let outs = if let Some(mode) = crate::crosscheck::mode().map_err(|d| d.or_at(args.span))? {
            let device_results = match mode {
                crate::crosscheck::Checked::Emu => on_emu,
                crate::crosscheck::Checked::Cuda => on_cuda,
            };
            let checked = self.run_crosscheck(&c, &inputs, mode, device_results, &it.sources);
            // A profiled run still gets its rows: on emu the checked launches recorded their
            // counters; elsewhere the checked launch is timed again as the profiler times it
            // (the cross-check is a testing aid; it costs a second run).
            match checked {
                Ok(outs) if profiling && on_emu => Ok(outs),
                Ok(_) if profiling && on_cuda => self.run_cuda(it, &c, &inputs),
                Ok(_) if profiling => {
                    crate::profile::run_cpu(&self.session, &c, &inputs, &it.sources)
                }
                other => other,
            }
        } else if on_cuda {
            self.run_cuda(it, &c, &inputs)
        } else if on_emu {
            self.run_emu(it, &c, &inputs)
        } else if profiling {
            crate::profile::run_cpu(&self.session, &c, &inputs, &it.sources)
        } else {
            crate::exec::run(&c.graph, &inputs, &c.captures)
        }
        .map_err(|d| d.or_at(args.span))?;
        let vals: Vec<Value> = outs.into_iter().map(crate::tensor::tensor_value).collect();
        Ok(match c.out {
            OutShape::One => vals.into_iter().next().unwrap_or(Value::None),
            OutShape::Tuple(_) => Value::tuple(vals),
            OutShape::List(_) => Value::list(vals),
        })
    }
}

impl KernelObj {
    /// A call with sharded arguments: the body runs on the mesh, each op per device with the
    /// collectives its partitioning rule needs (see [`crate::dist`]); `--dump schedule` prints
    /// the mesh Schedule IR of the call.
    fn invoke_on_mesh(&self, it: &mut Interp, args: CallArgs) -> Result<Value, Diagnostic> {
        let s = &self.session;
        s.on_mesh.set(s.on_mesh.get() + 1);
        crate::dist::open_log();
        let r = it
            .call(&self.func, args)
            .and_then(crate::dist::settle_value);
        let program = crate::dist::close_log();
        s.on_mesh.set(s.on_mesh.get().saturating_sub(1));
        if s.dump.iter().any(|d| d == "schedule") {
            let text = format!("// kernel {} on a mesh\n{}", self.name, program.print());
            dump_out(it, "schedule", &text);
        }
        r
    }
}

impl HostObject for KernelObj {
    fn type_name(&self) -> &'static str {
        "kernel"
    }
    fn repr(&self) -> String {
        format!("<kernel {}>", self.name)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn call(&self, _this: &Value, it: &mut Interp, args: CallArgs) -> HostResult {
        Some(self.invoke(it, args))
    }
    fn get_attr(
        &self,
        _this: &Value,
        name: &str,
        _it: &mut Interp,
    ) -> Result<Option<Value>, Diagnostic> {
        Ok(match name {
            "__name__" => Some(Value::str(&self.name)),
            "autotune_cache" => Some(match &*self.autotune_cache.borrow() {
                Some(c) => Value::str(c),
                None => Value::None,
            }),
            _ => None,
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["__name__", "autotune_cache"]
    }
}

fn check_callable(v: &Value, span: Span, what: &str) -> Result<(), Diagnostic> {
    match v {
        Value::Function(_) => Ok(()),
        other => Err(Diagnostic::new(
            Code::E0101,
            format!("{what} decorates a function, not {}", other.type_name()),
        )
        .at(span)),
    }
}

/// `op.kernel`: the decorator.
pub fn kernel_decorator(session: Rc<Session>) -> Value {
    Value::native("kernel", "kernel(f)", move |_, args| {
        let a = args.bind("kernel", &["f"], &[])?;
        let Some(f) = a.into_iter().flatten().next() else {
            return Ok(Value::None);
        };
        if f.value.downcast::<KernelObj>().is_some() {
            return Ok(f.value);
        }
        check_callable(&f.value, f.span, "@op.kernel")?;
        Ok(Value::host(KernelObj::new(f.value, session.clone())))
    })
}

fn with_autotune(
    session: &Rc<Session>,
    f: Value,
    span: Span,
    cache: Option<String>,
) -> Result<Value, Diagnostic> {
    if let Some(k) = f.downcast::<KernelObj>() {
        *k.autotune_cache.borrow_mut() = cache;
        k.autotune.set(true);
        return Ok(f);
    }
    check_callable(&f, span, "@op.autotune")?;
    let k = KernelObj::new(f, session.clone());
    *k.autotune_cache.borrow_mut() = cache;
    k.autotune.set(true);
    Ok(Value::host(k))
}

/// `op.autotune(cache=None)`: a decorator factory (or, given a function, the decorator itself);
/// alone it implies `@op.kernel`. The kernel is tuned on its first call per signature.
pub fn autotune_decorator(session: Rc<Session>) -> Value {
    Value::native("autotune", "autotune(cache=None)", move |_, args| {
        if args.positional.len() == 1 && args.keywords.is_empty() {
            if let Some((f, s)) = args.positional.first() {
                if matches!(f, Value::Function(_)) || f.downcast::<KernelObj>().is_some() {
                    return with_autotune(&session, f.clone(), *s, None);
                }
            }
        }
        let a = args.bind("autotune", &[], &["cache"])?;
        let cache = match a.into_iter().flatten().next() {
            Some(x) => match &x.value {
                Value::Str(s) if crate::autotune::valid_cache_name(s) => Some(s.to_string()),
                Value::Str(s) => {
                    return Err(Diagnostic::new(
                        Code::E0101,
                        format!(
                            "cache name '{s}' must be a plain file name (letters, digits, _ - .)"
                        ),
                    )
                    .at(x.span)
                    .with_help("the cache is the file NAME.json in $TESSERA_CACHE_DIR"))
                }
                Value::None => None,
                other => {
                    return Err(Diagnostic::new(
                        Code::E0101,
                        format!("cache must be a str, not {}", other.type_name()),
                    )
                    .at(x.span))
                }
            },
            None => None,
        };
        let s = session.clone();
        Ok(Value::native(
            "autotune",
            "autotune decorator",
            move |_, args| {
                let a = args.bind("autotune", &["f"], &[])?;
                let Some(f) = a.into_iter().flatten().next() else {
                    return Ok(Value::None);
                };
                with_autotune(&s, f.value, f.span, cache.clone())
            },
        ))
    })
}
