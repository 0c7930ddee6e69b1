//! The `graph` module: inspecting what the compiler makes of a kernel (SPEC §6).
//!
//! - `graph.trace(f, *args)` → the Graph IR as traced (a value that prints as the text);
//! - `graph.lower(f, *args, level="graph")` → str: the Graph IR after the Graph IR passes;
//!   `"schedule"` the Schedule IR, `"tile"`/`"target"`/`"ptx"`/`"spirv"` each kernel's Tile IR,
//!   Target IR, PTX or SPIR-V (disassembled; the spirv target) for `target.current()` (a kernel
//!   not lowered that far says why, as a comment);
//! - `graph.fusions(f, *args)` → the names of the rules that fired, in order;
//!   `explain=True` gives `(fired, missed)`, `missed` a list of `(rule, reason, "file:line:col")`;
//! - `graph.cache_stats()` → `(hits, misses)` of the kernel compile cache of the session;
//! - `graph.profile(f, *args, repeats=5, ptxas=True)` → the profile table of every kernel `f`
//!   launches (see [`crate::profile`]): `f` an `@op.kernel` is called with `args`; a plain
//!   function with arguments is compiled as a kernel (as `graph.trace` does) and launched;
//!   a plain function without arguments is called as host code (a whole step) and every kernel
//!   it launches is profiled. `repeats` runs of each launch are timed (the median is shown);
//!   `ptxas=False` uses the Target IR's register estimate even when ptxas is present.
//!
//! - `graph.run_tile(text, *args, grid=None)` → runs one kernel's Tile IR text on the emulator
//!   with the given tensors and returns its `out` tensors ([`run_tile`]);
//! - `graph.grad(f, argnums=0)`, `graph.value_and_grad(f, argnums=0)` → a kernel computing
//!   the gradient of `f`'s scalar result (SPEC §8), traced, differentiated on Graph IR
//!   ([`tessera_compiler::graph::autodiff`]), optimised and lowered like any kernel.
//!
//! `f` may be an `@op.kernel` (its compile cache is used, and counted) or a plain function
//! (traced afresh each time).

#[path = "run_tile.rs"]
mod run_tile;

use crate::kernel::{compile, Compiled, KernelObj};
use crate::session::Session;
use std::rc::Rc;
use tessera_compiler::graph::print::print;
use tessera_lang::diag::{Code, Diagnostic};
use tessera_lang::eval::{AttrResult, CallArgs, HostObject, Interp, Module, Value};

/// A Graph IR value: prints as its text.
pub struct GraphObj {
    pub text: String,
}

impl HostObject for GraphObj {
    fn type_name(&self) -> &'static str {
        "graph"
    }
    fn repr(&self) -> String {
        self.text.trim_end().to_string()
    }
    fn get_attr(&self, _this: &Value, name: &str, _it: &mut Interp) -> AttrResult {
        Ok(match name {
            "text" => Some(Value::str(&self.text)),
            _ => None,
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["text"]
    }
}

/// Keyword arguments a `graph` function keeps for itself: (name, value, span).
type Own = Vec<(String, Value, tessera_lang::Span)>;

/// Splits `f, *args` off a call, removing the keywords in `own` (returned separately).
fn split(fname: &str, args: &CallArgs, own: &[&str]) -> Result<(Value, CallArgs, Own), Diagnostic> {
    let Some((f, _)) = args.positional.first() else {
        return Err(Diagnostic::new(
            Code::E0101,
            format!("graph.{fname}() missing required argument 'f'"),
        )
        .at(args.span)
        .with_help(format!("the signature is graph.{fname}(f, *args)")));
    };
    let mut rest = CallArgs::new(args.span);
    rest.positional = args.positional.iter().skip(1).cloned().collect();
    let mut mine = Vec::new();
    for (k, v, s) in &args.keywords {
        if own.contains(&&**k) {
            mine.push((k.to_string(), v.clone(), *s));
        } else {
            rest.keywords.push((k.clone(), v.clone(), *s));
        }
    }
    Ok((f.clone(), rest, mine))
}

fn compiled(
    it: &mut Interp,
    session: &Rc<Session>,
    f: &Value,
    args: &CallArgs,
) -> Result<Rc<Compiled>, Diagnostic> {
    if let Some(k) = f.downcast::<KernelObj>() {
        return k.compiled(it, args);
    }
    match f {
        Value::Function(_) => {
            let c = compile(it, session, f, args, None)?;
            crate::kernel::emit_dumps(it, session, &c, args.span)?;
            Ok(Rc::new(c))
        }
        other => Err(Diagnostic::new(
            Code::E0101,
            format!("expected a kernel or a function, got {}", other.type_name()),
        )
        .at(args.span)),
    }
}

/// `graph.lower(...)`.
fn fn_lower(s: &Rc<Session>, it: &mut Interp, args: CallArgs) -> Result<Value, Diagnostic> {
    let (f, rest, own) = split("lower", &args, &["level"])?;
    let mut level = "graph".to_string();
    for (_, v, sp) in &own {
        match v {
            Value::Str(x) => level = x.to_string(),
            other => {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!("level must be a str, not {}", other.type_name()),
                )
                .at(*sp))
            }
        }
    }
    let lspan = own.first().map(|o| o.2).unwrap_or(args.span);
    match level.as_str() {
        "graph" | "schedule" | "tile" | "target" | "ptx" | "spirv" => {}
        _ => {
            return Err(
                Diagnostic::new(Code::E0101, format!("unknown level '{level}'"))
                    .at(lspan)
                    .with_help("levels are graph, schedule, tile, target, ptx, spirv"),
            )
        }
    }
    if crate::dist::call_is_sharded(&rest) {
        return lower_on_mesh(it, s, &f, &rest, &level);
    }
    let c = compiled(it, s, &f, &rest)?;
    if level == "graph" {
        return Ok(Value::str(print(&c.graph, &it.sources).trim_end()));
    }
    let text = c.lowered.text(&level, &it.sources)?;
    Ok(Value::str(text.trim_end()))
}

/// `graph.fusions(...)`.
fn fn_fusions(s: &Rc<Session>, it: &mut Interp, args: CallArgs) -> Result<Value, Diagnostic> {
    let (f, rest, own) = split("fusions", &args, &["explain"])?;
    let mut explain = false;
    for (_, v, sp) in &own {
        match v {
            Value::Bool(b) => explain = *b,
            other => {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!("explain must be a bool, not {}", other.type_name()),
                )
                .at(*sp))
            }
        }
    }
    let c = compiled(it, s, &f, &rest)?;
    if !explain {
        return Ok(Value::list(
            c.fired.rules.iter().map(|(r, _)| Value::str(r)).collect(),
        ));
    }
    let fired = Value::list(
        c.fired
            .rules
            .iter()
            .map(|(r, span)| {
                Value::tuple(vec![
                    Value::str(r),
                    Value::str(&c.fired.note(r, *span)),
                    Value::str(&describe(it, *span)),
                ])
            })
            .collect(),
    );
    let missed = Value::list(
        c.fired
            .near_misses
            .iter()
            .map(|n| {
                Value::tuple(vec![
                    Value::str(&n.rule),
                    Value::str(&n.reason),
                    Value::str(&describe(it, n.span)),
                ])
            })
            .collect(),
    );
    Ok(Value::tuple(vec![fired, missed]))
}

/// `graph.profile(...)`.
fn fn_profile(s: &Rc<Session>, it: &mut Interp, args: CallArgs) -> Result<Value, Diagnostic> {
    let (f, rest, own) = split("profile", &args, &["repeats", "ptxas", "top"])?;
    let mut repeats = 5usize;
    let mut ptxas = true;
    let mut top = Some(crate::profile::TOP_KERNELS);
    for (k, v, sp) in &own {
        match (k.as_str(), v) {
            ("repeats", Value::Int(n)) if *n >= 1 && *n <= 10_000 => repeats = *n as usize,
            ("repeats", Value::Int(n)) => {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!("repeats must be between 1 and 10000, got {n}"),
                )
                .at(*sp))
            }
            ("ptxas", Value::Bool(b)) => ptxas = *b,
            ("top", Value::None) => top = None,
            ("top", Value::Int(n)) if *n >= 1 => top = Some(*n as usize),
            ("top", Value::Int(n)) => {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!("top must be at least 1 (or None for every kernel), got {n}"),
                )
                .at(*sp))
            }
            (k, other) => {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!(
                        "{k} must be {}, not {}",
                        match k {
                            "ptxas" => "a bool",
                            "top" => "an int or None",
                            _ => "an int",
                        },
                        other.type_name()
                    ),
                )
                .at(*sp))
            }
        }
    }
    let notes_before = s.profile.borrow().notes.len();
    let prev = s.profile.borrow_mut().start(repeats, ptxas);
    let result = run_for_profile(it, s, &f, rest);
    let rows = s.profile.borrow_mut().finish(prev);
    let notes = s.profile.borrow_mut().notes.split_off(notes_before);
    result?;
    let target = s.target.get().name();
    let device = s.device();
    let mut t = crate::profile::table_top(
        &rows,
        Some(format!(
            "profile: device {device}, model for {target}, median of {repeats} run(s)"
        )),
        top,
    );
    t.add_notes(notes);
    Ok(Value::host(t))
}

/// Builds the `graph` module.
pub fn module(session: Rc<Session>) -> Module {
    let m = Module::new("graph", "inspect the compiler's view of a kernel");
    let s = session.clone();
    m.set(
        "trace",
        Value::native("trace", "trace(f, *args)", move |it, args| {
            let (f, rest, _) = split("trace", &args, &[])?;
            let c = compiled(it, &s, &f, &rest)?;
            Ok(Value::host(GraphObj {
                text: print(&c.traced, &it.sources),
            }))
        }),
    );
    let s = session.clone();
    m.set(
        "lower",
        Value::native(
            "lower",
            "lower(f, *args, level='graph')",
            move |it, args| fn_lower(&s, it, args),
        ),
    );
    let s = session.clone();
    m.set(
        "fusions",
        Value::native(
            "fusions",
            "fusions(f, *args, explain=False)",
            move |it, args| fn_fusions(&s, it, args),
        ),
    );
    let s = session.clone();
    m.set(
        "profile",
        Value::native(
            "profile",
            "profile(f, *args, repeats=5, ptxas=True, top=20)",
            move |it, args| fn_profile(&s, it, args),
        ),
    );
    for (name, with_value) in [("grad", false), ("value_and_grad", true)] {
        let s = session.clone();
        m.set(
            name,
            Value::native(name, &format!("{name}(f, argnums=0)"), move |_, args| {
                gradient(&s, name, with_value, args)
            }),
        );
    }
    m.set("run_tile", run_tile::native(session.clone()));
    let s = session;
    m.set(
        "cache_stats",
        Value::native("cache_stats", "cache_stats()", move |_, args| {
            args.bind("cache_stats", &[], &[])?;
            let (hits, misses) = s.engine.cache_counts();
            Ok(Value::tuple(vec![
                Value::Int(hits as i64),
                Value::Int(misses as i64),
            ]))
        }),
    );
    m
}

/// `graph.lower` of a call with sharded arguments: `"graph"` traces the body on the global
/// shapes; `"schedule"` runs it on abstract copies of the arguments (nothing is computed or
/// allocated) and prints the mesh Schedule IR (per-device kernels, collectives, overlap);
/// `"tile"`, `"target"`, `"ptx"` compile the body on one device's shard shapes.
fn lower_on_mesh(
    it: &mut Interp,
    session: &Rc<Session>,
    f: &Value,
    args: &CallArgs,
    level: &str,
) -> Result<Value, Diagnostic> {
    if level == "schedule" {
        let abs = crate::dist::abstract_args(args)?;
        // a kernel runs as itself: compiled per device when it needs no communication, else
        // its body op by op; a gradient runs its backward graph on the mesh
        let func = f.clone();
        session.on_mesh.set(session.on_mesh.get() + 1);
        crate::tensor::sharded::open_log(session);
        let r = it.call(&func, abs).and_then(crate::dist::settle_value);
        let program = crate::tensor::sharded::close_log(session);
        session.on_mesh.set(session.on_mesh.get().saturating_sub(1));
        r?;
        return Ok(Value::str(program.print().trim_end()));
    }
    let plain = crate::dist::plain_args(args, level != "graph")?;
    let c = compiled(it, session, f, &plain)?;
    if level == "graph" {
        return Ok(Value::str(print(&c.graph, &it.sources).trim_end()));
    }
    let text = c.lowered.text(level, &it.sources)?;
    Ok(Value::str(
        format!("// per-device kernel on one shard\n{}", text.trim_end()).trim_end(),
    ))
}

/// Calls what `graph.profile` profiles (see the module docs).
fn run_for_profile(
    it: &mut Interp,
    session: &Rc<Session>,
    f: &Value,
    args: CallArgs,
) -> Result<(), Diagnostic> {
    if f.downcast::<KernelObj>().is_some() || f.downcast::<crate::pipeline::PipelineObj>().is_some()
    {
        it.call(f, args)?;
        return Ok(());
    }
    match f {
        Value::Function(_)
            if (args.positional.is_empty() && args.keywords.is_empty())
                || crate::dist::call_is_sharded(&args) =>
        {
            it.call(f, args)?;
            Ok(())
        }
        Value::Function(_) => {
            let k = Value::host(KernelObj::new(f.clone(), session.clone()));
            it.call(&k, args)?;
            Ok(())
        }
        other => Err(Diagnostic::new(
            Code::E0101,
            format!("expected a kernel or a function, got {}", other.type_name()),
        )
        .at(args.span)),
    }
}

/// `file.tsr:line:col` with the file's base name.
fn describe(it: &Interp, span: tessera_lang::Span) -> String {
    let d = it.sources.describe(span);
    d.rsplit('/').next().unwrap_or(&d).to_string()
}

/// `graph.grad(f, argnums=0)` / `graph.value_and_grad(f, argnums=0)`: a kernel computing `f`'s
/// gradient with respect to positional argument `argnums` (an int, or a tuple of ints for a
/// tuple of gradients); see [`tessera_compiler::graph::autodiff`].
fn gradient(
    session: &Rc<Session>,
    name: &str,
    with_value: bool,
    args: CallArgs,
) -> Result<Value, Diagnostic> {
    let a = args.bind(name, &["f"], &["argnums"])?;
    let mut a = a.into_iter();
    let Some(f) = a.next().flatten() else {
        return Err(Diagnostic::new(
            Code::E0101,
            format!("graph.{name}() missing required argument 'f'"),
        )
        .at(args.span));
    };
    let func = match f.value.downcast::<KernelObj>() {
        Some(k) if k.grad.is_none() => k.func.clone(),
        // a gradient: traced as a call of itself, its graph inlined (higher derivatives)
        Some(_) => f.value.clone(),
        None => match &f.value {
            Value::Function(_) => f.value.clone(),
            other => {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!(
                        "graph.{name} differentiates a function or a kernel, not {}",
                        other.type_name()
                    ),
                )
                .at(f.span))
            }
        },
    };
    let bad = |span| {
        Diagnostic::new(
            Code::E0101,
            "argnums must be an int or a tuple of ints (positions of tensor arguments)",
        )
        .at(span)
    };
    let (argnums, tuple) = match a.next().flatten() {
        None => (vec![0], false),
        Some(arg) => match &arg.value {
            Value::Int(i) if *i >= 0 => (vec![*i as usize], false),
            Value::Tuple(items) => {
                let mut v = Vec::with_capacity(items.len());
                for x in items.iter() {
                    match x {
                        Value::Int(i) if *i >= 0 => v.push(*i as usize),
                        _ => return Err(bad(arg.span)),
                    }
                }
                if v.is_empty() {
                    return Err(bad(arg.span));
                }
                (v, true)
            }
            _ => return Err(bad(arg.span)),
        },
    };
    let spec = crate::kernel::GradSpec {
        argnums,
        tuple,
        with_value,
    };
    Ok(Value::host(KernelObj::gradient(
        func,
        session.clone(),
        spec,
    )))
}
