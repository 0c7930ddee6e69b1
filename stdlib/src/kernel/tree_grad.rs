//! A gradient called with lists, tuples or dicts of tensors where it differentiates (SPEC §8,
//! JAX's pytrees): the call is flattened, each leaf a positional tensor argument of a function
//! that rebuilds the structures and calls `f`; that function's gradient (one kernel per
//! structure, cached) runs, and each argument's gradients are rebuilt in its structure.

use super::{func_name, GradSpec, KernelObj};
use crate::pytree::{self, Tree};
use crate::tensor::{as_tensor, kind_name};
use std::rc::Rc;
use tessera_lang::diag::{Code, Diagnostic};
use tessera_lang::eval::{CallArgs, Value};

/// How the flat call's gradients go back into the arguments' structures.
pub(super) struct Regroup {
    /// Per differentiated argument, in `argnums` order: its structure, or `None` for a tensor.
    trees: Vec<Option<Tree>>,
    tuple: bool,
    with_value: bool,
}

impl Regroup {
    /// The flat kernel's result (`grads` or `(value, grads)`, `grads` a tuple) in the shape the
    /// gradient's spec and the arguments' structures give.
    pub(super) fn apply(&self, r: Value) -> Result<Value, Diagnostic> {
        let (value, grads) = match (self.with_value, r) {
            (true, Value::Tuple(t)) if t.len() == 2 => (Some(t[0].clone()), t[1].clone()),
            (false, g) => (None, g),
            (_, other) => (None, other),
        };
        let flat: Vec<Value> = match grads {
            Value::Tuple(t) => t.as_ref().clone(),
            other => vec![other],
        };
        let mut leaves = flat.into_iter();
        let mut groups = Vec::with_capacity(self.trees.len());
        for t in &self.trees {
            groups.push(match t {
                Some(t) => pytree::build(t, &mut leaves)?,
                None => leaves.next().unwrap_or(Value::None),
            });
        }
        let g = if self.tuple {
            Value::tuple(groups)
        } else {
            groups.into_iter().next().unwrap_or(Value::None)
        };
        Ok(match value {
            Some(v) => Value::tuple(vec![v, g]),
            None => g,
        })
    }
}

fn is_tensor(v: &Value) -> bool {
    as_tensor(v).is_some()
        || crate::tensor::sharded::as_sharded(v).is_some()
        || crate::tensor::trace::as_sym(v).is_some()
}

impl KernelObj {
    /// For a gradient whose differentiated arguments include a list, tuple or dict: the
    /// gradient kernel of the flattened call, the flattened arguments, and how to regroup its
    /// result. `None` when every differentiated argument is a tensor (or `argnums` names an
    /// argument the call does not pass: the ordinary path reports it).
    pub(super) fn flat_gradient(
        &self,
        args: &CallArgs,
    ) -> Result<Option<(Rc<KernelObj>, CallArgs, Regroup)>, Diagnostic> {
        let Some(spec) = &self.grad else {
            return Ok(None);
        };
        let n = args.positional.len();
        let containers = spec
            .argnums
            .iter()
            .any(|&k| k < n && pytree::is_container(&args.positional[k].0));
        if !containers || spec.argnums.iter().any(|&k| k >= n) {
            return Ok(None);
        }
        let mut trees: Vec<Option<Tree>> = Vec::with_capacity(n);
        let mut starts = Vec::with_capacity(n);
        let mut flat = CallArgs::new(args.span);
        flat.keywords = args.keywords.clone();
        for (i, (v, s)) in args.positional.iter().enumerate() {
            starts.push(flat.positional.len());
            if !(spec.argnums.contains(&i) && pytree::is_container(v)) {
                trees.push(None);
                flat.positional.push((v.clone(), *s));
                continue;
            }
            let (tree, leaves) = pytree::flatten(v);
            if leaves.is_empty() {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!("argnums names argument {i}, an empty {}: it holds no tensor to differentiate", v.type_name()),
                )
                .at(*s));
            }
            for (path, leaf) in leaves {
                if !is_tensor(&leaf) {
                    return Err(Diagnostic::new(
                        Code::E0101,
                        format!(
                            "argnums names argument {i}, a {} holding a {} at {path}: gradients are taken with respect to tensors",
                            v.type_name(),
                            kind_name(&leaf)
                        ),
                    )
                    .at(*s)
                    .with_help("pass the other values in an argument argnums does not name"));
                }
                flat.positional.push((leaf, *s));
            }
            trees.push(Some(tree));
        }
        let mut argnums = Vec::new();
        let mut regroup = Vec::with_capacity(spec.argnums.len());
        for &k in &spec.argnums {
            match &trees[k] {
                Some(t) => argnums.extend(starts[k]..starts[k] + pytree::count(t)),
                None => argnums.push(starts[k]),
            }
            regroup.push(trees[k].clone());
        }
        let key = format!(
            "{n} {}",
            trees
                .iter()
                .map(|t| t.as_ref().map_or("-".to_string(), pytree::signature))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let cached = self.flat.borrow().get(&key).cloned();
        let k = match cached {
            Some(k) => k,
            None => {
                let f = self.func.clone();
                let shapes = trees.clone();
                let name = func_name(&self.func);
                let wrapper = Value::native(&name, "flattened", move |it, a| {
                    let span = a.span;
                    let mut orig = CallArgs::new(span);
                    orig.keywords = a.keywords;
                    let mut items = a.positional.into_iter();
                    for t in &shapes {
                        match t {
                            Some(t) => {
                                let part: Vec<(Value, _)> =
                                    (&mut items).take(pytree::count(t)).collect();
                                let s = part.first().map_or(span, |p| p.1);
                                let v = pytree::build(t, &mut part.into_iter().map(|p| p.0))?;
                                orig.positional.push((v, s));
                            }
                            None => {
                                if let Some(x) = items.next() {
                                    orig.positional.push(x);
                                }
                            }
                        }
                    }
                    it.call(&f, orig)
                });
                let flat_spec = GradSpec {
                    argnums,
                    tuple: true,
                    with_value: spec.with_value,
                };
                let k = Rc::new(KernelObj::gradient(
                    wrapper,
                    self.session.clone(),
                    flat_spec,
                ));
                self.flat.borrow_mut().insert(key, k.clone());
                k
            }
        };
        Ok(Some((
            k,
            flat,
            Regroup {
                trees: regroup,
                tuple: spec.tuple,
                with_value: spec.with_value,
            },
        )))
    }
}
