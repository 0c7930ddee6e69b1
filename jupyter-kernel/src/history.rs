//! The input history of one kernel process, answering `history_request` (tail, range, search)
//! the way IPython's history manager does, kept in memory.

use serde_json::{json, Value};

/// The session number of this kernel's history: one kernel process is one session.
pub const SESSION: i64 = 1;

#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The cell's execution count.
    pub line: i64,
    pub input: String,
    /// The plain-text value of the cell's trailing expression, empty when it had none.
    pub output: String,
}

#[derive(Default)]
pub struct History {
    entries: Vec<Entry>,
}

impl History {
    pub fn push(&mut self, line: i64, input: &str, output: String) {
        self.entries.push(Entry {
            line,
            input: input.to_string(),
            output,
        });
    }

    /// The `history` list of a reply to the request content `req`.
    pub fn answer(&self, req: &Value) -> Vec<Value> {
        let output = req.get("output").and_then(Value::as_bool).unwrap_or(false);
        let int = |k: &str| req.get(k).and_then(Value::as_i64);
        let picked: Vec<&Entry> = match req.get("hist_access_type").and_then(Value::as_str) {
            Some("tail") => {
                let n = int("n").unwrap_or(10).max(0) as usize;
                let skip = self.entries.len().saturating_sub(n);
                self.entries[skip..].iter().collect()
            }
            Some("range") => {
                // Session 0 or negative is relative: this session.
                let session = int("session").unwrap_or(0);
                if session > 0 && session != SESSION {
                    Vec::new()
                } else {
                    let start = int("start").unwrap_or(1);
                    let stop = int("stop").filter(|&s| s > 0);
                    self.entries
                        .iter()
                        .filter(|e| e.line >= start && stop.is_none_or(|s| e.line < s))
                        .collect()
                }
            }
            Some("search") => {
                let pattern = req.get("pattern").and_then(Value::as_str).unwrap_or("*");
                let unique = req.get("unique").and_then(Value::as_bool).unwrap_or(false);
                let mut hits: Vec<&Entry> = self
                    .entries
                    .iter()
                    .filter(|e| glob(pattern, &e.input))
                    .collect();
                if unique {
                    // Keep the latest of each input, in history order.
                    let mut kept: Vec<&Entry> = Vec::new();
                    for e in hits.iter().rev() {
                        if !kept.iter().any(|k| k.input == e.input) {
                            kept.push(e);
                        }
                    }
                    kept.reverse();
                    hits = kept;
                }
                if let Some(n) = int("n").filter(|&n| n > 0) {
                    let skip = hits.len().saturating_sub(n as usize);
                    hits.drain(..skip);
                }
                hits
            }
            _ => Vec::new(),
        };
        picked
            .into_iter()
            .map(|e| {
                if output {
                    json!([SESSION, e.line, [e.input, e.output]])
                } else {
                    json!([SESSION, e.line, e.input])
                }
            })
            .collect()
    }
}

/// Shell-style glob of IPython's history search (SQLite `GLOB`): `*` any run, `?` one character,
/// `[...]` a class; case-sensitive; the whole input must match.
pub fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    glob_at(&p, &t)
}

fn glob_at(p: &[char], t: &[char]) -> bool {
    // Iterative with backtracking to the last `*`.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() {
            match p[pi] {
                '*' => {
                    star = Some((pi, ti));
                    pi += 1;
                    continue;
                }
                '?' => {
                    pi += 1;
                    ti += 1;
                    continue;
                }
                '[' => {
                    if let Some((matched, len)) = class(&p[pi..], t[ti]) {
                        if matched {
                            pi += len;
                            ti += 1;
                            continue;
                        }
                    } else if t[ti] == '[' {
                        pi += 1;
                        ti += 1;
                        continue;
                    }
                }
                c if c == t[ti] => {
                    pi += 1;
                    ti += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((sp, st)) => {
                pi = sp + 1;
                ti = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Matches `c` against the class at the start of `p` (`[abc]`, `[a-z]`, `[^x]`); returns whether
/// it matched and the class's length, or `None` when the `[` is not closed.
fn class(p: &[char], c: char) -> Option<(bool, usize)> {
    let mut i = 1;
    let negate = p.get(1) == Some(&'^');
    if negate {
        i += 1;
    }
    let first = i;
    let mut hit = false;
    while i < p.len() {
        if p[i] == ']' && i > first {
            return Some((hit != negate, i + 1));
        }
        if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
            hit |= p[i] <= c && c <= p[i + 2];
            i += 3;
        } else {
            hit |= p[i] == c;
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_matches_like_sqlite() {
        assert!(glob("1?2*", "1+2"));
        assert!(glob("1?2*", "1+2+3"));
        assert!(!glob("1?2*", "11+2"));
        assert!(glob("*", ""));
        assert!(glob("a*b*c", "axxbyyc"));
        assert!(!glob("a*b*c", "axxbyy"));
        assert!(glob("[a-c]x", "bx"));
        assert!(!glob("[^a-c]x", "bx"));
        assert!(glob("[]", "[]"));
        assert!(!glob("abc", "ABC"));
    }

    fn filled() -> History {
        let mut h = History::default();
        h.push(1, "x = 1", String::new());
        h.push(2, "1 + 2", "3".into());
        h.push(3, "print(x)", String::new());
        h.push(4, "1 + 2", "3".into());
        h
    }

    #[test]
    fn tail_range_and_search() {
        let h = filled();
        let tail = h.answer(&json!({"hist_access_type": "tail", "n": 2, "output": false}));
        assert_eq!(
            tail,
            vec![json!([1, 3, "print(x)"]), json!([1, 4, "1 + 2"])]
        );
        let out = h.answer(&json!({"hist_access_type": "tail", "n": 1, "output": true}));
        assert_eq!(out, vec![json!([1, 4, ["1 + 2", "3"]])]);
        let range =
            h.answer(&json!({"hist_access_type": "range", "session": 1, "start": 2, "stop": 3}));
        assert_eq!(range, vec![json!([1, 2, "1 + 2"])]);
        let other = h.answer(&json!({"hist_access_type": "range", "session": 7, "start": 1}));
        assert!(other.is_empty());
        let all = h.answer(&json!({"hist_access_type": "search", "pattern": "1?+*"}));
        assert_eq!(all.len(), 2);
        let unique =
            h.answer(&json!({"hist_access_type": "search", "pattern": "1*", "unique": true}));
        assert_eq!(unique, vec![json!([1, 4, "1 + 2"])]);
        let n = h.answer(&json!({"hist_access_type": "search", "pattern": "*", "n": 3}));
        assert_eq!(n.len(), 3);
        assert_eq!(n[0], json!([1, 2, "1 + 2"]));
    }
}
