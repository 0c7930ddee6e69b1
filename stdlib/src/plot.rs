//! The `plot` module: small, deterministic SVG figures (line and scatter plots) for notebooks
//! and scripts.
//!
//! `plot.line(ys, x=None, label=None, title=None, xlabel=None, ylabel=None, logy=False)`,
//! `plot.scatter(x, y, ...)` and `plot.figure(...)` make a figure; `fig.line(...)` and
//! `fig.scatter(...)` add series to it (and return it), `fig.svg()` is the SVG text and
//! `fig.save(path)` writes it and returns the size of the file written. Series are lists or
//! tuples of numbers (one-element tensors count as numbers), ranges, or 1-D real tensors.
//!
//! The SVG is the same bytes on every run and machine: a fixed canvas, coordinates with one
//! decimal, tick labels from a fixed 1-2-5 rule, a fixed palette, no timestamps, no ids. What
//! `print(fig)` and the REPL show is a short text summary (each series: its kind, label,
//! number of points, x and y ranges); the REPL's rich display adds the SVG as an image
//! (Jupyter `image/svg+xml`, see [`svg_of`]).

use crate::tensor::{as_tensor, rt};
use std::cell::RefCell;
use std::fmt::Write as _;
use std::path::PathBuf;
use tessera_lang::diag::{Code, Diagnostic};
use tessera_lang::eval::value::range_len;
use tessera_lang::eval::{Arg, AttrResult, CallArgs, HostObject, Interp, Module, Value};
use tessera_lang::Span;

type R<T> = Result<T, Diagnostic>;

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Line,
    Scatter,
}

mod axis;
use axis::*;

/// One series: points `(x[i], y[i])`, all finite (and `y > 0` on a log axis).
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub kind: Kind,
    pub label: Option<String>,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
}

/// A figure's contents.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fig {
    pub title: Option<String>,
    pub xlabel: Option<String>,
    pub ylabel: Option<String>,
    pub logy: bool,
    pub series: Vec<Series>,
}

/// The `.tsr` figure value (series can be added to it).
pub struct Figure(RefCell<Fig>);

/// The SVG of a value that is a figure (the REPL and the Jupyter kernel show it as an image).
pub fn svg_of(v: &Value) -> Option<String> {
    v.downcast::<Figure>().map(|f| f.0.borrow().svg())
}

// ---- rendering ----

const W: f64 = 640.0;
const H: f64 = 400.0;
const LEFT: f64 = 72.0;
const RIGHT: f64 = 616.0;
const BOTTOM: f64 = 344.0;
const PALETTE: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

/// Writes one element: `<name k="v" ...>text</name>`, or `<name k="v" .../>` without text;
/// `keys` are the attribute names, space separated, `vals` their values.
fn el(o: &mut String, name: &str, keys: &str, vals: &[&str], text: Option<&str>) {
    o.push('<');
    o.push_str(name);
    for (k, v) in keys.split(' ').zip(vals) {
        let _ = write!(o, " {k}=\"{v}\"");
    }
    match text {
        Some(t) => {
            let _ = writeln!(o, ">{}</{name}>", escape(t));
        }
        None => o.push_str("/>\n"),
    }
}

impl Fig {
    /// The SVG document.
    pub fn svg(&self) -> String {
        let top = if self.title.is_some() { 40.0 } else { 20.0 };
        let xs = self.series.iter().flat_map(|s| s.x.iter().copied());
        let ys = self.series.iter().flat_map(|s| s.y.iter().copied());
        let (xmin, xmax) = xs.fold(None, min_max).unwrap_or((0.0, 1.0));
        let (ymin, ymax) = ys.fold(None, min_max).unwrap_or((1.0, 10.0));
        let xa = linear_axis(xmin, xmax);
        let ya = if self.logy {
            log_axis(ymin, ymax)
        } else {
            linear_axis(ymin, ymax)
        };
        // positions of axis values (log10 of the data on a log axis)
        // halved first: spans near the largest float overflow `hi - lo`
        let frac = |v: f64, a: &Axis| (v / 2.0 - a.lo / 2.0) / (a.hi / 2.0 - a.lo / 2.0);
        let axf = |v: f64| LEFT + frac(v, &xa) * (RIGHT - LEFT);
        let ax = |v: f64| px(axf(v));
        let ay = |v: f64| BOTTOM - frac(v, &ya) * (BOTTOM - top);
        // every data point in pixels, per series
        let pixels: Vec<Vec<(f64, f64)>> = (self.series.iter())
            .map(|sr| {
                let y = |y: f64| ay(if self.logy { y.log10() } else { y });
                sr.x.iter()
                    .zip(&sr.y)
                    .map(|(a, b)| (axf(*a), y(*b)))
                    .collect()
            })
            .collect();
        let (left, right, bottom, top_) = (px(LEFT), px(RIGHT), px(BOTTOM), px(top));
        let mut o = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" \
             viewBox=\"0 0 {W} {H}\" font-family=\"sans-serif\" font-size=\"12\">\n\
             <rect width=\"{W}\" height=\"{H}\" fill=\"white\"/>\n"
        );
        let mid = px((LEFT + RIGHT) / 2.0);
        if let Some(t) = &self.title {
            let k = "x y text-anchor font-size";
            el(&mut o, "text", k, &[&mid, "26", "middle", "15"], Some(t));
        }
        o.push_str("<g stroke=\"#e6e6e6\" stroke-width=\"1\">\n");
        for (v, _) in &xa.ticks {
            let x = ax(*v);
            el(
                &mut o,
                "line",
                "x1 y1 x2 y2",
                &[&x, &top_, &x, &bottom],
                None,
            );
        }
        for (v, _) in &ya.ticks {
            let y = px(ay(*v));
            el(
                &mut o,
                "line",
                "x1 y1 x2 y2",
                &[&left, &y, &right, &y],
                None,
            );
        }
        o.push_str("</g>\n<g fill=\"#333333\">\n");
        let below = px(BOTTOM + 17.0);
        for (v, label) in &xa.ticks {
            let k = "x y text-anchor";
            el(&mut o, "text", k, &[&ax(*v), &below, "middle"], Some(label));
        }
        for (v, label) in &ya.ticks {
            let (x, y) = (px(LEFT - 6.0), px(ay(*v) + 4.0));
            el(
                &mut o,
                "text",
                "x y text-anchor",
                &[&x, &y, "end"],
                Some(label),
            );
        }
        o.push_str("</g>\n");
        let (w, h) = (px(RIGHT - LEFT), px(BOTTOM - top));
        let k = "x y width height fill stroke";
        el(
            &mut o,
            "rect",
            k,
            &[&left, &top_, &w, &h, "none", "#333333"],
            None,
        );
        if let Some(l) = &self.xlabel {
            let y = px(H - 14.0);
            el(
                &mut o,
                "text",
                "x y text-anchor",
                &[&mid, &y, "middle"],
                Some(l),
            );
        }
        if let Some(l) = &self.ylabel {
            let at = format!("translate(18,{}) rotate(-90)", px((top + BOTTOM) / 2.0));
            el(
                &mut o,
                "text",
                "transform text-anchor",
                &[&at, "middle"],
                Some(l),
            );
        }
        for (i, (sr, pix)) in self.series.iter().zip(&pixels).enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let pts = pix.iter().map(|(x, y)| (px(*x), px(*y)));
            if sr.kind == Kind::Line && sr.x.len() > 1 {
                let pts: Vec<String> = pts.map(|(x, y)| format!("{x},{y}")).collect();
                let k = "fill stroke stroke-width points";
                el(
                    &mut o,
                    "polyline",
                    k,
                    &["none", color, "1.5", &pts.join(" ")],
                    None,
                );
            } else {
                let _ = writeln!(o, "<g fill=\"{color}\">");
                for (x, y) in pts {
                    el(&mut o, "circle", "cx cy r", &[&x, &y, "3"], None);
                }
                o.push_str("</g>\n");
            }
        }
        self.legend(&mut o, top, &pixels);
        o.push_str("</svg>\n");
        o
    }

    /// A legend when any series has a label: in the corner of the plot (top right, top left,
    /// bottom right, bottom left) that covers the fewest data points and line midpoints.
    fn legend(&self, o: &mut String, top: f64, pixels: &[Vec<(f64, f64)>]) {
        let labelled: Vec<(usize, &str, Kind)> = (self.series.iter().enumerate())
            .filter_map(|(i, sr)| sr.label.as_deref().map(|l| (i, l, sr.kind)))
            .collect();
        let Some(chars) = labelled.iter().map(|(_, l, _)| l.chars().count()).max() else {
            return;
        };
        let (w, hf) = (
            40.0 + 7.0 * chars as f64,
            8.0 + 18.0 * labelled.len() as f64,
        );
        let mut marks: Vec<(f64, f64)> = pixels.iter().flatten().copied().collect();
        for (sr, pix) in self.series.iter().zip(pixels) {
            if sr.kind == Kind::Line {
                let mids = pix
                    .windows(2)
                    .map(|p| ((p[0].0 + p[1].0) / 2.0, (p[0].1 + p[1].1) / 2.0));
                marks.extend(mids);
            }
        }
        let (right, bottom) = (RIGHT - 8.0 - w, BOTTOM - 8.0 - hf);
        let corners = [
            (right, top + 8.0),
            (LEFT + 8.0, top + 8.0),
            (right, bottom),
            (LEFT + 8.0, bottom),
        ];
        let covered = |(x0, y0): (f64, f64)| {
            let inside = |(x, y): &&(f64, f64)| {
                *x >= x0 - 4.0 && *x <= x0 + w + 4.0 && *y >= y0 - 4.0 && *y <= y0 + hf + 4.0
            };
            marks.iter().filter(inside).count()
        };
        let (x0, y0) = (corners.iter().copied())
            .min_by_key(|c| covered(*c))
            .unwrap_or(corners[0]);
        let h = px(hf);
        let k = "x y width height fill fill-opacity stroke";
        let v = [&px(x0), &px(y0), &px(w), &h, "white", "0.85", "#bbbbbb"];
        el(o, "rect", k, &v, None);
        for (row, (i, label, kind)) in labelled.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let y = px(y0 + 13.0 + 18.0 * row as f64);
            if *kind == Kind::Line {
                let (a, b) = (px(x0 + 8.0), px(x0 + 28.0));
                let k = "x1 y1 x2 y2 stroke stroke-width";
                el(o, "line", k, &[&a, &y, &b, &y, color, "2"], None);
            } else {
                let x = px(x0 + 18.0);
                el(o, "circle", "cx cy r fill", &[&x, &y, "3", color], None);
            }
            let (x, y) = (px(x0 + 34.0), px(y0 + 17.0 + 18.0 * row as f64));
            el(o, "text", "x y", &[&x, &y], Some(label));
        }
    }

    /// The text form: the figure's title and axes, then one line per series.
    pub fn text(&self) -> String {
        let mut head = String::from("figure");
        if let Some(t) = &self.title {
            let _ = write!(head, " {t:?}");
        }
        let mut axes = Vec::new();
        if let Some(l) = &self.xlabel {
            axes.push(format!("x: {l}"));
        }
        if let Some(l) = &self.ylabel {
            axes.push(format!("y: {l}"));
        }
        if self.logy {
            axes.push("log y".to_string());
        }
        if !axes.is_empty() {
            let _ = write!(head, " ({})", axes.join(", "));
        }
        let n = self.series.len();
        let _ = write!(head, ": {n} series");
        let mut lines = vec![head];
        for (i, s) in self.series.iter().enumerate() {
            let kind = if s.kind == Kind::Line {
                "line"
            } else {
                "scatter"
            };
            let name = match &s.label {
                Some(l) => format!("{kind} {l:?}"),
                None => format!("{kind} {}", i + 1),
            };
            let range = |v: &[f64]| {
                let (lo, hi) = v.iter().copied().fold(None, min_max).unwrap_or((0.0, 0.0));
                format!("[{}, {}]", fmt_g(lo, 4), fmt_g(hi, 4))
            };
            let points = s.x.len();
            lines.push(format!(
                "  {name}: {points} point{}, x in {}, y in {}",
                if points == 1 { "" } else { "s" },
                range(&s.x),
                range(&s.y)
            ));
        }
        lines.join("\n")
    }
}

fn min_max(acc: Option<(f64, f64)>, v: f64) -> Option<(f64, f64)> {
    Some(match acc {
        None => (v, v),
        Some((lo, hi)) => (lo.min(v), hi.max(v)),
    })
}

// ---- arguments ----

fn e0101(msg: String, span: Span, label: &str) -> Diagnostic {
    Diagnostic::new(Code::E0101, msg).at(span).with_label(label)
}

fn wrong(a: &Arg, name: &str, want: &str) -> Diagnostic {
    let msg = format!("{name} must be a {want}, not {}", a.value.type_name());
    e0101(msg, a.span, "wrong argument")
}

/// The numbers of a series argument: a list or tuple of numbers (or one-element tensors), a
/// range, or a 1-D real tensor. Every value must be finite.
fn numbers(a: &Arg, what: &str) -> R<Vec<f64>> {
    let out: Vec<f64> = match &a.value {
        Value::List(_) | Value::Tuple(_) => {
            let items = a.value.items().unwrap_or_default();
            let mut out = Vec::with_capacity(items.len());
            for (i, v) in items.iter().enumerate() {
                let n = match v {
                    Value::Host(h) => h.as_number(),
                    other => Some(other.clone()),
                };
                match n {
                    Some(Value::Int(k)) => out.push(k as f64),
                    Some(Value::Float(f)) => out.push(f),
                    _ => {
                        let msg = format!("{what}[{i}] is a {}, not a number", v.type_name());
                        return Err(e0101(msg, a.span, "not a list of numbers"));
                    }
                }
            }
            out
        }
        Value::Range(start, stop, step) => {
            let n = range_len(*start, *stop, *step).max(0);
            (0..n).map(|i| (start + i * step) as f64).collect()
        }
        v => match as_tensor(v) {
            Some(t) if t.ndim() == 1 && !t.dtype().is_complex() => {
                // each point: its value and the text of its coordinates in the SVG
                tessera_runtime::memory::check_host(t.numel(), 48, "plotting a tensor")
                    .map_err(|e| rt(e).at(a.span))?;
                t.to_f64_vec().map_err(|e| rt(e).at(a.span))?
            }
            Some(t) => {
                let shape: Vec<String> = t.shape().iter().map(|d| d.to_string()).collect();
                let (dt, shape) = (t.dtype(), shape.join(", "));
                let msg = format!("{what} must be a 1-D real tensor, got {dt}[{shape}]");
                return Err(e0101(msg, a.span, "not 1-D real"));
            }
            None => return Err(wrong(a, what, "list of numbers or a 1-D tensor")),
        },
    };
    if out.is_empty() {
        let msg = format!("{what} is empty: a series needs at least one point");
        return Err(e0101(msg, a.span, "no points"));
    }
    if let Some(i) = out.iter().position(|v| !v.is_finite()) {
        let v = tessera_lang::eval::format::float_repr(out[i]);
        let msg = format!("{what}[{i}] is {v}: only finite values can be plotted");
        return Err(e0101(msg, a.span, "not finite"));
    }
    Ok(out)
}

/// An optional str argument (`None` allowed).
fn opt_str(a: Option<Arg>, name: &str) -> R<Option<String>> {
    let Some(a) = a else { return Ok(None) };
    match &a.value {
        Value::None => Ok(None),
        Value::Str(s) => Ok(Some(s.to_string())),
        _ => Err(wrong(&a, name, "str")),
    }
}

const FIG_OPTS: [&str; 4] = ["title", "xlabel", "ylabel", "logy"];

/// A figure from the options title, xlabel, ylabel, logy (the tail of a bound argument list).
fn fig_options(mut rest: impl Iterator<Item = Option<Arg>>) -> R<Fig> {
    let title = opt_str(rest.next().flatten(), "title")?;
    let xlabel = opt_str(rest.next().flatten(), "xlabel")?;
    let ylabel = opt_str(rest.next().flatten(), "ylabel")?;
    let logy = match rest.next().flatten() {
        None => false,
        Some(Arg {
            value: Value::Bool(b),
            ..
        }) => b,
        Some(a) => return Err(wrong(&a, "logy", "bool")),
    };
    let series = Vec::new();
    Ok(Fig {
        title,
        xlabel,
        ylabel,
        logy,
        series,
    })
}

/// Binds a `line(ys, x=None, label=None)` or `scatter(x, y, label=None)` call, with the figure
/// options after those when `new` (the module's functions): its series, the argument holding
/// the y values, and the new figure.
fn series_call(kind: Kind, args: &CallArgs, new: bool) -> R<(Series, Arg, Option<Fig>)> {
    let (name, required, optional): (_, &[&str], &[&str]) = match kind {
        Kind::Line => ("line", &["ys"], &["x", "label"]),
        Kind::Scatter => ("scatter", &["x", "y"], &["label"]),
    };
    let fig_opts: &[&str] = if new { &FIG_OPTS } else { &[] };
    let optional: Vec<&str> = optional.iter().chain(fig_opts).copied().collect();
    let mut a = args.bind(name, required, &optional)?.into_iter();
    let (first, second) = (a.next().flatten(), a.next().flatten());
    let label = opt_str(a.next().flatten(), "label")?;
    let fig = if new { Some(fig_options(a)?) } else { None };
    let (x, y, yname) = match kind {
        Kind::Line => (
            second.filter(|a| !matches!(a.value, Value::None)),
            first,
            "ys",
        ),
        Kind::Scatter => (first, second, "y"),
    };
    let missing = || Diagnostic::new(Code::E0101, format!("{name}() needs x and y")).at(args.span);
    let y = y.ok_or_else(missing)?;
    let ys = numbers(&y, yname)?;
    let xs = match &x {
        Some(x) => numbers(x, "x")?,
        None if kind == Kind::Line => (0..ys.len()).map(|i| i as f64).collect(),
        None => return Err(missing()),
    };
    if xs.len() != ys.len() {
        let (n, m) = (xs.len(), ys.len());
        let msg = format!("x has {n} values but {yname} has {m}: they must be as long");
        let at = match (kind, &x) {
            (Kind::Line, Some(x)) => x.span,
            _ => y.span,
        };
        return Err(e0101(msg, at, "length differs"));
    }
    let series = Series {
        kind,
        label,
        x: xs,
        y: ys,
    };
    Ok((series, y, fig))
}

/// Adds `s` to `fig`; on a log y axis every y must be positive (E0101 at the y argument).
fn add(fig: &mut Fig, s: Series, y: &Arg) -> R<()> {
    if let Some(i) = s.y.iter().position(|v| *v <= 0.0).filter(|_| fig.logy) {
        let what = if s.kind == Kind::Line { "ys" } else { "y" };
        let v = fmt_g(s.y[i], 6);
        let msg = format!("{what}[{i}] is {v}: a log y axis needs positive values");
        return Err(e0101(msg, y.span, "not positive")
            .with_help("plot without logy=True, or drop the values that are not positive"));
    }
    fig.series.push(s);
    Ok(())
}

/// `plot.line(...)`, `plot.scatter(...)`: a new figure with one series.
fn new_plot(kind: Kind, args: CallArgs) -> R<Value> {
    let (s, y, fig) = series_call(kind, &args, true)?;
    let mut fig = fig.unwrap_or_default();
    add(&mut fig, s, &y)?;
    Ok(Value::host(Figure(RefCell::new(fig))))
}

/// Writes the SVG to `path`; returns the size of the file on disk.
fn save(fig: &Fig, args: &CallArgs) -> R<Value> {
    let a = args.bind("save", &["path"], &[])?;
    let Some(p) = a.into_iter().flatten().next() else {
        return Err(Diagnostic::new(Code::E0101, "save() needs a path").at(args.span));
    };
    let Value::Str(path) = &p.value else {
        return Err(wrong(&p, "path", "str"));
    };
    let path = PathBuf::from(&**path);
    // the figure is SVG: a `.png` or `.pdf` path would hold SVG bytes under the wrong name
    if !path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("svg"))
    {
        let msg = format!(
            "save() writes SVG only: the path must end in .svg, got {}",
            p.value.repr()
        );
        return Err(e0101(msg, p.span, "not a .svg path"));
    }
    let cannot = |e: std::io::Error| {
        let msg = format!("cannot save the figure to {}: {e}", path.display());
        Diagnostic::new(Code::E0500, msg).at(p.span)
    };
    std::fs::write(&path, fig.svg()).map_err(cannot)?;
    let n = std::fs::metadata(&path).map_err(cannot)?.len();
    Ok(Value::Int(n as i64))
}

impl HostObject for Figure {
    fn type_name(&self) -> &'static str {
        "figure"
    }
    fn repr(&self) -> String {
        self.0.borrow().text()
    }
    fn len(&self) -> Option<Result<usize, Diagnostic>> {
        Some(Ok(self.0.borrow().series.len()))
    }
    fn get_attr(&self, this: &Value, name: &str, _it: &mut Interp) -> AttrResult {
        let me = this.clone();
        let with = move |f: &dyn Fn(&Figure) -> R<Value>| match me.downcast::<Figure>() {
            Some(fig) => f(fig),
            None => Err(Diagnostic::new(Code::E0101, "not a figure")),
        };
        let fig = self.0.borrow();
        Ok(Some(match name {
            "title" => fig.title.as_deref().map_or(Value::None, Value::str),
            "xlabel" => fig.xlabel.as_deref().map_or(Value::None, Value::str),
            "ylabel" => fig.ylabel.as_deref().map_or(Value::None, Value::str),
            "logy" => Value::Bool(fig.logy),
            "line" | "scatter" => {
                let (kind, doc) = match name {
                    "line" => (Kind::Line, "line(ys, x=None, label=None)"),
                    _ => (Kind::Scatter, "scatter(x, y, label=None)"),
                };
                let this = this.clone();
                Value::native(name, doc, move |_, args| {
                    let (s, y, _) = series_call(kind, &args, false)?;
                    with(&|f| {
                        add(&mut f.0.borrow_mut(), s.clone(), &y)?;
                        Ok(this.clone())
                    })
                })
            }
            "svg" => Value::native("svg", "svg()", move |_, args| {
                args.bind("svg", &[], &[])?;
                with(&|f| Ok(Value::str(&f.0.borrow().svg())))
            }),
            "save" => Value::native("save", "save(path)", move |_, args| {
                with(&|f| save(&f.0.borrow(), &args))
            }),
            _ => return Ok(None),
        }))
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec![
            "line", "logy", "save", "scatter", "svg", "title", "xlabel", "ylabel",
        ]
    }
}

/// Builds the `plot` module.
pub fn module() -> Module {
    let m = Module::new(
        "plot",
        "line and scatter plots as deterministic SVG figures",
    );
    let opts = "title=None, xlabel=None, ylabel=None, logy=False";
    let figure = |_: &mut Interp, args: CallArgs| {
        let a = args.bind("figure", &[], &FIG_OPTS)?;
        Ok(Value::host(Figure(RefCell::new(fig_options(
            a.into_iter(),
        )?))))
    };
    m.set(
        "figure",
        Value::native("figure", &format!("figure({opts})"), figure),
    );
    let doc = format!("line(ys, x=None, label=None, {opts})");
    let line = Value::native("line", &doc, |_, args| new_plot(Kind::Line, args));
    m.set("line", line);
    let doc = format!("scatter(x, y, label=None, {opts})");
    let scatter = Value::native("scatter", &doc, |_, args| new_plot(Kind::Scatter, args));
    m.set("scatter", scatter);
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_like_percent_g() {
        assert_eq!(fmt_g(1.590912, 4), "1.591");
        assert_eq!(fmt_g(0.0035213, 4), "0.003521");
        assert_eq!(fmt_g(39.0, 4), "39");
        assert_eq!(fmt_g(3.5e-7, 4), "3.5e-7");
        assert_eq!(fmt_g(-2.0, 4), "-2");
        assert_eq!(fmt_g(1234567.0, 4), "1.235e6");
    }

    #[test]
    fn axes_end_on_round_ticks() {
        let a = linear_axis(0.0, 39.0);
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["0", "10", "20", "30", "40"]);
        let a = linear_axis(0.0035, 1.59);
        assert_eq!(a.ticks[1].1, "0.5");
        assert_eq!((a.lo, a.hi), (0.0, 2.0));
        let l = log_axis(0.0035, 1.59);
        let labels: Vec<&str> = l.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["0.001", "0.01", "0.1", "1", "10"]);
    }

    #[test]
    fn spans_near_the_largest_float_and_control_characters() {
        // `max - min` overflowed to inf: the tick range was 2^64 long (capacity overflow)
        for (lo, hi) in [(-1e308, 1e308), (-f64::MAX, f64::MAX), (0.0, f64::MAX)] {
            let a = linear_axis(lo, hi);
            assert!(a.lo.is_finite() && a.hi.is_finite() && a.ticks.len() <= 101);
            assert!(a.ticks.iter().all(|t| t.0.is_finite()));
        }
        let fig = Fig {
            title: Some("a\u{1}b\u{1b}c\u{0}\r\u{ffff}".into()),
            xlabel: Some("<&>".into()),
            ylabel: None,
            logy: false,
            series: vec![Series {
                kind: Kind::Line,
                label: Some("\u{7}".into()),
                x: vec![0.0, 1.0],
                y: vec![1e308, -1e308],
            }],
        };
        let svg = fig.svg();
        // XML 1.0 allows no control character but tab, newline and carriage return
        let bad = svg
            .chars()
            .find(|&c| ((c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r')) || c == '\u{ffff}');
        assert_eq!(bad, None, "{svg}");
        assert!(svg.contains("&lt;&amp;&gt;"), "{svg}");
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
    }

    #[test]
    fn svg_is_deterministic_and_text_summarises() {
        let fig = Fig {
            title: Some("a <b>".into()),
            xlabel: Some("step".into()),
            ylabel: None,
            logy: false,
            series: vec![Series {
                kind: Kind::Line,
                label: Some("loss".into()),
                x: vec![0.0, 1.0, 2.0],
                y: vec![3.0, 2.0, 1.5],
            }],
        };
        let svg = fig.svg();
        assert_eq!(svg, fig.clone().svg());
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640\""));
        assert!(svg.contains("a &lt;b&gt;") && svg.ends_with("</svg>\n"));
        assert_eq!(
            fig.text(),
            "figure \"a <b>\" (x: step): 1 series\n  line \"loss\": 3 points, x in [0, 2], y in [1.5, 3]"
        );
    }
}
