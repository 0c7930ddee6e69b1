//! The schedule directives of a kernel body (`schedule.*`, SPEC §5): one record that the
//! tracer fills as the body calls them, the Graph IR passes read (`fusion`), Schedule IR
//! lowering reads (tile, warp, tensor cores, stages, async copies, vector width), the autotuner
//! reads (search space, options) and applies its candidates to, and the data-parallel gradient
//! reads (`grad_bucket`, `overlap`). Each directive keeps where it was given, so an E0300 points
//! at the directive that breaks a limit.

use crate::graph::pipeline::Fusion;
use tessera_lang::Span;

/// One `schedule.NAME(...)` directive.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Directive {
    Tile,
    TensorCores,
    Stages,
    AsyncCopy,
    Occupancy,
    Vectorize,
    GradBucket,
    Overlap,
    Fusion,
    SearchSpace,
    Autotune,
}

impl Directive {
    pub const ALL: [Directive; 11] = [
        Directive::Tile,
        Directive::TensorCores,
        Directive::Stages,
        Directive::AsyncCopy,
        Directive::Occupancy,
        Directive::Vectorize,
        Directive::GradBucket,
        Directive::Overlap,
        Directive::Fusion,
        Directive::SearchSpace,
        Directive::Autotune,
    ];

    /// The `schedule.` function that gives it.
    pub fn name(self) -> &'static str {
        match self {
            Directive::Tile => "tile",
            Directive::TensorCores => "use_tensor_cores",
            Directive::Stages => "pipeline_stages",
            Directive::AsyncCopy => "async_copy",
            Directive::Occupancy => "occupancy_target",
            Directive::Vectorize => "vectorize",
            Directive::GradBucket => "grad_bucket",
            Directive::Overlap => "overlap",
            Directive::Fusion => "fusion",
            Directive::SearchSpace => "search_space",
            Directive::Autotune => "autotune",
        }
    }

    /// The directive `schedule.NAME` gives.
    pub fn from_name(name: &str) -> Option<Directive> {
        Directive::ALL.into_iter().find(|d| d.name() == name)
    }
}

/// `schedule.search_space(...)`: the values each directive may take (an empty list: not
/// searched, the body's value is kept).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct SearchSpace {
    /// (BM, BN, BK); BK 0: a 2-D tile (the kernel's default BK).
    pub tiles: Vec<[u32; 3]>,
    pub stages: Vec<u32>,
    pub vectorize: Vec<u32>,
    /// Warps per block (each an `occupancy_target(w, w)`).
    pub warps: Vec<u32>,
}

impl SearchSpace {
    pub fn is_empty(&self) -> bool {
        self.tiles.is_empty()
            && self.stages.is_empty()
            && self.vectorize.is_empty()
            && self.warps.is_empty()
    }
}

/// `schedule.autotune(cost_model=, max_trials=, budget_ms=)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AutotuneOpts {
    pub cost_model: String,
    pub max_trials: u32,
    /// Wall-time budget of the search (ms).
    pub budget_ms: Option<u32>,
}

/// The directives of one kernel body, each `None` (or empty) where the body did not give it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Directives {
    /// (BM, BN, BK); BK 0: a 2-D tile `(BM, BN)` (the kernel's default BK where it has one).
    pub tile: Option<[u32; 3]>,
    /// (WM, WN), given with the tile.
    pub warp: Option<[u32; 2]>,
    pub tensor_cores: Option<bool>,
    pub stages: Option<u32>,
    pub async_copy: Option<bool>,
    pub vectorize: Option<u32>,
    /// `occupancy_target(min_warps, max_warps)`: the warps per block (Schedule IR lowering picks
    /// the block of a template that can change it, `fit::occupancy_honoured` refuses the rest).
    pub occupancy: Option<(Option<u32>, Option<u32>)>,
    /// `fusion(mode)`: read by the Graph IR passes.
    pub fusion: Fusion,
    pub search_space: Option<SearchSpace>,
    pub autotune: Option<AutotuneOpts>,
    /// `grad_bucket(bytes)`: the most gradient bytes one data-parallel all-reduce takes.
    pub grad_bucket: Option<u64>,
    /// `overlap(on)`: a data-parallel gradient's bucket all-reduces run while the backward
    /// pass goes on (off: each is waited for when issued).
    pub overlap: Option<bool>,
    /// Where the kernel is called: E0300's secondary label. Set for one compilation
    /// ([`Directives::at_call`]), not by the body.
    pub span: Option<Span>,
    /// Where each directive was given (the whole `schedule.NAME(...)` call), in order; the
    /// last of a directive wins, as its value does.
    pub spans: Vec<(Directive, Span)>,
}

impl Directives {
    /// The span of the last `schedule.NAME(...)` call that gave `d`, if any.
    pub fn span_of(&self, d: Directive) -> Option<Span> {
        self.spans
            .iter()
            .rev()
            .find(|(n, _)| *n == d)
            .map(|(_, s)| *s)
    }

    /// Records that `d` was given at `span`.
    pub fn given_at(&mut self, d: Directive, span: Span) {
        self.spans.push((d, span));
    }

    /// These directives for a compilation of the kernel called at `call`.
    pub fn at_call(&self, call: Span) -> Directives {
        Directives {
            span: Some(call),
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_the_last_span_wins() {
        for d in Directive::ALL {
            assert_eq!(Directive::from_name(d.name()), Some(d));
        }
        assert_eq!(Directive::from_name("tile_shape"), None);
        let mut d = Directives::default();
        d.given_at(Directive::Tile, Span::new(0, 1, 2));
        d.given_at(Directive::Stages, Span::new(0, 3, 4));
        d.given_at(Directive::Tile, Span::new(0, 5, 6));
        assert_eq!(d.span_of(Directive::Tile), Some(Span::new(0, 5, 6)));
        assert_eq!(d.span_of(Directive::Stages), Some(Span::new(0, 3, 4)));
        assert_eq!(d.span_of(Directive::Overlap), None);
        let c = d.at_call(Span::new(0, 7, 8));
        assert_eq!(c.span, Some(Span::new(0, 7, 8)));
        assert_eq!(c.spans, d.spans);
    }
}
