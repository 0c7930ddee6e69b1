//! `tessera lower FILE.tile [--to target|ptx|spirv] [--target T]`: reads Tile IR text, as
//! `--dump tile` prints it, checks it, translates it to Target IR (or SPIR-V) and prints the
//! level asked for (SPIR-V as its disassembly). Parse and check errors are diagnostics into the `.tile` file (exit 2: nothing was
//! lowered); a translation failure is exit 1.

use std::path::Path;
use tessera_compiler::lower::{tile_spirv, tile_target};
use tessera_compiler::pipeline::print_target;
use tessera_compiler::target::{ptx, Target};
use tessera_compiler::tile::{check, text};
use tessera_lang::{Code, Diagnostic, SourceMap, Span};

/// What `lower` prints.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Level {
    Target,
    Ptx,
    Spirv,
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
        let code = if e.over_limit {
            Code::E0300
        } else {
            Code::E0201
        };
        (at(line, col, msg, code), 2)
    })?;
    if level == Level::Spirv {
        return match tile_spirv::translate(&k) {
            Ok(s) => Ok(tile_spirv::disassemble(&s.words)),
            Err(tessera_compiler::lower::to_target::Error::NotLowered(why)) => {
                Err((format!("error: {why}\n"), 1))
            }
            Err(e) => Err((format!("error: {e:?}\n"), 1)),
        };
    }
    let l = tile_target::translate(&k).map_err(|e| (format!("error: {e:?}\n"), 1))?;
    match level {
        Level::Target => Ok(print_target(&l.kernel, &sources)),
        Level::Ptx | Level::Spirv => ptx::print_verified(&l.kernel, target, &sources)
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
        None if level == Level::Spirv => Target::Spirv,
        None => Target::Sm90,
        Some(Some(t)) => t,
        Some(None) => {
            eprintln!("error: unknown target {:?}", target.unwrap_or_default());
            return 2;
        }
    };
    if target.is_spirv() && level == Level::Ptx {
        eprintln!("error: --target spirv has no PTX; use --to spirv");
        return 2;
    }
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
    // a dump of a script holds every kernel it compiled: each is lowered in turn
    let mut outs = Vec::new();
    for one in kernels(&text) {
        match lower_text(&name, &one, level, target) {
            Ok(out) => outs.push(out),
            Err((msg, code)) => {
                eprint!("{msg}");
                return code;
            }
        }
    }
    crate::say(&outs.join("\n"));
    0
}

/// One text per `tile.kernel` of `text` (the whole text when it has at most one): the same
/// bytes with every other kernel blanked out (newlines kept), so lines, columns and offsets
/// in diagnostics stay those of the file.
pub fn kernels(text: &str) -> Vec<String> {
    let mut starts: Vec<usize> = Vec::new();
    let mut off = 0;
    for l in text.split_inclusive('\n') {
        if l.starts_with("tile.kernel") {
            starts.push(off);
        }
        off += l.len();
    }
    if starts.len() <= 1 {
        return vec![text.to_string()];
    }
    let mut bounds = starts.clone();
    bounds[0] = 0;
    bounds.push(text.len());
    (0..starts.len())
        .map(|i| {
            let (lo, hi) = (bounds[i], bounds[i + 1]);
            text.char_indices()
                .map(|(b, c)| {
                    if (lo..hi).contains(&b) || c == '\n' {
                        c.to_string()
                    } else {
                        " ".repeat(c.len_utf8())
                    }
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_kernel_of_a_dump_keeps_its_offsets() {
        let text = "// dump\ntile.kernel @a() {\n}\ntile.kernel @b() {\n  é\n}\n";
        let ks = super::kernels(text);
        assert_eq!(ks.len(), 2);
        assert!(ks.iter().all(|k| k.len() == text.len()));
        assert!(ks[0].contains("@a") && !ks[0].contains("@b"));
        assert!(ks[1].contains("@b") && ks[1].contains('é') && !ks[1].contains("@a"));
        assert_eq!(super::kernels("tile.kernel @a() {\n}\n").len(), 1);
    }
}
