//! `open(path, mode="r")` (SPEC §3): text files. A file opened to read is read whole when it
//! is opened (E0700 when it is over `TESSERA_MAX_BYTES`; E0500 when it is not UTF-8), then
//! served by `.read()`, `.readline()`, `.readlines()` and iteration. A file opened to write
//! (`"w"` truncates, `"a"` appends) takes `.write(s)`; its text reaches the file when it is
//! closed: `.close()`, or when the last reference to it is dropped.

use super::host::{AttrResult, HostObject};
use super::{CallArgs, Interp, Value};
use crate::diag::{Code, Diagnostic};
use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;

#[derive(Copy, Clone, PartialEq, Eq)]
pub enum Mode {
    Read,
    Write,
    Append,
}

impl Mode {
    fn text(self) -> &'static str {
        match self {
            Mode::Read => "r",
            Mode::Write => "w",
            Mode::Append => "a",
        }
    }
}

enum State {
    /// The whole text and how far it has been read (a byte offset at a char boundary).
    Reading(String, usize),
    Writing(std::io::BufWriter<std::fs::File>),
    Closed,
}

pub struct TextFile {
    path: Rc<str>,
    mode: Mode,
    state: RefCell<State>,
}

const METHODS: &[&str] = &["close", "read", "readline", "readlines", "write"];

/// The mode letter of a mode string, or E0101 for one that is not text read/write/append.
pub fn parse_mode(mode: &str) -> Result<Mode, Diagnostic> {
    let m = match mode {
        "r" | "rt" | "tr" => Mode::Read,
        "w" | "wt" | "tw" => Mode::Write,
        "a" | "at" | "ta" => Mode::Append,
        m if m.contains('b') => {
            return Err(Diagnostic::new(
                Code::E0101,
                format!("open(): binary mode {m:?} is not supported; files are text"),
            )
            .with_help("op.load and op.save read and write tensor files"))
        }
        m => {
            return Err(
                Diagnostic::new(Code::E0101, format!("open(): invalid mode {m:?}"))
                    .with_help("the modes are \"r\" (read), \"w\" (write) and \"a\" (append)"),
            )
        }
    };
    Ok(m)
}

fn io_error(path: &str, e: &std::io::Error) -> Diagnostic {
    let why = match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        std::io::ErrorKind::IsADirectory => "is a directory".to_string(),
        _ => e.to_string(),
    };
    Diagnostic::new(Code::E0500, format!("cannot open {path:?}: {why}"))
}

impl TextFile {
    pub fn open(it: &Interp, path: &str, mode: Mode) -> Result<Value, Diagnostic> {
        if std::fs::metadata(path).map(|m| m.is_dir()).unwrap_or(false) {
            return Err(Diagnostic::new(
                Code::E0500,
                format!("cannot open {path:?}: is a directory"),
            ));
        }
        let state = match mode {
            Mode::Read => {
                let f = std::fs::File::open(path).map_err(|e| io_error(path, &e))?;
                let len = f.metadata().map(|m| m.len()).unwrap_or(0);
                it.check_host_size(usize::try_from(len).unwrap_or(usize::MAX), 1, || {
                    format!("the text of {path:?} ({len} bytes)")
                })?;
                let mut bytes = Vec::new();
                // read at most one byte past the limit: a file that grows is caught too
                let limit = it.max_bytes.saturating_add(1);
                std::io::Read::read_to_end(&mut std::io::Read::take(f, limit), &mut bytes)
                    .map_err(|e| io_error(path, &e))?;
                it.check_host_size(bytes.len(), 1, || format!("the text of {path:?}"))?;
                let text = String::from_utf8(bytes).map_err(|e| {
                    let at = e.utf8_error().valid_up_to();
                    Diagnostic::new(
                        Code::E0500,
                        format!("cannot read {path:?} as text: it is not UTF-8 (byte {at})"),
                    )
                    .with_help("open reads UTF-8 text; op.load reads tensor files")
                })?;
                // universal newlines, as Python's text mode: `\r\n` and `\r` read as `\n`
                let text = if text.contains('\r') {
                    text.replace("\r\n", "\n").replace('\r', "\n")
                } else {
                    text
                };
                State::Reading(text, 0)
            }
            Mode::Write | Mode::Append => {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(mode == Mode::Write)
                    .append(mode == Mode::Append)
                    .open(path)
                    .map_err(|e| io_error(path, &e))?;
                State::Writing(std::io::BufWriter::new(f))
            }
        };
        Ok(Value::host(TextFile {
            path: path.into(),
            mode,
            state: RefCell::new(state),
        }))
    }

    fn closed(&self) -> Diagnostic {
        Diagnostic::new(
            Code::E0500,
            format!("I/O operation on closed file {:?}", self.path),
        )
    }

    fn not_readable(&self, what: &str) -> Diagnostic {
        Diagnostic::new(
            Code::E0500,
            format!(
                "{what}: {:?} was opened with mode {:?}, not for reading",
                self.path,
                self.mode.text()
            ),
        )
    }

    /// The lines left to read, each with its `\n`.
    fn take_lines(&self, n: Option<usize>) -> Result<Vec<String>, Diagnostic> {
        let mut st = self.state.borrow_mut();
        match &mut *st {
            State::Reading(text, pos) => {
                let mut out = Vec::new();
                while *pos < text.len() && n.is_none_or(|n| out.len() < n) {
                    let rest = text.get(*pos..).unwrap_or("");
                    let end = rest.find('\n').map(|i| i + 1).unwrap_or(rest.len());
                    out.push(rest.get(..end).unwrap_or("").to_string());
                    *pos += end;
                }
                Ok(out)
            }
            State::Writing(_) => Err(self.not_readable("read")),
            State::Closed => Err(self.closed()),
        }
    }

    /// Writes `text` (`f.write(s)`, `print(..., file=f)`).
    pub fn write_str(&self, text: &str) -> Result<(), Diagnostic> {
        let mut st = self.state.borrow_mut();
        match &mut *st {
            State::Writing(w) => w.write_all(text.as_bytes()).map_err(|e| {
                Diagnostic::new(Code::E0500, format!("cannot write {:?}: {e}", self.path))
            }),
            State::Reading(..) => Err(Diagnostic::new(
                Code::E0500,
                format!(
                    "write: {:?} was opened with mode \"r\", not for writing",
                    self.path
                ),
            )
            .with_help("open(path, \"w\") writes, open(path, \"a\") appends")),
            State::Closed => Err(self.closed()),
        }
    }

    /// Pushes what was written to the file (`print(..., file=f, flush=True)`).
    pub fn flush(&self) -> Result<(), Diagnostic> {
        match &mut *self.state.borrow_mut() {
            State::Writing(w) => w.flush().map_err(|e| {
                Diagnostic::new(Code::E0500, format!("cannot write {:?}: {e}", self.path))
            }),
            State::Reading(..) => Ok(()),
            State::Closed => Err(self.closed()),
        }
    }

    fn close(&self) -> Result<(), Diagnostic> {
        let old = std::mem::replace(&mut *self.state.borrow_mut(), State::Closed);
        if let State::Writing(mut w) = old {
            w.flush().map_err(|e| {
                Diagnostic::new(Code::E0500, format!("cannot write {:?}: {e}", self.path))
            })?;
        }
        Ok(())
    }
}

impl Drop for TextFile {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

impl HostObject for TextFile {
    fn type_name(&self) -> &'static str {
        "file"
    }
    fn repr(&self) -> String {
        let closed = matches!(*self.state.borrow(), State::Closed);
        format!(
            "<file {:?} mode={:?}{}>",
            self.path,
            self.mode.text(),
            if closed { " closed" } else { "" }
        )
    }
    fn iter(&self) -> Option<Result<Vec<Value>, Diagnostic>> {
        Some(
            self.take_lines(None)
                .map(|v| v.into_iter().map(|l| Value::Str(l.into())).collect()),
        )
    }
    fn get_attr(&self, this: &Value, name: &str, _interp: &mut Interp) -> AttrResult {
        match name {
            "name" => return Ok(Some(Value::Str(self.path.clone()))),
            "mode" => return Ok(Some(Value::str(self.mode.text()))),
            "closed" => {
                return Ok(Some(Value::Bool(matches!(
                    *self.state.borrow(),
                    State::Closed
                ))))
            }
            _ if !METHODS.contains(&name) => return Ok(None),
            _ => {}
        }
        let this = this.clone();
        let mname: Rc<str> = name.into();
        Ok(Some(Value::native(
            name,
            &format!("file.{name}"),
            move |it, args| {
                let Some(f) = this.downcast::<TextFile>() else {
                    return Ok(Value::None);
                };
                f.method(it, &mname, args)
            },
        )))
    }
    fn attr_names(&self) -> Vec<&'static str> {
        let mut v = METHODS.to_vec();
        v.extend(["closed", "mode", "name"]);
        v
    }
}

impl TextFile {
    fn method(&self, it: &mut Interp, name: &str, args: CallArgs) -> Result<Value, Diagnostic> {
        let fname = format!("file.{name}");
        match name {
            "read" => {
                args.bind(&fname, &[], &[])?;
                let lines = self.take_lines(None)?;
                Ok(Value::Str(lines.concat().into()))
            }
            "readline" => {
                args.bind(&fname, &[], &[])?;
                let line = self
                    .take_lines(Some(1))?
                    .into_iter()
                    .next()
                    .unwrap_or_default();
                Ok(Value::Str(line.into()))
            }
            "readlines" => {
                args.bind(&fname, &[], &[])?;
                let lines = self.take_lines(None)?;
                it.check_list_len(lines.len(), "readlines")?;
                Ok(Value::list(
                    lines.into_iter().map(|l| Value::Str(l.into())).collect(),
                ))
            }
            "write" => {
                let a = args.bind(&fname, &["s"], &[])?;
                let Some(s) = a.into_iter().flatten().next() else {
                    return Ok(Value::None);
                };
                let Value::Str(text) = &s.value else {
                    return Err(Diagnostic::new(
                        Code::E0101,
                        format!("write() argument must be str, not {}", s.value.type_name()),
                    )
                    .at(s.span)
                    .with_help("convert it first: f.write(str(x))"));
                };
                self.write_str(text)?;
                Ok(Value::Int(text.chars().count() as i64))
            }
            "close" => {
                args.bind(&fname, &[], &[])?;
                self.close()?;
                Ok(Value::None)
            }
            _ => Ok(Value::None),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diag::Code;
    use crate::eval::Interp;

    fn run(it: &mut Interp, src: &str) -> Result<(), crate::diag::Diagnostic> {
        let m = crate::parse::parse_module(src, 0).map_err(|mut d| d.remove(0))?;
        it.exec_module(&m).map(|_| ())
    }

    /// A file whose size its metadata does not tell (a device, a FIFO, `/proc`) is read up
    /// to the limit and no further.
    #[cfg(target_os = "linux")]
    #[test]
    fn an_endless_file_stops_at_the_limit() {
        let mut it = Interp::new();
        it.max_bytes = 1 << 16;
        let e = run(&mut it, "t = open('/dev/zero').read()").unwrap_err();
        assert_eq!(e.code, Code::E0700, "{}", e.message);
        run(
            &mut it,
            "t = open('/proc/self/status').read()\nassert 'Name' in t",
        )
        .unwrap();
    }

    /// Writes reach the file on `close()` and when the file value is dropped; a symlink to a
    /// file is followed.
    #[cfg(unix)]
    #[test]
    fn writes_are_flushed_on_close_and_on_drop() {
        let dir = std::env::temp_dir().join(format!("tessera-textfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("out.txt");
        let link = dir.join("link.txt");
        let ps = p.to_string_lossy().to_string();
        let mut it = Interp::new();
        run(
            &mut it,
            &format!("def w():\n    f = open({ps:?}, 'w')\n    f.write('dropped')\nw()"),
        )
        .unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "dropped");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&p, &link).unwrap();
        let ls = link.to_string_lossy().to_string();
        run(&mut it, &format!("f = open({ls:?}, 'a')\nf.write('+')\nf.close()\nassert open({ps:?}).read() == 'dropped+'")).unwrap();
        let e = run(&mut it, "f.write('late')").unwrap_err();
        assert_eq!(e.code, Code::E0500, "{}", e.message);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
