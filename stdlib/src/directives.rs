//! The schedule directives of one traced kernel, as its body's `schedule.*` calls gave them
//! (the `schedule` module records them, see [`crate::schedule`]).

use tessera_compiler::graph::pipeline::Fusion;
use tessera_lang::Span;

/// The directives of one traced kernel.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Directives {
    /// (BM, BN, BK) and the optional warp tile.
    pub tile: Option<([i64; 3], Option<[i64; 2]>)>,
    pub tensor_cores: Option<bool>,
    pub pipeline_stages: Option<i64>,
    pub async_copy: Option<bool>,
    pub occupancy: Option<(Option<i64>, Option<i64>)>,
    pub vectorize: Option<i64>,
    pub fusion: Fusion,
    /// `search_space(tile_sizes=[...], vectorize=[...], pipeline_stages=[...])`.
    pub search_space: Option<SearchSpace>,
    /// `autotune(cost_model=, max_trials=, budget_ms=)`.
    pub autotune: Option<AutotuneOpts>,
    /// `grad_bucket(bytes)`: the most gradient bytes one data-parallel all-reduce takes.
    pub grad_bucket: Option<i64>,
    /// `overlap(on=True)`: a data-parallel gradient's bucket all-reduces run while the
    /// backward pass goes on (off: each is waited for when issued).
    pub overlap: Option<bool>,
    /// Where each directive was given (the whole `schedule.NAME(...)` call), for diagnostics that
    /// blame a directive; the last call of a name wins, as its value does.
    pub spans: Vec<(&'static str, Span)>,
}

impl Directives {
    /// The span of the `schedule.NAME(...)` call that set `name`, if any.
    pub fn span_of(&self, name: &str) -> Option<Span> {
        self.spans
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, s)| *s)
    }
}

/// `schedule.search_space(...)`: the values each directive may take (empty: not searched).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SearchSpace {
    /// (BM, BN, BK); an int `n` in `tile_sizes` is (n, n, 32).
    pub tiles: Vec<[i64; 3]>,
    pub vectorize: Vec<i64>,
    pub stages: Vec<i64>,
}

/// `schedule.autotune(...)`.
#[derive(Clone, Debug, PartialEq)]
pub struct AutotuneOpts {
    pub cost_model: String,
    pub max_trials: i64,
    /// Wall-time budget of the search (ms).
    pub budget_ms: Option<i64>,
}
