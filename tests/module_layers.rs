//! No import cycle between the top-level modules of a crate, and every import pointing down the
//! crate's layers: each module of [`CRATES`] is a node, each `crate::X` path (or a `super::`
//! path that climbs to the crate root) in its non-test code an edge to `X`. A failure names
//! the modules of each cycle and, for every edge inside it, the first file that makes it, the
//! back edges (those pointing up the layers) marked. The layers are written in each crate's
//! `lib.rs` module doc and in docs/architecture.md ("Layers").
//!
//! Test code is left out as `scripts/module-cycles` leaves it out: files named `tests.rs` or
//! `*_tests.rs`, folders named `tests`, and everything from `#[cfg(test)] mod tests {` to the
//! end of a file. Comments are left out too (doc links are no imports).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crates checked (their `src/` relative to the workspace root) and their top-level
/// modules from the bottom layer up: a module imports only modules listed before it.
const CRATES: &[(&str, &[&str])] = &[
    (
        "compiler/src",
        &[
            "dtype", "scalar", "arch", "graph", "schedule", "tile", "kernels", "backend",
            "pipeline", "cost", "tune",
        ],
    ),
    (
        "runtime/src",
        &[
            "dtype",
            "error",
            "isa",
            "cuda",
            "vulkan",
            "tensor_map",
            "cast",
            "shape",
            "emu",
            "interp",
            "memory",
            "rng",
            "storage",
            "tensor",
            "device",
            "print",
            "ops",
            "npy",
            "safetensors_file",
            "mesh",
        ],
    ),
    (
        "stdlib/src",
        &[
            "table",
            "help_text",
            "device",
            "crosscheck",
            "env",
            "profile",
            "help",
            "autotune",
            "session",
            "tensor",
            "pytree",
            "plot",
            "schedule",
            "target_mod",
            "dist",
            "run_tile",
            "kernel",
            "pipeline",
            "optim",
            "graph_mod",
        ],
    ),
    (
        "lang/src",
        &["span", "diag", "read", "ast", "lex", "parse", "eval"],
    ),
];

/// module → module it references → the first file (relative to `src/`) that does.
type Edges = BTreeMap<String, BTreeMap<String, String>>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "tests") {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
            let name = name.unwrap_or_default();
            if name != "tests.rs" && !name.ends_with("_tests.rs") {
                out.push(p);
            }
        }
    }
}

/// The source without its test module and its comments.
fn non_test_code(src: &str) -> String {
    let mut end = src.len();
    let mut from = 0;
    while let Some(i) = src[from..].find("#[cfg(test)]").map(|i| i + from) {
        let rest = src[i + 12..].trim_start();
        if let Some(r) = rest.strip_prefix("mod tests") {
            if r.trim_start().starts_with('{') {
                end = i;
                break;
            }
        }
        from = i + 12;
    }
    src[..end]
        .lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The top-level modules `code` names: `crate::X`, `crate::{X, Y::..}`, and `super::` paths
/// climbing `depth` levels (out of a file `depth` modules below the root).
fn referenced(code: &str, depth: usize) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let bytes = code.as_bytes();
    // not the tail of a longer path or name (`a::crate::`, `my_crate::`)
    let word_start = |i: usize| {
        i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || matches!(bytes[i - 1], b'_' | b':'))
    };
    let push_group = |rest: &str, out: &mut BTreeSet<String>| {
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a::B, c}`: the first identifier of each top-level item
            let mut level = 0;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => level += 1,
                    '}' if level == 0 => break,
                    '}' => level -= 1,
                    ',' if level == 0 => item_start = true,
                    c if item_start && (c.is_ascii_alphabetic() || c == '_') => {
                        out.insert(ident_at(&group[i..]).to_string());
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            let id = ident_at(rest);
            if !id.is_empty() {
                out.insert(id.to_string());
            }
        }
    };
    for (i, _) in code.match_indices("crate::") {
        if word_start(i) {
            push_group(&code[i + 7..], &mut out);
        }
    }
    if depth > 0 {
        let climb = "super::".repeat(depth);
        for (i, _) in code.match_indices(&climb) {
            if word_start(i) && !code[i + climb.len()..].starts_with("super::") {
                push_group(&code[i + climb.len()..], &mut out);
            }
        }
    }
    out
}

fn edges(src: &Path) -> Edges {
    let mut files = vec![];
    rust_files(src, &mut files);
    files.sort();
    let mut edges = Edges::new();
    for f in files {
        let Ok(rel) = f.strip_prefix(src) else {
            continue;
        };
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let top = parts[0].trim_end_matches(".rs").to_string();
        if matches!(top.as_str(), "lib" | "main") {
            continue;
        }
        // modules below the root: `a.rs` and `a/mod.rs` are 1, `a/b.rs` 2
        let depth = parts.len() - usize::from(parts.last().is_some_and(|l| l == "mod.rs"));
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        let to = edges.entry(top.clone()).or_default();
        for m in referenced(&non_test_code(&text), depth) {
            if m != top {
                to.entry(m)
                    .or_insert_with(|| rel.to_string_lossy().into_owned());
            }
        }
    }
    // only edges to modules of the crate (not `crate::SomeType` re-exported at the root)
    let mods: BTreeSet<String> = edges.keys().cloned().collect();
    for to in edges.values_mut() {
        to.retain(|m, _| mods.contains(m));
    }
    edges
}

/// The strongly connected components with more than one module (Tarjan).
fn cycles(edges: &Edges) -> Vec<Vec<String>> {
    struct St<'a> {
        edges: &'a Edges,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut St<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on.insert(v);
        let edges = s.edges;
        for w in edges.get(v).into_iter().flat_map(|m| m.keys()) {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                s.low.entry(v).and_modify(|l| *l = (*l).min(lw));
            } else if s.on.contains(w) {
                let iw = s.index[w];
                s.low.entry(v).and_modify(|l| *l = (*l).min(iw));
            }
        }
        if s.low[v] == s.index[v] {
            let mut c = vec![];
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                c.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if c.len() > 1 {
                c.sort();
                s.out.push(c);
            }
        }
    }
    let mut s = St {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: vec![],
        on: BTreeSet::new(),
        out: vec![],
    };
    for v in edges.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// The failures of one crate: each cycle with its edges, each edge up the `layers` (or from or
/// to a module not in them).
fn check(krate: &str, layers: &[&str], edges: Edges) -> Vec<String> {
    let mut failures = vec![];
    let layer = |m: &str| layers.iter().position(|l| *l == m);
    let up = |a: &str, b: &str| match (layer(a), layer(b)) {
        (Some(la), Some(lb)) => lb > la,
        _ => false,
    };
    let mut in_cycle = BTreeSet::new();
    for c in cycles(&edges) {
        let mut text = format!("{krate}: import cycle between {}:", c.join(", "));
        for a in &c {
            for (b, file) in &edges[a] {
                if c.contains(b) {
                    let mark = if up(a, b) { "  <- back edge" } else { "" };
                    text.push_str(&format!("\n    {a} -> {b} ({krate}/{file}){mark}"));
                    in_cycle.insert((a.clone(), b.clone()));
                }
            }
        }
        failures.push(text);
    }
    for (a, to) in &edges {
        if layer(a).is_none() {
            failures.push(format!(
                "{krate}: module {a} is not in its layers: add it to CRATES (and to the layers \
                 in lib.rs and docs/architecture.md)"
            ));
        }
        for (b, file) in to {
            if up(a, b) && !in_cycle.contains(&(a.clone(), b.clone())) {
                failures.push(format!(
                    "{krate}: {a} -> {b} ({krate}/{file}) points up the layers ({})",
                    layers.join(" < ")
                ));
            }
        }
    }
    failures
}

#[test]
fn no_import_cycle_and_no_import_up_the_layers() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut failures = vec![];
    for (krate, layers) in CRATES {
        let e = edges(&root.join(krate));
        assert!(e.len() > 3, "{krate}: found only {} modules", e.len());
        failures.extend(check(krate, layers, e));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_back_edge_is_reported_with_its_file() {
    let mut e = Edges::new();
    let mut add = |a: &str, b: &str, f: &str| {
        e.entry(a.to_string())
            .or_default()
            .insert(b.to_string(), f.to_string());
        e.entry(b.to_string()).or_default();
    };
    add("graph", "arch", "graph/mod.rs");
    add("schedule", "graph", "schedule/mod.rs");
    add("kernels", "schedule", "kernels/lower.rs");
    add("graph", "kernels", "graph/ops/rows.rs");
    let layers = ["arch", "graph", "schedule", "kernels"];
    let f = check("x/src", &layers, e.clone());
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(
        f[0].contains("import cycle between graph, kernels, schedule")
            && f[0].contains("graph -> kernels (x/src/graph/ops/rows.rs)  <- back edge")
            && f[0].contains("kernels -> schedule (x/src/kernels/lower.rs)\n")
            && !f[0].contains("arch"),
        "{}",
        f[0]
    );
    // without the cycle, an edge up the layers still fails, and so does a module not in them
    if let Some(g) = e.get_mut("graph") {
        g.remove("kernels");
    }
    e.entry("graph".to_string())
        .or_default()
        .insert("tune".to_string(), "graph/mod.rs".to_string());
    e.entry("tune".to_string()).or_default();
    assert_eq!(check("x/src", &layers, e.clone()).len(), 1);
    let f = check("x/src", &[&layers[..], &["tune"][..]].concat(), e);
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(
        f[0].contains("graph -> tune (x/src/graph/mod.rs) points up"),
        "{}",
        f[0]
    );
}

#[test]
fn references_are_read_through_groups_and_super_paths() {
    let code = "use crate::{graph::Op, tile::{self, ir}};\nuse super::super::kernels::R;\n\
                fn f() { crate::cost::x(); }\n// crate::tune in a comment\n\
                #[cfg(test)]\nmod tests {\n    use crate::pipeline;\n}\n";
    let got = referenced(&non_test_code(code), 2);
    let want: BTreeSet<String> = ["graph", "tile", "kernels", "cost"]
        .map(String::from)
        .into();
    assert_eq!(got, want);
    // one level deep, `super::kernels` is the root's `kernels` and `super::super` climbs too far
    assert!(referenced("use super::kernels::R;", 1).contains("kernels"));
    assert!(referenced("use super::super::kernels::R;", 1).is_empty());
    // two levels deep, `super::kernels` is a sibling
    assert!(referenced("use super::kernels::R;", 2).is_empty());
}
