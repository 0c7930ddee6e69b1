//! Rich renderings of session outputs: tables (aligned text and an HTML `<table>`) and IR text
//! (plain, and HTML with light syntax highlighting).
//!
//! HTML uses inline styles only: notebook front ends sanitise `<style>` elements and class-based
//! CSS of untrusted outputs, but keep `style` attributes.

use crate::session::Rich;

/// Escapes text for HTML element content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A table with a header row: aligned columns as text, an HTML `<table>` as HTML.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> Rich {
    Rich {
        text: table_text(headers, rows),
        html: Some(table_html(headers, rows)),
        svg: None,
    }
}

fn width(s: &str) -> usize {
    s.chars().count()
}

/// Columns padded to their widest cell, two spaces apart, a dashed rule under the header.
pub fn table_text(headers: &[&str], rows: &[Vec<String>]) -> String {
    let n = headers.len();
    let mut w: Vec<usize> = headers.iter().map(|h| width(h)).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(n) {
            w[i] = w[i].max(width(c));
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            s.push_str(c);
            if i + 1 < cells.len() {
                s.push_str(&" ".repeat(w[i].saturating_sub(width(c))));
            }
        }
        s.trim_end().to_string()
    };
    let mut out = line(headers.to_vec());
    out.push('\n');
    let rule: Vec<String> = w.iter().map(|k| "-".repeat(*k)).collect();
    out.push_str(&line(rule.iter().map(|s| s.as_str()).collect()));
    for r in rows {
        out.push('\n');
        out.push_str(&line(r.iter().map(|s| s.as_str()).collect()));
    }
    out
}

/// An HTML table; every cell escaped.
pub fn table_html(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = String::from("<table class=\"tessera-table\">\n<thead><tr>");
    for h in headers {
        s.push_str(&format!("<th style=\"text-align:left\">{}</th>", escape(h)));
    }
    s.push_str("</tr></thead>\n<tbody>\n");
    for r in rows {
        s.push_str("<tr>");
        for c in r {
            s.push_str(&format!(
                "<td style=\"text-align:left\"><code>{}</code></td>",
                escape(c)
            ));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody>\n</table>");
    s
}

/// A short message: the text, and the same in a `<pre>` block.
pub fn message(text: impl Into<String>) -> Rich {
    let text = text.into();
    let html = format!("<pre>{}</pre>", escape(&text));
    Rich {
        text,
        html: Some(html),
        svg: None,
    }
}

/// IR text (any level, or PTX): the text, and an HTML `<pre>` with highlighting.
pub fn ir(text: &str) -> Rich {
    Rich {
        text: text.to_string(),
        html: Some(ir_html(text)),
        svg: None,
    }
}

const C_COMMENT: &str = "color:#8a8a8a";
const C_LOC: &str = "color:#a0a0a0";
const C_VALUE: &str = "color:#1f6fb2";
const C_SYMBOL: &str = "color:#7a3e9d;font-weight:bold";
const C_OP: &str = "color:#a0522d";
const C_KEYWORD: &str = "color:#006400;font-weight:bold";
const C_TYPE: &str = "color:#2e8b57";
const C_NUMBER: &str = "color:#b8860b";
const C_STRING: &str = "color:#b22222";

/// Element types and PTX type suffixes shown as types.
const TYPES: &[&str] = &[
    "fp64", "fp32", "tf32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "int64", "int32", "int8",
    "bool", "b8", "b16", "b32", "b64", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "f16",
    "f32", "f64", "pred",
];

/// Words that structure the IR text.
const KEYWORDS: &[&str] = &[
    "graph", "schedule", "kernel", "return", "target", "entry", "ret", "in", "step", "grid",
    "block",
];

fn span(out: &mut String, style: &str, text: &str) {
    out.push_str("<span style=\"");
    out.push_str(style);
    out.push_str("\">");
    out.push_str(&escape(text));
    out.push_str("</span>");
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Highlights one line of IR: comments (`//`), `loc(...)` trailers, SSA values (`%x`), symbols
/// (`@f`), dotted op names (`tile.copy`, `ld.global.v4`), keywords, element types, numbers and
/// strings. Everything else is escaped as is.
pub fn ir_line_html(line: &str, out: &mut String) {
    let b = line.as_bytes();
    let mut i = 0;
    let mut first_word = true;
    while i < b.len() {
        let rest = &line[i..];
        let c = rest.chars().next().unwrap_or(' ');
        if rest.starts_with("//") {
            span(out, C_COMMENT, rest);
            return;
        }
        if rest.starts_with("loc(") {
            let end = rest.find(')').map_or(rest.len(), |e| e + 1);
            span(out, C_LOC, &rest[..end]);
            i += end;
            continue;
        }
        if c == '"' {
            let end = rest[1..].find('"').map_or(rest.len(), |e| e + 2);
            span(out, C_STRING, &rest[..end]);
            i += end;
            continue;
        }
        if c == '%' || c == '@' {
            let len = 1 + rest[1..]
                .find(|ch: char| !(is_word(ch) || ch == '.'))
                .unwrap_or(rest.len() - 1);
            let style = if c == '%' { C_VALUE } else { C_SYMBOL };
            span(out, style, &rest[..len]);
            i += len;
            first_word = false;
            continue;
        }
        if c.is_ascii_digit() {
            let len = rest
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '.' || ch == '_'))
                .unwrap_or(rest.len());
            span(out, C_NUMBER, &rest[..len]);
            i += len;
            first_word = false;
            continue;
        }
        if is_word(c) || c == '.' {
            let len = rest
                .find(|ch: char| !(is_word(ch) || ch == '.'))
                .unwrap_or(rest.len());
            let word = &rest[..len];
            let base = word.trim_start_matches('.');
            if KEYWORDS.contains(&base) {
                span(out, C_KEYWORD, word);
            } else if TYPES.contains(&base) {
                span(out, C_TYPE, word);
            } else if word.contains('.') && !word.starts_with('.')
                || (first_word && b.get(i + len) != Some(&b':'))
            {
                // an op name: the first word of an instruction, or a dotted name
                span(out, C_OP, word);
            } else if word.starts_with('.') {
                span(out, C_KEYWORD, word);
            } else {
                out.push_str(&escape(word));
            }
            i += len;
            first_word = false;
            continue;
        }
        if !c.is_whitespace() && c != '=' {
            first_word = false;
        }
        out.push_str(&escape(&rest[..c.len_utf8()]));
        i += c.len_utf8();
    }
}

/// The whole IR text as a highlighted `<pre>` block.
pub fn ir_html(text: &str) -> String {
    let mut out =
        String::from("<pre class=\"tessera-ir\" style=\"line-height:1.3;font-family:monospace\">");
    for (n, line) in text.lines().enumerate() {
        if n > 0 {
            out.push('\n');
        }
        ir_line_html(line, &mut out);
    }
    out.push_str("</pre>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Removes tags and decodes the escapes `escape` produces.
    fn strip_tags(html: &str) -> String {
        let mut out = String::new();
        let mut in_tag = false;
        for c in html.chars() {
            match c {
                '<' => in_tag = true,
                '>' if in_tag => in_tag = false,
                c if !in_tag => out.push(c),
                _ => {}
            }
        }
        out.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&amp;", "&")
    }

    #[test]
    fn highlighted_ir_keeps_the_text() {
        let text = "graph @f(%0: fp32[64,64]) {\n  %3 = flash_attention %0, %1 {causal = false} : fp32[64,64]   loc(\"a<b>.tsr\":7:12)\n  ld.global.v4.f32 {%f0, %f1}, [%rd1+16]; // a & b\n}";
        let html = ir_html(text);
        assert_eq!(strip_tags(&html), text);
        assert!(html.contains(&format!("<span style=\"{C_VALUE}\">%3</span>")));
        assert!(html.contains(&format!("<span style=\"{C_SYMBOL}\">@f</span>")));
        assert!(html.contains(&format!("<span style=\"{C_OP}\">ld.global.v4.f32</span>")));
        assert!(html.contains(&format!("<span style=\"{C_COMMENT}\">// a &amp; b</span>")));
        assert!(html.contains("loc(&quot;a&lt;b&gt;.tsr&quot;:7:12)"));
        assert!(!html.contains("<b>"));
    }

    #[test]
    fn tables_align_and_escape() {
        let rows = vec![
            vec!["x".to_string(), "tensor".to_string()],
            vec!["longer_name".to_string(), "<int>".to_string()],
        ];
        let t = table(&["name", "type"], &rows);
        let lines: Vec<&str> = t.text.lines().collect();
        assert_eq!(lines[0], "name         type");
        assert_eq!(lines[1], "-----------  ------");
        assert_eq!(lines[2], "x            tensor");
        assert_eq!(lines[3], "longer_name  <int>");
        let html = t.html.unwrap_or_default();
        assert_eq!(html.matches("<tr>").count(), 3);
        assert!(html.contains("&lt;int&gt;"));
    }
}
