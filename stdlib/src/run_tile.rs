//! `graph.run_tile(text, *args, grid=None)`: runs one kernel's Tile IR text (as
//! `graph.lower(f, *args, level="tile")` prints it, hand-edited or hand-written) on the
//! emulator with the caller's tensors, so a user can see what the emulator reports about a
//! broken kernel (a shared-memory race, an out-of-bounds access, …).
//!
//! The text is parsed and checked ([`tessera_compiler::tile::text`], [`check`]), translated to
//! Target IR and verified for the session's target (`target.current()`), then run by the
//! emulator ([`tessera_runtime::emu`]) whatever the session's device is. The tensor arguments
//! bind, in order, to the kernel's `in` and `out` parameters (the `u32` sizes take the values
//! the text gives them; a `status` parameter gets a zeroed word of its own). Each tensor's
//! dtype must be its parameter's (a complex tensor binds to a view of its parts' dtype, as
//! the FFT kernels take them). `out` buffers start as copies of their tensors; the call
//! returns them after the run: the tensor for one `out` parameter, a tuple for several. The
//! arguments are not modified. `grid=` (an int or a tuple of one to three ints) replaces the
//! text's grid. A launch of more than [`MAX_THREADS`] threads is E0700 (the emulator would take
//! minutes), a run of more than [`MAX_STEPS`] warp instructions stops with E0500.
//!
//! Errors are diagnostics at the call, never panics. Those about the text also point into it
//! (registered as a source file named after the kernel, `NAME.tile`, when an error needs it): a
//! parse error (E0001), a check error (E0201, with the other ops its message names) and a
//! target limit (E0300) at the line at fault; an emulator fault (E0500) at the Tile IR op whose
//! instruction faulted, naming the instruction, the block and thread, and in a note the `loc`
//! of the op with its script line when that script is loaded. To find the op, the text is
//! parsed a second time with each line's `loc(...)` replaced by its own line and column. Wrong
//! arguments (their number, a tensor's dtype) are E0101 / E0201 at the argument.

use std::rc::Rc;
use tessera_compiler::backend::ptx::from_tile;
use tessera_compiler::backend::ptx::Lowered;
use tessera_compiler::backend::ptx::{print as ptx, Space};
use tessera_compiler::backend::Error as LowerError;
use tessera_compiler::graph::TensorType;
use tessera_compiler::tile::ir::{Kernel, OpId, ParamRole, Type};
use tessera_compiler::tile::{check, text};
use tessera_lang::diag::{Code, Diagnostic};
use tessera_lang::eval::{CallArgs, Interp, Value};
use tessera_lang::{SourceMap, Span};
use tessera_runtime::device::Buffers;
use tessera_runtime::emu::{self, Arg, EmuError, EmuErrorKind, Launch, Options};
use tessera_runtime::tensor_map::{Swizzle, TensorMap};
use tessera_runtime::Tensor;

use crate::session::Session;
use crate::tensor::{rt, tensor_value};

/// The file name the relocated `loc`s name.
const HERE: &str = "<run_tile>";
/// The most warp instructions one run may take (a hand-edited loop that never ends): seconds
/// of emulation in a release build.
const MAX_STEPS: u64 = 50_000_000;
/// The largest launch (threads) run in the emulator, as for the replay of a GPU fault: the
/// emulator runs some ten thousand small blocks a second, so more would take minutes.
const MAX_THREADS: u64 = 1 << 20;

/// The `graph.run_tile` native function.
pub fn native(session: Rc<Session>) -> Value {
    Value::native(
        "run_tile",
        "run_tile(text, *args, grid=None)",
        move |it, args| run_tile(it, &session, args),
    )
}

/// The text a diagnostic points into, registered in the interpreter's sources when needed,
/// and where each line's op came from.
struct Source<'a> {
    text: &'a str,
    name: String,
    /// The file id once registered.
    file: Option<u32>,
    /// Per line (0-based), the original `loc(...)` contents it had.
    locs: Vec<Option<String>>,
    /// The parse of the relocated text: its sources name [`HERE`].
    scratch: SourceMap,
}

impl Source<'_> {
    fn file(&mut self, it: &mut Interp) -> u32 {
        *self
            .file
            .get_or_insert_with(|| it.sources.add(self.name.clone(), self.text.to_string()))
    }

    /// A span over 1-based `line` of the text from column `col` to the end of its op (the
    /// `loc(...)` left out).
    fn line_span(&mut self, it: &mut Interp, line: usize, col: usize) -> Option<Span> {
        let l = self.text.split_inclusive('\n').nth(line.checked_sub(1)?)?;
        let start: usize = self
            .text
            .split_inclusive('\n')
            .take(line - 1)
            .map(str::len)
            .sum();
        let lo = l
            .char_indices()
            .nth(col.saturating_sub(1))
            .map_or(l.len(), |(b, _)| b);
        let body = l.trim_end();
        let hi = match body.rfind("loc(") {
            Some(p) if body.ends_with(')') => body[..p].trim_end().len(),
            _ => body.len(),
        }
        .max(next_char(l, lo));
        let f = self.file(it);
        Some(Span::new(f, start + lo, start + hi))
    }

    /// The text line of a span of the relocated parse (`None`: not one of its `loc`s).
    fn line_of(&self, s: Span) -> Option<(usize, usize)> {
        let f = self.scratch.get(s.file).filter(|f| f.name == HERE)?;
        Some(f.line_col(s.lo as usize))
    }

    /// A span of the relocated parse as a span into the registered text.
    fn span_of(&mut self, it: &mut Interp, s: Span) -> Option<Span> {
        let (line, col) = self.line_of(s)?;
        self.line_span(it, line, col)
    }

    /// `file:line:col` of the original `loc` of the op at a relocated span, when it had one.
    fn origin(&self, s: Span) -> Option<String> {
        let (line, _) = self.line_of(s)?;
        let loc = self.locs.get(line - 1)?.as_deref()?;
        let (file, rest) = loc.strip_prefix('"')?.rsplit_once('"')?;
        Some(format!("{file}{rest}"))
    }
}

/// The byte offset of the character after the one at `i` (`i` itself at the end of `s`).
fn next_char(s: &str, i: usize) -> usize {
    s.get(i..)
        .and_then(|r| r.chars().next())
        .map_or(i.min(s.len()), |c| i + c.len_utf8())
}

/// The kernel's name from its `tile.kernel @NAME(` line, for the file name of the text.
fn kernel_name(text: &str) -> String {
    text.split_once("tile.kernel @")
        .and_then(|(_, r)| {
            r.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
                .next()
        })
        .filter(|n| !n.is_empty())
        .unwrap_or("kernel")
        .to_string()
}

fn run_tile(it: &mut Interp, session: &Session, args: CallArgs) -> Result<Value, Diagnostic> {
    let Some((tv, tspan)) = args.positional.first().cloned() else {
        return Err(Diagnostic::new(
            Code::E0101,
            "graph.run_tile() missing required argument 'text'",
        )
        .at(args.span)
        .with_help("the signature is graph.run_tile(text, *args, grid=None)"));
    };
    let Value::Str(text) = &tv else {
        return Err(Diagnostic::new(
            Code::E0101,
            format!("text must be a str (Tile IR), not {}", tv.type_name()),
        )
        .at(tspan));
    };
    let mut grid = None;
    for (k, v, sp) in &args.keywords {
        if &**k != "grid" {
            return Err(Diagnostic::new(
                Code::E0101,
                format!("run_tile() got an unexpected keyword argument '{k}'"),
            )
            .at(*sp)
            .with_help("the signature is graph.run_tile(text, *args, grid=None)"));
        }
        grid = grid_arg(v, *sp)?;
    }
    let (relocated, locs) = text::relocate(text, HERE);
    let mut src = Source {
        text,
        name: format!("{}.tile", kernel_name(text)),
        file: None,
        locs,
        scratch: SourceMap::new(),
    };
    let mut own = SourceMap::new();
    let original = match text::parse(text, &mut own) {
        Ok(k) => k,
        Err(e) => {
            let mut d = Diagnostic::new(Code::E0001, format!("Tile IR: {}", e.message))
                .at(args.span)
                .with_label("in this call of graph.run_tile");
            if let Some(s) = src.line_span(it, e.line, e.col) {
                let lo = s.lo as usize;
                d = d.with_secondary(Span::new(s.file, lo, next_char(text, lo)), "here");
            }
            if text.matches("tile.kernel").count() > 1 {
                d = d.with_help(
                    "graph.run_tile runs one kernel: pass the text of one `tile.kernel`",
                );
            }
            return Err(d);
        }
    };
    // the kernel whose spans are the text's own lines (the original when that parse fails)
    let mut k = match text::parse(&relocated, &mut src.scratch) {
        Ok(k) => k,
        Err(_) => {
            src.scratch = own;
            original
        }
    };
    if let Some(g) = grid {
        k.grid = g;
    }
    let checked = match check::check(&k) {
        Ok(c) => c,
        Err(e) => return Err(check_error(it, &mut src, &k, &e, &args)),
    };
    let l = match from_tile::translate(checked) {
        Ok(l) => l,
        Err(e) => {
            let msg = match e {
                LowerError::NotLowered(m) => m,
                LowerError::Target(t) => t.to_string(),
            };
            let d = Diagnostic::new(Code::E0201, format!("cannot lower the Tile IR: {msg}"));
            return Err(point(it, &mut src, d, k.span, &args));
        }
    };
    let target = session.target.get();
    if let Err(e) = ptx::print_verified(&l.kernel, target, &src.scratch) {
        let d = e.to_diagnostic();
        let at = d.span.unwrap_or(k.span);
        let d = Diagnostic { span: None, ..d };
        return Err(point(it, &mut src, d, at, &args));
    }
    let threads: u64 = k
        .grid
        .iter()
        .chain(&k.block)
        .map(|&d| u64::from(d))
        .product();
    if threads > MAX_THREADS {
        return Err(Diagnostic::new(
            Code::E0700,
            format!(
                "the launch of kernel '{}' has {threads} threads; graph.run_tile emulates at most {MAX_THREADS}",
                k.name
            ),
        )
        .at(args.span)
        .with_help("use a smaller grid (grid=...) or smaller tensors"));
    }
    let bound = bind(&k, &args)?;
    let mut run = Run::new(&k, &l, &bound, args.span)?;
    let opts = Options {
        max_steps: Options::default().max_steps.min(MAX_STEPS),
    };
    let launch = Launch {
        grid: k.grid,
        block: k.block,
    };
    if let Err(e) = emu::run_with(&l.kernel, launch, &run.args, &mut run.buffers.data, &opts) {
        let d = fault(&k, &run, &e);
        let at = e.span.unwrap_or(k.span);
        let mut d = point(it, &mut src, d, at, &args);
        if let Some(o) = e.span.and_then(|s| src.origin(s)) {
            d = d.with_note(format!("the op was compiled from {}", script_line(it, &o)));
        }
        return Err(d);
    }
    if run.buffers.failed() {
        let d = Diagnostic::new(
            Code::E0500,
            format!(
                "kernel '{}' set its status word: an element hit an error the cpu reports \
                 (integer division by zero, or a NaN or out-of-range float cast to int)",
                k.name
            ),
        );
        return Err(d.at(args.span));
    }
    let outs = run
        .buffers
        .result(&run.out_types)
        .map_err(|e| rt(e).at(args.span))?;
    let mut outs: Vec<Value> = outs
        .unwrap_or_default()
        .into_iter()
        .map(tensor_value)
        .collect();
    Ok(match outs.len() {
        0 => Value::None,
        1 => outs.remove(0),
        _ => Value::tuple(outs),
    })
}

/// The diagnostic of a check error: at the op it names, with the other ops its message names
/// (`#N`: an op without results) labelled too.
fn check_error(
    it: &mut Interp,
    src: &mut Source,
    k: &Kernel,
    e: &check::CheckError,
    args: &CallArgs,
) -> Diagnostic {
    let at = e.op.and_then(|o| k.op(o)).map_or(k.span, |d| d.span);
    let code = if e.over_limit {
        Code::E0300
    } else {
        Code::E0201
    };
    let d = Diagnostic::new(code, format!("invalid Tile IR: {}", e.message));
    let mut d = point(it, src, d, at, args);
    for w in e.message.split(|c: char| !(c == '#' || c.is_ascii_digit())) {
        let Some(n) = w.strip_prefix('#').and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let other = OpId(n);
        if Some(other) == e.op {
            continue;
        }
        if let Some(s) = k.op(other).and_then(|o| src.span_of(it, o.span)) {
            d = d.with_secondary(s, format!("#{n}"));
        }
    }
    d
}

/// `d` at the call, with the text line of relocated span `at` (labelled with `d`'s label, or
/// "here") as a second label when there is one.
fn point(
    it: &mut Interp,
    src: &mut Source,
    d: Diagnostic,
    at: Span,
    args: &CallArgs,
) -> Diagnostic {
    let label = d.label.clone().unwrap_or_else(|| "here".to_string());
    let d = d.at(args.span).with_label("in this call of graph.run_tile");
    match src.span_of(it, at) {
        Some(s) => d.with_secondary(s, label),
        None => d,
    }
}

/// Which shared array byte `addr` of a block's shared memory is in: "byte B of `name`".
fn shared_at(run: &Run, addr: u32) -> Option<String> {
    let (offsets, _) = run.shared.shared_layout();
    run.shared
        .shared
        .iter()
        .zip(offsets)
        .find(|(s, off)| addr >= *off && addr - off < s.size)
        .map(|(s, off)| format!("byte {} of `{}`", addr - off, s.name))
}

/// `file:line:col`, followed by that line of the script when a source file of that name (or
/// ending in `/name`) is loaded.
fn script_line(it: &Interp, at: &str) -> String {
    let mut parts = at.rsplitn(3, ':');
    let (_, line, file) = (parts.next(), parts.next(), parts.next());
    let text = line.and_then(|l| l.parse::<usize>().ok()).and_then(|l| {
        let file = file?;
        it.sources
            .files()
            .iter()
            .rev()
            .find(|f| f.name == file || f.name.ends_with(&format!("/{file}")))
            .and_then(|f| f.text.lines().nth(l.checked_sub(1)?))
            .map(str::trim)
            .filter(|t| !t.is_empty())
    });
    match text {
        Some(t) => format!("{at}: `{t}`"),
        None => at.to_string(),
    }
}

/// `grid=`: an int or a tuple/list of one to three positive ints.
fn grid_arg(v: &Value, span: Span) -> Result<Option<[u32; 3]>, Diagnostic> {
    let bad = || {
        Diagnostic::new(
            Code::E0101,
            "grid must be a positive int or a tuple of one to three positive ints",
        )
        .at(span)
    };
    let items = match v {
        Value::None => return Ok(None),
        Value::Int(_) => vec![v.clone()],
        other => other.items().ok_or_else(bad)?,
    };
    if items.is_empty() || items.len() > 3 {
        return Err(bad());
    }
    let mut g = [1u32; 3];
    for (slot, x) in g.iter_mut().zip(&items) {
        match x {
            Value::Int(n) if *n >= 1 && *n <= i64::from(i32::MAX) => *slot = *n as u32,
            _ => return Err(bad()),
        }
    }
    Ok(Some(g))
}

/// One tensor bound to a global parameter.
struct Bound {
    tensor: Tensor,
    out: bool,
}

/// The tensor arguments bound to the kernel's `in` and `out` parameters in order.
fn bind(k: &Kernel, args: &CallArgs) -> Result<Vec<Bound>, Diagnostic> {
    let params: Vec<_> = k
        .params
        .iter()
        .filter(|p| matches!(p.role, ParamRole::Input | ParamRole::Output))
        .collect();
    let given = &args.positional[1..];
    let listed = || {
        params
            .iter()
            .map(|p| {
                let dt = match k.ty(p.value) {
                    Some(Type::Global(d)) => d.name(),
                    _ => "?",
                };
                let role = if p.role == ParamRole::Output {
                    "out"
                } else {
                    "in"
                };
                format!("{}: {dt} {role}", p.name)
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    if given.len() != params.len() {
        return Err(Diagnostic::new(
            Code::E0101,
            format!(
                "kernel '{}' takes {} tensor{} ({}), got {}",
                k.name,
                params.len(),
                if params.len() == 1 { "" } else { "s" },
                listed(),
                given.len()
            ),
        )
        .at(args.span)
        .with_help(
            "pass one tensor per `in` and `out` parameter, in order; the sizes come from the text",
        ));
    }
    let mut out = Vec::with_capacity(given.len());
    for (p, (v, sp)) in params.iter().zip(given) {
        let t = crate::tensor::as_tensor(v).ok_or_else(|| {
            Diagnostic::new(
                Code::E0101,
                format!(
                    "parameter '{}' takes an ordinary tensor, got a {}",
                    p.name,
                    crate::tensor::kind_name(v)
                ),
            )
            .at(*sp)
        })?;
        let want = match k.ty(p.value) {
            Some(Type::Global(d)) => *d,
            Some(Type::TensorMap(m)) => m.dtype,
            _ => t.dtype(),
        };
        if t.dtype() != want && t.dtype().real_part() != want {
            return Err(Diagnostic::new(
                Code::E0201,
                format!(
                    "parameter '{}' is a view of {}, got a tensor of {}",
                    p.name,
                    want.name(),
                    t.dtype().name()
                ),
            )
            .at(*sp)
            .with_help(format!("cast it first: t.to(op.{})", want.name())));
        }
        out.push(Bound {
            tensor: t,
            out: p.role == ParamRole::Output,
        });
    }
    Ok(out)
}

/// A launch's buffers and arguments: `buffers` holds the `in` tensors, then the `out` ones
/// (copied from their tensors), then the status word; `args` follows the parameters.
struct Run {
    buffers: Buffers,
    args: Vec<Arg>,
    out_types: Vec<TensorType>,
    /// Per buffer: the parameter's name and its element size in bytes.
    names: Vec<(String, usize)>,
    /// The Target IR kernel (for its shared arrays).
    shared: tessera_compiler::backend::ptx::Kernel,
}

impl Run {
    fn new(k: &Kernel, l: &Lowered, bound: &[Bound], at: Span) -> Result<Run, Diagnostic> {
        let ins: Vec<Tensor> = bound
            .iter()
            .filter(|b| !b.out)
            .map(|b| b.tensor.clone())
            .collect();
        let outs: Vec<Tensor> = bound
            .iter()
            .filter(|b| b.out)
            .map(|b| b.tensor.clone())
            .collect();
        let out_types: Vec<TensorType> = outs
            .iter()
            .map(|t| TensorType::new(t.shape().to_vec(), t.dtype()))
            .collect();
        let mut buffers = Buffers::new(l, &ins, &out_types).map_err(rt)?;
        // the out buffers start as their tensors' bytes
        let no_status = Lowered {
            status: false,
            ..l.clone()
        };
        let copies = Buffers::new(&no_status, &outs, &[]).map_err(rt)?;
        let first = buffers.output();
        for (i, bytes) in copies.data.into_iter().enumerate() {
            buffers.data[first + i] = bytes;
        }
        let (mut next_in, mut next_out) = (0, first);
        let mut args = Vec::new();
        let mut names = vec![(String::new(), 1); buffers.data.len()];
        let mut tensors = bound.iter();
        for p in &k.params {
            let esize = match k.ty(p.value) {
                Some(Type::Global(d)) => d.size_bytes(),
                Some(Type::TensorMap(m)) => m.dtype.size_bytes(),
                _ => 4,
            };
            let tensor = match p.role {
                ParamRole::Input | ParamRole::Output => tensors.next(),
                _ => None,
            };
            let buffer = match p.role {
                ParamRole::Size(n) => {
                    args.push(Arg::U32(n));
                    continue;
                }
                ParamRole::Input => {
                    next_in += 1;
                    next_in - 1
                }
                ParamRole::Output => {
                    next_out += 1;
                    next_out - 1
                }
                ParamRole::Status => buffers.status_index().unwrap_or(0),
            };
            if let Some(n) = names.get_mut(buffer) {
                *n = (p.name.clone(), esize);
            }
            if let (Some(Type::TensorMap(m)), Some(b)) = (k.ty(p.value), tensor) {
                args.push(Arg::TensorMap(tensor_map(p, m, &b.tensor, buffer, at)?));
                continue;
            }
            args.push(Arg::Ptr { buffer, offset: 0 });
        }
        Ok(Run {
            buffers,
            args,
            out_types,
            names,
            shared: l.kernel.clone(),
        })
    }
}

/// The tensor map of parameter `p` for the tensor bound to it (in emulator buffer `buffer`):
/// the tensor's shape and contiguous strides, the box and swizzle of the parameter's type.
fn tensor_map(
    p: &tessera_compiler::tile::ir::Param,
    m: &tessera_compiler::tile::ir::TensorMapTy,
    t: &Tensor,
    buffer: usize,
    at: Span,
) -> Result<TensorMap, Diagnostic> {
    let shape: Vec<u64> = t.shape().iter().map(|&d| d as u64).collect();
    let swizzle = Swizzle::from_bytes(m.swizzle).unwrap_or(Swizzle::None);
    TensorMap::tiled(emu::ptr(buffer, 0), m.dtype, &shape, &m.box_dims, swizzle).map_err(|e| {
        Diagnostic::new(
            Code::E0201,
            format!(
                "parameter '{}': no tensor map of a {:?} tensor: {e}",
                p.name,
                t.shape()
            ),
        )
        .at(at)
    })
}

/// The diagnostic of an emulator fault: what happened (an out-of-bounds global access names
/// the parameter and the element), then the instruction, its block and thread.
/// The buffer an emulated global address falls in (its parameter's name), the element it
/// addresses and that buffer's element size.
fn global_element(run: &Run, addr: u64) -> (String, u64, u64) {
    let buffer = ((addr >> 40) as usize).wrapping_sub(1);
    let offset = addr & ((1 << 40) - 1);
    let (name, esize) = run
        .names
        .get(buffer)
        .cloned()
        .unwrap_or_else(|| (format!("buffer {buffer}"), 1));
    let esize = esize.max(1) as u64;
    (name, offset / esize, esize)
}

fn fault(k: &Kernel, run: &Run, e: &EmuError) -> Diagnostic {
    let mut what = match &e.kind {
        EmuErrorKind::OutOfBounds {
            space: Space::Global,
            addr,
            bytes,
            limit,
        } => {
            let (name, element, esize) = global_element(run, *addr);
            format!(
                "out-of-bounds global access: {bytes} bytes at element {element} of `{name}` ({} elements)",
                limit / esize
            )
        }
        EmuErrorKind::GlobalRace { addr, other_block } => {
            let (name, element, _) = global_element(run, *addr);
            let [x, y, z] = other_block;
            format!(
                "global-memory race between blocks: this store writes element {element} of `{name}` with a different value than block ({x},{y},{z}) stored there in the same launch"
            )
        }
        _ => {
            let bare = EmuError {
                inst: None,
                block: None,
                thread: None,
                ..e.clone()
            }
            .to_string();
            match &e.kind {
                EmuErrorKind::SharedRace { addr, .. } | EmuErrorKind::AsyncPending { addr, .. } => {
                    let at = format!("at address {addr}");
                    match shared_at(run, *addr) {
                        Some(w) => bare.replacen(&at, &format!("{at} ({w})"), 1),
                        None => bare,
                    }
                }
                _ => bare,
            }
        }
    };
    if let Some(i) = &e.inst {
        what.push_str(&format!(", by `{i}`"));
    }
    if let (Some(b), Some(t)) = (e.block, e.thread) {
        what.push_str(&format!(
            " in block ({},{},{}), thread ({},{},{})",
            b[0], b[1], b[2], t[0], t[1], t[2]
        ));
    }
    Diagnostic::new(
        e.code(),
        format!("kernel '{}' failed in the emulator: {what}", k.name),
    )
    .with_label("this op")
}
