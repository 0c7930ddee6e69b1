//! The autotuner's search: candidate schedules from a search space (or a default one per kernel
//! kind and target), each applied to the kernel body's [`Directives`] and pruned where its
//! tile does not fit (the E0300 of [`crate::schedule::fit`], dropped with the reason), ranked
//! by the cost model. Measuring candidates on a device and
//! keeping results across runs are the caller's ([`cache`] holds the results as data).

pub mod cache;

use crate::arch::Target;
use crate::cost;
use crate::graph::{DType, Graph, Op};
use crate::pipeline::{lower, Lowered};
use crate::schedule::{tensor_core_dtype, Directives, Kind};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// One point of a search space: the schedule directives it sets (others keep the kernel
/// body's).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Config {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tile: Option<[u32; 3]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warp: Option<[u32; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vectorize: Option<u32>,
    /// Warps per block: `occupancy_target(w, w)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warps: Option<u32>,
}

impl Config {
    /// `base` with this config's settings.
    pub fn apply(&self, base: &Directives) -> Directives {
        let mut d = base.clone();
        if let Some(t) = self.tile {
            d.tile = Some(t);
            d.warp = self.warp;
        }
        if let Some(s) = self.stages {
            d.stages = Some(s);
        }
        if let Some(v) = self.vectorize {
            d.vectorize = Some(v);
        }
        if let Some(w) = self.warps {
            d.occupancy = Some((Some(w), Some(w)));
        }
        d
    }
    /// `tile=128x128x32 stages=3` (or `default` when it sets nothing).
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        match self.tile {
            // a 2-D tile (no reduction dimension)
            Some([m, n, 0]) => parts.push(format!("tile={m}x{n}")),
            Some([m, n, k]) => parts.push(format!("tile={m}x{n}x{k}")),
            None => {}
        }
        if let Some([m, n]) = self.warp {
            parts.push(format!("warp={m}x{n}"));
        }
        if let Some(s) = self.stages {
            parts.push(format!("stages={s}"));
        }
        if let Some(v) = self.vectorize {
            parts.push(format!("vectorize={v}"));
        }
        if let Some(w) = self.warps {
            parts.push(format!("warps={w}"));
        }
        if parts.is_empty() {
            "default".to_string()
        } else {
            parts.join(" ")
        }
    }
}

/// A search space: the values each directive may take (an empty list: keep the body's); the
/// body's `schedule.search_space` is one.
pub use crate::schedule::SearchSpace as Space;

impl Space {
    /// Every combination, in order (tiles slowest).
    pub fn candidates(&self) -> Vec<Config> {
        let tiles: Vec<Option<[u32; 3]>> = if self.tiles.is_empty() {
            vec![None]
        } else {
            self.tiles.iter().copied().map(Some).collect()
        };
        let stages: Vec<Option<u32>> = if self.stages.is_empty() {
            vec![None]
        } else {
            self.stages.iter().copied().map(Some).collect()
        };
        let vecs: Vec<Option<u32>> = if self.vectorize.is_empty() {
            vec![None]
        } else {
            self.vectorize.iter().copied().map(Some).collect()
        };
        let warps: Vec<Option<u32>> = if self.warps.is_empty() {
            vec![None]
        } else {
            self.warps.iter().copied().map(Some).collect()
        };
        let mut out = Vec::new();
        for t in &tiles {
            for s in &stages {
                for v in &vecs {
                    for w in &warps {
                        out.push(Config {
                            tile: *t,
                            warp: None,
                            stages: *s,
                            vectorize: *v,
                            warps: *w,
                        });
                    }
                }
            }
        }
        out
    }
}

/// Whether the graph's matmuls run on tensor cores by default.
fn matmul_kind(g: &Graph) -> Option<bool> {
    let mut tc = None;
    for id in g.ids() {
        if let Some(Op::Matmul { a, b, .. }) = g.op(id) {
            let da = g.ty(*a).map_or(DType::F32, |t| t.dtype);
            let db = g.ty(*b).map_or(DType::F32, |t| t.dtype);
            tc = Some(tc.unwrap_or(false) || tensor_core_dtype(da, db));
        }
    }
    tc
}

/// Whether the graph has a convolution that runs as the implicit GEMM on tensor cores.
fn tensor_core_conv(g: &Graph) -> bool {
    g.ids().any(|id| match g.op(id) {
        Some(Op::Conv { x, w, attrs, .. }) => match (g.ty(*x), g.ty(*w)) {
            (Some(tx), Some(tw)) => {
                let groups = attrs.groups.max(1);
                crate::schedule::conv_tensor_cores(
                    tx.dtype,
                    tw.dtype,
                    tw.shape.get(1).copied().unwrap_or(0),
                    tw.shape[0] / groups,
                )
            }
            _ => false,
        },
        _ => false,
    })
}

/// The default search space of a graph on `target`: for a matmul on tensor cores, BM and BN
/// in {64, 128, 256}, BK in {32, 64}, 2–4 stages (54 points, the larger ones pruned by shared
/// memory); on the CUDA cores BM, BN in {32, 64, 128}, BK in {8, 16, 32}, 2–3 stages; for an
/// implicit-GEMM convolution (no matmul) BM, BN in {32, 64, 128} and BK in {16, 32};
/// elementwise kernels vector widths 1, 2, 4; nothing else is tuned.
pub fn default_space(g: &Graph, target: Target, kinds: &[Kind]) -> Space {
    match matmul_kind(g).map(|tc| tc && target.tensor_cores()) {
        Some(true) => {
            let mut tiles = Vec::new();
            for bm in [64, 128, 256] {
                for bn in [64, 128, 256] {
                    for bk in [32, 64] {
                        tiles.push([bm, bn, bk]);
                    }
                }
            }
            Space {
                tiles,
                stages: vec![2, 3, 4],
                vectorize: vec![],
                warps: vec![],
            }
        }
        Some(false) => {
            let mut tiles = Vec::new();
            for bm in [32, 64, 128] {
                for bn in [32, 64, 128] {
                    for bk in [8, 16, 32] {
                        tiles.push([bm, bn, bk]);
                    }
                }
            }
            Space {
                tiles,
                stages: vec![2, 3],
                vectorize: vec![],
                warps: vec![],
            }
        }
        None if tensor_core_conv(g) && target.tensor_cores() => {
            let mut tiles = Vec::new();
            for bm in [32, 64, 128] {
                for bn in [32, 64, 128] {
                    for bk in [16, 32] {
                        tiles.push([bm, bn, bk]);
                    }
                }
            }
            Space {
                tiles,
                stages: vec![],
                vectorize: vec![],
                warps: vec![],
            }
        }
        None if kinds.contains(&Kind::Elementwise) => Space {
            tiles: vec![],
            stages: vec![],
            vectorize: vec![1, 2, 4],
            warps: vec![4, 8],
        },
        None => Space::default(),
    }
}

/// A candidate the model ranked.
#[derive(Clone, Debug)]
pub struct Ranked {
    pub config: Config,
    pub predicted_us: f64,
    pub lowered: Lowered,
}

/// The outcome of ranking a space.
#[derive(Clone, Debug, Default)]
pub struct Ranking {
    /// Valid candidates, fastest predicted first.
    pub ranked: Vec<Ranked>,
    /// Candidates the target cannot run, with the reason (the E0300 message).
    pub pruned: Vec<(Config, String)>,
    /// Candidates not looked at because the budget ran out.
    pub skipped: usize,
    pub elapsed: Duration,
}

/// Lowers `g` with each candidate applied to `base` and ranks the valid ones by the model's
/// total latency. Stops when `budget` is spent (the rest are `skipped`). `tick` is called once
/// per candidate (a progress bar).
pub fn rank(
    g: &Graph,
    base: &Directives,
    target: Target,
    candidates: &[Config],
    budget: Option<Duration>,
    tick: &mut dyn FnMut(),
) -> Ranking {
    let start = Instant::now();
    let mut out = Ranking::default();
    for (i, c) in candidates.iter().enumerate() {
        if budget.is_some_and(|b| start.elapsed() > b) {
            out.skipped = candidates.len() - i;
            break;
        }
        tick();
        match lower(g, &c.apply(base), target) {
            Ok(l) => {
                let t = cost::total_latency_us(&l, target);
                if t.is_finite() {
                    out.ranked.push(Ranked {
                        config: c.clone(),
                        predicted_us: t,
                        lowered: l,
                    });
                } else {
                    out.pruned.push((
                        c.clone(),
                        "no block fits on an SM (registers or shared memory)".to_string(),
                    ));
                }
            }
            Err(d) => out.pruned.push((c.clone(), d.message)),
        }
    }
    // Stable: equal predictions keep the space's order.
    out.ranked
        .sort_by(|a, b| a.predicted_us.total_cmp(&b.predicted_us));
    out.elapsed = start.elapsed();
    out
}

/// Spearman's rank correlation of two equally long series (ties get their mean rank).
pub fn spearman(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() != b.len() || a.len() < 2 {
        return None;
    }
    fn ranks(v: &[f64]) -> Vec<f64> {
        let mut idx: Vec<usize> = (0..v.len()).collect();
        idx.sort_by(|&i, &j| v[i].total_cmp(&v[j]));
        let mut r = vec![0.0; v.len()];
        let mut i = 0;
        while i < idx.len() {
            let mut j = i;
            while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
                j += 1;
            }
            let mean = (i + j) as f64 / 2.0 + 1.0;
            for k in &idx[i..=j] {
                r[*k] = mean;
            }
            i = j + 1;
        }
        r
    }
    let (ra, rb) = (ranks(a), ranks(b));
    let n = a.len() as f64;
    let ma = ra.iter().sum::<f64>() / n;
    let mb = rb.iter().sum::<f64>() / n;
    let cov: f64 = ra.iter().zip(&rb).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = ra.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = rb.iter().map(|y| (y - mb).powi(2)).sum();
    if va == 0.0 || vb == 0.0 {
        return None;
    }
    Some(cov / (va.sqrt() * vb.sqrt()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spearman_matches_hand_values() {
        // Same order: 1. Reversed: -1. [1,2,3,4] vs [1,3,2,4]: d² = 0+1+1+0 = 2, 1 − 6·2/(4·15)
        // = 0.8.
        let near = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-12);
        assert!(near(spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), 1.0));
        assert!(near(spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), -1.0));
        // Ties share their mean rank; a constant series has no correlation.
        assert!(near(spearman(&[1.0, 1.0, 2.0], &[1.0, 1.0, 2.0]), 1.0));
        assert_eq!(spearman(&[1.0, 1.0], &[1.0, 2.0]), None);
        let r = spearman(&[1.0, 2.0, 3.0, 4.0], &[1.0, 3.0, 2.0, 4.0]).unwrap();
        assert!((r - 0.8).abs() < 1e-12);
    }

    #[test]
    fn space_product_and_default() {
        let s = Space {
            tiles: vec![[64, 64, 32], [128, 128, 32]],
            stages: vec![2, 3, 4],
            vectorize: vec![],
            warps: vec![],
        };
        let c = s.candidates();
        assert_eq!(c.len(), 6);
        assert_eq!(c[1].describe(), "tile=64x64x32 stages=3");
        assert_eq!(Space::default().candidates(), vec![Config::default()]);
    }
}

#[cfg(test)]
mod speed {
    use super::*;

    #[test]
    fn default_space_ranks_54_candidates() {
        // The default tensor-core space: 18 tiles × 3 stages = 54 candidates, each lowered to
        // Target IR and costed; every one is either ranked or pruned with a reason, and the
        // whole search stays under a second (SPEC §6: nobody waits for a first launch).
        let g = crate::graph::bf16_matmul(4096, 4096, 4096);
        let kinds = [Kind::Matmul];
        let space = default_space(&g, Target::Sm90, &kinds);
        let cands = space.candidates();
        assert_eq!(cands.len(), 54);
        let t = Instant::now();
        let r = rank(
            &g,
            &Directives::default(),
            Target::Sm90,
            &cands,
            None,
            &mut || {},
        );
        let took = t.elapsed();
        assert_eq!(r.ranked.len() + r.pruned.len(), 54);
        assert!(!r.ranked.is_empty());
        for w in r.ranked.windows(2) {
            assert!(w[0].predicted_us <= w[1].predicted_us);
        }
        // 256×256×64 with 4 stages: 4·(256·64 + 64·256)·2 = 262144 B > 232448 (sm_90): pruned.
        assert!(r.pruned.iter().any(|(c, m)| c.tile == Some([256, 256, 64])
            && c.stages == Some(4)
            && m.contains("262144")));
        assert!(took < Duration::from_secs(1), "ranking took {took:?}");
    }
}
