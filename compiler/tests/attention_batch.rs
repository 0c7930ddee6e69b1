//! An attention with more batch problems than grid y takes (65535) continues them on grid z:
//! the launch is `[q tiles, 65535, ⌈batch / 65535⌉]`, each block's problem is
//! `min(y + 65535·z, batch − 1)`, and ptxas accepts the kernel for sm_80 and sm_90.
//! (Run on `emu` with 65540 problems of `[1, 4]`, the result equals the cpu: too slow for a
//! debug test, recorded in docs/decisions.md.)
//! Needs ptxas: `scripts/install-ptxas` (fails, never skips, when it is missing).

use tessera_compiler::backend::ptx::ptxas::{find_ptxas, run_ptxas, PtxasError};
use tessera_compiler::backend::ptx::{print as ptx, Target};
use tessera_compiler::graph::{DType, Graph, Op, TensorType};
use tessera_compiler::pipeline::lower;
use tessera_compiler::schedule::Directives;
use tessera_lang::{SourceMap, Span};

#[test]
fn attention_batches_past_grid_y_continue_on_grid_z() {
    let mut sources = SourceMap::new();
    let f = sources.add("att.tsr", "o = att(q, k, v)\n");
    let span = Span::new(f, 4, 16);
    let mut g = Graph::new("att");
    let t = |s: usize| TensorType::new(vec![65540, s, 4], DType::F32);
    let q = g.add_param(t(1), span);
    let k = g.add_param(t(2), span);
    let v = g.add_param(t(2), span);
    let o = g.push(
        Op::FlashAttention {
            q,
            k,
            v,
            causal: false,
            scale: 0.5,
        },
        t(1),
        span,
    );
    g.outputs = vec![o];
    let l = lower(&g, &Directives::default(), Target::Sm90).unwrap();
    let c = &l.kernels[0];
    let tl = c
        .target
        .as_ref()
        .unwrap_or_else(|| panic!("not lowered: {:?}", c.not_lowered));
    assert_eq!(tl.grid, [1, 65535, 2]);
    if find_ptxas().is_none() {
        panic!("{}", PtxasError::NotFound);
    }
    for target in [Target::Sm80, Target::Sm90] {
        let text = ptx::print(&tl.kernel, target, &sources).unwrap();
        assert!(text.contains("%ctaid.z"), "{text}");
        assert!(text.contains("min.u32"), "{text}");
        let r = run_ptxas(&text, target).unwrap_or_else(|e| panic!("{target}: {e}"));
        assert_eq!((r.spill_stores, r.spill_loads), (0, 0), "{target}");
    }
}
