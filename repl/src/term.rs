//! The `tessera repl` front end: a line editor (rustyline) on a terminal, or plain line reading
//! when stdin is piped. Both feed a [`Session`] cell by cell.
//!
//! On a terminal: a history file kept across runs, multi-line blocks (a `... ` continuation
//! prompt pre-filled with the expected indentation; a blank line ends a block), tab completion
//! from [`Session::complete`], hints from the history, matching-bracket highlighting. Ctrl-C
//! while a cell runs sets the session's interrupt flag (a SIGINT handler); at the prompt it
//! clears the line. Ctrl-D at the prompt exits.

use crate::session::{CellOutcome, IsComplete, Output, Session, SessionOptions};
use std::borrow::Cow;
use std::cell::RefCell;
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::Arc;

const PROMPT: &str = ">>> ";
const CONTINUATION: &str = "... ";
/// Entries the history file keeps.
const HISTORY_SIZE: usize = 1000;

/// Where the history is kept: `$TESSERA_HISTORY` when set (empty: no history file), else
/// `<data dir>/tessera/history` (`$XDG_DATA_HOME` or `~/.local/share` on Linux,
/// `~/Library/Application Support` on macOS).
pub fn history_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TESSERA_HISTORY") {
        return if p.is_empty() {
            None
        } else {
            Some(PathBuf::from(p))
        };
    }
    dirs::data_dir().map(|d| d.join("tessera").join("history"))
}

/// Whether diagnostics on stderr get colour.
fn stderr_color() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Writes a session's outputs to stdout and stderr as they come.
fn print_output(o: Output) {
    match o {
        Output::Stdout(s) => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(s.as_bytes());
            let _ = out.flush();
        }
        Output::Stderr(s) => {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(s.as_bytes());
            let _ = err.flush();
        }
        Output::Display(r) | Output::Result(r) => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(r.text.as_bytes());
            if !r.text.ends_with('\n') {
                let _ = out.write_all(b"\n");
            }
            let _ = out.flush();
        }
    }
}

/// Reports how a cell ended; `false` when it failed (error or interrupt).
fn report(outcome: &CellOutcome) -> bool {
    match outcome {
        CellOutcome::Ok | CellOutcome::Quit => true,
        CellOutcome::Error { traceback, .. } => {
            let mut err = std::io::stderr().lock();
            for l in traceback {
                let _ = writeln!(err, "{l}");
            }
            let _ = err.flush();
            false
        }
        CellOutcome::Interrupted => {
            let _ = std::io::stdout().flush();
            eprintln!("KeyboardInterrupt");
            false
        }
    }
}

/// Runs the REPL: the line editor when stdin is a terminal, plain line reading otherwise.
/// Returns the exit status. Call it on a thread with a large stack ([`crate::with_big_stack`]).
pub fn main(mut opts: SessionOptions) -> i32 {
    if std::io::stdin().is_terminal() {
        opts.color = stderr_color();
        interactive(opts)
    } else {
        opts.color = false;
        let stdin = std::io::stdin();
        piped(opts, stdin.lock())
    }
}

/// Collects lines into cells the way the interactive prompt does.
struct Cells {
    buf: String,
}

/// What to do with the buffer after a line.
enum Step {
    /// Run this cell.
    Run(String),
    /// Need more lines; the next should start with this indentation.
    More(String),
}

impl Cells {
    fn new() -> Cells {
        Cells { buf: String::new() }
    }

    fn is_empty(&self) -> bool {
        self.buf.trim().is_empty()
    }

    /// Adds a line. A non-indented line after a finished block (no blank line between) first
    /// runs the block: Python's prompt would reject it; a pasted script expects it to work.
    fn push(&mut self, s: &Session, line: &str) -> Vec<Step> {
        let mut steps = Vec::new();
        let starts_new = !line.trim().is_empty()
            && !line.starts_with([' ', '\t'])
            && !continues_block(line)
            && !self.is_empty();
        if starts_new {
            let closed = format!("{}\n", self.buf);
            if s.is_complete(&closed) == IsComplete::Complete {
                steps.push(Step::Run(std::mem::take(&mut self.buf)));
            }
        }
        if self.is_empty() && line.trim().is_empty() {
            self.buf.clear();
            return steps;
        }
        self.buf.push_str(line);
        self.buf.push('\n');
        match s.is_complete(&self.buf) {
            IsComplete::Incomplete { indent } => steps.push(Step::More(indent)),
            IsComplete::Complete | IsComplete::Invalid => {
                steps.push(Step::Run(std::mem::take(&mut self.buf)))
            }
        }
        steps
    }

    fn take(&mut self) -> String {
        std::mem::take(&mut self.buf)
    }
}

/// Lines that continue the block before them (`else:` after an `if` body).
fn continues_block(line: &str) -> bool {
    let t = line.trim_start();
    ["else", "elif", "except", "finally", ")", "]", "}"]
        .iter()
        .any(|k| t.starts_with(k))
}

/// `tessera repl` without a terminal: every complete cell runs as it is read; values of
/// expression statements are echoed; errors are reported and the next cell runs. Exit status 0,
/// or 1 when a cell failed.
pub fn piped(opts: SessionOptions, input: impl BufRead) -> i32 {
    let mut session = match Session::new(opts, Box::new(print_output)) {
        Ok(s) => s,
        Err(d) => {
            eprintln!("error[{}]: {}", d.code, d.message);
            return 2;
        }
    };
    let mut cells = Cells::new();
    let mut status = 0;
    let mut run = |session: &mut Session, cell: String| -> bool {
        let outcome = session.execute(&cell);
        if !report(&outcome) {
            status = 1;
        }
        outcome == CellOutcome::Quit
    };
    for line in input.lines() {
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                eprintln!("error: cannot read stdin: {e}");
                return 2;
            }
        };
        for step in cells.push(&session, &line) {
            if let Step::Run(cell) = step {
                if run(&mut session, cell) {
                    return status;
                }
            }
        }
    }
    if !cells.is_empty() {
        let cell = cells.take();
        run(&mut session, cell);
    }
    status
}

/// The SIGINT handler's flag: the running session's interrupt flag.
static INTERRUPT_FLAG: AtomicPtr<AtomicBool> = AtomicPtr::new(std::ptr::null_mut());

extern "C" fn on_sigint(_: libc::c_int) {
    let p = INTERRUPT_FLAG.load(Ordering::SeqCst);
    if !p.is_null() {
        // SAFETY: the pointer comes from an `Arc` kept alive for the whole process
        // (`install_sigint` leaks one strong count).
        unsafe { (*p).store(true, Ordering::SeqCst) };
    }
}

/// Makes SIGINT set `flag` (instead of ending the process). The line editor installs its own
/// handler while it reads a line and puts this one back after.
fn install_sigint(flag: Arc<AtomicBool>) {
    let p = Arc::into_raw(flag) as *mut AtomicBool;
    INTERRUPT_FLAG.store(p, Ordering::SeqCst);
    // SAFETY: a plain sigaction call with a handler that only does atomic stores.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_sigint as *const () as libc::sighandler_t;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = libc::SA_RESTART;
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
    }
}

/// The line editor's helper: completion, hints, highlighting.
struct Helper {
    session: Rc<RefCell<Session>>,
    brackets: rustyline::highlight::MatchingBracketHighlighter,
}

impl rustyline::completion::Completer for Helper {
    type Candidate = String;
    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        let Ok(s) = self.session.try_borrow() else {
            return Ok((pos, Vec::new()));
        };
        let c = s.complete(line, pos);
        Ok((c.start, c.matches))
    }
}

impl rustyline::hint::Hinter for Helper {
    type Hint = String;
    /// The rest of the newest history entry that starts with the line (its first line only).
    fn hint(&self, line: &str, pos: usize, ctx: &rustyline::Context<'_>) -> Option<String> {
        use rustyline::history::SearchDirection;
        if line.trim().is_empty() || pos < line.len() {
            return None;
        }
        let h = ctx.history();
        let start = h.len().checked_sub(1)?;
        let found = h
            .starts_with(line, start, SearchDirection::Reverse)
            .ok()??;
        let rest = found.entry.get(pos..)?;
        let rest = rest.lines().next().unwrap_or("");
        (!rest.is_empty()).then(|| rest.to_string())
    }
}

impl rustyline::highlight::Highlighter for Helper {
    fn highlight<'l>(&self, line: &'l str, pos: usize) -> Cow<'l, str> {
        self.brackets.highlight(line, pos)
    }
    fn highlight_hint<'h>(&self, hint: &'h str) -> Cow<'h, str> {
        Cow::Owned(format!("\x1b[2m{hint}\x1b[0m"))
    }
    fn highlight_char(&self, line: &str, pos: usize, kind: rustyline::highlight::CmdKind) -> bool {
        self.brackets.highlight_char(line, pos, kind)
    }
}

impl rustyline::validate::Validator for Helper {}
impl rustyline::Helper for Helper {}

/// The interactive REPL on a terminal.
pub fn interactive(opts: SessionOptions) -> i32 {
    let session = match Session::new(opts, Box::new(print_output)) {
        Ok(s) => s,
        Err(d) => {
            eprintln!("error[{}]: {}", d.code, d.message);
            return 2;
        }
    };
    install_sigint(session.interrupt_handle());
    let session = Rc::new(RefCell::new(session));
    let config = rustyline::Config::builder()
        .max_history_size(HISTORY_SIZE)
        .and_then(|b| b.history_ignore_dups(true))
        .map(|b| {
            b.history_ignore_space(true)
                .auto_add_history(false)
                .completion_type(rustyline::CompletionType::List)
                .build()
        });
    let config = match config {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: line editor: {e}");
            return 2;
        }
    };
    let mut ed: rustyline::Editor<Helper, rustyline::history::FileHistory> =
        match rustyline::Editor::with_config(config) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("error: cannot start the line editor: {e}");
                return 2;
            }
        };
    ed.set_helper(Some(Helper {
        session: session.clone(),
        brackets: rustyline::highlight::MatchingBracketHighlighter::new(),
    }));
    let history = history_path();
    if let Some(p) = &history {
        // a missing file is the first run; an unreadable one is reported and left alone
        if p.exists() {
            if let Err(e) = ed.load_history(p) {
                eprintln!("warning: cannot read the history file {}: {e}", p.display());
            }
        } else if let Some(dir) = p.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
    }
    // (stdout may be a closed pipe: what cannot be written is dropped, as for cells' output)
    let _ = writeln!(
        std::io::stdout(),
        "Tessera {} — :help lists the commands, Ctrl-D exits",
        env!("CARGO_PKG_VERSION")
    );
    let mut cells = Cells::new();
    let mut indent = String::new();
    loop {
        let prompt = if cells.is_empty() {
            PROMPT
        } else {
            CONTINUATION
        };
        let line = match ed.readline_with_initial(prompt, (&indent, "")) {
            Ok(l) => l,
            Err(rustyline::error::ReadlineError::Interrupted) => {
                // Ctrl-C at the prompt: drop the line (and an unfinished block)
                cells.take();
                indent.clear();
                continue;
            }
            Err(rustyline::error::ReadlineError::Eof) => {
                let _ = writeln!(std::io::stdout());
                break;
            }
            Err(e) => {
                eprintln!("error: reading the line: {e}");
                return 1;
            }
        };
        indent.clear();
        let steps = cells.push(&session.borrow(), &line);
        for step in steps {
            match step {
                Step::More(next) => indent = next,
                Step::Run(cell) => {
                    let entry = cell.trim_end();
                    if !entry.is_empty() {
                        let _ = ed.add_history_entry(entry);
                        if let Some(p) = &history {
                            let _ = ed.append_history(p);
                        }
                    }
                    let outcome = session.borrow_mut().execute(&cell);
                    report(&outcome);
                    if outcome == CellOutcome::Quit {
                        return 0;
                    }
                }
            }
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> Session {
        Session::new(SessionOptions::default(), Box::new(|_| {})).expect("session")
    }

    fn feed(lines: &[&str]) -> Vec<String> {
        let s = session();
        let mut c = Cells::new();
        let mut out = Vec::new();
        for l in lines {
            for step in c.push(&s, l) {
                if let Step::Run(cell) = step {
                    out.push(cell);
                }
            }
        }
        out
    }

    #[test]
    fn blocks_end_on_a_blank_line() {
        assert_eq!(
            feed(&["def f(x):", "    return x", "", "f(1)"]),
            vec!["def f(x):\n    return x\n\n", "f(1)\n"]
        );
        assert_eq!(feed(&["y = [1,", "2]"]), vec!["y = [1,\n2]\n"]);
        assert_eq!(feed(&["", "  ", "x = 1"]), vec!["x = 1\n"]);
    }

    #[test]
    fn an_unindented_line_after_a_block_runs_the_block() {
        assert_eq!(
            feed(&["if True:", "    a = 1", "else:", "    a = 2", "print(a)"]),
            vec!["if True:\n    a = 1\nelse:\n    a = 2\n", "print(a)\n"]
        );
    }
}
