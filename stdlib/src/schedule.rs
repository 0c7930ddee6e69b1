//! The `schedule` module: directives recorded on the kernel being traced (SPEC §5).
//!
//! Each call validates its arguments (E0101 for a wrong type, E0300 for a value no schedule can
//! have) and records the directive on the trace. Outside a kernel body there is nothing to
//! schedule: E0201. The record is the compiler's [`Directives`], read as it is by the Graph
//! IR passes (`fusion`), Schedule IR lowering (tile sizes, stages, ...), the autotuner and the
//! data-parallel gradient (`grad_bucket`, `overlap`).

use crate::session::Session;
use std::rc::Rc;
use tessera_compiler::graph::pipeline::Fusion;
pub use tessera_compiler::schedule::{AutotuneOpts, Directive, Directives, SearchSpace};
use tessera_lang::diag::{Code, Diagnostic};
use tessera_lang::eval::{Arg, CallArgs, Module, Value};
use tessera_lang::Span;

const FUNCTIONS: &[(&str, &str)] = &[
    ("tile", "tile(shape, warp=None)"),
    ("use_tensor_cores", "use_tensor_cores(on=True)"),
    ("pipeline_stages", "pipeline_stages(n)"),
    ("async_copy", "async_copy(on=True)"),
    (
        "occupancy_target",
        "occupancy_target(min_warps=None, max_warps=None)",
    ),
    ("vectorize", "vectorize(n)"),
    ("grad_bucket", "grad_bucket(bytes)"),
    ("overlap", "overlap(on=True)"),
    ("fusion", "fusion(mode)"),
    (
        "search_space",
        "search_space(tile_sizes=None, vectorize=None, pipeline_stages=None, warps=None)",
    ),
    (
        "autotune",
        "autotune(cost_model='roofline', max_trials=50, budget_ms=None)",
    ),
];

fn bad(span: Span, msg: String) -> Diagnostic {
    Diagnostic::new(Code::E0300, msg).at(span)
}

/// The largest size a schedule directive takes: no block, warp tile or pipeline comes near
/// it, and every size computed from such numbers fits in 64 bits.
const MAX_SIZE: i64 = 65536;

/// A size [`pos_int`] accepted (1..=[`MAX_SIZE`]) as the compiler holds it.
fn size(v: i64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

fn pos_int(x: &Arg, what: &str) -> Result<i64, Diagnostic> {
    let v = x.int(what)?;
    if v < 1 {
        return Err(bad(x.span, format!("{what} must be at least 1, got {v}")));
    }
    if v > MAX_SIZE {
        return Err(bad(
            x.span,
            format!("{what} must be at most {MAX_SIZE}, got {v}: no GPU block is that large"),
        ));
    }
    Ok(v)
}

/// A tile: `(BM, BN, BK)`, or `(BM, BN)` (a kernel without a reduction dimension, SPEC §5)
/// as `[BM, BN, 0]` (0: the kernel's default BK where it has one).
fn tile_ints(x: &Arg, what: &str) -> Result<Vec<i64>, Diagnostic> {
    let mut t = ints(x, what, None)?;
    match t.len() {
        3 => Ok(t),
        2 => {
            t.push(0);
            Ok(t)
        }
        n => Err(Diagnostic::new(
            Code::E0101,
            format!("{what} must have 2 or 3 entries, got {n}"),
        )
        .at(x.span)),
    }
}

fn ints(x: &Arg, what: &str, n: Option<usize>) -> Result<Vec<i64>, Diagnostic> {
    let items = x.value.items().ok_or_else(|| {
        let got = x.value.type_name();
        Diagnostic::new(
            Code::E0101,
            format!("{what} must be a tuple of ints, not {got}"),
        )
        .at(x.span)
    })?;
    if let Some(n) = n {
        if items.len() != n {
            return Err(Diagnostic::new(
                Code::E0101,
                format!("{what} must have {n} entries, got {}", items.len()),
            )
            .at(x.span));
        }
    }
    let mut out = Vec::new();
    for v in items {
        let a = Arg {
            value: v,
            span: x.span,
        };
        out.push(pos_int(&a, what)?);
    }
    Ok(out)
}

/// The `on` of a directive that is switched on or off: `True` or `False` only (a number such
/// as `overlap(5)` is a mistake, not a switch).
fn switch(x: &Arg, name: &str) -> Result<bool, Diagnostic> {
    match &x.value {
        Value::Bool(b) => Ok(*b),
        other => Err(Diagnostic::new(
            Code::E0101,
            format!(
                "{name}(on) takes True or False, not {} {}",
                other.type_name(),
                other.repr()
            ),
        )
        .at(x.span)),
    }
}

fn get(a: &[Option<Arg>], i: usize) -> Option<&Arg> {
    a.get(i)
        .and_then(|x| x.as_ref())
        .filter(|x| !matches!(x.value, Value::None))
}

/// Applies one directive call to `d`.
fn apply(d: &mut Directives, name: &str, args: &CallArgs) -> Result<(), Diagnostic> {
    match name {
        "tile" => {
            let a = args.bind("tile", &["shape"], &["warp"])?;
            let s =
                get(&a, 0).ok_or_else(|| Diagnostic::new(Code::E0101, "tile() needs a shape"))?;
            let t = tile_ints(s, "the tile shape (BM, BN, BK) or (BM, BN)")?;
            let w = get(&a, 1)
                .map(|w| ints(w, "the warp tile (WM, WN)", Some(2)))
                .transpose()?;
            let (Some(&bm), Some(&bn), Some(&bk)) = (t.first(), t.get(1), t.get(2)) else {
                return Ok(());
            };
            let warp = match w.as_deref() {
                Some([wm, wn]) => {
                    if bm % wm != 0 || bn % wn != 0 {
                        return Err(bad(
                            get(&a, 1).map(|x| x.span).unwrap_or(args.span),
                            format!("the warp tile ({wm}, {wn}) does not divide the block tile ({bm}, {bn})"),
                        ));
                    }
                    Some([size(*wm), size(*wn)])
                }
                _ => None,
            };
            // BK 0 (a 2-D tile) stays 0
            d.tile = Some([size(bm), size(bn), u32::try_from(bk).unwrap_or(u32::MAX)]);
            d.warp = warp;
        }
        "overlap" => {
            let a = args.bind(name, &[], &["on"])?;
            let on = get(&a, 0)
                .map(|x| switch(x, name))
                .transpose()?
                .unwrap_or(true);
            d.overlap = Some(on);
        }
        "use_tensor_cores" | "async_copy" => {
            let a = args.bind(name, &[], &["on"])?;
            let on = get(&a, 0)
                .map(|x| switch(x, name))
                .transpose()?
                .unwrap_or(true);
            if name == "async_copy" {
                d.async_copy = Some(on);
            } else {
                d.tensor_cores = Some(on);
            }
        }
        "pipeline_stages" => {
            let a = args.bind(name, &["n"], &[])?;
            if let Some(x) = get(&a, 0) {
                d.stages = Some(size(pos_int(x, "the number of stages")?));
            }
        }
        "occupancy_target" => {
            let a = args.bind(name, &[], &["min_warps", "max_warps"])?;
            let lo = get(&a, 0).map(|x| pos_int(x, "min_warps")).transpose()?;
            let hi = get(&a, 1).map(|x| pos_int(x, "max_warps")).transpose()?;
            if let (Some(l), Some(h)) = (lo, hi) {
                if l > h {
                    return Err(bad(
                        args.span,
                        format!("min_warps {l} is more than max_warps {h}"),
                    ));
                }
            }
            d.occupancy = Some((lo.map(size), hi.map(size)));
        }
        "vectorize" => {
            let a = args.bind(name, &["n"], &[])?;
            if let Some(x) = get(&a, 0) {
                let n = pos_int(x, "the vector width")?;
                if !matches!(n, 1 | 2 | 4 | 8 | 16) {
                    return Err(bad(
                        x.span,
                        format!("the vector width must be 1, 2, 4, 8 or 16, got {n}"),
                    ));
                }
                d.vectorize = Some(size(n));
            }
        }
        "grad_bucket" => {
            let a = args.bind(name, &["bytes"], &[])?;
            if let Some(x) = get(&a, 0) {
                // bytes, not a block size: any positive size (a bucket never holds more
                // than the gradients)
                let v = x.int("the gradient bucket size")?;
                if v < 1 {
                    return Err(bad(
                        x.span,
                        format!("the gradient bucket size must be at least 1, got {v}"),
                    ));
                }
                d.grad_bucket = Some(v.unsigned_abs());
            }
        }
        "fusion" => {
            let a = args.bind(name, &["mode"], &[])?;
            let Some(x) = get(&a, 0) else { return Ok(()) };
            d.fusion = match &x.value {
                Value::Str(s) if &**s == "auto" => Fusion::Auto,
                Value::Str(s) if &**s == "none" => Fusion::None,
                Value::Int(_) => Fusion::Depth(pos_int(x, "the fusion depth")? as usize),
                Value::Str(s) => {
                    return Err(Diagnostic::new(
                        Code::E0101,
                        format!("fusion mode must be \"auto\", \"none\" or a depth, not '{s}'"),
                    )
                    .at(x.span))
                }
                other => {
                    return Err(Diagnostic::new(
                        Code::E0101,
                        format!(
                            "fusion mode must be \"auto\", \"none\" or an int, not {}",
                            other.type_name()
                        ),
                    )
                    .at(x.span))
                }
            };
        }
        "search_space" => search_space(d, name, args)?,
        "autotune" => autotune(d, name, args)?,
        _ => {}
    }
    Ok(())
}

/// `schedule.search_space(tile_sizes=, vectorize=, pipeline_stages=, warps=)`.
fn search_space(d: &mut Directives, name: &str, args: &CallArgs) -> Result<(), Diagnostic> {
    let keys = ["tile_sizes", "vectorize", "pipeline_stages", "warps"];
    let a = args.bind(name, &[], &keys)?;
    let mut space = SearchSpace::default();
    for (i, key) in keys.iter().enumerate() {
        let Some(x) = get(&a, i) else { continue };
        let items = x.value.items().ok_or_else(|| {
            let got = x.value.type_name();
            Diagnostic::new(Code::E0101, format!("{key} must be a list, not {got}")).at(x.span)
        })?;
        if items.is_empty() {
            return Err(bad(x.span, format!("{key} must not be empty")));
        }
        for v in items {
            let arg = Arg {
                value: v,
                span: x.span,
            };
            match *key {
                "tile_sizes" => {
                    if matches!(arg.value, Value::Tuple(_) | Value::List(_)) {
                        let t = tile_ints(&arg, "a tile size (BM, BN, BK) or (BM, BN)")?;
                        space.tiles.push([size(t[0]), size(t[1]), size(t[2])]);
                    } else {
                        let n = size(pos_int(&arg, key)?);
                        space.tiles.push([n, n, 32]);
                    }
                }
                "vectorize" => {
                    let n = pos_int(&arg, key)?;
                    if !matches!(n, 1 | 2 | 4 | 8 | 16) {
                        return Err(bad(
                            x.span,
                            format!("the vector width must be 1, 2, 4, 8 or 16, got {n}"),
                        ));
                    }
                    space.vectorize.push(size(n));
                }
                "warps" => {
                    let n = pos_int(&arg, key)?;
                    if n > 32 {
                        return Err(bad(
                            x.span,
                            format!("a block has at most 32 warps (1024 threads), got {n}"),
                        ));
                    }
                    space.warps.push(size(n));
                }
                _ => space.stages.push(size(pos_int(&arg, key)?)),
            }
        }
    }
    d.search_space = Some(space);
    Ok(())
}

/// `schedule.autotune(cost_model=, max_trials=, budget_ms=)`.
fn autotune(d: &mut Directives, name: &str, args: &CallArgs) -> Result<(), Diagnostic> {
    let a = args.bind(name, &[], &["cost_model", "max_trials", "budget_ms"])?;
    let model = match get(&a, 0) {
        Some(x) => match &x.value {
            Value::Str(s) if &**s == "roofline" => s.to_string(),
            Value::Str(s) => {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!("unknown cost model '{s}' (the cost model is \"roofline\")"),
                )
                .at(x.span))
            }
            other => {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!("cost_model must be a str, not {}", other.type_name()),
                )
                .at(x.span))
            }
        },
        None => "roofline".to_string(),
    };
    let trials = get(&a, 1)
        .map(|x| pos_int(x, "max_trials"))
        .transpose()?
        .unwrap_or(50);
    let budget_ms = get(&a, 2).map(|x| pos_int(x, "budget_ms")).transpose()?;
    d.autotune = Some(AutotuneOpts {
        cost_model: model,
        max_trials: size(trials),
        budget_ms: budget_ms.map(size),
    });
    Ok(())
}

/// Builds the `schedule` module.
pub fn module(session: Rc<Session>) -> Module {
    let m = Module::new(
        "schedule",
        "schedule directives for the kernel being traced",
    );
    for (name, doc) in FUNCTIONS {
        let s = session.clone();
        let n: &'static str = name;
        m.set(
            name,
            Value::native(name, doc, move |_, args| {
                let Some(ctx) = crate::tensor::trace::current_trace() else {
                    if s.on_mesh.get() > 0 {
                        // A kernel body running on a mesh: the directive is checked and
                        // applies to no compiled kernel (its ops run one by one per device).
                        let mut d = Directives::default();
                        apply(&mut d, n, &args)?;
                        return Ok(Value::None);
                    }
                    return Err(Diagnostic::new(
                        Code::E0201,
                        format!("schedule.{n}() is only meaningful inside an @op.kernel function"),
                    )
                    .at(args.span)
                    .with_help(
                        "call it at the top of a kernel body, where it applies to that kernel",
                    ));
                };
                let mut d = ctx.directives.borrow_mut();
                apply(&mut d, n, &args)?;
                if let Some(which) = Directive::from_name(n) {
                    d.given_at(which, args.span);
                }
                Ok(Value::None)
            }),
        );
    }
    m
}
