//! An estimate of a kernel's registers per thread from its Target IR, for when `ptxas` is not
//! there to say: the most 32-bit register slots live at once (liveness over the control-flow
//! graph), plus the few registers every kernel's address arithmetic and special registers take.
//! A 64-bit value takes two slots, a predicate none (predicates live in their own file). The
//! result is an estimate and is always shown as one (`est.`).

use crate::backend::ptx::{Kernel, Reg, Terminator, Ty};

/// Registers ptxas keeps beyond the values live at once (stack pointer, thread and block
/// indices held across the kernel).
const OVERHEAD: u32 = 4;

fn slots(t: Option<Ty>) -> u32 {
    match t {
        Some(Ty::Pred) | None => 0,
        Some(t) if t.bits() == 64 => 2,
        Some(_) => 1,
    }
}

/// A plain bit set over register indices.
#[derive(Clone, PartialEq, Eq)]
struct Set(Vec<u64>);

impl Set {
    fn new(n: usize) -> Set {
        Set(vec![0; n.div_ceil(64)])
    }
    fn insert(&mut self, r: Reg) {
        let i = r.0 as usize;
        if let Some(w) = self.0.get_mut(i / 64) {
            *w |= 1 << (i % 64);
        }
    }
    fn remove(&mut self, r: Reg) {
        let i = r.0 as usize;
        if let Some(w) = self.0.get_mut(i / 64) {
            *w &= !(1 << (i % 64));
        }
    }
    fn contains(&self, r: Reg) -> bool {
        let i = r.0 as usize;
        self.0.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
    fn union(&mut self, o: &Set) {
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            *a |= *b;
        }
    }
    fn iter(&self) -> impl Iterator<Item = Reg> + '_ {
        self.0.iter().enumerate().flat_map(|(wi, w)| {
            (0..64)
                .filter(move |b| w & (1u64 << b) != 0)
                .map(move |b| Reg((wi * 64 + b) as u32))
        })
    }
}

fn successors(t: &Terminator) -> Vec<usize> {
    match t {
        Terminator::Bra(b) => vec![b.0 as usize],
        Terminator::CondBra { then, els, .. } => vec![then.0 as usize, els.0 as usize],
        Terminator::Ret => vec![],
    }
}

/// The estimated registers per thread of `k` (at least [`OVERHEAD`] + 1, at most 255).
pub fn estimate(k: &Kernel) -> u32 {
    let n = k.regs.len();
    let nb = k.blocks.len();
    let weight = |set: &Set| -> u32 { set.iter().map(|r| slots(k.reg_ty(r))).sum() };
    // Per block: registers used before being defined (gen) and defined (kill).
    let mut gen = vec![Set::new(n); nb];
    let mut kill = vec![Set::new(n); nb];
    for (bi, b) in k.blocks.iter().enumerate() {
        for i in &b.insts {
            let mut uses = i.op.uses();
            if let Some(g) = &i.guard {
                uses.push(g.pred);
            }
            for u in uses {
                if !kill[bi].contains(u) {
                    gen[bi].insert(u);
                }
            }
            for d in i.op.defs() {
                kill[bi].insert(d);
            }
        }
        if let Terminator::CondBra { pred, .. } = b.term {
            if !kill[bi].contains(pred) {
                gen[bi].insert(pred);
            }
        }
    }
    // live_in = gen ∪ (live_out − kill), to a fixed point.
    let mut live_in = vec![Set::new(n); nb];
    let mut live_out = vec![Set::new(n); nb];
    let mut changed = true;
    let mut rounds = 0;
    while changed && rounds < 1000 {
        changed = false;
        rounds += 1;
        for bi in (0..nb).rev() {
            let mut out = Set::new(n);
            for s in successors(&k.blocks[bi].term) {
                if let Some(li) = live_in.get(s) {
                    out.union(li);
                }
            }
            let mut inn = out.clone();
            for (w, kw) in inn.0.iter_mut().zip(&kill[bi].0) {
                *w &= !kw;
            }
            inn.union(&gen[bi]);
            if inn != live_in[bi] || out != live_out[bi] {
                changed = true;
                live_in[bi] = inn;
                live_out[bi] = out;
            }
        }
    }
    // Walk each block backwards from its live-out set.
    let mut peak = 0;
    for (bi, b) in k.blocks.iter().enumerate() {
        let mut live = live_out[bi].clone();
        if let Terminator::CondBra { pred, .. } = b.term {
            live.insert(pred);
        }
        let mut cur = weight(&live);
        peak = peak.max(cur);
        for i in b.insts.iter().rev() {
            for d in i.op.defs() {
                if live.contains(d) {
                    live.remove(d);
                    cur -= slots(k.reg_ty(d));
                }
            }
            let mut uses = i.op.uses();
            if let Some(g) = &i.guard {
                uses.push(g.pred);
            }
            for u in uses {
                if !live.contains(u) {
                    live.insert(u);
                    cur += slots(k.reg_ty(u));
                }
            }
            peak = peak.max(cur);
        }
    }
    (peak + OVERHEAD).clamp(OVERHEAD + 1, 255)
}
