//! `tessera lower FILE.tile [--to target|ptx] [--target T]`: reads Tile IR text, as
//! `--dump tile` prints it, checks it, translates it to Target IR and prints the level asked
//! for. Parse and check errors are diagnostics into the `.tile` file (exit 2: nothing was
//! lowered); a translation failure is exit 1.

use std::path::Path;
use tessera_compiler::lower::tile_target;
use tessera_compiler::pipeline::print_target;
use tessera_compiler::target::{ptx, Target};
use tessera_compiler::tile::{check, text};
use tessera_lang::{Code, Diagnostic, SourceMap, Span};

/// What `lower` prints.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Level {
    Target,
    Ptx,
}

/// Lowers Tile IR text; `Ok` is the printed level, `Err` the diagnostic and the exit code.
/// Spans in the output (`.loc`, `loc(...)`) are those the text's `loc(...)` annotations name.
pub fn lower_text(
    name: &str,
    text: &str,
    level: Level,
    target: Target,
) -> Result<String, (String, i32)> {
    let mut sources = SourceMap::new();
    let at = |line: usize, col: usize, msg: String, code: Code| {
        // the diagnostic points into the .tile text itself
        let mut own = SourceMap::new();
        let f = own.add(name, text);
        let off = offset_of(text, line, col);
        let d = Diagnostic::new(code, msg)
            .at(Span::new(f, off, (off + 1).min(text.len())))
            .with_label("here");
        d.render(&own, crate::script::stderr_color())
    };
    let k = text::parse(text, &mut sources).map_err(|e| {
        (
            at(
                e.line,
                e.col,
                format!("Tile IR: {}", e.message),
                Code::E0001,
            ),
            2,
        )
    })?;
    check::check(&k).map_err(|e| {
        // the op's line in the .tile: the one defining the value the message names
        let line = e
            .message
            .split_whitespace()
            .find(|w| w.starts_with('%'))
            .map(|v| v.trim_end_matches(':'))
            .and_then(|v| {
                text.lines().position(|l| {
                    let l = l.trim_start();
                    l.strip_prefix(v)
                        .is_some_and(|r| r.starts_with(' ') || r.starts_with(','))
                })
            })
            .map(|i| i + 1)
            .unwrap_or(1);
        let col = text
            .lines()
            .nth(line - 1)
            .map(|l| l.len() - l.trim_start().len() + 1)
            .unwrap_or(1);
        let msg = format!("invalid Tile IR: {}", e.message);
        (at(line, col, msg, Code::E0201), 2)
    })?;
    let l = tile_target::translate(&k).map_err(|e| (format!("error: {e:?}\n"), 1))?;
    match level {
        Level::Target => Ok(print_target(&l.kernel, &sources)),
        Level::Ptx => ptx::print_verified(&l.kernel, target, &sources)
            .map_err(|e| (e.to_diagnostic().render(&sources, false), 1)),
    }
}

/// The byte offset of 1-based `line`, `col` (characters) in `text`.
fn offset_of(text: &str, line: usize, col: usize) -> usize {
    let mut off = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            return off
                + l.char_indices()
                    .nth(col.saturating_sub(1))
                    .map(|(b, _)| b)
                    .unwrap_or(l.len());
        }
        off += l.len();
    }
    text.len()
}

/// The command: prints the result to stdout or the diagnostic to stderr; the exit code.
pub fn main(file: &Path, level: Level, target: Option<&str>) -> i32 {
    let target = match target.map(Target::parse) {
        None => Target::Sm90,
        Some(Some(t)) => t,
        Some(None) => {
            eprintln!("error: unknown target {:?}", target.unwrap_or_default());
            return 2;
        }
    };
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", file.display());
            return 2;
        }
    };
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| file.display().to_string());
    match lower_text(&name, &text, level, target) {
        Ok(out) => {
            print!("{out}");
            0
        }
        Err((msg, code)) => {
            eprint!("{msg}");
            code
        }
    }
}
