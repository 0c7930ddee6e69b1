//! Dicts (SPEC §3): insertion-ordered, keys of the hashable kinds — None, bools, ints, floats,
//! strings and tuples of them; `1`, `1.0` and `True` are one key, as in Python.

use super::value::Value;
use super::{CallArgs, Interp};
use crate::diag::{Code, Diagnostic};
use std::collections::HashMap;
use std::rc::Rc;

/// The hashable form of a key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Key {
    None,
    Int(i64),
    /// A float that is not a whole number (whole floats are `Int` keys), by its bits.
    Float(u64),
    Str(Rc<str>),
    Tuple(Vec<Key>),
}

/// The key of `v`, or E0101 for an unhashable value (a list, a dict, a tensor, ...).
pub fn key_of(v: &Value) -> Result<Key, Diagnostic> {
    Ok(match v {
        Value::None => Key::None,
        Value::Bool(b) => Key::Int(i64::from(*b)),
        Value::Int(i) => Key::Int(*i),
        Value::Float(f) => {
            if f.fract() == 0.0 && f.abs() < 9.2e18 {
                Key::Int(*f as i64)
            } else if f.is_nan() {
                Key::Float(f64::NAN.to_bits())
            } else {
                Key::Float(f.to_bits())
            }
        }
        Value::Str(s) => Key::Str(s.clone()),
        Value::Tuple(t) => Key::Tuple(t.iter().map(key_of).collect::<Result<_, _>>()?),
        other => {
            return Err(Diagnostic::new(
                Code::E0101,
                format!("unhashable type: '{}'", other.type_name()),
            )
            .with_help("dict keys are None, bools, numbers, strings and tuples of them"))
        }
    })
}

/// The entries `dict(...)` and `d.update(...)` take, in order: those of one positional
/// argument (a dict, or an iterable of `(key, value)` pairs), then the keyword arguments.
pub fn update_pairs(
    it: &mut Interp,
    fname: &str,
    args: &CallArgs,
) -> Result<Vec<(Value, Value)>, Diagnostic> {
    if args.positional.len() > 1 {
        return Err(Diagnostic::new(
            Code::E0101,
            format!(
                "{fname} expected at most 1 argument, got {}",
                args.positional.len()
            ),
        ));
    }
    let mut pairs = Vec::new();
    if let Some((v, span)) = args.positional.first() {
        match v {
            Value::Dict(src) => pairs.extend(src.borrow().entries().iter().cloned()),
            other => {
                for (i, pair) in it.iterate(other, *span)?.into_iter().enumerate() {
                    let kv = it.iterate(&pair, *span)?;
                    let [k, x] = <[Value; 2]>::try_from(kv).map_err(|kv| {
                        Diagnostic::new(
                            Code::E0101,
                            format!(
                                "dictionary update sequence element #{i} has length {}; 2 is required",
                                kv.len()
                            ),
                        )
                        .at(*span)
                    })?;
                    key_of(&k).map_err(|e| e.at(*span))?;
                    pairs.push((k, x));
                }
            }
        }
    }
    for (name, v, _) in &args.keywords {
        pairs.push((Value::str(name), v.clone()));
    }
    Ok(pairs)
}

/// An insertion-ordered dict.
#[derive(Default)]
pub struct Dict {
    entries: Vec<(Value, Value)>,
    index: HashMap<Key, usize>,
}

impl Dict {
    pub fn new() -> Dict {
        Dict::default()
    }
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    /// The value at `k`, if any (E0101 for an unhashable `k`).
    pub fn get(&self, k: &Value) -> Result<Option<Value>, Diagnostic> {
        let key = key_of(k)?;
        Ok(self.index.get(&key).map(|&i| self.entries[i].1.clone()))
    }
    pub fn contains(&self, k: &Value) -> Result<bool, Diagnostic> {
        Ok(self.index.contains_key(&key_of(k)?))
    }
    /// Sets `k` to `v`: a new key goes last, an existing one keeps its place (and its first
    /// spelling, as Python keeps the first key object).
    pub fn insert(&mut self, k: Value, v: Value) -> Result<(), Diagnostic> {
        let key = key_of(&k)?;
        match self.index.get(&key) {
            Some(&i) => self.entries[i].1 = v,
            None => {
                self.index.insert(key, self.entries.len());
                self.entries.push((k, v));
            }
        }
        Ok(())
    }
    /// Removes `k`, returning its value.
    pub fn remove(&mut self, k: &Value) -> Result<Option<Value>, Diagnostic> {
        let key = key_of(k)?;
        let Some(i) = self.index.remove(&key) else {
            return Ok(None);
        };
        let (_, v) = self.entries.remove(i);
        for slot in self.index.values_mut() {
            if *slot > i {
                *slot -= 1;
            }
        }
        Ok(Some(v))
    }
    pub fn entries(&self) -> &[(Value, Value)] {
        &self.entries
    }
    pub fn keys(&self) -> Vec<Value> {
        self.entries.iter().map(|(k, _)| k.clone()).collect()
    }
    pub fn values(&self) -> Vec<Value> {
        self.entries.iter().map(|(_, v)| v.clone()).collect()
    }
}
