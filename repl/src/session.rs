//! [`Session`]: one interpreter with the builtin modules installed, fed cell by cell.
//!
//! A session is not `Send` (the interpreter's values are reference-counted); it lives on one
//! thread, and another thread stops a running cell through [`Session::interrupt_handle`].
//! Everything a cell produces — printed text, warnings, rich displays, the value of a trailing
//! expression — goes through the output sink given at construction, in order, as it happens.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tessera_lang::eval::Interp;
use tessera_lang::parse::{self, Completeness};
use tessera_lang::Diagnostic;

/// A value shown to the user: plain text always, HTML where a richer rendering helps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rich {
    pub text: String,
    pub html: Option<String>,
}

impl Rich {
    pub fn text(s: impl Into<String>) -> Rich {
        Rich {
            text: s.into(),
            html: None,
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
    interp: Interp,
    opts: SessionOptions,
    sink: Sink,
    execution_count: u32,
}

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

    fn emit(&self, o: Output) {
        (self.sink.borrow_mut())(o)
    }

    /// Runs one cell: statements, or a `:` command on its first line.
    pub fn execute(&mut self, cell: &str) -> CellOutcome {
        self.execution_count += 1;
        let name = format!("<cell {}>", self.execution_count);
        let file = self.interp.sources.add(name, cell.to_string());
        let outcome = match parse::parse_module(cell, file) {
            Err(diags) => self.error(&diags[0]),
            Ok(module) => match self.interp.exec_module(&module) {
                Ok(Some(v)) if !matches!(v, tessera_lang::eval::Value::None) => {
                    self.emit(Output::Result(Rich::text(v.repr())));
                    CellOutcome::Ok
                }
                Ok(_) => CellOutcome::Ok,
                Err(d) => self.error(&d),
            },
        };
        self.interp.interrupt.store(false, Ordering::SeqCst);
        outcome
    }

    fn error(&self, d: &Diagnostic) -> CellOutcome {
        let rendered = d.render(&self.interp.sources, self.opts.color);
        CellOutcome::Error {
            ename: d.code.to_string(),
            evalue: d.message.clone(),
            traceback: rendered.lines().map(str::to_string).collect(),
        }
    }

    /// Whether `code` is a complete cell.
    pub fn is_complete(&self, code: &str) -> IsComplete {
        if code.trim_start().starts_with(':') {
            return IsComplete::Complete;
        }
        match parse::is_complete(code) {
            Completeness::Complete => IsComplete::Complete,
            Completeness::Incomplete => IsComplete::Incomplete {
                indent: String::new(),
            },
            Completeness::Invalid => IsComplete::Invalid,
        }
    }

    /// Completions of the name or attribute before byte offset `cursor`.
    pub fn complete(&self, code: &str, cursor: usize) -> Completion {
        let cursor = cursor.min(code.len());
        let start = code[..cursor]
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let prefix = &code[start..cursor];
        let mut matches: Vec<String> = self
            .interp
            .visible_names()
            .iter()
            .filter(|n| n.starts_with(prefix))
            .map(|n| n.to_string())
            .collect();
        matches.sort();
        matches.dedup();
        Completion {
            matches,
            start,
            end: cursor,
        }
    }

    /// Documentation of the name at byte offset `cursor` (Jupyter `inspect_request`).
    pub fn inspect(&self, _code: &str, _cursor: usize) -> Option<Rich> {
        None
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
        },
    )?;
    let out = sink.clone();
    interp.set_output(Box::new(move |s| {
        (out.borrow_mut())(Output::Stdout(s.to_string()))
    }));
    Ok(interp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> (Session, Rc<RefCell<Vec<Output>>>) {
        let got = Rc::new(RefCell::new(Vec::new()));
        let g = got.clone();
        let s = Session::new(
            SessionOptions::default(),
            Box::new(move |o| g.borrow_mut().push(o)),
        )
        .expect("session");
        (s, got)
    }

    #[test]
    fn variables_persist_and_errors_keep_state() {
        let (mut s, got) = session();
        assert_eq!(s.execute("x = 20\nprint(x + 1)"), CellOutcome::Ok);
        assert_eq!(s.execute("x + 22"), CellOutcome::Ok);
        match s.execute("y = x\nundefined_name") {
            CellOutcome::Error { ename, .. } => assert_eq!(ename, "E0100"),
            other => panic!("expected an error, got {other:?}"),
        }
        assert_eq!(s.execute("y"), CellOutcome::Ok);
        let got = got.borrow();
        assert_eq!(got[0], Output::Stdout("21\n".into()));
        assert_eq!(got[1], Output::Result(Rich::text("42")));
        assert_eq!(got[2], Output::Result(Rich::text("20")));
        assert_eq!(s.execution_count(), 4);
    }
}
