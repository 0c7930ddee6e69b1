//! `tessera lower FILE.tile [--to target|ptx|spirv] [--target T]`: reads Tile IR text, as
//! `--dump tile` prints it, checks it, translates it to Target IR (or SPIR-V) and prints the
//! level asked for (SPIR-V as its disassembly). A dump of a script holds every kernel it
//! compiled: each `tile.kernel` is lowered in turn, in time linear in the file's size.
//!
//! Every error is a diagnostic with a code at the `.tile` line at fault: reading the file
//! (E0101 for a file that cannot be read, a directory among them; E0001 at the first byte
//! that is not UTF-8; E0700 past 64 MiB, so a device file such as `/dev/zero` is not read
//! forever), a parse error (E0001), a check error (E0201, or E0300 over a hardware limit), a
//! translation failure (E0201 at the op, found by translating again with each line's `loc`
//! replaced by its own line, as `graph.run_tile` does), a kernel the spirv target does not
//! cover yet (E0300) and a Target IR the target refuses (E0300). Parse and check errors exit
//! with status 2 (nothing was lowered); a translation failure with 1.

use std::path::Path;
use tessera_compiler::backend::ptx::from_tile;
use tessera_compiler::backend::ptx::{print as ptx, Target, TargetError};
use tessera_compiler::backend::spirv;
use tessera_compiler::backend::Error as LowerError;
use tessera_compiler::pipeline::print_target;
use tessera_compiler::tile::ir::Kernel;
use tessera_compiler::tile::{check, text};
use tessera_lang::read::{read_text, ReadError};
use tessera_lang::{Code, Diagnostic, SourceMap, Span};

/// What `lower` prints.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Level {
    Target,
    Ptx,
    Spirv,
}

/// The largest `.tile` file read (64 MiB).
const MAX_TILE_BYTES: u64 = 64 << 20;
/// The file name the relocated `loc`s name.
const HERE: &str = "<tile>";

/// The whole `.tile` file, for diagnostics.
struct File<'a> {
    name: &'a str,
    text: &'a str,
}

impl File<'_> {
    /// The diagnostic rendered at 1-based `line`, `col` (characters) of the file.
    fn at(&self, line: usize, col: usize, msg: String, code: Code) -> String {
        let mut own = SourceMap::new();
        let f = own.add(self.name, self.text);
        let off = offset_of(self.text, line, col);
        let d = Diagnostic::new(code, msg)
            .at(Span::new(f, off, next_char(self.text, off)))
            .with_label("here");
        d.render(&own, crate::script::stderr_color())
    }
}

/// One kernel's text: the bytes of the file from its `tile.kernel` line (from the start, for
/// the first) to the next kernel's, and the file line it starts on.
struct Part<'a> {
    text: &'a str,
    first_line: usize,
}

impl Part<'_> {
    /// The file line of the part's 1-based `line`.
    fn line(&self, line: usize) -> usize {
        self.first_line + line.max(1) - 1
    }

    /// The file line and column of the kernel's `tile.kernel` header.
    fn header(&self) -> (usize, usize) {
        let i = self
            .text
            .lines()
            .position(|l| l.trim_start().starts_with("tile.kernel"))
            .unwrap_or(0);
        (self.line(i + 1), 1)
    }

    /// The file line and column of the part's line defining value `%N` (`None`: none does).
    fn defining(&self, v: &str) -> Option<(usize, usize)> {
        self.text.lines().enumerate().find_map(|(i, l)| {
            let t = l.trim_start();
            t.strip_prefix(v)
                .is_some_and(|r| r.starts_with(' ') || r.starts_with(','))
                .then(|| (self.line(i + 1), l.len() - t.len() + 1))
        })
    }
}

/// Lowers Tile IR text (one kernel or a dump of several); `Ok` is the printed level, one
/// kernel after another, `Err` the rendered diagnostic and the exit code. Spans in the output
/// (`.loc`, `loc(...)`) are those the text's `loc(...)` annotations name.
pub fn lower_text(
    name: &str,
    text: &str,
    level: Level,
    target: Target,
) -> Result<String, (String, i32)> {
    let file = File { name, text };
    let mut outs = Vec::new();
    for part in parts(text) {
        outs.push(lower_one(&file, &part, level, target)?);
    }
    Ok(outs.join("\n"))
}

fn lower_one(
    file: &File,
    part: &Part,
    level: Level,
    target: Target,
) -> Result<String, (String, i32)> {
    let mut sources = SourceMap::new();
    let k = text::parse(part.text, &mut sources).map_err(|e| {
        let msg = format!("Tile IR: {}", e.message);
        (file.at(part.line(e.line), e.col, msg, Code::E0001), 2)
    })?;
    let checked = check::check(&k).map_err(|e| {
        // the op's line: the one defining the first value the message names
        let (line, col) = e
            .message
            .split_whitespace()
            .find(|w| w.starts_with('%'))
            .map(|v| v.trim_end_matches([':', ',', ')']))
            .and_then(|v| part.defining(v))
            .unwrap_or_else(|| part.header());
        let msg = format!("invalid Tile IR: {}", e.message);
        let code = if e.over_limit {
            Code::E0300
        } else {
            Code::E0201
        };
        (file.at(line, col, msg, code), 2)
    })?;
    // a failure below is shown at the line of the op at fault: the same step is run again on
    // the kernel parsed with each line's `loc` naming that line
    let fail = |step: &dyn Fn(&Kernel, &SourceMap) -> Option<Span>, msg: String, code: Code| {
        let (relocated, _) = text::relocate(part.text, HERE);
        let mut scratch = SourceMap::new();
        let (line, col) = text::parse(&relocated, &mut scratch)
            .ok()
            .and_then(|k| step(&k, &scratch).map(|s| (s, scratch)))
            .and_then(|(s, scratch)| {
                let f = scratch.get(s.file).filter(|f| f.name == HERE)?;
                let (l, c) = f.line_col(s.lo as usize);
                Some((part.line(l), c))
            })
            .unwrap_or_else(|| part.header());
        (file.at(line, col, msg, code), 1)
    };
    let lower_msg = |e: &LowerError| match e {
        LowerError::NotLowered(m) => m.clone(),
        LowerError::Target(t) => t.to_string(),
    };
    let lower_span = |e: LowerError| match e {
        LowerError::Target(t) => t.span(),
        LowerError::NotLowered(_) => None,
    };
    if level == Level::Spirv {
        return match spirv::translate(checked) {
            Ok(s) => Ok(spirv::disassemble(&s.words)),
            Err(LowerError::NotLowered(why)) => Err(fail(&|_, _| None, why, Code::E0300)),
            Err(e) => Err(fail(
                &|k, _| {
                    let c = check::check(k).ok()?;
                    spirv::translate(c).err().and_then(lower_span)
                },
                format!("cannot lower the Tile IR: {}", lower_msg(&e)),
                Code::E0201,
            )),
        };
    }
    let l = from_tile::translate(checked).map_err(|e| {
        fail(
            &|k, _| {
                let c = check::check(k).ok()?;
                from_tile::translate(c).err().and_then(lower_span)
            },
            format!("cannot lower the Tile IR: {}", lower_msg(&e)),
            Code::E0201,
        )
    })?;
    match level {
        Level::Target => Ok(print_target(&l.kernel, &sources)),
        Level::Ptx | Level::Spirv => {
            ptx::print_verified(&l.kernel, target, &sources).map_err(|e| {
                let step = |k: &Kernel, s: &SourceMap| {
                    let l = from_tile::translate(check::check(k).ok()?).ok()?;
                    ptx::print_verified(&l.kernel, target, s)
                        .err()
                        .as_ref()
                        .and_then(TargetError::span)
                };
                let d = e.to_diagnostic();
                let mut msg = d.message.clone();
                if e.is_internal() {
                    msg.push_str(" (internal compiler error: Target IR did not verify)");
                }
                fail(&step, msg, d.code)
            })
        }
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

/// The byte offset of the character after the one at `i` (`i` itself at the end of `s`).
fn next_char(s: &str, i: usize) -> usize {
    s.get(i..)
        .and_then(|r| r.chars().next())
        .map_or(i.min(s.len()), |c| i + c.len_utf8())
}

/// The command: prints the result to stdout or the diagnostic to stderr; the exit code.
pub fn main(file: &Path, level: Level, target: Option<&str>) -> i32 {
    let color = crate::script::stderr_color();
    let usage = |msg: String| {
        eprint!(
            "{}",
            Diagnostic::new(Code::E0101, msg).render(&SourceMap::new(), color)
        );
        2
    };
    let target = match target.map(Target::parse) {
        None if level == Level::Spirv => Target::Spirv,
        None => Target::Sm90,
        Some(Some(t)) => t,
        Some(None) => return usage(format!("unknown target {:?}", target.unwrap_or_default())),
    };
    if target.is_spirv() && level == Level::Ptx {
        return usage("--target spirv has no PTX; use --to spirv".into());
    }
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| file.display().to_string());
    let text = match read_text(file, MAX_TILE_BYTES) {
        Ok(t) => t,
        Err(e) => {
            let shown = file.display().to_string();
            let mut sources = SourceMap::new();
            let d = match e {
                ReadError::TooLarge { limit } => Diagnostic::new(
                    Code::E0700,
                    format!(
                        "{shown} is larger than {} MiB: not Tile IR text",
                        limit >> 20
                    ),
                ),
                ReadError::NotUtf8 { .. } => e
                    .diagnostic(&name, &mut sources)
                    .with_help("Tile IR is UTF-8 text, as `--dump tile` prints it"),
                ReadError::Io(_) => e.diagnostic(&shown, &mut sources),
            };
            eprint!("{}", d.render(&sources, color));
            return 2;
        }
    };
    match lower_text(&name, &text, level, target) {
        Ok(out) => {
            crate::say(&out);
            0
        }
        Err((msg, code)) => {
            eprint!("{msg}");
            code
        }
    }
}

/// The kernels of `text`: one part per line starting with `tile.kernel` (the first from the
/// start of the text), or the whole text when none does.
fn parts(text: &str) -> Vec<Part<'_>> {
    let mut starts: Vec<(usize, usize)> = Vec::new();
    let mut off = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if l.starts_with("tile.kernel") {
            starts.push((off, i + 1));
        }
        off += l.len();
    }
    match starts.first_mut() {
        Some(first) => *first = (0, 1),
        None => starts.push((0, 1)),
    }
    let ends = starts.iter().skip(1).map(|s| s.0).chain([text.len()]);
    starts
        .iter()
        .zip(ends)
        .map(|(&(lo, first_line), hi)| Part {
            text: &text[lo..hi],
            first_line,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_kernel_of_a_dump_is_a_part_with_its_first_line() {
        let text = "// dump\ntile.kernel @a() {\n}\ntile.kernel @b() {\n  é\n}\n";
        let ps = super::parts(text);
        assert_eq!(ps.len(), 2);
        assert_eq!(ps[0].text, "// dump\ntile.kernel @a() {\n}\n");
        assert_eq!(ps[0].first_line, 1);
        assert_eq!(ps[1].text, "tile.kernel @b() {\n  é\n}\n");
        assert_eq!((ps[1].first_line, ps[1].line(2)), (4, 5));
        assert_eq!(ps[1].header(), (4, 1));
        assert_eq!(super::parts("tile.kernel @a() {\n}\n").len(), 1);
        assert_eq!(super::parts("").len(), 1);
    }
}
