//! The FMA matmul on small tiles (`schedule.tile((16, 16, 16))`, `(16, 16)`, `(8, 8, 8)`, …):
//! each thread computes up to 4×4 outputs, fewer where 4×4 would leave less than one warp, so
//! every tile of at least 32 outputs lowers to whole warps (it once derived `BM·BN/16` = 16
//! threads for 16×16 and the launch check reported an internal compiler error). A tile of
//! fewer than 32 outputs is refused (E0300 at the tile) on every target, spirv included: a
//! user's tile is never replaced by one that fits. ptxas
//! assembles the small-tile kernels without spills. The numbers equal the cpu's in
//! `tests/golden/matmul_fma_small_tiles.tsr` (cpu, emu, spirv).
//! Needs ptxas: `scripts/install-ptxas` (fails, never skips, when it is missing).

use tessera_compiler::backend::ptx::ptxas::{find_ptxas, run_ptxas, PtxasError};
use tessera_compiler::backend::ptx::{print as ptx, Target};
use tessera_compiler::graph::{DType, Graph, Op, TensorType};
use tessera_compiler::pipeline::lower;
use tessera_compiler::schedule::fit::{fma_thread_tile as thread_tile, fma_threads as threads};
use tessera_compiler::schedule::Directives;
use tessera_lang::{SourceMap, Span};

#[test]
fn thread_tiles_fill_whole_warps() {
    for bm in (0..=10).map(|e| 1u32 << e) {
        for bn in (0..=10).map(|e| 1u32 << e) {
            let [rm, rn] = thread_tile(bm, bn);
            let t = threads(bm, bn);
            assert!(rm <= bm.min(4) && rn <= bn.min(4), "{bm}×{bn}: {rm}×{rn}");
            assert_eq!(t * u64::from(rm * rn), u64::from(bm * bn), "{bm}×{bn}");
            if bm * bn >= 32 {
                assert!(t.is_multiple_of(32), "{bm}×{bn}: {t} threads");
            }
            // 4×4 outputs whenever that leaves a warp (the layout of every tile before)
            if bm >= 4 && bn >= 4 && bm * bn >= 512 {
                assert_eq!([rm, rn], [4, 4], "{bm}×{bn}");
            }
        }
    }
    assert_eq!(thread_tile(16, 16), [2, 4]);
    assert_eq!(threads(16, 16), 32);
    assert_eq!(thread_tile(8, 8), [1, 2]);
    assert_eq!(threads(64, 64), 256);
}

fn matmul(sources: &mut SourceMap, dtype: DType, [m, k, n]: [usize; 3]) -> Graph {
    let f = sources.add("mm.tsr", "c = mm(a, b)\n");
    let span = Span::new(f, 4, 12);
    let mut g = Graph::new("mm");
    let a = g.add_param(TensorType::new(vec![m, k], dtype), span);
    let b = g.add_param(TensorType::new(vec![k, n], dtype), span);
    let c = g.push(
        Op::Matmul {
            a,
            b,
            accum: None,
            epilogue: vec![],
            tile: None,
        },
        TensorType::new(vec![m, n], dtype),
        span,
    );
    g.outputs = vec![c];
    g
}

#[test]
fn small_fma_tiles_lower_to_whole_warps() {
    if find_ptxas().is_none() {
        panic!("{}", PtxasError::NotFound);
    }
    let tiles = [
        [16, 16, 16],
        [16, 16, 8],
        [16, 16, 0],
        [8, 8, 8],
        [8, 16, 8],
        [16, 8, 16],
        [32, 16, 16],
        [4, 4, 4],
    ];
    for dtype in [DType::F32, DType::F64] {
        for target in [Target::Sm80, Target::Sm90, Target::Spirv] {
            for tile in tiles {
                let mut sources = SourceMap::new();
                let g = matmul(&mut sources, dtype, [19, 37, 21]);
                let d = Directives {
                    tile: Some(tile),
                    ..Directives::default()
                };
                let what = format!("{dtype} {target} tile {tile:?}");
                if tile[0] * tile[1] < 32 {
                    // refused: the FMA kernel runs whole warps of up to 4×4 outputs each
                    let e = lower(&g, &d, target).expect_err(&what);
                    assert_eq!(e.code, tessera_lang::Code::E0300, "{what}");
                    assert!(
                        e.message
                            .contains("fewer than the FMA matmul kernel's one warp"),
                        "{what}: {}",
                        e.message
                    );
                    continue;
                }
                let l = lower(&g, &d, target).unwrap_or_else(|e| panic!("{what}: {e:?}"));
                let k = &l.program.kernels[0];
                let c = &l.kernels[0];
                assert!(!k.schedule.tensor_cores, "{what}");
                // every target keeps the tile given (BK 0: the default 16)
                let bk = if tile[2] == 0 { 16 } else { tile[2] };
                assert_eq!(k.schedule.tile, [tile[0], tile[1], bk], "{what}");
                assert!(
                    k.schedule.threads.is_multiple_of(32),
                    "{what}: {:?}",
                    k.schedule
                );
                let tl = c
                    .target
                    .as_ref()
                    .unwrap_or_else(|| panic!("{what}: not lowered: {:?}", c.not_lowered));
                let tk = c.tile.as_ref().expect("a lowered kernel has a tile kernel");
                assert_eq!(tk.block, [k.schedule.threads, 1, 1], "{what}");
                if target.is_spirv() {
                    assert!(c.spirv.is_some(), "{what}");
                    continue;
                }
                let text = ptx::print(&tl.kernel, target, &sources)
                    .unwrap_or_else(|e| panic!("{what}: {e:?}"));
                let r = run_ptxas(&text, target).unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!((r.spill_stores, r.spill_loads), (0, 0), "{what}");
            }
        }
    }
}
