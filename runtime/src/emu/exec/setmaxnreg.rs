//! `setmaxnreg`: each warp's per-thread register limit and the block's pool of registers.
//!
//! A block starts with every warp at the kernel's register count at entry (what ptxas gives a
//! kernel whose `.maxntid` and `.minnctapersm 1` fix it: the register file's 65536 registers
//! over the `.maxntid` threads, a multiple of 8, at most 256), and its pool holds that count
//! for each of its threads. `setmaxnreg.dec` returns the warp's registers above `n` to the
//! pool; `setmaxnreg.inc` takes what it needs from the pool, and waits (the warp blocks) until
//! the pool has them. An increase that can never be granted (every thread of the block waits
//! or has finished) is an error at the op, as is a warpgroup whose warps did not all execute
//! the same `setmaxnreg`s. Finished warps keep their registers.

use super::*;

/// The register file of one SM (32-bit registers), all of which one block may hold.
const REGISTER_FILE: u64 = 65536;

/// The block's pool: registers the launch gave it and those its warps hold now.
pub(super) struct RegPool {
    pub(super) entry: u32,
    pub(super) total: u64,
    pub(super) held: u64,
}

impl RegPool {
    /// The pool of a block of `threads` threads of a kernel compiled for `max_threads`.
    pub(super) fn new(max_threads: Option<u32>, threads: u32) -> RegPool {
        let warps = u64::from(threads.div_ceil(32));
        let bound = u64::from(max_threads.unwrap_or(threads).div_ceil(32).max(1)) * 32;
        let entry = ((REGISTER_FILE / bound) / 8 * 8).min(256) as u32;
        let total = u64::from(entry) * warps * 32;
        RegPool {
            entry,
            total,
            held: total,
        }
    }
}

fn fault(reason: String, lane: u32) -> Fault {
    (EmuErrorKind::SetMaxNReg { reason }, lane)
}

/// `setmaxnreg.{inc|dec}` by warp `w` (all its lanes), to `n` registers per thread.
pub(super) fn setmaxnreg(
    w: &mut Warp,
    eff: u32,
    pool: &mut RegPool,
    (inc, n): (bool, u32),
    pc: Pc,
    threads: u32,
) -> Result<(), Fault> {
    if eff != FULL {
        return Err((
            EmuErrorKind::Divergent {
                active: eff,
                required: FULL,
            },
            (!eff).trailing_zeros(),
        ));
    }
    if !threads.is_multiple_of(128) {
        let why =
            format!("setmaxnreg needs whole warpgroups of 128 threads; the block has {threads}");
        return Err(fault(why, 0));
    }
    let cur = w.nreg;
    if inc && n < cur {
        let why = format!("setmaxnreg.inc to {n} registers, below this warp's {cur}");
        return Err(fault(why, 0));
    }
    if !inc && n > cur {
        let why = format!("setmaxnreg.dec to {n} registers, above this warp's {cur}");
        return Err(fault(why, 0));
    }
    w.setmaxnreg.push((pc, n));
    if !inc {
        pool.held -= u64::from(cur - n) * 32;
        w.nreg = n;
    } else if !grant(w, pool, n) {
        for s in w.state.iter_mut() {
            *s = LaneState::RegWait { n };
        }
    }
    Ok(())
}

impl Machine<'_> {
    /// Grants the waiting increases the pool now holds; `true` when any warp woke.
    pub(super) fn wake_setmaxnreg(warps: &mut [Warp], pool: &mut RegPool) -> bool {
        let mut woke = false;
        for w in warps.iter_mut() {
            if let LaneState::RegWait { n } = w.state[0] {
                if grant(w, pool, n) {
                    w.state = [LaneState::Running; 32];
                    woke = true;
                }
            }
        }
        woke
    }

    /// An error for a warp whose increase can never be granted (nothing else can run).
    pub(super) fn setmaxnreg_stuck(&self, warps: &[Warp], pool: &RegPool) -> Result<(), EmuError> {
        for w in warps {
            if let LaneState::RegWait { n } = w.state[0] {
                let need = u64::from(n - w.nreg) * 32;
                let reason = format!(
                    "setmaxnreg.inc to {n} registers waits forever: this warp needs {need} more, the block's pool of {} ({} per thread at entry) has {} free, and every thread of the block waits or has finished",
                    pool.total,
                    pool.entry,
                    pool.total - pool.held
                );
                let p = w.pc[0];
                let at = (p.0, p.1.saturating_sub(1));
                return Err(self.error(EmuErrorKind::SetMaxNReg { reason }, at, w.index * 32));
            }
        }
        Ok(())
    }

    /// At the block's end: every warp of a warpgroup executed the same `setmaxnreg`s, or an
    /// error at the first one a warp executed and another did not.
    pub(super) fn setmaxnreg_warpgroups(&self, warps: &[Warp]) -> Result<(), EmuError> {
        for group in warps.chunks(4) {
            let longest = group.iter().map(|w| w.setmaxnreg.len()).max().unwrap_or(0);
            for i in 0..longest {
                let Some(first) = group
                    .iter()
                    .find_map(|w| w.setmaxnreg.get(i).map(|e| (w, *e)))
                else {
                    continue;
                };
                let (w0, (pc, n)) = first;
                if let Some(other) = group.iter().find(|w| w.setmaxnreg.get(i) != Some(&(pc, n))) {
                    let what = match other.setmaxnreg.get(i) {
                        Some(&(p, m)) => format!("executed `{}` ({m}) instead", self.text(p)),
                        None => "did not execute it".to_string(),
                    };
                    let reason = format!(
                        "every warp of a warpgroup executes the same setmaxnreg: warp {} of warpgroup {} executed this one ({n} registers), warp {} {what}",
                        w0.index,
                        w0.index / 4,
                        other.index
                    );
                    return Err(self.error(EmuErrorKind::SetMaxNReg { reason }, pc, w0.index * 32));
                }
            }
        }
        Ok(())
    }
}

/// Takes the registers for warp `w`'s increase to `n` from the pool, if it has them.
fn grant(w: &mut Warp, pool: &mut RegPool, n: u32) -> bool {
    let need = u64::from(n - w.nreg) * 32;
    if pool.held + need > pool.total {
        return false;
    }
    pool.held += need;
    w.nreg = n;
    true
}
