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
            Value::Dict(src) => pairs.extend(src.borrow().entries().cloned()),
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

/// An insertion-ordered dict. Removing a key leaves a hole in `entries` (O(1)); the holes are
/// squeezed out once they are half the slots, so every operation is O(1) amortised.
#[derive(Default)]
pub struct Dict {
    entries: Vec<Option<(Value, Value)>>,
    index: HashMap<Key, usize>,
}

impl Dict {
    pub fn new() -> Dict {
        Dict::default()
    }
    pub fn len(&self) -> usize {
        self.index.len()
    }
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }
    /// The value at `k`, if any (E0101 for an unhashable `k`).
    pub fn get(&self, k: &Value) -> Result<Option<Value>, Diagnostic> {
        let key = key_of(k)?;
        Ok(self
            .index
            .get(&key)
            .and_then(|&i| self.entries[i].as_ref())
            .map(|e| e.1.clone()))
    }
    pub fn contains(&self, k: &Value) -> Result<bool, Diagnostic> {
        Ok(self.index.contains_key(&key_of(k)?))
    }
    /// Sets `k` to `v`: a new key goes last, an existing one keeps its place (and its first
    /// spelling, as Python keeps the first key object).
    pub fn insert(&mut self, k: Value, v: Value) -> Result<(), Diagnostic> {
        let key = key_of(&k)?;
        match self.index.get(&key) {
            Some(&i) => {
                if let Some(e) = self.entries[i].as_mut() {
                    e.1 = v;
                }
            }
            None => {
                self.index.insert(key, self.entries.len());
                self.entries.push(Some((k, v)));
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
        let v = self.entries[i].take().map(|e| e.1);
        self.compact();
        Ok(v)
    }
    /// Removes and returns the last entry (Python's `popitem`).
    pub fn pop_last(&mut self) -> Option<(Value, Value)> {
        while let Some(slot) = self.entries.pop() {
            if let Some((k, v)) = slot {
                if let Ok(key) = key_of(&k) {
                    self.index.remove(&key);
                }
                self.compact();
                return Some((k, v));
            }
        }
        None
    }
    /// Squeezes out the holes once they are at least half the slots (and drops trailing ones).
    fn compact(&mut self) {
        while matches!(self.entries.last(), Some(None)) {
            self.entries.pop();
        }
        let live = self.index.len();
        if self.entries.len() < 8 || live * 2 > self.entries.len() {
            return;
        }
        let mut moved = vec![0usize; self.entries.len()];
        let mut next = 0;
        for (i, slot) in self.entries.iter().enumerate() {
            if slot.is_some() {
                moved[i] = next;
                next += 1;
            }
        }
        self.entries.retain(Option::is_some);
        for slot in self.index.values_mut() {
            *slot = moved[*slot];
        }
    }
    /// The entries in insertion order.
    pub fn entries(&self) -> impl Iterator<Item = &(Value, Value)> + '_ {
        self.entries.iter().flatten()
    }
    pub fn keys(&self) -> Vec<Value> {
        self.entries().map(|(k, _)| k.clone()).collect()
    }
    pub fn values(&self) -> Vec<Value> {
        self.entries().map(|(_, v)| v.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removal_keeps_order_and_index() {
        let mut d = Dict::new();
        for i in 0..100 {
            d.insert(Value::Int(i), Value::Int(i * 10)).unwrap();
        }
        for i in (0..100).step_by(3) {
            assert_eq!(
                d.remove(&Value::Int(i)).unwrap().map(|v| v.repr()),
                Some(format!("{}", i * 10))
            );
        }
        assert_eq!(d.remove(&Value::Int(0)).unwrap().map(|v| v.repr()), None);
        let keys: Vec<i64> = d
            .keys()
            .iter()
            .map(|k| if let Value::Int(i) = k { *i } else { -1 })
            .collect();
        let want: Vec<i64> = (0..100).filter(|i| i % 3 != 0).collect();
        assert_eq!(keys, want);
        for &i in &want {
            assert_eq!(
                d.get(&Value::Int(i)).unwrap().map(|v| v.repr()),
                Some(format!("{}", i * 10))
            );
        }
        d.insert(Value::Int(0), Value::Int(7)).unwrap();
        assert_eq!(d.keys().last().map(|k| k.repr()), Some("0".to_string()));
        assert_eq!(d.pop_last().map(|(k, _)| k.repr()), Some("0".to_string()));
        assert_eq!(d.len(), want.len());
        while d.pop_last().is_some() {}
        assert!(d.is_empty());
        assert_eq!(d.entries().count(), 0);
    }
}
