//! Shared-memory checks: address provenance, constant bounds, async copies and barriers.
//!
//! Provenance ([`provenance`]) maps a `u32` value to the shared buffer its address points
//! into and, when known, its constant byte offset from the buffer's base:
//! - `tile.shared_addr B` is `B + 0`; `tile.offset B, s, r, c` is `B + offset` when the three
//!   indices are immediates (pitch and swizzle applied), `B + ?` otherwise;
//! - `tile.mov` copies; `tile.add` of an address and an immediate adds it, of an address and
//!   a value without provenance gives `B + ?`; `tile.sub` likewise with the address first;
//!   `tile.or` of an address and an immediate gives `B + ?`; `tile.fma a, b, addr` (a, b
//!   without provenance) adds `a·b` (known when both are immediates);
//! - a carried value of `tile.for` is `B + ?` when its initial value is in `B` and the
//!   region's yield is too: the body is evaluated assuming so, and any carried value whose
//!   yield is not in `B` loses its provenance and the body is evaluated again (each round
//!   drops at least one, so this ends); the results of the loop are the carried values'.
//!   A result of `tile.if` is in `B` when both yields are (with the offset when they agree);
//! - anything else (two addresses combined, `tile.select`, loaded values, parameters) has no
//!   provenance, and an access through it is not checked: the checks never report an
//!   access whose buffer is unknown.
//!
//! The memory walk ([`memory`]) goes through the ops in program order with a state of
//! buffers: `pending` (an async copy into it issued and not waited for), `waited` (a
//! `tile.wait` after the copy, no `tile.barrier` yet) and `written` (a `tile.store_shared`
//! into it since the last barrier). Any `tile.wait` moves every pending buffer to waited,
//! whatever its `n` (a simplification: `wait n > 0` lets `n` groups stay in flight); a
//! barrier clears waited and written. Reading (`tile.load_shared`, `tile.ldmatrix`) a
//! pending, waited or written buffer is an error. `tile.if` walks both regions from the
//! same state and joins them (union); `tile.for` walks its body twice, the second time from
//! the state the first ends in (so what the end of an iteration leaves is seen by the top of
//! the next), and continues with the join of the state before the loop (no iteration) and
//! the second pass's end. Inside a `tile.for` with `pipeline ≥ 2`, an async copy into a buffer
//! of several stages is a prefetch into a stage the iteration does not read: reads there do
//! not wait for it, the next `tile.wait` covers it, and after the loop it is pending; a
//! `tile.store_shared` there likewise needs no barrier before the iteration's reads.

use super::{op_err, CheckError};
use crate::scalar::{BinOp, Ty};
use crate::tile::ir::*;
use std::collections::BTreeMap;

/// Where an address points: buffer `buf`, `off` bytes from its base when known.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct Prov {
    pub buf: Value,
    pub off: Option<i64>,
}

/// The provenance of every value (`None`: unknown or not an address).
pub(super) fn provenance(k: &Kernel) -> Vec<Option<Prov>> {
    let mut p = vec![None; k.values.len()];
    region(k, &k.body, &mut p);
    p
}

fn get(p: &[Option<Prov>], o: Option<&Operand>) -> Option<Prov> {
    match o {
        Some(Operand::Value(v)) => p.get(v.0 as usize).copied().flatten(),
        _ => None,
    }
}

fn imm(o: Option<&Operand>) -> Option<i64> {
    match o {
        Some(Operand::Imm(i)) => Some(*i),
        _ => None,
    }
}

fn set(p: &mut [Option<Prov>], v: Value, x: Option<Prov>) {
    if let Some(slot) = p.get_mut(v.0 as usize) {
        *slot = x;
    }
}

fn region(k: &Kernel, r: &Region, p: &mut Vec<Option<Prov>>) {
    for &id in &r.ops {
        op(k, &k.ops[id.0 as usize], p);
    }
}

/// The operands of the yield that ends `r`.
fn yielded<'a>(k: &'a Kernel, r: &Region) -> &'a [Operand] {
    r.ops
        .last()
        .and_then(|&y| k.op(y))
        .map_or(&[], |d| d.operands.as_slice())
}

fn op(k: &Kernel, d: &OpData, p: &mut Vec<Option<Prov>>) {
    let o = |j: usize| d.operands.get(j);
    let unknown = |x: Prov| Some(Prov { off: None, ..x });
    let res = match &d.kind {
        OpKind::SharedAddr => o(0)
            .and_then(|x| x.value())
            .map(|buf| Prov { buf, off: Some(0) }),
        OpKind::Offset => match (o(0).and_then(|x| x.value()), op_buf(k, d)) {
            (Some(buf), Some(b)) => {
                let idx: Option<Vec<i64>> = (1..4).map(|j| imm(o(j))).collect();
                Some(Prov {
                    buf,
                    off: idx.map(|i| element_offset(b, i[0], i[1], i[2])),
                })
            }
            _ => None,
        },
        OpKind::Mov { .. } => get(p, o(0)),
        OpKind::Binary { op, .. } => {
            let (a, b) = (get(p, o(0)), get(p, o(1)));
            match (op, a, b) {
                (BinOp::Add, Some(x), None) | (BinOp::Sub, Some(x), None) => {
                    let sign = if *op == BinOp::Sub { -1 } else { 1 };
                    match (x.off, imm(o(1))) {
                        (Some(off), Some(i)) => Some(Prov {
                            off: Some(off + sign * i),
                            ..x
                        }),
                        _ => unknown(x),
                    }
                }
                (BinOp::Add, None, Some(x)) => match (x.off, imm(o(0))) {
                    (Some(off), Some(i)) => Some(Prov {
                        off: Some(off + i),
                        ..x
                    }),
                    _ => unknown(x),
                },
                (BinOp::Or | BinOp::Xor, Some(x), None) if imm(o(1)).is_some() => unknown(x),
                (BinOp::Or | BinOp::Xor, None, Some(x)) if imm(o(0)).is_some() => unknown(x),
                _ => None,
            }
        }
        OpKind::Fma { .. } => match (get(p, o(0)), get(p, o(1)), get(p, o(2))) {
            (None, None, Some(x)) => match (x.off, imm(o(0)), imm(o(1))) {
                (Some(off), Some(a), Some(b)) => Some(Prov {
                    off: Some(off + a * b),
                    ..x
                }),
                _ => unknown(x),
            },
            _ => None,
        },
        OpKind::For { .. } => {
            for_(k, d, p);
            return;
        }
        OpKind::If | OpKind::WarpgroupRole { .. } => {
            for r in &d.regions {
                region(k, r, p);
            }
            if let [t, e] = d.regions.as_slice() {
                let (ty, ey) = (yielded(k, t), yielded(k, e));
                for (i, &v) in d.results.iter().enumerate() {
                    let x = match (get(p, ty.get(i)), get(p, ey.get(i))) {
                        (Some(a), Some(b)) if a.buf == b.buf => Some(Prov {
                            buf: a.buf,
                            off: if a.off == b.off { a.off } else { None },
                        }),
                        _ => None,
                    };
                    set(p, v, x);
                }
            }
            return;
        }
        _ => None,
    };
    if let Some(&v) = d.results.first() {
        set(p, v, res);
    }
}

/// A loop's carried values and results (see the module doc).
fn for_(k: &Kernel, d: &OpData, p: &mut Vec<Option<Prov>>) {
    let Some(r) = d.regions.first() else {
        return;
    };
    let carried = r.args.len().saturating_sub(1);
    let mut assume: Vec<Option<Value>> = (0..carried)
        .map(|i| get(p, d.operands.get(3 + i)).map(|x| x.buf))
        .collect();
    loop {
        for (i, &a) in r.args.iter().skip(1).enumerate() {
            set(p, a, assume[i].map(|buf| Prov { buf, off: None }));
        }
        region(k, r, p);
        let ys = yielded(k, r);
        let mut changed = false;
        for (i, slot) in assume.iter_mut().enumerate() {
            if slot.is_some() && get(p, ys.get(i)).map(|x| x.buf) != *slot {
                *slot = None;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    for (i, &v) in d.results.iter().enumerate() {
        let x = assume
            .get(i)
            .copied()
            .flatten()
            .map(|buf| Prov { buf, off: None });
        set(p, v, x);
    }
}

/// The byte offset of element `[stage, row, col]` of `b` (pitch and swizzle applied).
fn element_offset(b: &SharedBuf, stage: i64, row: i64, col: i64) -> i64 {
    let colb = col * i64::from(b.elem_bytes);
    let mut chunk = colb.div_euclid(16);
    if let Some(s) = b.layout.swizzle {
        if row >= 0 && chunk >= 0 {
            chunk ^= (row >> s.shift) & i64::from(s.mask);
        }
    }
    stage * b.stage_bytes() as i64 + row * i64::from(b.layout.pitch) + chunk * 16 + colb % 16
}

/// The shared buffer an op's operand 0 names.
fn op_buf<'a>(k: &'a Kernel, d: &OpData) -> Option<&'a SharedBuf> {
    d.operands
        .first()
        .and_then(|o| o.value())
        .and_then(|v| k.shared_buf(v))
}

/// Buffer states of the memory walk: each buffer with the op that put it there.
#[derive(Clone, Debug, Default)]
struct State {
    pending: BTreeMap<Value, OpId>,
    /// Async copies issued inside a pipelined `tile.for` (`pipeline ≥ 2`) into a buffer of
    /// several stages: they fill a stage other than the one the iteration reads (the
    /// pipeline's invariant), so reads in that loop do not wait for them; a `tile.wait` moves
    /// them to waited, and at the loop's exit they are pending.
    prefetch: BTreeMap<Value, OpId>,
    /// Likewise for `tile.store_shared` (the synchronous copies of a pipeline): a barrier
    /// clears them, and at the loop's exit they are written.
    prefetch_written: BTreeMap<Value, OpId>,
    /// Inside a pipelined `tile.for`.
    pipelined: bool,
    waited: BTreeMap<Value, OpId>,
    written: BTreeMap<Value, OpId>,
}

impl State {
    fn join(&self, o: &State) -> State {
        let mut s = self.clone();
        s.pending.extend(&o.pending);
        s.prefetch.extend(&o.prefetch);
        s.prefetch_written.extend(&o.prefetch_written);
        s.waited.extend(&o.waited);
        s.written.extend(&o.written);
        s.waited.retain(|b, _| !s.pending.contains_key(b));
        s
    }
}

/// Bounds, async-copy and barrier checks (see the module doc).
pub(super) fn memory(k: &Kernel, prov: &[Option<Prov>]) -> Result<(), CheckError> {
    walk(k, prov, &k.body, &mut State::default())
}

/// The number of stages of a shared buffer (the product of its leading dims).
fn stages(k: &Kernel, buf: Value) -> u32 {
    k.shared_buf(buf)
        .map(|b| b.shape.iter().rev().skip(2).product::<u32>())
        .unwrap_or(1)
}

/// The bytes one access of `ty` × `n` covers.
fn size(ty: Ty, n: u8) -> i64 {
    i64::from(ty.bits().div_ceil(8)) * i64::from(n)
}

fn walk(k: &Kernel, prov: &[Option<Prov>], r: &Region, s: &mut State) -> Result<(), CheckError> {
    for &id in &r.ops {
        let d = &k.ops[id.0 as usize];
        let addr = get(prov, d.operands.first());
        match &d.kind {
            OpKind::LoadShared { ty, n, offset } => {
                bounds(k, id, addr, i64::from(*offset), size(*ty, *n))?;
                read(k, id, addr, s)?;
            }
            OpKind::Ldmatrix { .. } => {
                bounds(k, id, addr, 0, 16)?;
                read(k, id, addr, s)?;
            }
            OpKind::StoreShared { ty, n, offset } => {
                bounds(k, id, addr, i64::from(*offset), size(*ty, *n))?;
                if let Some(a) = addr {
                    if s.pipelined && stages(k, a.buf) >= 2 {
                        s.prefetch_written.insert(a.buf, id);
                    } else {
                        s.written.insert(a.buf, id);
                    }
                }
            }
            OpKind::CopyAsync { bytes, .. } => {
                bounds(k, id, addr, 0, i64::from(*bytes))?;
                if let Some(a) = addr {
                    s.waited.remove(&a.buf);
                    if s.pipelined && stages(k, a.buf) >= 2 {
                        s.prefetch.insert(a.buf, id);
                    } else {
                        s.pending.insert(a.buf, id);
                    }
                }
            }
            OpKind::Wait { .. } => {
                let p = std::mem::take(&mut s.pending);
                s.waited.extend(p);
                let p = std::mem::take(&mut s.prefetch);
                s.waited.extend(p);
            }
            OpKind::Barrier | OpKind::ReduceBlock { .. } => {
                s.waited.clear();
                s.written.clear();
                s.prefetch_written.clear();
            }
            OpKind::For { pipeline, .. } => {
                let before = s.clone();
                let outer = s.pipelined;
                s.pipelined = pipeline.is_some_and(|n| n >= 2);
                for body in &d.regions {
                    walk(k, prov, body, s)?;
                    walk(k, prov, body, s)?;
                }
                s.pipelined = outer;
                let p = std::mem::take(&mut s.prefetch);
                s.pending.extend(p);
                let w = std::mem::take(&mut s.prefetch_written);
                s.written.extend(w);
                *s = before.join(s);
            }
            // run by some warpgroups only: the state after it is either
            OpKind::WarpgroupRole { .. } => {
                for body in &d.regions {
                    let mut b = s.clone();
                    walk(k, prov, body, &mut b)?;
                    *s = s.join(&b);
                }
            }
            OpKind::If => {
                let mut out: Option<State> = None;
                for body in &d.regions {
                    let mut b = s.clone();
                    walk(k, prov, body, &mut b)?;
                    out = Some(match out {
                        Some(o) => o.join(&b),
                        None => b,
                    });
                }
                if let Some(o) = out {
                    *s = o;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// An access of `len` bytes at `addr + offset` lies inside the buffer, when the address is a
/// known constant offset into one.
fn bounds(
    k: &Kernel,
    id: OpId,
    addr: Option<Prov>,
    offset: i64,
    len: i64,
) -> Result<(), CheckError> {
    let Some(Prov {
        buf,
        off: Some(off),
    }) = addr
    else {
        return Ok(());
    };
    let Some(b) = k.shared_buf(buf) else {
        return Ok(());
    };
    let lo = off + offset;
    let hi = lo + len;
    if lo < 0 || hi > b.bytes() as i64 {
        return Err(op_err(
            k,
            id,
            format!(
                "bytes [{lo}, {hi}) lie outside buffer %{} ({} bytes)",
                buf.0,
                b.bytes()
            ),
        ));
    }
    Ok(())
}

/// A read of shared memory at `addr`: its buffer has no copy in flight and no store since
/// the last barrier.
fn read(k: &Kernel, id: OpId, addr: Option<Prov>, s: &State) -> Result<(), CheckError> {
    let Some(Prov { buf, .. }) = addr else {
        return Ok(());
    };
    let msg = if let Some(c) = s.pending.get(&buf) {
        format!(
            "reads buffer %{} with async copies not waited for (tile.copy_async #{} has no tile.wait and tile.barrier after it)",
            buf.0, c.0
        )
    } else if let Some(c) = s.waited.get(&buf) {
        format!(
            "reads buffer %{} with async copies not waited for (tile.copy_async #{} is waited for, but no tile.barrier follows the tile.wait)",
            buf.0, c.0
        )
    } else if let Some(w) = s.written.get(&buf) {
        format!(
            "reads buffer %{} written by tile.store_shared #{} with no tile.barrier in between",
            buf.0, w.0
        )
    } else {
        return Ok(());
    };
    Err(op_err(k, id, msg))
}
