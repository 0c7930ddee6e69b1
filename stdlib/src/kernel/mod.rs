//! `@op.kernel` and `@op.autotune`: kernel objects, their compile cache and their CPU run.
//!
//! Every call traces the body (see [`crate::tensor::trace`]): what the body reads besides its
//! arguments — captured tensors, scalars, dict entries, a helper's globals — may have changed
//! since the last call, and a kernel equals its eager body on every call (SPEC §5). The compile
//! cache is keyed by the trace (a fingerprint of its graph, directives and result shape, then
//! compared in full), the target and the function's source: a hit skips the Graph IR pipeline
//! and the lowering, and the call runs the cached code on this trace's captured tensors, which
//! are operands of the code, never baked into it. Static arguments act through the trace too
//! (a scalar is a `const`, a tensor inside a container a capture).
//!
//! Called with traced tensors (from inside another kernel), a kernel is inlined.

use crate::tensor::as_tensor;
use crate::tensor::trace::{as_sym, TraceCtx};
use std::cell::{Cell, RefCell};
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::rc::Rc;
use tessera_compiler::backend::ptx::Target;
use tessera_compiler::graph::pipeline::{optimize, Options};
use tessera_compiler::graph::print::print;
use tessera_compiler::graph::{Fired, Graph, Op, TensorType, ValueId};
use tessera_compiler::pipeline::{lower, Lowered};
use tessera_compiler::schedule::Directives;
use tessera_lang::diag::{Code, Diagnostic};
use tessera_lang::eval::{AttrResult, CallArgs, HostObject, HostResult, Interp, Value};
use tessera_lang::Span;
use tessera_runtime::device::Keep;
use tessera_runtime::Tensor;

mod compile;
mod decorators;
mod devices;
mod per_device;
mod tree_grad;
pub use compile::*;
pub use decorators::*;

use crate::session::Session;

/// How the kernel's result is shaped.
#[derive(Clone, Debug, PartialEq, Hash)]
enum OutShape {
    One,
    Tuple(usize),
    List(usize),
    /// `graph.grad` / `graph.value_and_grad`: the value first when `value`, then the
    /// gradients, as a tuple when `argnums` was a tuple.
    Grad {
        value: bool,
        tuple: bool,
    },
}

/// What `graph.grad(f, argnums)` / `graph.value_and_grad` differentiate.
#[derive(Clone, Debug, PartialEq)]
pub struct GradSpec {
    /// The positional arguments to differentiate with respect to.
    pub argnums: Vec<usize>,
    /// `argnums` was a tuple: the gradients come back as a tuple.
    pub tuple: bool,
    /// `value_and_grad`: the function's value comes first.
    pub with_value: bool,
}

/// A traced and optimised kernel: its code (shared by every call whose trace is the same) and
/// the tensors this call's trace captured.
pub struct Compiled {
    pub code: Rc<KernelCode>,
    /// The concrete tensors the body read (its [`Op::Capture`] values), from this call's trace:
    /// they are operands of the compiled code, never part of it.
    pub captures: Vec<Tensor>,
}

impl std::ops::Deref for Compiled {
    type Target = KernelCode;
    fn deref(&self) -> &KernelCode {
        &self.code
    }
}

/// What a traced call compiles to.
pub struct KernelCode {
    /// The graph as traced.
    pub traced: Graph,
    /// After the Graph IR passes.
    pub graph: Graph,
    pub fired: Fired,
    pub directives: Directives,
    /// Schedule, Tile and Target IR of every kernel of `graph` for the session's target.
    pub lowered: Lowered,
    out: OutShape,
    /// The PTX of each kernel (by root) once it has been printed for a GPU launch.
    ptx: RefCell<HashMap<ValueId, Rc<tessera_runtime::device::PtxImage>>>,
}

impl Compiled {
    pub fn new(code: KernelCode, captures: Vec<Tensor>) -> Compiled {
        Compiled {
            code: Rc::new(code),
            captures,
        }
    }

    /// Replaces the lowered kernels (an autotuned schedule) and forgets their PTX.
    pub fn set_lowered(&mut self, l: Lowered) {
        match Rc::get_mut(&mut self.code) {
            Some(code) => {
                code.lowered = l;
                code.ptx.borrow_mut().clear();
            }
            None => {
                let c = &self.code;
                self.code = Rc::new(KernelCode {
                    traced: c.traced.clone(),
                    graph: c.graph.clone(),
                    fired: c.fired.clone(),
                    directives: c.directives.clone(),
                    lowered: l,
                    out: c.out.clone(),
                    ptx: RefCell::default(),
                });
            }
        }
    }
}

impl KernelCode {
    /// The PTX of the kernel rooted at `root` (Target IR `t`), printed on its first GPU launch
    /// and kept with the compiled kernel.
    pub fn ptx_image(
        &self,
        root: ValueId,
        t: &tessera_compiler::backend::ptx::Lowered,
        sources: &tessera_lang::SourceMap,
    ) -> Result<Rc<tessera_runtime::device::PtxImage>, Diagnostic> {
        if let Some(p) = self.ptx.borrow().get(&root) {
            return Ok(p.clone());
        }
        let p = tessera_runtime::device::PtxImage::print(t, self.lowered.program.target, sources)
            .map_err(|e| e.to_diagnostic())?;
        let p = Rc::new(p);
        self.ptx.borrow_mut().insert(root, p.clone());
        Ok(p)
    }
}

/// The compile cache's key: the fingerprint of a call's trace, the target and the source.
/// Every value the body read is in its trace (a scalar as a `const`, a tensor as a `capture`
/// of its type, a static argument as whatever it made the body record), so two calls with the
/// same trace compute the same function of their params and captures.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    trace: u64,
    target: Target,
    source: u64,
}

/// One compiled trace in the cache: the trace it was compiled from (compared in full on a
/// lookup, so that a fingerprint collision cannot reuse another trace's code) and its code.
struct Entry {
    graph: Graph,
    directives: Directives,
    out: OutShape,
    code: Rc<KernelCode>,
}

/// The fingerprint of a trace: its graph's structure and constants ([`Graph::fingerprint`]),
/// directives and result shape.
fn trace_fingerprint(t: &Traced) -> u64 {
    let mut h = DefaultHasher::new();
    t.graph.fingerprint(&mut h);
    t.out.hash(&mut h);
    h.finish()
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
    /// The compiled traces, held by the session's engine.
    cache: tessera_runtime::device::engine::KernelCache<Key, Entry>,
    /// `graph.grad(f)`: the kernel computes `f`'s gradient (the traced graph differentiated).
    pub grad: Option<GradSpec>,
    /// Calls with sharded arguments: the per-device kernels of each signature, or `None`
    /// where the call runs op by op ([`per_device`]).
    mesh_plans: RefCell<HashMap<String, Option<Rc<per_device::MeshPlan>>>>,
    /// A gradient called with lists, tuples or dicts of tensors: the gradient kernel of the
    /// flattened call, per structure of the arguments ([`tree_grad`]).
    flat: RefCell<HashMap<String, Rc<KernelObj>>>,
}

fn func_name(f: &Value) -> String {
    match f {
        Value::Function(func) => func.def.name.name.to_string(),
        Value::Native(n) => n.name.to_string(),
        other => match other.downcast::<KernelObj>() {
            Some(k) => k.name.clone(),
            None => other.type_name().to_string(),
        },
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

impl KernelObj {
    pub fn new(func: Value, session: Rc<Session>) -> KernelObj {
        KernelObj {
            name: func_name(&func),
            func,
            autotune_cache: RefCell::new(None),
            autotune: Cell::new(false),
            cache: session.engine.kernel_cache(),
            session,
            grad: None,
            mesh_plans: RefCell::new(HashMap::new()),
            flat: RefCell::new(HashMap::new()),
        }
    }

    /// `graph.grad(f, …)` of a function (or of a kernel's function).
    pub fn gradient(func: Value, session: Rc<Session>, spec: GradSpec) -> KernelObj {
        let mut k = KernelObj::new(func, session);
        k.name = format!(
            "{}_{}",
            if spec.with_value {
                "value_and_grad"
            } else {
                "grad"
            },
            k.name
        );
        k.grad = Some(spec);
        k
    }

    /// The compiled kernel for these arguments, from the cache or freshly compiled.
    ///
    /// Every call traces the body again: what it reads (captured tensors, scalars, dict
    /// entries, helpers' globals) may have changed since the last call, and the trace is what
    /// the kernel computes. The cache then skips the compiler when the trace is one it has
    /// compiled, and the call runs that code on this trace's captures.
    pub fn compiled(&self, it: &mut Interp, args: &CallArgs) -> Result<Rc<Compiled>, Diagnostic> {
        if let Some((k, flat, _)) = self.flat_gradient(args)? {
            return k.compiled(it, &flat);
        }
        let (t, param_of) = trace_body(it, &self.func, args, self.grad.is_some())?;
        self.compiled_trace(it, args, t, &param_of)
    }

    /// The compiled kernel of a call traced as `t`, from the cache or freshly compiled.
    fn compiled_trace(
        &self,
        it: &mut Interp,
        args: &CallArgs,
        t: Traced,
        param_of: &[Option<usize>],
    ) -> Result<Rc<Compiled>, Diagnostic> {
        if !t.sharded.is_empty() {
            return Err(reads_sharded(args.span));
        }
        let key = Key {
            trace: trace_fingerprint(&t),
            target: self.session.target.get(),
            source: source_hash(it, &self.func),
        };
        let hit = self.cache.find(&key, |e| {
            (e.graph.same_trace(&t.graph) && e.directives == t.directives && e.out == t.out)
                .then(|| e.code.clone())
        });
        if let Some(code) = hit {
            self.session.engine.hit();
            return Ok(Rc::new(Compiled {
                code,
                captures: t.captures,
            }));
        }
        self.session.engine.miss();
        let graph = t.graph.clone();
        let directives = t.directives.clone();
        let out = t.out.clone();
        let t = match &self.grad {
            Some(spec) => differentiate(t, param_of, args, spec)?,
            None => t,
        };
        let mut c = compile_traced(it, &self.session, t, args.span)?;
        if self.autotune.get() || c.directives.autotune.is_some() {
            self.tune(it, args, &mut c)?;
        }
        emit_dumps(it, &self.session, &c, args.span)?;
        self.cache.insert(
            key,
            Entry {
                graph,
                directives,
                out,
                code: c.code.clone(),
            },
        );
        Ok(Rc::new(c))
    }

    /// Chooses the schedule of an autotuned kernel (the cache, else a search).
    fn tune(&self, it: &mut Interp, args: &CallArgs, c: &mut Compiled) -> Result<(), Diagnostic> {
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
        let base = c.directives.at_call(args.span);
        let cache = self.autotune_cache.borrow().clone();
        if self.session.tune.borrow().timer.is_some() {
            *self.session.tune_sources.borrow_mut() = it.sources.clone();
        }
        let code = crate::autotune::Tunable {
            graph: &c.graph,
            directives: &c.directives,
            lowered: &c.lowered,
        };
        let target = self.session.target.get();
        let st = &self.session.tune;
        let r = crate::autotune::tune(st, target, sig, cache.as_deref(), &base, code, args.span);
        crate::autotune::flush_warnings(it);
        if let Some(l) = r? {
            c.set_lowered(l);
        }
        Ok(())
    }

    fn invoke(&self, it: &mut Interp, args: CallArgs) -> Result<Value, Diagnostic> {
        if let Some((k, flat, regroup)) = self.flat_gradient(&args)? {
            let r = k.invoke(it, flat)?;
            return regroup.apply(r);
        }
        let traced_arg = args.positional.iter().any(|(v, _)| as_sym(v).is_some())
            || args.keywords.iter().any(|(_, v, _)| as_sym(v).is_some());
        if traced_arg {
            if self.grad.is_some() {
                // Inside another trace (a kernel, or an outer graph.grad): the gradient's
                // graph is traced on the arguments' shapes and inlined into the outer trace.
                return self.inline_gradient(it, args);
            }
            // Inside another kernel's trace: inline the body.
            return it.call(&self.func, args);
        }
        if crate::dist::call_is_sharded(&args) {
            if self.grad.is_some() {
                return self.gradient_on_mesh(it, args);
            }
            return self.invoke_on_mesh(it, args, true);
        }
        // placed operands on two devices are an error before anything is traced
        let at = crate::tensor::place::of_operands(
            args.positional
                .iter()
                .map(|(v, _)| v)
                .chain(args.keywords.iter().map(|(_, v, _)| v)),
        )
        .map_err(|d| d.at(args.span))?;
        let (t, param_of) = trace_body(it, &self.func, &args, self.grad.is_some())?;
        if !t.sharded.is_empty() {
            // The body reads sharded tensors it captured: the call runs on their mesh, as if
            // they had been passed (SPEC §8).
            if self.grad.is_some() {
                return self.gradient_on_mesh(it, args);
            }
            return self.invoke_on_mesh(it, args, false);
        }
        let c = self.compiled_trace(it, &args, t, &param_of)?;
        let inputs: Vec<Tensor> = args
            .positional
            .iter()
            .map(|(v, _)| v)
            .chain(args.keywords.iter().map(|(_, v, _)| v))
            .filter_map(as_tensor)
            .collect();
        let outs = run_compiled_at(&self.session, it, &c, &inputs, at, args.span)?;
        let vals: Vec<Value> = crate::tensor::place::within(at, || {
            outs.into_iter().map(crate::tensor::tensor_value).collect()
        });
        Ok(shape_result(&c.out, vals))
    }
}

/// Runs a compiled kernel on `inputs` on the device its placed operands are on (`at`), else
/// on the session's device ([`run_compiled`]): the session's engine switches to that device
/// for the call.
fn run_compiled_at(
    session: &Session,
    it: &mut Interp,
    c: &Compiled,
    inputs: &[Tensor],
    at: Option<crate::tensor::Place>,
    span: Span,
) -> Result<Vec<Tensor>, Diagnostic> {
    let here = session.engine.current();
    let Some(there) = at.map(|p| p.device).filter(|d| *d != here) else {
        return run_compiled(session, it, c, inputs, span);
    };
    let auto = session.engine.auto_chosen();
    session.engine.select(Some(there)).map_err(|u| {
        let how = format!(
            "a kernel on tensors on {}",
            crate::tensor::place::device_name(there)
        );
        u.device.unavailable(&how, &u.why).at(span)
    })?;
    let r = run_compiled(session, it, c, inputs, span);
    // back to the session's device, unless the call lost the device and fell back
    if session.engine.current() == there {
        let _ = session.engine.select(if auto { None } else { Some(here) });
    }
    r
}

/// Runs a compiled kernel on `inputs` on the session's device: the cpu's interpreter (timed
/// when profiling), the emulator or the GPU, or a cross-check (`TESSERA_CROSSCHECK`). Errors
/// without a span are put at `span` (the call).
pub(crate) fn run_compiled(
    session: &Session,
    it: &mut Interp,
    c: &Compiled,
    inputs: &[Tensor],
    span: Span,
) -> Result<Vec<Tensor>, Diagnostic> {
    let device = session.engine.current();
    // a device that launches kernels (not the cpu's interpreter); one that counts (emu)
    let launches = device.code != tessera_runtime::device::Code::None;
    let counts = device.counts;
    let profiling = session.profile.borrow().active;
    if let Some(checked) = crate::crosscheck::mode().map_err(|d| d.or_at(span))? {
        // The script sees the checked device's results when the session runs on it, else
        // the cpu's (its output is then the same as without the check).
        let keep = if checked.entry() == device {
            Keep::Checked
        } else {
            Keep::Reference
        };
        let run = devices::Run::Check { checked, keep };
        let outs = devices::run_device(session, it, c, inputs, run);
        // A profiled run still gets its rows: on emu checked by the emulator the checked
        // launches recorded their counters; elsewhere the call runs again as the profiler
        // times it (the cross-check is a testing aid; it costs a second run).
        match outs {
            Ok(outs) if profiling && counts && keep == Keep::Checked => Ok(outs),
            Ok(_) if profiling && launches => {
                devices::run_device(session, it, c, inputs, devices::Run::Device)
            }
            Ok(_) if profiling => crate::profile::run_cpu(
                &session.profile_sink(),
                (&c.graph, &c.captures, &c.lowered),
                inputs,
                &it.sources,
            ),
            other => other,
        }
    } else if launches {
        devices::run_device(session, it, c, inputs, devices::Run::Device)
    } else if profiling {
        crate::profile::run_cpu(
            &session.profile_sink(),
            (&c.graph, &c.captures, &c.lowered),
            inputs,
            &it.sources,
        )
    } else {
        session
            .engine
            .run(&c.graph, inputs, &c.captures)
            .map_err(Diagnostic::from)
    }
    .map_err(|d| d.or_at(span))
}

/// A kernel's result from its output values, in the shape the traced function returned.
fn shape_result(out: &OutShape, vals: Vec<Value>) -> Value {
    match *out {
        OutShape::One => vals.into_iter().next().unwrap_or(Value::None),
        OutShape::Tuple(_) => Value::tuple(vals),
        OutShape::List(_) => Value::list(vals),
        OutShape::Grad { value, tuple } => {
            let mut vals = vals.into_iter();
            let v = if value { vals.next() } else { None };
            let grads: Vec<Value> = vals.collect();
            let g = if tuple {
                Value::tuple(grads)
            } else {
                grads.into_iter().next().unwrap_or(Value::None)
            };
            match v {
                Some(v) => Value::tuple(vec![v, g]),
                None => g,
            }
        }
    }
}

impl KernelObj {
    /// A gradient called on traced tensors: traced on abstract tensors of their shapes, then
    /// its ops recorded into the trace the arguments belong to.
    fn inline_gradient(&self, it: &mut Interp, args: CallArgs) -> Result<Value, Diagnostic> {
        let outer = args
            .positional
            .iter()
            .map(|(v, _)| v)
            .chain(args.keywords.iter().map(|(_, v, _)| v))
            .find_map(as_sym)
            .map(|s| s.ctx.clone())
            .ok_or_else(|| Diagnostic::new(Code::E0500, "no traced argument").at(args.span))?;
        // traced arguments stand in as abstract tensors; their outer values, in param order
        let mut feeds: Vec<Value> = Vec::new();
        let mut stand_in = |v: &Value| match as_sym(v) {
            Some(sym) => {
                feeds.push(v.clone());
                crate::tensor::tensor_value(sym.aval.clone())
            }
            None => {
                if as_tensor(v).is_some() {
                    feeds.push(v.clone());
                }
                v.clone()
            }
        };
        let mut inner = CallArgs::new(args.span);
        for (v, s) in &args.positional {
            inner.positional.push((stand_in(v), *s));
        }
        for (k, v, s) in &args.keywords {
            inner.keywords.push((k.clone(), stand_in(v), *s));
        }
        let t = trace_call(it, &self.func, &inner, self.grad.as_ref())?;
        let outs =
            crate::tensor::trace::inline_graph(&outer, &t.graph, &t.captures, &feeds, args.span)?;
        Ok(t.shape_result(outs))
    }

    /// A gradient called with sharded arguments (data parallel): its graph is traced on the
    /// global shapes and run on the mesh by [`crate::dist::run_gradient`], which all-reduces
    /// the gradients' partial sums in buckets; `--dump schedule` prints the mesh Schedule IR.
    fn gradient_on_mesh(&self, it: &mut Interp, args: CallArgs) -> Result<Value, Diagnostic> {
        let s = &self.session;
        let global = crate::dist::plain_args(&args, false)?;
        let t = trace_call(it, &self.func, &global, self.grad.as_ref())?;
        // the graph's params: the tensor arguments, then the sharded tensors the body captured
        let params: Vec<Value> = args
            .positional
            .iter()
            .map(|(v, _)| v)
            .chain(args.keywords.iter().map(|(_, v, _)| v))
            .filter(|v| crate::tensor::sharded::as_sharded(v).is_some() || as_tensor(v).is_some())
            .chain(&t.sharded)
            .cloned()
            .collect();
        let bucket = t
            .directives
            .grad_bucket
            .map_or(crate::dist::GRAD_BUCKET_BYTES, |b| b.max(1));
        let overlap = t.directives.overlap.unwrap_or(true);
        s.on_mesh.set(s.on_mesh.get() + 1);
        crate::tensor::sharded::open_log(s);
        let r = crate::dist::run_gradient(
            &t.graph,
            &params,
            &t.captures,
            t.first_grad(),
            crate::dist::Buckets {
                bytes: bucket,
                overlap,
            },
            args.span,
        );
        let program = crate::tensor::sharded::close_log(s);
        s.on_mesh.set(s.on_mesh.get().saturating_sub(1));
        let (outs, ov) = r?;
        if s.profile.borrow().active {
            if let Some(n) = crate::dist::overlap_note(&program, &ov, &s.system()) {
                s.profile.borrow_mut().notes.push(n);
            }
        }
        if s.dump.iter().any(|d| d == "schedule") {
            let text = format!("// gradient {} on a mesh\n{}", self.name, program.print());
            dump_out(it, "schedule", &text);
        }
        Ok(t.shape_result(outs))
    }

    /// A call with sharded arguments (or whose body reads sharded tensors it captured): one
    /// compiled kernel per device when `per_device` and the call needs no communication
    /// ([`per_device`]), else the body runs on the mesh, each op per device with
    /// the collectives its partitioning rule needs (see [`crate::dist`]); `--dump schedule`
    /// prints the mesh Schedule IR of the call.
    fn invoke_on_mesh(
        &self,
        it: &mut Interp,
        args: CallArgs,
        per_device: bool,
    ) -> Result<Value, Diagnostic> {
        let s = &self.session.clone();
        s.on_mesh.set(s.on_mesh.get() + 1);
        crate::tensor::sharded::open_log(s);
        let planned = if per_device {
            self.per_device(it, &args)
        } else {
            Ok(None)
        };
        let r = match planned {
            Ok(Some(v)) => Ok(v),
            Ok(None) => it
                .call(&self.func, args)
                .and_then(crate::dist::settle_value),
            Err(e) => Err(e),
        };
        let program = crate::tensor::sharded::close_log(s);
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
    fn call(&self, _this: &Value, it: &mut Interp, args: CallArgs) -> HostResult {
        Some(self.invoke(it, args))
    }
    fn get_attr(&self, _this: &Value, name: &str, _it: &mut Interp) -> AttrResult {
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
