//! Dead code elimination: drops every op no output depends on (params stay), renumbering the
//! values that remain.
//!
//! ```text
//! %2 = exp %0          (unused)          ─▶   (gone)
//! %3 = add %0, %1                         ─▶   %2 = add %0, %1
//! return %3                               ─▶   return %2
//! ```

use super::PassCx;
use crate::graph::{Fired, Graph};

pub fn run(g: &mut Graph, _cx: &PassCx) -> Fired {
    let mut live = vec![false; g.len()];
    for o in &g.outputs {
        if let Some(l) = live.get_mut(o.index()) {
            *l = true;
        }
    }
    let ids: Vec<_> = g.ids().collect();
    for id in ids.into_iter().rev() {
        if !live.get(id.index()).copied().unwrap_or(false) {
            continue;
        }
        if let Some(op) = g.op(id) {
            for x in op.operands() {
                if let Some(l) = live.get_mut(x.index()) {
                    *l = true;
                }
            }
        }
    }
    // DCE is bookkeeping, not a fusion: it reports nothing.
    if live.iter().any(|l| !l) {
        g.retain(&live);
    }
    Fired::default()
}
