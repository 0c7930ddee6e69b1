//! The one Graph IR printer: MLIR-like, stable, values renumbered in print order, every op
//! followed by `loc("file.tsr":line:col)`.
//!
//! ```text
//! graph @mlp(%0: bf16[64,4096], %1: bf16[4096,4096], %2: bf16[4096]) {
//!   %3 = matmul %0, %1 {accum = fp32, epilogue = [add %2, gelu]} : bf16[64,4096]   loc(fused["mlp.tsr":5:12, "mlp.tsr":5:20, "mlp.tsr":5:12])
//!   return %3
//! }
//! ```

use super::ops::AttrPrinter;
use super::{ConvAlgorithm, FftEmbed, FftNorm, Graph, Op, ValueId};
use std::collections::HashMap;
use std::fmt::Write as _;
use tessera_lang::{SourceMap, Span};

/// `%n`, the printed name of `v`.
fn value_name(names: &HashMap<ValueId, usize>, v: ValueId) -> String {
    match names.get(&v) {
        Some(n) => format!("%{n}"),
        None => format!("%<undefined {}>", v.index()),
    }
}

/// The names and spans an op definition's attributes refer to.
struct Refs<'a> {
    names: &'a HashMap<ValueId, usize>,
    spans: &'a mut Vec<Span>,
}

impl AttrPrinter for Refs<'_> {
    fn value(&self, v: ValueId) -> String {
        value_name(self.names, v)
    }
    fn span(&mut self, s: Span) {
        self.spans.push(s);
    }
}

/// Prints a graph.
pub fn print(g: &Graph, sources: &SourceMap) -> String {
    let mut p = Printer {
        sources,
        next: 0,
        out: String::new(),
    };
    let mut names = HashMap::new();
    let params: Vec<String> = g
        .params
        .iter()
        .map(|v| {
            let n = p.name(&mut names, *v);
            let t = g.ty(*v).map(|t| t.to_string()).unwrap_or_default();
            format!("{n}: {t}")
        })
        .collect();
    let _ = writeln!(p.out, "graph @{}({}) {{", g.name, params.join(", "));
    p.body(g, &mut names, 1);
    let outs: Vec<String> = g.outputs.iter().map(|v| p.get(&names, *v)).collect();
    let _ = writeln!(p.out, "  return {}", outs.join(", "));
    p.out.push_str("}\n");
    p.out
}

/// `loc("file.tsr":line:col)` of a span.
pub fn loc(sources: &SourceMap, span: Span) -> String {
    format!("loc({})", loc_inner(sources, span))
}

fn loc_inner(sources: &SourceMap, span: Span) -> String {
    match sources.get(span.file) {
        Some(f) => {
            let (l, c) = f.line_col(span.lo as usize);
            let name = f.name.rsplit('/').next().unwrap_or(&f.name);
            format!("\"{name}\":{l}:{c}")
        }
        None => "unknown".to_string(),
    }
}

struct Printer<'a> {
    sources: &'a SourceMap,
    next: usize,
    out: String,
}

impl Printer<'_> {
    fn name(&mut self, names: &mut HashMap<ValueId, usize>, v: ValueId) -> String {
        let n = self.next;
        self.next += 1;
        names.insert(v, n);
        format!("%{n}")
    }
    fn get(&self, names: &HashMap<ValueId, usize>, v: ValueId) -> String {
        value_name(names, v)
    }

    fn body(&mut self, g: &Graph, names: &mut HashMap<ValueId, usize>, depth: usize) {
        let ind = "  ".repeat(depth);
        for id in g.ids() {
            let Some(op) = g.op(id) else { continue };
            if matches!(op, Op::Param { .. }) {
                continue;
            }
            let operands: Vec<String> = op.operands().iter().map(|v| self.get(names, *v)).collect();
            let ty = g.ty(id).map(|t| t.to_string()).unwrap_or_default();
            let mut spans = vec![g.span(id)];
            let n = self.name(names, id);
            let text = match op {
                Op::FusedElementwise { inputs, body } | Op::FusedReduce { inputs, body, .. } => {
                    let ins: Vec<String> = inputs.iter().map(|v| self.get(names, *v)).collect();
                    let mut inner = HashMap::new();
                    let bparams: Vec<String> = body
                        .params
                        .iter()
                        .map(|v| {
                            let n = self.name(&mut inner, *v);
                            let t = body.ty(*v).map(|t| t.to_string()).unwrap_or_default();
                            format!("{n}: {t}")
                        })
                        .collect();
                    let saved = std::mem::take(&mut self.out);
                    let _ = writeln!(self.out, "{ind}  ^({}):", bparams.join(", "));
                    self.body(body, &mut inner, depth + 1);
                    let outs: Vec<String> =
                        body.outputs.iter().map(|v| self.get(&inner, *v)).collect();
                    let _ = writeln!(self.out, "{ind}  yield {}", outs.join(", "));
                    let region = std::mem::replace(&mut self.out, saved);
                    let attrs = match op {
                        Op::FusedReduce {
                            op, axis, keepdim, ..
                        } => format!(
                            " {{op = {}, axis = {axis}, keepdim = {keepdim}}}",
                            op.name()
                        ),
                        _ => String::new(),
                    };
                    format!(
                        "{}({}) {{\n{region}{ind}}}{attrs}",
                        op.name(),
                        ins.join(", ")
                    )
                }
                _ => {
                    let attrs = self.attrs(g, op, names, &mut spans);
                    let mut s = op.name().to_string();
                    if let Op::Const { value } = op {
                        let _ = write!(s, " {value}");
                    }
                    if !operands.is_empty() {
                        let shown = match op {
                            // Epilogue operands print inside the attribute.
                            Op::Matmul { .. } => &operands[..2.min(operands.len())],
                            _ => &operands[..],
                        };
                        let _ = write!(s, " {}", shown.join(", "));
                    }
                    if !attrs.is_empty() {
                        let _ = write!(s, " {{{}}}", attrs.join(", "));
                    }
                    s
                }
            };
            let locs = if spans.len() == 1 {
                loc(self.sources, g.span(id))
            } else {
                let l: Vec<String> = spans.iter().map(|s| loc_inner(self.sources, *s)).collect();
                format!("loc(fused[{}])", l.join(", "))
            };
            let _ = writeln!(self.out, "{ind}{n} = {text} : {ty}   {locs}");
        }
    }

    fn attrs(
        &self,
        g: &Graph,
        op: &Op,
        names: &HashMap<ValueId, usize>,
        spans: &mut Vec<Span>,
    ) -> Vec<String> {
        if let Some(d) = super::ops::def(op) {
            let mut p = Refs { names, spans };
            return d.attrs(g, op, &mut p);
        }
        match op {
            // the ops of a definition in `ops` (answered above)
            crate::graph::ops::defined_ops!() => vec![],
            // Inputs, complex ops and shape changes: the operands and types say it all.
            Op::Param { .. } | Op::Const { .. } | Op::Complex { .. } => vec![],
            Op::FusedElementwise { .. } | Op::FusedReduce { .. } => vec![],
            Op::Capture { index } | Op::Result { index, .. } => vec![format!("index = {index}")],
            Op::Conv { attrs, .. } => {
                // conv1d shows its one spatial dim (W)
                let d = usize::from(attrs.dims.clamp(1, 2));
                let pick = |v: [String; 2]| -> String {
                    if d == 1 {
                        v[1].clone()
                    } else {
                        format!("[{}, {}]", v[0], v[1])
                    }
                };
                let pair = |v: [usize; 2]| pick(v.map(|x| x.to_string()));
                let mut v = vec![
                    format!("stride = {}", pair(attrs.stride)),
                    format!(
                        "padding = {}",
                        pick(attrs.pad.map(|(a, b)| format!("[{a}, {b}]")))
                    ),
                    format!("dilation = {}", pair(attrs.dilation)),
                    format!("groups = {}", attrs.groups),
                ];
                if attrs.algorithm != ConvAlgorithm::Auto {
                    v.push(format!("algorithm = \"{}\"", attrs.algorithm.name()));
                }
                v
            }
            Op::Fft {
                axis,
                n,
                norm,
                embed,
                ..
            } => {
                let mut v = vec![format!("axis = {axis}"), format!("n = {n}")];
                if *norm != FftNorm::Backward {
                    v.push(format!("norm = \"{}\"", norm.name()));
                }
                if *embed != FftEmbed::default() {
                    v.push(format!("embed = [{}, {}]", embed.lo, embed.step));
                }
                v
            }
            Op::SpectralMul { groups, .. } => vec![format!("groups = {groups}")],
            Op::FlashAttention { causal, scale, .. }
            | Op::AttentionLse { causal, scale, .. }
            | Op::AttentionGrad { causal, scale, .. } => {
                vec![format!("causal = {causal}"), format!("scale = {scale:?}")]
            }
        }
    }
}
