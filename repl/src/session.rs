//! [`Session`]: one interpreter with the builtin modules installed, fed cell by cell.
//!
//! A session is not `Send` (the interpreter's values are reference-counted); it lives on one
//! thread, and another thread stops a running cell through [`Session::interrupt_handle`].
//! Everything a cell produces — printed text, warnings, rich displays, the value of a trailing
//! expression — goes through the output sink given at construction, in order, as it happens.
//!
//! Run a session on a thread with a large stack ([`crate::with_big_stack`]): deep recursion in
//! user code must reach the recursion limit (E0500), not overflow the native stack.
//!
//! A cell whose first non-blank line starts with `:` is a command (SPEC §8, [`crate::commands`]);
//! the lines after the command line run as ordinary code once the command has succeeded.

use crate::render;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tessera_lang::eval::{is_interrupt, Interp, Value};
use tessera_lang::parse::{self, Completeness};
use tessera_lang::span::FileId;
use tessera_lang::Diagnostic;

/// A value shown to the user: plain text always, HTML where a richer rendering helps, an SVG
/// image for figures (Jupyter `image/svg+xml`; the terminal REPL shows the text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rich {
    pub text: String,
    pub html: Option<String>,
    pub svg: Option<String>,
}

impl Rich {
    pub fn text(s: impl Into<String>) -> Rich {
        Rich {
            text: s.into(),
            html: None,
            svg: None,
        }
    }
}

/// One piece of output of a cell, in the order it was produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// Text written by `print` (Jupyter: `stream` on `stdout`).
    Stdout(String),
    /// Warnings and `--dump` text (Jupyter: `stream` on `stderr`).
    Stderr(String),
    /// A rich display produced during the cell: an IR dump, a profile table (Jupyter:
    /// `display_data`).
    Display(Rich),
    /// The value of the cell's trailing expression when it is not `None` (Jupyter:
    /// `execute_result`; the REPL echoes it).
    Result(Rich),
}

/// How a cell ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CellOutcome {
    Ok,
    /// The cell failed; statements before the failing one keep their effects.
    Error {
        /// The error code, e.g. `E0200`.
        ename: String,
        /// The diagnostic's message.
        evalue: String,
        /// The rendered diagnostic (with the cell as its source), line by line.
        traceback: Vec<String>,
    },
    /// Stopped through the interrupt handle; the session keeps its state.
    Interrupted,
    /// `:quit`.
    Quit,
}

/// Whether a cell is ready to run (REPL continuation prompts, Jupyter `is_complete_request`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IsComplete {
    Complete,
    /// More lines are needed; `indent` is what the next line should start with.
    Incomplete {
        indent: String,
    },
    Invalid,
}

/// Completion candidates for the text at `start..end` of the code (byte offsets).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Completion {
    pub matches: Vec<String>,
    pub start: usize,
    pub end: usize,
}

/// Settings of a session: those of `tessera run` that make sense interactively.
#[derive(Clone, Debug, Default)]
pub struct SessionOptions {
    pub target: Option<String>,
    pub device: Option<String>,
    /// Colour in rendered diagnostics (a terminal REPL; never for Jupyter).
    pub color: bool,
}

/// Where a session's outputs go, shared with the interpreter's print hook.
type Sink = Rc<RefCell<Box<dyn FnMut(Output)>>>;

/// A notebook session.
pub struct Session {
    pub(crate) interp: Interp,
    pub(crate) opts: SessionOptions,
    sink: Sink,
    execution_count: u32,
}

/// Python keywords offered by completion.
const KEYWORDS: &[&str] = &[
    "and", "assert", "break", "continue", "def", "elif", "else", "False", "for", "if", "in", "is",
    "None", "not", "or", "pass", "return", "True", "while",
];

impl Session {
    /// A fresh session whose outputs go to `sink`.
    pub fn new(opts: SessionOptions, sink: Box<dyn FnMut(Output)>) -> Result<Session, Diagnostic> {
        let sink = Rc::new(RefCell::new(sink));
        let interp = new_interp(&opts, &sink)?;
        Ok(Session {
            interp,
            opts,
            sink,
            execution_count: 0,
        })
    }

    /// Set it to stop the running cell (from any thread); the session clears it when the cell
    /// ends.
    pub fn interrupt_handle(&self) -> Arc<AtomicBool> {
        self.interp.interrupt.clone()
    }

    /// Cells run so far (Jupyter's `execution_count`; the REPL's `In [n]`).
    pub fn execution_count(&self) -> u32 {
        self.execution_count
    }

    /// The target kernels compile for now (`:target`, `target.set`).
    pub fn target(&self) -> String {
        self.builtin_call("target", "current")
            .map(|v| v.to_str())
            .unwrap_or_default()
    }

    /// The device kernels run on now (`:device`, `target.set_device`).
    pub fn device(&self) -> String {
        self.builtin_call("target", "device")
            .map(|v| v.to_str())
            .unwrap_or_default()
    }

    /// Calls a no-argument member of a builtin module on a scratch interpreter borrow.
    fn builtin_call(&self, module: &str, name: &str) -> Option<Value> {
        let f = self.builtin_member(module, name)?;
        match &f {
            Value::Native(n) => {
                // natives of the `target` module only read shared state; a throwaway
                // interpreter keeps `&self`
                let mut scratch = Interp::new();
                (n.func)(&mut scratch, tessera_lang::eval::CallArgs::default()).ok()
            }
            _ => None,
        }
    }

    /// A member of a builtin module (`graph.lower`), never a user global of the same name.
    pub(crate) fn builtin_member(&self, module: &str, name: &str) -> Option<Value> {
        match self.interp.get_builtin(module)? {
            Value::Module(m) => m.get(name),
            _ => None,
        }
    }

    pub(crate) fn emit(&self, o: Output) {
        (self.sink.borrow_mut())(o)
    }

    /// Runs one cell: statements, or a `:` command on its first line.
    pub fn execute(&mut self, cell: &str) -> CellOutcome {
        self.execution_count += 1;
        let name = format!("<cell {}>", self.execution_count);
        let file = self.interp.sources.add(name, cell.to_string());
        let outcome = match (cell_magic(cell), command_line(cell)) {
            (Some(rest), _) => self.time_cell(&rest, file),
            (None, Some(line)) => match crate::commands::run(self, cell, file, line.clone()) {
                Ok(crate::commands::After::Quit) => CellOutcome::Quit,
                Ok(crate::commands::After::Continue) => {
                    // the rest of the cell: the same text with everything up to the end of the
                    // command line blanked, so spans stay offsets into the cell
                    let end = line.end;
                    if cell[end..].trim().is_empty() {
                        CellOutcome::Ok
                    } else {
                        let mut rest = " ".repeat(end);
                        rest.push_str(&cell[end..]);
                        self.run_code(&rest, file)
                    }
                }
                Err(d) => self.error(&d),
            },
            (None, None) => self.run_code(cell, file),
        };
        self.interp.interrupt.store(false, Ordering::SeqCst);
        outcome
    }

    /// Parses and runs `text` (registered as `file`), echoing a trailing expression's value.
    pub(crate) fn run_code(&mut self, text: &str, file: FileId) -> CellOutcome {
        match parse::parse_module(text, file) {
            Err(diags) => self.error(&diags[0]),
            Ok(module) => match self.interp.exec_module(&module) {
                Ok(Some(v)) if !matches!(v, Value::None) => {
                    self.emit(Output::Result(rich_value(&v)));
                    CellOutcome::Ok
                }
                Ok(_) => CellOutcome::Ok,
                Err(d) => self.error(&d),
            },
        }
    }

    /// `%%time` (IPython's cell magic): runs the rest of the cell once, then shows its wall
    /// time and, after it, the value of a trailing expression (an error shows only the error).
    fn time_cell(&mut self, text: &str, file: FileId) -> CellOutcome {
        let module = match parse::parse_module(text, file) {
            Err(diags) => return self.error(&diags[0]),
            Ok(m) => m,
        };
        let t = std::time::Instant::now();
        let r = match self.interp.exec_module(&module) {
            Ok(r) => r,
            Err(d) => return self.error(&d),
        };
        let wall = t.elapsed();
        self.emit(Output::Display(crate::render::message(format!(
            "Wall time: {}",
            crate::commands::fmt_sig3(wall.as_secs_f64())
        ))));
        if let Some(v) = r.filter(|v| !matches!(v, Value::None)) {
            self.emit(Output::Result(rich_value(&v)));
        }
        CellOutcome::Ok
    }

    /// The outcome of a failed cell: `Interrupted` for the interrupt's error, else `Error` with
    /// the rendered diagnostic.
    pub(crate) fn error(&self, d: &Diagnostic) -> CellOutcome {
        if is_interrupt(d) {
            return CellOutcome::Interrupted;
        }
        let rendered = d.render(&self.interp.sources, self.opts.color);
        CellOutcome::Error {
            ename: d.code.to_string(),
            evalue: d.message.clone(),
            traceback: rendered.lines().map(str::to_string).collect(),
        }
    }

    /// Whether `code` is a complete cell; an incomplete one gets the indentation its next line
    /// should have (one level deeper after a line ending in `:`).
    pub fn is_complete(&self, code: &str) -> IsComplete {
        if let Some(rest) = cell_magic(code) {
            // `%%time` alone opens the cell: its body follows
            if rest.trim().is_empty() {
                return IsComplete::Incomplete {
                    indent: String::new(),
                };
            }
            return self.is_complete(&rest);
        }
        if command_line(code).is_some() {
            return IsComplete::Complete;
        }
        match parse::is_complete(code) {
            Completeness::Complete => IsComplete::Complete,
            Completeness::Incomplete => IsComplete::Incomplete {
                indent: next_indent(code),
            },
            Completeness::Invalid => IsComplete::Invalid,
        }
    }

    /// Completions of the name, attribute or `:` command before byte offset `cursor`.
    pub fn complete(&self, code: &str, cursor: usize) -> Completion {
        let mut cursor = cursor.min(code.len());
        while !code.is_char_boundary(cursor) {
            cursor -= 1;
        }
        let line_start = code[..cursor].rfind('\n').map_or(0, |i| i + 1);
        let line = &code[line_start..cursor];
        let trimmed = line.trim_start();
        // `:` commands at the start of a cell's first line
        if trimmed.starts_with(':') && code[..line_start].trim().is_empty() {
            let colon = line_start + (line.len() - trimmed.len());
            let word_end = trimmed.find(char::is_whitespace);
            match word_end {
                None => {
                    let mut matches: Vec<String> = crate::commands::names()
                        .filter(|n| n.starts_with(trimmed))
                        .map(str::to_string)
                        .collect();
                    matches.sort();
                    return Completion {
                        matches,
                        start: colon,
                        end: cursor,
                    };
                }
                Some(e) if trimmed[..e] == *":load" => {
                    let arg = trimmed[e..].trim_start();
                    return complete_path(arg, cursor);
                }
                Some(e) if trimmed[..e] == *":device" => {
                    let arg = trimmed[e..].trim_start();
                    let names = tessera_stdlib::session::registry::choices();
                    return word_list(&names, arg, cursor);
                }
                Some(e) if trimmed[..e] == *":target" && !trimmed.contains('(') => {
                    let arg = trimmed[e..].trim_start();
                    if !arg.is_empty() && "sm_".starts_with(&arg[..arg.len().min(3)]) {
                        return word_list(&["sm_80", "sm_90", "sm_90a", "sm_100"], arg, cursor);
                    }
                }
                _ => {}
            }
        }
        let start = code[..cursor]
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
            .map_or(0, |i| i + 1);
        let dotted = &code[start..cursor];
        let (base, prefix, pstart) = match dotted.rfind('.') {
            Some(d) => (&dotted[..d], &dotted[d + 1..], start + d + 1),
            None => ("", dotted, start),
        };
        let mut matches: Vec<String> = if base.is_empty() {
            if dotted.starts_with(|c: char| c.is_ascii_digit()) {
                Vec::new()
            } else {
                self.interp
                    .visible_names()
                    .iter()
                    .map(|n| n.to_string())
                    .chain(KEYWORDS.iter().map(|k| k.to_string()))
                    .filter(|n| n.starts_with(prefix))
                    .collect()
            }
        } else {
            match self.resolve(base) {
                Some(v) => Interp::attr_names(&v)
                    .into_iter()
                    .filter(|n| n.starts_with(prefix))
                    .filter(|n| !n.starts_with('_') || prefix.starts_with('_'))
                    .collect(),
                None => Vec::new(),
            }
        };
        matches.sort();
        matches.dedup();
        Completion {
            matches,
            start: pstart,
            end: cursor,
        }
    }

    /// The value of a dotted name (`op`, `op.matmul`, `x`) without running user code: globals
    /// and builtins, then module members. Host objects' attributes are not evaluated (that
    /// could compute), so `x.T.` resolves nothing.
    fn resolve(&self, dotted: &str) -> Option<Value> {
        let mut parts = dotted.split('.');
        let first = parts.next()?;
        if first.is_empty() {
            return None;
        }
        let mut v = self.interp.get_global(first)?;
        for p in parts {
            v = match &v {
                Value::Module(m) => m.get(p)?,
                _ => return None,
            };
        }
        Some(v)
    }

    /// Documentation of the name at byte offset `cursor` (Jupyter `inspect_request`): the
    /// dotted name under the cursor, or else the callee of the innermost open call before it.
    pub fn inspect(&self, code: &str, cursor: usize) -> Option<Rich> {
        let mut cursor = cursor.min(code.len());
        while !code.is_char_boundary(cursor) {
            cursor -= 1;
        }
        let name = dotted_name_at(code, cursor).or_else(|| callee_before(code, cursor))?;
        let v = self.resolve(&name)?;
        let text = self.describe(&name, &v);
        Some(render::message(text))
    }

    /// Signature, type and doc of a value, for [`Session::inspect`].
    fn describe(&self, name: &str, v: &Value) -> String {
        match v {
            Value::Native(n) => {
                let doc = n.doc.trim();
                let module = name.rsplit_once('.').map(|(m, _)| format!("{m}."));
                let sig = if doc.contains('(') {
                    format!("{}{doc}", module.unwrap_or_default())
                } else {
                    format!("{name}(...)")
                };
                format!("{sig}\ntype: builtin_function")
            }
            Value::Function(f) => {
                let header = tessera_stdlib::help::def_line(&self.interp, f);
                let mut s = format!("{header}\ntype: function");
                if let Some(doc) = docstring(&f.def.body) {
                    s.push('\n');
                    s.push_str(&doc);
                }
                s
            }
            Value::Module(m) => {
                let names: Vec<String> = m.names().iter().map(|n| n.to_string()).collect();
                format!(
                    "module {}: {}\nmembers: {}",
                    m.name,
                    m.doc,
                    names.join(", ")
                )
            }
            other => {
                let mut r = other.repr();
                if r.chars().count() > 400 {
                    r = r.chars().take(400).collect::<String>() + "...";
                }
                format!("{name}: {}\n{r}", other.type_name())
            }
        }
    }
}

/// A cell whose first non-blank line is `%%time`: the cell with that line blanked (spans stay
/// offsets into the cell).
pub(crate) fn cell_magic(cell: &str) -> Option<String> {
    let start = cell.len() - cell.trim_start().len();
    let first = cell[start..].split('\n').next()?;
    if first.trim_end() != "%%time" {
        return None;
    }
    let end = start + first.len();
    let mut rest = cell[..end].replace(|c: char| c != '\n', " ");
    rest.push_str(&cell[end..]);
    Some(rest)
}

/// The byte range of the command line when the cell's first non-blank line starts with `:`.
pub(crate) fn command_line(cell: &str) -> Option<std::ops::Range<usize>> {
    let mut offset = 0;
    for line in cell.split_inclusive('\n') {
        let content = line.trim_end_matches(['\n', '\r']);
        if content.trim().is_empty() {
            offset += line.len();
            continue;
        }
        let lead = content.len() - content.trim_start().len();
        let rest = &content[lead..];
        // IPython's line magics `%time` and `%timeit` are `:time` and `:timeit`
        let magic = ["%time", "%timeit"].iter().any(|m| {
            rest.strip_prefix(m)
                .is_some_and(|r| r.is_empty() || r.starts_with(char::is_whitespace))
        });
        if rest.starts_with(':') || magic {
            return Some(offset + lead..offset + content.trim_end().len());
        }
        return None;
    }
    None
}

/// The indentation of the next line of an incomplete cell: that of the last non-blank line,
/// one level (4 spaces) deeper when it opens a block.
pub fn next_indent(code: &str) -> String {
    let Some(last) = code.lines().rev().find(|l| !l.trim().is_empty()) else {
        return String::new();
    };
    let indent: String = last.chars().take_while(|c| *c == ' ').collect();
    // a `#` comment after the colon still opens the block
    let body = strip_comment(last).trim_end();
    if body.ends_with(':') {
        format!("{indent}    ")
    } else {
        indent
    }
}

/// The line without a trailing `# comment` (outside string literals).
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                '"' | '\'' => quote = Some(c),
                '#' => return &line[..i],
                _ => {}
            },
        }
    }
    line
}

/// A rich rendering of a cell's value: its `repr`, with highlighted HTML for IR values and
/// the SVG image of a figure (`plot`).
pub(crate) fn rich_value(v: &Value) -> Rich {
    let text = v.repr();
    if v.type_name() == "graph" {
        return render::ir(&text);
    }
    // a value with an HTML form (a profile or autotune table) shows it, as `print` shows text
    let html = match v {
        Value::Host(h) => h.html(),
        _ => None,
    };
    Rich {
        svg: tessera_stdlib::plot::svg_of(v),
        html,
        ..Rich::text(text)
    }
}

/// The docstring of a function body: its first statement when it is a string.
fn docstring(body: &[tessera_lang::ast::Stmt]) -> Option<String> {
    use tessera_lang::ast::{ExprKind, StmtKind};
    match &body.first()?.kind {
        StmtKind::Expr(e) => match &e.kind {
            ExprKind::Str(s) => Some(s.trim().to_string()),
            _ => None,
        },
        _ => None,
    }
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The dotted name (`op.matmul`) around `cursor`, up to the end of the identifier the cursor
/// is in.
fn dotted_name_at(code: &str, cursor: usize) -> Option<String> {
    let start = code[..cursor]
        .rfind(|c: char| !(is_name_char(c) || c == '.'))
        .map_or(0, |i| i + 1);
    let end = code[cursor..]
        .find(|c: char| !is_name_char(c))
        .map_or(code.len(), |i| cursor + i);
    let name = code[start..end].trim_matches('.');
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        None
    } else {
        Some(name.to_string())
    }
}

/// The callee of the innermost call still open at `cursor`: `op.matmul` in `op.matmul(x, |`.
fn callee_before(code: &str, cursor: usize) -> Option<String> {
    let mut depth = 0i32;
    for (i, c) in code[..cursor].char_indices().rev() {
        match c {
            ')' | ']' => depth += 1,
            '[' => depth -= 1,
            '(' => {
                if depth == 0 {
                    return dotted_name_at(code, i).filter(|n| !n.is_empty());
                }
                depth -= 1;
            }
            _ => {}
        }
    }
    None
}

/// Completion of a file path for `:load`.
fn complete_path(arg: &str, cursor: usize) -> Completion {
    let (dir, file_prefix) = match arg.rfind('/') {
        Some(i) => (&arg[..=i], &arg[i + 1..]),
        None => ("", arg),
    };
    let read_dir = if dir.is_empty() { "." } else { dir };
    let mut matches = Vec::new();
    if let Ok(entries) = std::fs::read_dir(read_dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if !name.starts_with(file_prefix) || (name.starts_with('.') && file_prefix.is_empty()) {
                continue;
            }
            let is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
            if is_dir {
                matches.push(format!("{dir}{name}/"));
            } else if name.ends_with(".tsr") || name.ends_with(".py") {
                matches.push(format!("{dir}{name}"));
            }
        }
    }
    matches.sort();
    Completion {
        matches,
        start: cursor - arg.len(),
        end: cursor,
    }
}

fn word_list(words: &[&str], arg: &str, cursor: usize) -> Completion {
    Completion {
        matches: words
            .iter()
            .filter(|w| w.starts_with(arg))
            .map(|w| w.to_string())
            .collect(),
        start: cursor - arg.len(),
        end: cursor,
    }
}

fn new_interp(opts: &SessionOptions, sink: &Sink) -> Result<Interp, Diagnostic> {
    let mut interp = Interp::new();
    tessera_stdlib::install(
        &mut interp,
        &tessera_stdlib::Config {
            argv: vec![String::new()],
            target: opts.target.clone(),
            device: opts.device.clone(),
            dump: Vec::new(),
            emit_ptx: None,
            emit_spirv: None,
        },
    )?;
    let out = sink.clone();
    interp.set_output(Box::new(move |s| {
        (out.borrow_mut())(Output::Stdout(s.to_string()))
    }));
    let err = sink.clone();
    interp.set_err_output(Box::new(move |s| {
        (err.borrow_mut())(Output::Stderr(s.to_string()))
    }));
    Ok(interp)
}
