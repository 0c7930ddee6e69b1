//! Nested lists, tuples and dicts of tensors (JAX's pytrees, SPEC §8): what `graph.grad`
//! differentiates with respect to and what `opt.update` updates. A structure flattens to its
//! leaves in order (a dict's in insertion order) and is rebuilt around new leaves; a dict of
//! the same keys in another order pairs up by key.

use std::cell::RefCell;
use std::rc::Rc;
use tessera_lang::diag::{Code, Diagnostic};
use tessera_lang::eval::dict::Dict;
use tessera_lang::eval::Value;

/// The shape of a structure: its containers, with a leaf for each non-container.
#[derive(Clone, Debug)]
pub enum Tree {
    Leaf,
    List(Vec<Tree>),
    Tuple(Vec<Tree>),
    /// The keys in insertion order.
    Dict(Vec<(Value, Tree)>),
}

/// Whether `v` is a list, tuple or dict.
pub fn is_container(v: &Value) -> bool {
    matches!(v, Value::List(_) | Value::Tuple(_) | Value::Dict(_))
}

/// The items of a list or tuple, or the entries of a dict (keys `Some`).
fn children(v: &Value) -> Option<Vec<(Option<Value>, Value)>> {
    Some(match v {
        Value::List(l) => l.borrow().iter().map(|x| (None, x.clone())).collect(),
        Value::Tuple(t) => t.iter().map(|x| (None, x.clone())).collect(),
        Value::Dict(d) => d
            .borrow()
            .entries()
            .map(|(k, x)| (Some(k.clone()), x.clone()))
            .collect(),
        _ => return None,
    })
}

fn step(path: &str, i: usize, key: Option<&Value>) -> String {
    match key {
        Some(k) => format!("{path}[{}]", k.repr()),
        None => format!("{path}[{i}]"),
    }
}

/// Flattens `v`: its tree, and its leaves with their paths (`['w1'][0]`, relative to `v`).
pub fn flatten(v: &Value) -> (Tree, Vec<(String, Value)>) {
    let mut leaves = Vec::new();
    let t = flatten_into(v, String::new(), &mut leaves);
    (t, leaves)
}

fn flatten_into(v: &Value, path: String, out: &mut Vec<(String, Value)>) -> Tree {
    let Some(items) = children(v) else {
        out.push((path, v.clone()));
        return Tree::Leaf;
    };
    let subs: Vec<(Option<Value>, Tree)> = items
        .iter()
        .enumerate()
        .map(|(i, (k, x))| (k.clone(), flatten_into(x, step(&path, i, k.as_ref()), out)))
        .collect();
    match v {
        Value::List(_) => Tree::List(subs.into_iter().map(|s| s.1).collect()),
        Value::Tuple(_) => Tree::Tuple(subs.into_iter().map(|s| s.1).collect()),
        _ => Tree::Dict(
            subs.into_iter()
                .filter_map(|(k, t)| k.map(|k| (k, t)))
                .collect(),
        ),
    }
}

/// The leaves of `v` in the order of `tree` (a dict's by `tree`'s keys), or a message saying
/// where `v` differs from `tree` (its path and what each has there).
pub fn leaves_like(tree: &Tree, v: &Value) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    like_into(tree, v, String::new(), &mut out)?;
    Ok(out)
}

fn what(t: &Tree) -> String {
    match t {
        Tree::Leaf => "a leaf".into(),
        Tree::List(x) => format!("a list of {}", x.len()),
        Tree::Tuple(x) => format!("a tuple of {}", x.len()),
        Tree::Dict(x) => format!("a dict of {}", x.len()),
    }
}

fn what_value(v: &Value) -> String {
    match v {
        Value::List(l) => format!("a list of {}", l.borrow().len()),
        Value::Tuple(t) => format!("a tuple of {}", t.len()),
        Value::Dict(d) => format!("a dict of {}", d.borrow().len()),
        other => format!("a {}", crate::tensor::kind_name(other)),
    }
}

fn like_into(tree: &Tree, v: &Value, path: String, out: &mut Vec<Value>) -> Result<(), String> {
    let at = |p: &str| {
        if p.is_empty() {
            "the top".to_string()
        } else {
            p.to_string()
        }
    };
    let differ = |p: &str| {
        format!(
            "at {}: {} where the structure has {}",
            at(p),
            what_value(v),
            what(tree)
        )
    };
    match (tree, v) {
        (Tree::Leaf, v) if !is_container(v) => {
            out.push(v.clone());
            Ok(())
        }
        // a list and a tuple pair up item by item (a tuple of gradients with a parameter list)
        (Tree::List(ts) | Tree::Tuple(ts), Value::List(_) | Value::Tuple(_)) => {
            let items: Vec<Value> = children(v)
                .unwrap_or_default()
                .into_iter()
                .map(|c| c.1)
                .collect();
            if ts.len() != items.len() {
                return Err(differ(&path));
            }
            for (i, (t, x)) in ts.iter().zip(&items).enumerate() {
                like_into(t, x, step(&path, i, None), out)?;
            }
            Ok(())
        }
        (Tree::Dict(ts), Value::Dict(d)) => {
            let d = d.borrow();
            if d.len() != ts.len() {
                let extra = d
                    .keys()
                    .into_iter()
                    .find(|k| !ts.iter().any(|(tk, _)| values_eq(tk, k)));
                return Err(match extra {
                    Some(k) => {
                        format!("at {}: key {} is not in the structure", at(&path), k.repr())
                    }
                    None => differ(&path),
                });
            }
            for (i, (k, t)) in ts.iter().enumerate() {
                match d.get(k).ok().flatten() {
                    Some(x) => like_into(t, &x, step(&path, i, Some(k)), out)?,
                    None => return Err(format!("at {}: key {} is missing", at(&path), k.repr())),
                }
            }
            Ok(())
        }
        _ => Err(differ(&path)),
    }
}

fn values_eq(a: &Value, b: &Value) -> bool {
    use tessera_lang::eval::dict::key_of;
    matches!((key_of(a), key_of(b)), (Ok(x), Ok(y)) if x == y)
}

/// The number of leaves of `tree`.
pub fn count(tree: &Tree) -> usize {
    match tree {
        Tree::Leaf => 1,
        Tree::List(x) | Tree::Tuple(x) => x.iter().map(count).sum(),
        Tree::Dict(x) => x.iter().map(|(_, t)| count(t)).sum(),
    }
}

/// `tree` rebuilt with `leaves` (taken in order; missing ones are None).
pub fn build(tree: &Tree, leaves: &mut impl Iterator<Item = Value>) -> Result<Value, Diagnostic> {
    Ok(match tree {
        Tree::Leaf => leaves.next().unwrap_or(Value::None),
        Tree::List(ts) => Value::list(
            ts.iter()
                .map(|t| build(t, leaves))
                .collect::<Result<_, _>>()?,
        ),
        Tree::Tuple(ts) => Value::tuple(
            ts.iter()
                .map(|t| build(t, leaves))
                .collect::<Result<_, _>>()?,
        ),
        Tree::Dict(ts) => {
            let mut d = Dict::new();
            for (k, t) in ts {
                d.insert(k.clone(), build(t, leaves)?)?;
            }
            Value::Dict(Rc::new(RefCell::new(d)))
        }
    })
}

/// A one-line description of a structure, for cache keys: containers, keys and leaf count.
pub fn signature(tree: &Tree) -> String {
    match tree {
        Tree::Leaf => "*".into(),
        Tree::List(ts) => format!("[{}]", join(ts.iter().map(signature))),
        Tree::Tuple(ts) => format!("({})", join(ts.iter().map(signature))),
        Tree::Dict(ts) => format!(
            "{{{}}}",
            join(
                ts.iter()
                    .map(|(k, t)| format!("{}: {}", k.repr(), signature(t)))
            )
        ),
    }
}

fn join(it: impl Iterator<Item = String>) -> String {
    it.collect::<Vec<_>>().join(", ")
}

/// E0101 for a structure that does not match: `what` names the argument.
pub fn mismatch(what: &str, msg: &str) -> Diagnostic {
    Diagnostic::new(
        Code::E0101,
        format!("{what} does not have the structure of the parameters: {msg}"),
    )
}
