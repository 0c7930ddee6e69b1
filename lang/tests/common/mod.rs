//! Test helpers: a compact S-expression printer of the AST and diagnostic rendering.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code
#![allow(dead_code)]

use tessera_lang::ast::*;
use tessera_lang::parse::{parse_expr, parse_module};
use tessera_lang::{Diagnostic, SourceMap};

fn binop(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "add",
        BinOp::Sub => "sub",
        BinOp::Mul => "mul",
        BinOp::Div => "div",
        BinOp::FloorDiv => "floordiv",
        BinOp::Mod => "mod",
        BinOp::Pow => "pow",
        BinOp::MatMul => "matmul",
        BinOp::BitAnd => "band",
        BinOp::BitOr => "bor",
    }
}

fn list(head: &str, items: impl IntoIterator<Item = String>) -> String {
    let mut s = format!("({head}");
    for i in items {
        s.push(' ');
        s.push_str(&i);
    }
    s.push(')');
    s
}

pub fn sexpr(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Int(i) => i.to_string(),
        ExprKind::Float(f) => format!("{f:?}"),
        ExprKind::Str(s) => format!("{:?}", &**s),
        ExprKind::FString(parts) => list(
            "f",
            parts.iter().map(|p| match p {
                FStringPart::Literal(s) => format!("{:?}", &**s),
                FStringPart::Expr {
                    expr,
                    conversion,
                    format_spec,
                } => {
                    let mut v = vec![sexpr(expr)];
                    if let Some(c) = conversion {
                        v.push(format!("!{c}"));
                    }
                    if let Some(s) = format_spec {
                        v.push(format!(":{s:?}"));
                    }
                    list("fmt", v)
                }
            }),
        ),
        ExprKind::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        ExprKind::None => "None".to_string(),
        ExprKind::Name(n) => n.to_string(),
        ExprKind::List(v) => list("list", v.iter().map(sexpr)),
        ExprKind::Tuple(v) => list("tuple", v.iter().map(sexpr)),
        ExprKind::Dict(v) => list(
            "dict",
            v.iter()
                .map(|(k, x)| format!("({} {})", sexpr(k), sexpr(x))),
        ),
        ExprKind::Unary { op, operand } => list(
            match op {
                UnaryOp::Neg => "neg",
                UnaryOp::Pos => "pos",
                UnaryOp::Not => "not",
                UnaryOp::Invert => "invert",
            },
            [sexpr(operand)],
        ),
        ExprKind::Binary { op, left, right } => list(binop(*op), [sexpr(left), sexpr(right)]),
        ExprKind::Compare { left, ops } => {
            if ops.len() == 1 {
                let (op, r) = &ops[0];
                list(op.symbol(), [sexpr(left), sexpr(r)])
            } else {
                let mut v = vec![sexpr(left)];
                for (op, r) in ops {
                    v.push(op.symbol().to_string());
                    v.push(sexpr(r));
                }
                list("cmp", v)
            }
        }
        ExprKind::BoolOp { op, left, right } => list(
            match op {
                BoolOp::And => "and",
                BoolOp::Or => "or",
            },
            [sexpr(left), sexpr(right)],
        ),
        ExprKind::IfExp { test, body, orelse } => {
            list("ifexp", [sexpr(test), sexpr(body), sexpr(orelse)])
        }
        ExprKind::Call { func, args } => list(
            "call",
            std::iter::once(sexpr(func)).chain(args.iter().map(|a| match a {
                Arg::Positional(e) => sexpr(e),
                Arg::Keyword(k, e) => list("kw", [k.name.to_string(), sexpr(e)]),
                Arg::Star(e) => list("star", [sexpr(e)]),
            })),
        ),
        ExprKind::Attribute { value, attr } => list(".", [sexpr(value), attr.name.to_string()]),
        ExprKind::Subscript { value, index } => list("index", [sexpr(value), sexpr(index)]),
        ExprKind::Slice { lo, hi, step } => list(
            "slice",
            [lo, hi, step]
                .iter()
                .map(|x| x.as_ref().map(|e| sexpr(e)).unwrap_or_else(|| "_".into())),
        ),
        ExprKind::ListComp {
            elt,
            target,
            iter,
            conds,
        } => list(
            "listcomp",
            [sexpr(elt), sexpr(target), sexpr(iter)]
                .into_iter()
                .chain(conds.iter().map(sexpr)),
        ),
        ExprKind::Error => "ERR".to_string(),
    }
}

fn block(stmts: &[Stmt]) -> String {
    list("block", stmts.iter().map(stmt))
}

pub fn stmt(s: &Stmt) -> String {
    match &s.kind {
        StmtKind::Expr(e) => sexpr(e),
        StmtKind::Assign { targets, value } => {
            list("=", targets.iter().map(sexpr).chain([sexpr(value)]))
        }
        StmtKind::AugAssign { target, op, value } => {
            list(&format!("{}=", op.symbol()), [sexpr(target), sexpr(value)])
        }
        StmtKind::FunctionDef(f) => {
            let params = f.params.iter().map(|p| {
                let name = match p.kind {
                    ParamKind::Normal => p.name.name.to_string(),
                    ParamKind::VarArgs => format!("*{}", p.name.name),
                    ParamKind::KeywordOnly => format!("kw:{}", p.name.name),
                };
                match &p.default {
                    Some(d) => format!("{name}={}", sexpr(d)),
                    None => name,
                }
            });
            let mut v = vec![f.name.name.to_string(), list("params", params)];
            if !f.decorators.is_empty() {
                v.push(list("decorators", f.decorators.iter().map(sexpr)));
            }
            v.push(block(&f.body));
            list("def", v)
        }
        StmtKind::Return(e) => list("return", e.iter().map(sexpr)),
        StmtKind::If { test, body, orelse } => {
            let mut v = vec![sexpr(test), block(body)];
            if !orelse.is_empty() {
                v.push(block(orelse));
            }
            list("if", v)
        }
        StmtKind::For {
            target,
            iter,
            body,
            orelse,
        } => {
            let mut v = vec![sexpr(target), sexpr(iter), block(body)];
            if !orelse.is_empty() {
                v.push(block(orelse));
            }
            list("for", v)
        }
        StmtKind::While { test, body, orelse } => {
            let mut v = vec![sexpr(test), block(body)];
            if !orelse.is_empty() {
                v.push(block(orelse));
            }
            list("while", v)
        }
        StmtKind::Break => "break".into(),
        StmtKind::Continue => "continue".into(),
        StmtKind::Pass => "pass".into(),
        StmtKind::Assert { test, msg } => list("assert", [test].into_iter().chain(msg).map(sexpr)),
        StmtKind::Global(names) => list("global", names.iter().map(|n| n.name.to_string())),
        StmtKind::Try {
            body,
            handlers,
            orelse,
            finalbody,
        } => {
            let mut v = vec![block(body)];
            for h in handlers {
                let mut e = Vec::new();
                e.extend(h.typ.iter().map(sexpr));
                e.extend(h.name.iter().map(|n| format!("as {}", n.name)));
                e.push(block(&h.body));
                v.push(list("except", e));
            }
            if !orelse.is_empty() {
                v.push(list("else", [block(orelse)]));
            }
            if !finalbody.is_empty() {
                v.push(list("finally", [block(finalbody)]));
            }
            list("try", v)
        }
    }
}

/// The module as S-expressions, one statement per line; panics with the rendered errors.
pub fn module(src: &str) -> String {
    match parse_module(src, 0) {
        Ok(m) => m.body.iter().map(stmt).collect::<Vec<_>>().join("\n"),
        Err(ds) => panic!("{src:?} did not parse:\n{}", render(src, &ds)),
    }
}

pub fn expr(src: &str) -> String {
    match parse_expr(src, 0) {
        Ok(e) => sexpr(&e),
        Err(ds) => panic!("{src:?} did not parse:\n{}", render(src, &ds)),
    }
}

pub fn render(src: &str, ds: &[Diagnostic]) -> String {
    let mut sm = SourceMap::new();
    sm.add("t.tsr", src);
    ds.iter()
        .map(|d| d.render(&sm, false))
        .collect::<Vec<_>>()
        .join("")
}

/// The errors of a program that must not parse: `(code, message, line:col)` of each.
pub fn errors(src: &str) -> Vec<(String, String, String)> {
    let ds = match parse_module(src, 0) {
        Ok(_) => panic!("{src:?} parsed but should not"),
        Err(ds) => ds,
    };
    let mut sm = SourceMap::new();
    sm.add("t.tsr", src);
    ds.iter()
        .map(|d| {
            let at = d.span.map(|s| sm.describe(s)).unwrap_or_default();
            let at = at.trim_start_matches("t.tsr:").to_string();
            (d.code.to_string(), d.message.clone(), at)
        })
        .collect()
}
