//! No import cycle between the top-level modules of `stdlib/src` (the layering in
//! `stdlib/src/lib.rs`'s module doc). A module's edges are its `crate::X` paths outside tests
//! and comments, as `scripts/module-cycles` reads them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeMap<String, String>>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "tests") {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|e| e == "rs") {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if name != "tests.rs" && !name.ends_with("_tests.rs") {
                out.push(p);
            }
        }
    }
}

/// The text without `//` comments and from its `#[cfg(test)] mod tests` on.
fn code_of(text: &str) -> String {
    let end = text
        .match_indices("#[cfg(test)]")
        .map(|(i, a)| i + a.len())
        .find(|&j| text[j..].trim_start().starts_with("mod tests"))
        .map_or(text.len(), |j| j - "#[cfg(test)]".len());
    text[..end]
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `crate::X` edges between the top-level modules of the crate at `root`.
fn module_graph(root: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let mut g = Graph::new();
    for f in files {
        let rel = f.strip_prefix(root).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        if top == "lib" {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(&f).unwrap());
        let edges = g.entry(top.clone()).or_default();
        for (i, _) in code.match_indices("crate::") {
            let before = code[..i].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let name: String = code[i + 7..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && name != top {
                edges
                    .entry(name)
                    .or_insert_with(|| rel.display().to_string());
            }
        }
    }
    let known: BTreeSet<String> = g.keys().cloned().collect();
    for edges in g.values_mut() {
        edges.retain(|t, _| known.contains(t));
    }
    g
}

/// The strongly connected components of more than one module (Tarjan).
fn cycles(g: &Graph) -> Vec<Vec<String>> {
    struct St<'a> {
        g: &'a Graph,
        next: usize,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut St<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on.insert(v);
        for w in s.g[v].keys() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut c = Vec::new();
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
        g,
        next: 0,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in g.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

fn report(g: &Graph, cs: &[Vec<String>]) -> String {
    let mut r = String::new();
    for c in cs {
        r += &format!("cycle {c:?}:\n");
        for a in c {
            for (b, file) in &g[a] {
                if c.contains(b) {
                    r += &format!("    {a} -> {b} ({file})\n");
                }
            }
        }
    }
    r
}

#[test]
fn stdlib_top_level_modules_have_no_import_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("stdlib/src");
    let g = module_graph(&root);
    // the walk found the crate's modules and their edges
    assert!(g.len() > 10, "{g:?}");
    assert!(g["kernel"].contains_key("tensor"), "{:?}", g["kernel"]);
    let cs = cycles(&g);
    assert!(
        cs.is_empty(),
        "import cycles between stdlib's top-level modules (see the layering in \
         stdlib/src/lib.rs):\n{}",
        report(&g, &cs)
    );
}

#[test]
fn a_cycle_and_its_edges_are_reported() {
    let mut g = Graph::new();
    let mut edge = |a: &str, b: &str| {
        g.entry(a.to_string())
            .or_default()
            .insert(b.to_string(), format!("{a}.rs"));
        g.entry(b.to_string()).or_default();
    };
    edge("kernel", "session");
    edge("session", "profile");
    edge("profile", "kernel");
    edge("tensor", "session");
    let cs = cycles(&g);
    assert_eq!(cs, vec![vec!["kernel", "profile", "session"]]);
    let r = report(&g, &cs);
    assert!(r.contains("profile -> kernel (profile.rs)"), "{r}");
    assert!(!r.contains("tensor"), "{r}");
}

#[test]
fn comments_and_test_modules_are_not_edges() {
    let code = code_of(
        "use crate::a::X; // crate::b\n#[cfg(test)]\nuse crate::d;\nfn f() {}\n#[cfg(test)]\nmod tests {\n    use crate::c;\n}\n",
    );
    assert!(code.contains("crate::a"));
    assert!(!code.contains("crate::b"));
    assert!(!code.contains("crate::c"));
    assert!(code.contains("crate::d"));
}
