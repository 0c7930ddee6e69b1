//! Tables shown to users (profile tables, the autotune report): plain text through comfy-table
//! (a fixed layout, independent of the terminal width, so output is reproducible) and HTML for
//! notebooks. A [`TableObj`] is the `.tsr` value: `print(t)` shows the text, `t.html()` the
//! HTML, `t.columns` and `t.rows` the cells.

use comfy_table::{presets, CellAlignment, ContentArrangement, Table as Comfy};
use tessera_lang::diag::Diagnostic;
use tessera_lang::eval::{AttrResult, HostObject, Interp, Value};

/// One table: a header, rows of cells, and notes printed under it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub title: Option<String>,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Columns aligned to the right (numbers).
    pub right: Vec<usize>,
    pub notes: Vec<String>,
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl Table {
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            ..Table::default()
        }
    }

    /// The plain-text rendering (title line, the table, notes).
    pub fn text(&self) -> String {
        let mut out = String::new();
        if let Some(t) = &self.title {
            out.push_str(t);
            out.push('\n');
        }
        if !self.rows.is_empty() {
            let mut c = Comfy::new();
            c.load_style(presets::ASCII_MARKDOWN)
                .set_content_arrangement(ContentArrangement::Disabled)
                .set_header(self.header.clone());
            for r in &self.rows {
                c.add_row(r.clone());
            }
            for i in &self.right {
                if let Some(col) = c.column_mut(*i) {
                    col.set_cell_alignment(CellAlignment::Right);
                }
            }
            out.push_str(&c.to_string());
            out.push('\n');
        }
        for n in &self.notes {
            out.push_str(n);
            out.push('\n');
        }
        out
    }

    /// The HTML rendering (a `<table>` with a caption and notes as paragraphs).
    pub fn html(&self) -> String {
        let mut out = String::from("<div class=\"tessera-table\">");
        out.push_str("<table>");
        if let Some(t) = &self.title {
            out.push_str(&format!("<caption>{}</caption>", escape(t)));
        }
        out.push_str("<thead><tr>");
        for h in &self.header {
            out.push_str(&format!("<th>{}</th>", escape(h)));
        }
        out.push_str("</tr></thead><tbody>");
        for r in &self.rows {
            out.push_str("<tr>");
            for (i, c) in r.iter().enumerate() {
                let align = if self.right.contains(&i) {
                    " style=\"text-align:right\""
                } else {
                    ""
                };
                out.push_str(&format!("<td{align}>{}</td>", escape(c.trim())));
            }
            out.push_str("</tr>");
        }
        out.push_str("</tbody></table>");
        for n in &self.notes {
            out.push_str(&format!("<p>{}</p>", escape(n)));
        }
        out.push_str("</div>");
        out
    }
}

/// The `.tsr` value of one or more tables shown together.
pub struct TableObj {
    pub type_name: &'static str,
    pub parts: Vec<Table>,
    /// One line per row in a short form (a profile's `lines()`: SPEC §6); empty for others.
    pub lines: Vec<String>,
}

impl TableObj {
    /// Lines under the first table.
    pub fn add_notes(&mut self, notes: Vec<String>) {
        if let Some(t) = self.parts.first_mut() {
            t.notes.extend(notes);
        }
    }

    pub fn text(&self) -> String {
        let parts: Vec<String> = self.parts.iter().map(Table::text).collect();
        parts.join("\n").trim_end().to_string()
    }
    pub fn html(&self) -> String {
        self.parts.iter().map(Table::html).collect()
    }
}

impl HostObject for TableObj {
    fn type_name(&self) -> &'static str {
        self.type_name
    }
    fn repr(&self) -> String {
        self.text()
    }
    fn html(&self) -> Option<String> {
        Some(TableObj::html(self))
    }
    fn len(&self) -> Option<Result<usize, Diagnostic>> {
        Some(Ok(self.parts.first().map_or(0, |t| t.rows.len())))
    }
    fn get_attr(&self, _this: &Value, name: &str, _it: &mut Interp) -> AttrResult {
        let first = self.parts.first();
        Ok(match name {
            "html" => {
                let h = TableObj::html(self);
                Some(Value::native("html", "html()", move |_, args| {
                    args.bind("html", &[], &[])?;
                    Ok(Value::str(&h))
                }))
            }
            "text" => Some(Value::str(&self.text())),
            "lines" if self.type_name == "profile" => {
                let lines: Vec<Value> = self.lines.iter().map(|l| Value::str(l)).collect();
                Some(Value::native("lines", "lines()", move |_, args| {
                    args.bind("lines", &[], &[])?;
                    Ok(Value::list(lines.clone()))
                }))
            }
            "columns" => Some(Value::list(
                first
                    .map(|t| t.header.iter().map(|h| Value::str(h)).collect())
                    .unwrap_or_default(),
            )),
            "rows" => Some(Value::list(
                first
                    .map(|t| {
                        t.rows
                            .iter()
                            .map(|r| Value::list(r.iter().map(|c| Value::str(c.trim())).collect()))
                            .collect()
                    })
                    .unwrap_or_default(),
            )),
            _ => None,
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        if self.type_name == "profile" {
            vec!["columns", "html", "lines", "rows", "text"]
        } else {
            vec!["columns", "html", "rows", "text"]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_html_renderings() {
        let mut t = Table::new(&["op", "latency"]);
        t.title = Some("p <1>".into());
        t.right = vec![1];
        t.rows.push(vec!["a&b".into(), "  1.000 µs".into()]);
        t.notes.push("* note".into());
        let o = TableObj {
            type_name: "profile",
            parts: vec![t],
            lines: vec![],
        };
        let text = o.text();
        assert!(text.starts_with("p <1>\n| op  |    latency |\n"), "{text}");
        assert!(text.ends_with("* note"));
        let html = HostObject::html(&o).unwrap();
        assert!(html.contains("<caption>p &lt;1&gt;</caption>"));
        assert!(html.contains("<th>op</th><th>latency</th>"));
        assert!(html.contains("<td>a&amp;b</td><td style=\"text-align:right\">1.000 µs</td>"));
        assert!(html.contains("<p>* note</p>"));
    }
}
