//! The evaluator: one thread that owns the [`Session`] and answers the shell requests in order.
//! What it sends goes through one queue to the socket writer, so that on the wire the order is
//! always busy → execute_input → outputs → reply → idle.

use crate::history::History;
use crate::wire::Request;
use jupyter_protocol::{
    CommInfoReply, CompleteReply, ErrorOutput, ExecuteInput, ExecuteReply, ExecuteResult,
    ExecutionCount, HistoryReply, InspectReply, IsCompleteReply, JupyterMessage,
    JupyterMessageContent, Media, MediaType, Payload, ReplyError, ReplyStatus, ShutdownReply,
    Status, StreamContent, Transient,
};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use tessera_repl::{CellOutcome, IsComplete, Output, Rich, Session, SessionOptions};
use tokio::sync::mpsc::UnboundedSender;

/// What the evaluator and the control handler hand to the socket writer.
#[derive(Debug)]
pub enum Out {
    Iopub(JupyterMessage),
    Shell(JupyterMessage),
    /// Send what is queued, then end the process (shutdown).
    Exit,
}

/// Stops the running cell from another thread, and only a running cell: an interrupt that
/// arrives while the kernel is idle does nothing.
pub struct Interrupter {
    flag: Arc<AtomicBool>,
    running: Mutex<bool>,
}

impl Interrupter {
    pub fn new(flag: Arc<AtomicBool>) -> Interrupter {
        Interrupter {
            flag,
            running: Mutex::new(false),
        }
    }

    /// Asks the running cell, if any, to stop. Returns whether a cell was running.
    pub fn interrupt(&self) -> bool {
        let running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        if *running {
            self.flag.store(true, Ordering::SeqCst);
        }
        *running
    }

    fn begin(&self) {
        *self.running.lock().unwrap_or_else(|p| p.into_inner()) = true;
    }

    fn end(&self) {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        *running = false;
        self.flag.store(false, Ordering::SeqCst);
    }
}

/// The cell being executed, as the output sink sees it.
struct Current {
    parent: JupyterMessage,
    count: usize,
    silent: bool,
    /// The plain text of the execute_result, for the history.
    result: String,
}

/// The reply to `kernel_info_request` (shell and control).
pub fn kernel_info() -> jupyter_protocol::KernelInfoReply {
    let version = env!("CARGO_PKG_VERSION").to_string();
    jupyter_protocol::KernelInfoReply {
        status: ReplyStatus::Ok,
        protocol_version: "5.3".into(),
        implementation: "tessera".into(),
        implementation_version: version.clone(),
        language_info: jupyter_protocol::LanguageInfo {
            name: "tessera".into(),
            version,
            mimetype: Some("text/x-tessera".into()),
            file_extension: Some(".tsr".into()),
            pygments_lexer: Some("python".into()),
            codemirror_mode: Some(jupyter_protocol::CodeMirrorMode::python()),
            nbconvert_exporter: Some("script".into()),
        },
        banner: format!(
            "Tessera {} — a tile-programming language for GPUs (:help lists the commands)",
            env!("CARGO_PKG_VERSION")
        ),
        help_links: Vec::new(),
        debugger: false,
        error: None,
    }
}

/// A plain-text bundle with, where there is one, HTML and an SVG image (`image/svg+xml`).
pub fn media(r: &Rich) -> Media {
    let mut parts = vec![MediaType::Plain(r.text.clone())];
    if let Some(h) = &r.html {
        parts.push(MediaType::Html(h.clone()));
    }
    if let Some(s) = &r.svg {
        parts.push(MediaType::Svg(s.clone()));
    }
    Media::new(parts)
}

/// An iopub message: a child of `parent`, without the parent's routing identities.
pub fn iopub(content: impl Into<JupyterMessageContent>, parent: &JupyterMessage) -> Out {
    Out::Iopub(JupyterMessage::new(content.into(), Some(parent)).with_zmq_identities(Vec::new()))
}

fn shell(content: impl Into<JupyterMessageContent>, parent: &JupyterMessage) -> Out {
    Out::Shell(JupyterMessage::new(content.into(), Some(parent)))
}

/// Byte offset of code point `cp` in `s` (Jupyter counts cursor positions in code points).
pub fn byte_of_char(s: &str, cp: usize) -> usize {
    s.char_indices().nth(cp).map_or(s.len(), |(b, _)| b)
}

/// The `code` and `cursor_pos` of a request content that did not fit the typed form: a
/// missing `code` is empty; a missing, negative or non-integer `cursor_pos` is clamped into
/// the code (missing: its end, as the protocol says).
pub fn untyped_code_and_cursor(content: &Value) -> (String, usize) {
    let code = content
        .get("code")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let len = code.chars().count();
    let cursor = match content.get("cursor_pos") {
        Some(v) if v.is_i64() || v.is_u64() => match v.as_i64() {
            Some(i) if i < 0 => 0,
            Some(i) => (i as u64).min(len as u64) as usize,
            None => len,
        },
        Some(v) if v.is_f64() => v
            .as_f64()
            .map_or(len, |f| f.clamp(0.0, len as f64) as usize),
        _ => len,
    };
    (code, cursor)
}

/// Code-point index of byte offset `b` in `s`.
pub fn char_of_byte(s: &str, b: usize) -> usize {
    s.char_indices().take_while(|(i, _)| *i < b).count()
}

/// After a failed cell, the queue is drained until no request has arrived for this long
/// ([`Evaluator::take_queued`]).
pub const QUIET: std::time::Duration = std::time::Duration::from_millis(20);

/// The longest a failed cell's reply waits for the queue to go quiet.
pub const DRAIN_LIMIT: std::time::Duration = std::time::Duration::from_millis(500);

/// The evaluator's state.
pub struct Evaluator {
    session: Session,
    out: UnboundedSender<Out>,
    current: Rc<RefCell<Option<Current>>>,
    interrupter: Arc<Interrupter>,
    history: History,
    execution_count: usize,
    /// The queue of shell requests (set by [`Evaluator::run`]).
    rx: Option<Receiver<Request>>,
    /// Requests taken off the queue while aborting, to be handled next.
    backlog: VecDeque<Request>,
    /// Execute requests to answer `aborted` once the failed cell is answered.
    to_abort: Vec<Request>,
}

impl Evaluator {
    /// A session whose outputs go to `out`; the error is the rendered diagnostic.
    pub fn new(opts: SessionOptions, out: UnboundedSender<Out>) -> Result<Evaluator, String> {
        let current: Rc<RefCell<Option<Current>>> = Rc::new(RefCell::new(None));
        let sink_cur = current.clone();
        let sink_out = out.clone();
        let sink = Box::new(move |o: Output| {
            let mut cur = sink_cur.borrow_mut();
            let Some(cell) = cur.as_mut() else { return };
            if cell.silent {
                return;
            }
            let msg = match o {
                Output::Stdout(s) => iopub(StreamContent::stdout(&s), &cell.parent),
                Output::Stderr(s) => iopub(StreamContent::stderr(&s), &cell.parent),
                Output::Display(r) => iopub(
                    jupyter_protocol::DisplayData {
                        data: media(&r),
                        metadata: Default::default(),
                        transient: None,
                    },
                    &cell.parent,
                ),
                Output::Result(r) => {
                    cell.result = r.text.clone();
                    iopub(
                        ExecuteResult {
                            execution_count: ExecutionCount::new(cell.count),
                            data: media(&r),
                            metadata: Default::default(),
                            transient: Some(Transient::default()),
                        },
                        &cell.parent,
                    )
                }
            };
            let _ = sink_out.send(msg);
        });
        let session = Session::new(opts, sink).map_err(|d| format!("{}: {}", d.code, d.message))?;
        let interrupter = Arc::new(Interrupter::new(session.interrupt_handle()));
        Ok(Evaluator {
            session,
            out,
            current,
            interrupter,
            history: History::default(),
            execution_count: 0,
            rx: None,
            backlog: VecDeque::new(),
            to_abort: Vec::new(),
        })
    }

    pub fn interrupter(&self) -> Arc<Interrupter> {
        self.interrupter.clone()
    }

    fn send(&self, o: Out) {
        let _ = self.out.send(o);
    }

    /// Answers requests until the queue closes.
    pub fn run(mut self, rx: Receiver<Request>) {
        self.rx = Some(rx);
        while let Some(req) = self.next_request() {
            self.handle(&req);
        }
    }

    fn next_request(&mut self) -> Option<Request> {
        match self.backlog.pop_front() {
            Some(r) => Some(r),
            None => self.rx.as_ref()?.recv().ok(),
        }
    }

    /// Handles one shell request between busy and idle (and, after a failed cell with
    /// `stop_on_error`, answers the execute requests that were queued behind it).
    pub fn handle(&mut self, req: &Request) {
        let parent = &req.msg;
        self.send(iopub(Status::busy(), parent));
        let mut exit = false;
        match &parent.content {
            JupyterMessageContent::KernelInfoRequest(_) => {
                self.send(shell(kernel_info(), parent));
            }
            JupyterMessageContent::ExecuteRequest(r) => {
                self.execute(parent, &r.code, r.silent, r.store_history, r.stop_on_error);
            }
            JupyterMessageContent::CompleteRequest(r) => {
                self.complete(parent, &r.code, r.cursor_pos);
            }
            JupyterMessageContent::InspectRequest(r) => {
                self.inspect(parent, &r.code, r.cursor_pos);
            }
            JupyterMessageContent::IsCompleteRequest(r) => {
                self.is_complete(parent, &r.code);
            }
            JupyterMessageContent::CommInfoRequest(_) => {
                let reply = CommInfoReply {
                    status: ReplyStatus::Ok,
                    comms: Default::default(),
                    error: None,
                };
                self.send(shell(reply, parent));
            }
            JupyterMessageContent::ShutdownRequest(r) => {
                let reply = ShutdownReply {
                    restart: r.restart,
                    status: ReplyStatus::Ok,
                    error: None,
                };
                self.send(shell(reply, parent));
                exit = true;
            }
            _ if req.msg_type() == "history_request" => {
                let history = self
                    .history
                    .answer(&req.content)
                    .into_iter()
                    .filter_map(|v| serde_json::from_value(v).ok())
                    .collect();
                self.send(shell(HistoryReply::new(history), parent));
            }
            // Requests whose content did not fit the typed form (a negative or missing
            // `cursor_pos`, a missing `code`) are answered all the same: a client waiting for
            // a reply must get one.
            _ if req.msg_type() == "complete_request" => {
                let (code, cursor) = untyped_code_and_cursor(&req.content);
                self.complete(parent, &code, cursor);
            }
            _ if req.msg_type() == "inspect_request" => {
                let (code, cursor) = untyped_code_and_cursor(&req.content);
                self.inspect(parent, &code, cursor);
            }
            _ if req.msg_type() == "is_complete_request" => {
                self.is_complete(parent, &untyped_code_and_cursor(&req.content).0);
            }
            _ if req.msg_type() == "execute_request" => {
                // An execute request whose content did not fit the typed form.
                let code = req
                    .content
                    .get("code")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let flag =
                    |k: &str, d: bool| req.content.get(k).and_then(Value::as_bool).unwrap_or(d);
                let silent = flag("silent", false);
                let store = flag("store_history", !silent);
                self.execute(parent, code, silent, store, flag("stop_on_error", true));
            }
            _ => {
                eprintln!(
                    "tessera kernel: ignoring a `{}` message on shell",
                    req.msg_type()
                );
            }
        }
        self.send(iopub(Status::idle(), parent));
        for queued in std::mem::take(&mut self.to_abort) {
            let parent = &queued.msg;
            self.send(iopub(Status::busy(), parent));
            let reply = ExecuteReply {
                status: ReplyStatus::Aborted,
                execution_count: ExecutionCount::new(self.execution_count),
                payload: Vec::new(),
                user_expressions: Some(Default::default()),
                error: None,
            };
            self.send(shell(reply, parent));
            self.send(iopub(Status::idle(), parent));
        }
        if exit {
            self.send(Out::Exit);
        }
    }

    /// Answers a `complete_request` for `code` with the cursor at code point `cursor_pos`.
    fn complete(&mut self, parent: &JupyterMessage, code: &str, cursor_pos: usize) {
        let cursor = byte_of_char(code, cursor_pos);
        let c = self.session.complete(code, cursor);
        let reply = CompleteReply {
            matches: c.matches,
            cursor_start: char_of_byte(code, c.start),
            cursor_end: char_of_byte(code, c.end),
            metadata: Default::default(),
            status: ReplyStatus::Ok,
            error: None,
        };
        self.send(shell(reply, parent));
    }

    /// Answers an `inspect_request` for `code` with the cursor at code point `cursor_pos`.
    fn inspect(&mut self, parent: &JupyterMessage, code: &str, cursor_pos: usize) {
        let cursor = byte_of_char(code, cursor_pos);
        let found = self.session.inspect(code, cursor);
        let reply = InspectReply {
            found: found.is_some(),
            data: found.as_ref().map(media).unwrap_or_default(),
            metadata: Default::default(),
            status: ReplyStatus::Ok,
            error: None,
        };
        self.send(shell(reply, parent));
    }

    /// Answers an `is_complete_request` for `code`.
    fn is_complete(&mut self, parent: &JupyterMessage, code: &str) {
        let reply = match self.session.is_complete(code) {
            IsComplete::Complete => IsCompleteReply::complete(),
            IsComplete::Incomplete { indent } => IsCompleteReply::incomplete(indent),
            IsComplete::Invalid => IsCompleteReply::invalid(),
        };
        self.send(shell(reply, parent));
    }

    /// Runs one cell and answers it.
    fn execute(
        &mut self,
        parent: &JupyterMessage,
        code: &str,
        silent: bool,
        store_history: bool,
        stop_on_error: bool,
    ) {
        let store = store_history && !silent;
        if store {
            self.execution_count += 1;
        }
        let count = self.execution_count;
        if !silent {
            self.send(iopub(
                ExecuteInput {
                    code: code.to_string(),
                    execution_count: ExecutionCount::new(count),
                },
                parent,
            ));
        }
        *self.current.borrow_mut() = Some(Current {
            parent: parent.clone(),
            count,
            silent,
            result: String::new(),
        });
        self.interrupter.begin();
        let session = &mut self.session;
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| session.execute(code)))
                .unwrap_or_else(|p| {
                    let what = p
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| p.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    CellOutcome::Error {
                        ename: "InternalError".into(),
                        evalue: format!("internal error in the interpreter: {what}"),
                        traceback: vec![format!("internal error in the interpreter: {what}")],
                    }
                });
        self.interrupter.end();
        let result = self
            .current
            .borrow_mut()
            .take()
            .map(|c| c.result)
            .unwrap_or_default();
        if store {
            self.history.push(count as i64, code, result);
        }
        let error = match outcome {
            CellOutcome::Ok => None,
            CellOutcome::Quit => {
                let reply = ExecuteReply {
                    status: ReplyStatus::Ok,
                    execution_count: ExecutionCount::new(count),
                    payload: vec![Payload::AskExit { keepkernel: false }],
                    user_expressions: Some(Default::default()),
                    error: None,
                };
                self.send(shell(reply, parent));
                return;
            }
            CellOutcome::Error {
                ename,
                evalue,
                traceback,
            } => Some(ReplyError {
                ename,
                evalue,
                traceback,
            }),
            CellOutcome::Interrupted => Some(ReplyError {
                ename: "Interrupted".into(),
                evalue: "the cell was interrupted".into(),
                traceback: vec!["Interrupted: the cell was interrupted".into()],
            }),
        };
        let ok = error.is_none();
        if let (Some(e), false) = (&error, silent) {
            self.send(iopub(
                ErrorOutput {
                    ename: e.ename.clone(),
                    evalue: e.evalue.clone(),
                    traceback: e.traceback.clone(),
                },
                parent,
            ));
        }
        if !ok && stop_on_error {
            // Before the reply leaves: a request the client sends after seeing it is not
            // aborted.
            self.take_queued();
        }
        let reply = ExecuteReply {
            status: if ok {
                ReplyStatus::Ok
            } else {
                ReplyStatus::Error
            },
            execution_count: ExecutionCount::new(count),
            payload: Vec::new(),
            user_expressions: Some(Default::default()),
            error: error.map(Box::new),
        };
        self.send(shell(reply, parent));
    }

    /// After a failed cell, before its reply leaves: takes the execute requests queued behind
    /// it for an `aborted` answer, and keeps the other requests for handling in order. A client
    /// running "Run All" may still be sending its batch (the cell failed faster than the
    /// requests arrived), so the queue is drained until it has been quiet for [`QUIET`] (at most
    /// [`DRAIN_LIMIT`]). Everything taken was sent before the client could see the error, since
    /// the reply has not left yet; a request sent after the reply is never aborted.
    fn take_queued(&mut self) {
        let mut queued: Vec<Request> = self.backlog.drain(..).collect();
        if let Some(rx) = &self.rx {
            let start = std::time::Instant::now();
            loop {
                let left = DRAIN_LIMIT.saturating_sub(start.elapsed());
                match rx.recv_timeout(QUIET.min(left)) {
                    Ok(r) => queued.push(r),
                    Err(_) => break,
                }
                if left.is_zero() {
                    break;
                }
            }
        }
        for req in queued {
            if req.msg_type() == "execute_request" {
                self.to_abort.push(req);
            } else {
                self.backlog.push_back(req);
            }
        }
    }
}

#[cfg(test)]
mod tests;
