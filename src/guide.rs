//! Pages of the guide as tests: `tessera test` on a Markdown file runs its ```` ```tsr ````
//! blocks and compares each with the ```` ```output ```` block beneath it.
//!
//! The blocks of one page run in order in one notebook session (a page is a notebook: names
//! carry from block to block; each page starts fresh), in a fresh temporary directory, with the
//! environment of a golden run (`NO_COLOR`, no GPU, an empty autotune cache, the fixed memory
//! limit). A block's output is what the REPL shows for it: printed text, warnings, rich displays
//! as plain text, the repr of a trailing expression, and a failed block's rendered diagnostic,
//! in the order they came. Info strings:
//! - `tsr`: runs; it must not fail;
//! - `tsr,error`: runs; it must fail (its output shows the diagnostic);
//! - `tsr,no_run`: only parsed (code that needs a GPU, or a fragment shown for its syntax).
//!
//! A block with output must be followed (blank lines between are allowed) by an `output` block
//! holding it; one without output must have none. Output lines may hold `{{re:REGEX}}` holes
//! like golden files ([`crate::golden::text_matches`]). Blessing rewrites the output blocks of
//! the page in place (keeping hole lines that still match) and refuses when a block failed that
//! should not have, or the other way round.
//!
//! The blocks run in a child process (`tessera guide-cells PAGE`, hidden from `--help`), so a
//! crash or a hang of one page is a failed case, not a dead test runner.

use crate::golden::{self, Outcome};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

/// How a code block is treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Run,
    Error,
    NoRun,
}

/// One ```` ```tsr ```` block of a page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    pub kind: Kind,
    pub code: String,
    /// 1-based line of the opening fence.
    pub line: usize,
    /// Index of the first line after the closing fence.
    pub end: usize,
    /// The `output` block under it: the range of its lines (fences included) and its text.
    pub output: Option<(std::ops::Range<usize>, String)>,
}

/// An opening fence: its backtick count and info string.
fn fence_open(line: &str) -> Option<(usize, &str)> {
    let t = line.trim_start();
    let n = t.chars().take_while(|&c| c == '`').count();
    (n >= 3 && line.len() - t.len() < 4).then(|| (n, t[n..].trim()))
}

fn fence_close(line: &str, n: usize) -> bool {
    let t = line.trim();
    t.len() >= n && t.chars().all(|c| c == '`')
}

/// The `tsr` blocks of a page, each with the `output` block under it.
pub fn parse_page(text: &str) -> Result<Vec<Block>, String> {
    let lines: Vec<&str> = text.split('\n').collect();
    // every fenced block: (info, first content line, closing fence line)
    let mut fences = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if let Some((n, info)) = fence_open(lines[i]) {
            let close = (i + 1..lines.len())
                .find(|&j| fence_close(lines[j], n))
                .ok_or_else(|| format!("line {}: a code block is never closed", i + 1))?;
            fences.push((info.to_string(), i, close));
            i = close + 1;
        } else {
            i += 1;
        }
    }
    let body = |open: usize, close: usize| -> String {
        let mut s = lines[open + 1..close].join("\n");
        s.push('\n');
        s
    };
    let mut blocks = Vec::new();
    for (k, (info, open, close)) in fences.iter().enumerate() {
        let mut words = info.split(',').map(str::trim);
        if words.next() != Some("tsr") {
            continue;
        }
        let mut kind = Kind::Run;
        for w in words {
            kind = match w {
                "error" => Kind::Error,
                "no_run" => Kind::NoRun,
                _ => {
                    return Err(format!(
                        "line {}: unknown option `{w}` (tsr blocks take `error` or `no_run`)",
                        open + 1
                    ))
                }
            };
        }
        let output = fences.get(k + 1).and_then(|(info2, o2, c2)| {
            let gap_blank = lines[close + 1..*o2].iter().all(|l| l.trim().is_empty());
            (info2 == "output" && gap_blank).then(|| (*o2..c2 + 1, body(*o2, *c2)))
        });
        if kind == Kind::NoRun && output.is_some() {
            return Err(format!(
                "line {}: a no_run block has an output block under it",
                open + 1
            ));
        }
        blocks.push(Block {
            kind,
            code: body(*open, *close),
            line: open + 1,
            end: close + 1,
            output,
        });
    }
    Ok(blocks)
}

/// What one block did (the child's report).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Ran {
    pub output: String,
    pub failed: bool,
}

/// `tessera guide-cells PAGE`: runs the page's blocks in one session and prints one JSON line
/// per block (`no_run` blocks are parsed; a parse error is a failure).
pub fn cells_main(page: &Path) -> i32 {
    let text = match crate::golden::read_case_file(page) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", page.display());
            return 2;
        }
    };
    let blocks = match parse_page(&text) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {}: {e}", page.display());
            return 2;
        }
    };
    crate::script::with_big_stack(move || run_blocks(&blocks))
}

fn run_blocks(blocks: &[Block]) -> i32 {
    use tessera_repl::{CellOutcome, Output, Session};
    let buf = Rc::new(RefCell::new(String::new()));
    let sink = buf.clone();
    let session = Session::new(
        tessera_repl::SessionOptions::default(),
        Box::new(move |o| {
            let mut b = sink.borrow_mut();
            match o {
                Output::Stdout(s) | Output::Stderr(s) => b.push_str(&s),
                Output::Display(r) | Output::Result(r) => {
                    b.push_str(&r.text);
                    if !r.text.ends_with('\n') {
                        b.push('\n');
                    }
                }
            }
        }),
    );
    let mut session = match session {
        Ok(s) => s,
        Err(d) => {
            eprintln!("error: cannot start a session: {}", d.message);
            return 1;
        }
    };
    for b in blocks {
        let failed = match b.kind {
            Kind::NoRun => {
                let code: String = b
                    .code
                    .lines()
                    .map(|l| if l.starts_with(':') { "" } else { l })
                    .collect::<Vec<_>>()
                    .join("\n");
                let mut sources = tessera_lang::SourceMap::new();
                let f = sources.add("<no_run block>", code.clone());
                if let Err(d) = tessera_lang::parse::parse_module(&code, f) {
                    buf.borrow_mut().push_str(&d[0].render(&sources, false));
                    true
                } else {
                    false
                }
            }
            Kind::Run | Kind::Error => match session.execute(&b.code) {
                CellOutcome::Ok => false,
                CellOutcome::Error { traceback, .. } => {
                    let mut o = buf.borrow_mut();
                    for l in traceback {
                        o.push_str(&l);
                        o.push('\n');
                    }
                    true
                }
                CellOutcome::Interrupted => {
                    buf.borrow_mut().push_str("KeyboardInterrupt\n");
                    true
                }
                CellOutcome::Quit => {
                    buf.borrow_mut().push_str(":quit ends the page's session\n");
                    true
                }
            },
        };
        let ran = Ran {
            output: std::mem::take(&mut *buf.borrow_mut()),
            failed,
        };
        match serde_json::to_string(&ran) {
            Ok(line) => crate::sayln!("{line}"),
            Err(e) => {
                eprintln!("error: {e}");
                return 1;
            }
        }
    }
    0
}

/// A block's output as its `output` block holds it: trailing blank lines dropped, one final
/// newline; empty when it printed nothing.
fn normalise(out: &str) -> String {
    let t = out.trim_end_matches(['\n', ' ']);
    if t.is_empty() {
        String::new()
    } else {
        format!("{t}\n")
    }
}

/// A fence longer than any run of backticks at the start of a line of `text`.
fn fence_for(text: &str) -> String {
    let longest = text
        .lines()
        .map(|l| l.trim_start().chars().take_while(|&c| c == '`').count())
        .max()
        .unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

/// Runs (or blesses) one page.
pub fn run_page(exe: &Path, page: &Path, bless: bool, timeout: Duration) -> Outcome {
    let text = match crate::golden::read_case_file(page) {
        Ok(t) => t.replace("\r\n", "\n"),
        Err(e) => return Outcome::Failed(format!("cannot read {}: {e}\n", page.display())),
    };
    let blocks = match parse_page(&text) {
        Ok(b) => b,
        Err(e) => return Outcome::Failed(format!("{e}\n")),
    };
    let page_abs = std::fs::canonicalize(page).unwrap_or_else(|_| page.to_path_buf());
    let args = [
        std::ffi::OsString::from("guide-cells"),
        page_abs.into_os_string(),
    ];
    let r = match golden::run_in_temp_dir(exe, &args, timeout) {
        Ok(r) => r,
        Err(e) => return Outcome::Failed(e),
    };
    let mut ran = Vec::new();
    for l in r.stdout.lines() {
        match serde_json::from_str::<Ran>(l) {
            Ok(x) => ran.push(x),
            Err(_) => {
                return Outcome::Failed(format!("unexpected output of the page's run: {l}\n"))
            }
        }
    }
    if r.code != 0 || ran.len() != blocks.len() {
        return Outcome::Failed(format!(
            "the page's run ended early (status {}, {} of {} blocks ran)\n{}\n",
            r.code,
            ran.len(),
            blocks.len(),
            r.stderr
        ));
    }
    let mut report = String::new();
    for (b, x) in blocks.iter().zip(&ran) {
        let actual = normalise(&x.output);
        match (b.kind, x.failed) {
            (Kind::Run, true) | (Kind::NoRun, true) => report.push_str(&format!(
                "line {}: the block failed (mark it ```tsr,error if it should)\n{actual}\n",
                b.line
            )),
            (Kind::Error, false) => report.push_str(&format!(
                "line {}: a ```tsr,error block ran without an error\n",
                b.line
            )),
            _ => {}
        }
        if bless || b.kind == Kind::NoRun {
            continue;
        }
        let expected = b.output.as_ref().map_or("", |o| o.1.as_str());
        if !golden::text_matches(expected, &actual) {
            let what = format!("output of the block at line {}", b.line);
            report.push_str(&golden::diff(&what, expected, &actual));
        }
    }
    if !report.is_empty() {
        return Outcome::Failed(report);
    }
    if !bless {
        return Outcome::Passed;
    }
    let new = blessed_page(&text, &blocks, &ran);
    if new == text {
        return Outcome::Passed;
    }
    match std::fs::write(page, new) {
        Ok(()) => Outcome::Blessed,
        Err(e) => Outcome::Failed(format!("cannot write {}: {e}\n", page.display())),
    }
}

/// The page with each block's output block replaced, added or removed.
fn blessed_page(text: &str, blocks: &[Block], ran: &[Ran]) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out: Vec<String> = Vec::new();
    let mut at = 0;
    for (b, x) in blocks.iter().zip(ran) {
        out.extend(lines[at..b.end].iter().map(|l| l.to_string()));
        at = b.end;
        let old = b.output.as_ref().map(|o| o.1.as_str());
        let actual = golden::bless_text(old, &normalise(&x.output));
        if let Some((range, _)) = &b.output {
            at = range.end;
        }
        if !actual.is_empty() {
            let fence = fence_for(&actual);
            out.push(String::new());
            out.push(format!("{fence}output"));
            out.extend(actual.trim_end_matches('\n').split('\n').map(String::from));
            out.push(fence);
            // keep one blank line before the text that follows
            if lines.get(at).is_some_and(|l| !l.trim().is_empty()) {
                out.push(String::new());
            }
        } else if b.output.is_some() {
            // drop the blank lines the removed block leaves behind
            while out.last().is_some_and(|l| l.trim().is_empty()) && out.len() > 1 {
                out.pop();
            }
            out.push(String::new());
            while lines.get(at).is_some_and(|l| l.trim().is_empty()) {
                at += 1;
            }
        }
    }
    out.extend(lines[at..].iter().map(|l| l.to_string()));
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "# T\n\n```tsr\nx = 1\nprint(x)\n```\n\n```output\n1\n```\n\ntext\n\n```tsr,error\nprint(y)\n```\n\n```sh\nls\n```\n\n```tsr,no_run\nz = 2\n```\n";

    #[test]
    fn blocks_and_their_outputs() {
        let b = parse_page(PAGE).unwrap();
        assert_eq!(b.len(), 3);
        assert_eq!(b[0].kind, Kind::Run);
        assert_eq!(b[0].code, "x = 1\nprint(x)\n");
        assert_eq!(b[0].line, 3);
        assert_eq!(b[0].output.as_ref().unwrap().1, "1\n");
        assert_eq!(b[1].kind, Kind::Error);
        assert!(b[1].output.is_none());
        assert_eq!(b[2].kind, Kind::NoRun);
        assert!(parse_page("```tsr,fast\n```\n").is_err());
        assert!(parse_page("```tsr\nx\n").is_err());
    }

    #[test]
    fn blessing_replaces_adds_and_removes_output_blocks() {
        let b = parse_page(PAGE).unwrap();
        let ran = [
            Ran {
                output: String::new(),
                failed: false,
            },
            Ran {
                output: "error[E0100]\n".into(),
                failed: true,
            },
            Ran {
                output: String::new(),
                failed: false,
            },
        ];
        let new = blessed_page(PAGE, &b, &ran);
        let nb = parse_page(&new).unwrap();
        assert!(nb[0].output.is_none());
        assert_eq!(nb[1].output.as_ref().unwrap().1, "error[E0100]\n");
        assert!(new.contains("text\n\n```tsr,error"));
        // blessing again changes nothing
        assert_eq!(blessed_page(&new, &nb, &ran), new);
    }

    #[test]
    fn output_with_fences_gets_a_longer_fence() {
        assert_eq!(fence_for("a\n```x\n"), "````");
        assert_eq!(fence_for("a\n"), "```");
    }
}
