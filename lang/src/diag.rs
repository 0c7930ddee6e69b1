//! Diagnostics: error codes of SPEC §9, labelled spans, and rendering with ariadne.
//! This is the only module that talks to ariadne.

use crate::span::{SourceMap, Span};

/// The error codes of SPEC §9.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    /// unexpected token / invalid syntax
    E0001,
    /// unterminated string or bracket
    E0002,
    /// bad indentation
    E0003,
    /// undefined name or attribute
    E0100,
    /// wrong arguments (count, unknown keyword, wrong type)
    E0101,
    /// shape mismatch
    E0200,
    /// dtype error / value-dependent control flow in a kernel
    E0201,
    /// invalid schedule for the target
    E0300,
    /// sharding / mesh error
    E0400,
    /// runtime error (index out of range, division by zero, ...)
    E0500,
    /// assertion failed
    E0600,
    /// resource limit
    E0700,
    /// device / driver error
    E0800,
}

impl Code {
    /// Every code, in order.
    pub const ALL: [Code; 13] = [
        Code::E0001,
        Code::E0002,
        Code::E0003,
        Code::E0100,
        Code::E0101,
        Code::E0200,
        Code::E0201,
        Code::E0300,
        Code::E0400,
        Code::E0500,
        Code::E0600,
        Code::E0700,
        Code::E0800,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Code::E0001 => "E0001",
            Code::E0002 => "E0002",
            Code::E0003 => "E0003",
            Code::E0100 => "E0100",
            Code::E0101 => "E0101",
            Code::E0200 => "E0200",
            Code::E0201 => "E0201",
            Code::E0300 => "E0300",
            Code::E0400 => "E0400",
            Code::E0500 => "E0500",
            Code::E0600 => "E0600",
            Code::E0700 => "E0700",
            Code::E0800 => "E0800",
        }
    }
    /// The header kind printed by the renderer: `error[E0200]`.
    fn header(self) -> &'static str {
        match self {
            Code::E0001 => "error[E0001]",
            Code::E0002 => "error[E0002]",
            Code::E0003 => "error[E0003]",
            Code::E0100 => "error[E0100]",
            Code::E0101 => "error[E0101]",
            Code::E0200 => "error[E0200]",
            Code::E0201 => "error[E0201]",
            Code::E0300 => "error[E0300]",
            Code::E0400 => "error[E0400]",
            Code::E0500 => "error[E0500]",
            Code::E0600 => "error[E0600]",
            Code::E0700 => "error[E0700]",
            Code::E0800 => "error[E0800]",
        }
    }
    /// The label under the primary span when the diagnostic gives none.
    pub fn default_label(self) -> &'static str {
        match self {
            Code::E0001 => "invalid syntax",
            Code::E0002 => "never closed",
            Code::E0003 => "bad indentation",
            Code::E0100 => "not defined",
            Code::E0101 => "wrong argument",
            Code::E0200 => "shape mismatch",
            Code::E0201 => "dtype error",
            Code::E0300 => "invalid schedule",
            Code::E0400 => "sharding error",
            Code::E0500 => "raised here",
            Code::E0600 => "assertion failed",
            Code::E0700 => "too large",
            Code::E0800 => "device error",
        }
    }
    /// Syntax-level codes: the file did not parse (exit status 2).
    pub fn is_syntax(self) -> bool {
        matches!(self, Code::E0001 | Code::E0002 | Code::E0003)
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a diagnostic is an error or a warning.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

/// A user-facing error: code, message, the primary span and extra labels, notes and help.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: Code,
    pub message: String,
    /// Primary location; `None` for errors without a source position (e.g. a missing file).
    pub span: Option<Span>,
    /// Text shown under the primary span.
    pub label: Option<String>,
    pub secondary: Vec<Label>,
    pub notes: Vec<String>,
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn new(code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            span: None,
            label: None,
            secondary: Vec::new(),
            notes: Vec::new(),
            help: None,
        }
    }
    pub fn at(mut self, span: Span) -> Diagnostic {
        self.span = Some(span);
        self
    }
    /// Sets the span only if none is set yet.
    pub fn or_at(mut self, span: Span) -> Diagnostic {
        if self.span.is_none() {
            self.span = Some(span);
        }
        self
    }
    pub fn with_label(mut self, text: impl Into<String>) -> Diagnostic {
        self.label = Some(text.into());
        self
    }
    pub fn with_secondary(mut self, span: Span, text: impl Into<String>) -> Diagnostic {
        self.secondary.push(Label {
            span,
            message: text.into(),
        });
        self
    }
    pub fn with_note(mut self, text: impl Into<String>) -> Diagnostic {
        self.notes.push(text.into());
        self
    }
    pub fn with_help(mut self, text: impl Into<String>) -> Diagnostic {
        self.help = Some(text.into());
        self
    }

    /// Renders the diagnostic as text (with ANSI colours when `color`). A labelled source line
    /// longer than [`MAX_EXCERPT_LINE`] is shown as a window around its labels, `…` at each
    /// cut; the header still gives the true line and column.
    pub fn render(&self, sources: &SourceMap, color: bool) -> String {
        // a span that starts or ends inside a multi-byte character widens to whole characters
        // (the renderer indexes lines by character)
        let snapped = self.on_char_boundaries(sources);
        let this = snapped.as_ref().unwrap_or(self);
        match this.windowed(sources) {
            Some((cut, d)) => {
                let out = d.render_whole(&cut, color);
                match (this.span, d.span) {
                    (Some(a), Some(b)) => out.replacen(&cut.describe(b), &sources.describe(a), 1),
                    _ => out,
                }
            }
            None => this.render_whole(sources, color),
        }
    }

    /// This diagnostic with its spans widened to character boundaries; `None` when they are.
    fn on_char_boundaries(&self, sources: &SourceMap) -> Option<Diagnostic> {
        let snap = |sp: Span| -> Span {
            let Some(f) = sources.files().get(sp.file as usize) else {
                return sp;
            };
            let t = &f.text;
            let mut lo = (sp.lo as usize).min(t.len());
            while !t.is_char_boundary(lo) {
                lo -= 1;
            }
            let mut hi = (sp.hi as usize).clamp(lo, t.len());
            while !t.is_char_boundary(hi) {
                hi += 1;
            }
            Span::new(sp.file, lo, hi)
        };
        let mut d = self.clone();
        d.span = d.span.map(snap);
        for l in &mut d.secondary {
            l.span = snap(l.span);
        }
        (d != *self).then_some(d)
    }

    /// This diagnostic over a copy of `sources` whose long labelled lines are cut to windows
    /// around their labels, with its spans moved to match; `None` when no line is too long.
    fn windowed(&self, sources: &SourceMap) -> Option<(SourceMap, Diagnostic)> {
        let mut spans: Vec<Span> = self.span.into_iter().collect();
        spans.extend(self.secondary.iter().map(|l| l.span));
        let mut cut = SourceMap::new();
        let mut moved = spans.clone();
        let mut any = false;
        for (id, f) in sources.files().iter().enumerate() {
            let id = id as crate::span::FileId;
            let mine: Vec<usize> = (0..spans.len()).filter(|&i| spans[i].file == id).collect();
            let text = &f.text;
            // The long lines that hold a span's start: (line start, line end, window).
            let mut edits: Vec<(usize, usize, usize, usize)> = Vec::new();
            for &i in &mine {
                let lo = (spans[i].lo as usize).min(text.len());
                let start = text[..lo].rfind('\n').map_or(0, |p| p + 1);
                let end = text[lo..].find('\n').map_or(text.len(), |p| lo + p);
                if end - start <= MAX_EXCERPT_LINE || edits.iter().any(|e| e.0 == start) {
                    continue;
                }
                let on_line = mine
                    .iter()
                    .map(|&j| spans[j])
                    .filter(|s| (s.lo as usize) >= start && (s.lo as usize) <= end);
                let first = on_line.clone().map(|s| s.lo as usize).min().unwrap_or(lo);
                let last = on_line
                    .map(|s| (s.hi as usize).min(end))
                    .max()
                    .unwrap_or(lo);
                let mut a = first.saturating_sub(EXCERPT_CONTEXT).max(start);
                let mut b = (last + EXCERPT_CONTEXT).min(end);
                while !text.is_char_boundary(a) {
                    a -= 1;
                }
                while !text.is_char_boundary(b) {
                    b += 1;
                }
                edits.push((start, end, a, b));
            }
            if edits.is_empty() {
                cut.add(f.name.clone(), text.clone());
                continue;
            }
            any = true;
            edits.sort();
            let mut new_text = text.clone();
            for &(start, end, a, b) in edits.iter().rev() {
                let pre = if a > start { "…" } else { "" };
                let post = if b < end { "…" } else { "" };
                let line = format!("{pre}{}{post}", &text[a..b]);
                let delta = line.len() as i64 - (end - start) as i64;
                let at = |p: usize| -> usize {
                    if p < start {
                        p
                    } else if p > end {
                        (p as i64 + delta) as usize
                    } else {
                        start + pre.len() + p.clamp(a, b) - a
                    }
                };
                for &i in &mine {
                    let s = &mut moved[i];
                    s.lo = at(s.lo as usize) as u32;
                    s.hi = at(s.hi as usize).max(s.lo as usize) as u32;
                }
                new_text.replace_range(start..end, &line);
            }
            cut.add(f.name.clone(), new_text);
        }
        if !any {
            return None;
        }
        let mut d = self.clone();
        let mut it = moved.into_iter();
        if d.span.is_some() {
            d.span = it.next();
        }
        for l in &mut d.secondary {
            if let Some(s) = it.next() {
                l.span = s;
            }
        }
        Some((cut, d))
    }

    fn render_whole(&self, sources: &SourceMap, color: bool) -> String {
        use ariadne::{Color, Config, IndexType, Label as ALabel, Report, ReportKind};

        let kind = match self.severity {
            Severity::Error => ReportKind::Custom(self.code.header(), Color::Red),
            Severity::Warning => ReportKind::Warning,
        };
        let file_of = |s: Span| {
            sources
                .get(s.file)
                .map(|f| f.name.clone())
                .unwrap_or_else(|| "<unknown>".to_string())
        };
        let clamp = |s: Span| {
            let len = sources.get(s.file).map(|f| f.text.len()).unwrap_or(0);
            let lo = (s.lo as usize).min(len);
            let hi = (s.hi as usize).min(len).max(lo);
            lo..hi
        };
        let Some(primary) = self.span.filter(|s| sources.get(s.file).is_some()) else {
            // No source position: a plain header plus notes.
            let mut out = format!("{}: {}\n", self.header_text(), self.message);
            for n in &self.notes {
                out.push_str(&format!("  = note: {n}\n"));
            }
            if let Some(h) = &self.help {
                out.push_str(&format!("  = help: {h}\n"));
            }
            return out;
        };
        let config = Config::default()
            .with_color(color)
            .with_index_type(IndexType::Byte);
        let mut report = Report::build(kind, (file_of(primary), clamp(primary)))
            .with_config(config)
            .with_message(&self.message);
        // Labels go in source order: ariadne starts a new group (with a repeated header) when a
        // label comes before the previous one.
        let mut labels: Vec<(Span, String, Color)> = vec![(
            primary,
            self.label
                .clone()
                .unwrap_or_else(|| self.code.default_label().to_string()),
            Color::Red,
        )];
        for s in &self.secondary {
            if sources.get(s.span.file).is_some() {
                labels.push((s.span, s.message.clone(), Color::Blue));
            }
        }
        labels.sort_by_key(|(s, _, _)| (s.file, s.lo));
        for (span, text, color) in labels {
            report = report.with_label(
                ALabel::new((file_of(span), clamp(span)))
                    .with_message(text)
                    .with_color(color),
            );
        }
        for n in &self.notes {
            report = report.with_note(n);
        }
        if let Some(h) = &self.help {
            report = report.with_help(h);
        }
        let cache = ariadne::sources(
            sources
                .files()
                .iter()
                .map(|f| (f.name.clone(), f.text.clone())),
        );
        let mut buf = Vec::new();
        if report.finish().write(cache, &mut buf).is_err() {
            return format!("{}: {}\n", self.header_text(), self.message);
        }
        let out = String::from_utf8_lossy(&buf).into_owned();
        if color {
            out
        } else {
            // ariadne 0.6 colours a `ReportKind::Custom` header even with colour off
            strip_ansi(&out)
        }
    }

    fn header_text(&self) -> String {
        match self.severity {
            Severity::Error => self.code.header().to_string(),
            Severity::Warning => "warning".to_string(),
        }
    }
}

/// Longest source line a diagnostic's excerpt shows whole.
pub const MAX_EXCERPT_LINE: usize = 240;
/// Bytes of a longer line kept on each side of its labels.
const EXCERPT_CONTEXT: usize = 80;

/// Removes ANSI escape sequences (`ESC [ ... letter`).
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Levenshtein distance, for "did you mean" suggestions.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The closest candidate to `name` within a distance proportional to its length.
pub fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let max = (name.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, _)| *d <= max)
        .min_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(b.1)))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_inside_a_character_widen_to_it() {
        let mut sources = SourceMap::new();
        let file = sources.add("u.tsr", "x = tilé + 1\n");
        // `é` is bytes 7..9: a span ending at 8 (and one starting there) cut it
        for (lo, hi) in [(4, 8), (8, 9), (8, 8)] {
            let d = Diagnostic::new(Code::E0100, "bad")
                .at(Span::new(file, lo, hi))
                .with_label("here");
            let out = d.render(&sources, false);
            assert!(out.contains("x = tilé + 1"), "{out}");
        }
    }

    #[test]
    fn long_lines_are_windowed_around_every_label() {
        let mut sources = SourceMap::new();
        let long = format!("a = {}bad + {}worse", "x + ".repeat(300), "y + ".repeat(20));
        let text = format!("first = 1\n{long}\nlast = bad\n");
        let file = sources.add("w.tsr", text.clone());
        let at = |needle: &str, from: usize| -> Span {
            let lo = from + text[from..].find(needle).unwrap();
            Span::new(file, lo, lo + needle.len())
        };
        let line2 = text.find('\n').unwrap() + 1;
        let bad = at("bad", line2);
        let worse = at("worse", line2);
        let last = at("bad", line2 + long.len());
        let d = Diagnostic::new(Code::E0100, "name 'bad' is not defined")
            .at(bad)
            .with_label("here")
            .with_secondary(worse, "and here")
            .with_secondary(last, "and on the next line");
        let out = d.render(&sources, false);
        assert!(out.len() < 2500, "{} bytes:\n{out}", out.len());
        // The true position of the primary label, though the line is cut before it.
        let (line, col) = sources.get(file).unwrap().line_col(bad.lo as usize);
        assert!(out.contains(&format!("w.tsr:{line}:{col}")), "{out}");
        assert!(col > 1000);
        for want in [
            "here",
            "and here",
            "and on the next line",
            "…",
            "last = bad",
        ] {
            assert!(out.contains(want), "missing {want:?}:\n{out}");
        }
        // A short line is shown whole, as before.
        let short = Diagnostic::new(Code::E0100, "x").at(Span::new(file, 0, 5));
        assert!(short.render(&sources, false).contains("first = 1"));
    }
}
