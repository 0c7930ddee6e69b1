//! The tile-fit decision: a user's tile honoured or refused (E0300 at the directive), a
//! compiler-picked one fitted, autotuner candidates pruned with the reason.

use super::*;
use crate::graph::{Graph, Op};
use crate::schedule::lower::lower;
use crate::tune::{rank, Config};

/// A matmul `[64, 96] @ [96, 80]` of `dtype`, its op at bytes 10..20.
fn matmul(dtype: DType) -> Graph {
    let mut g = Graph::new("mm");
    let sp = Span::new(0, 10, 20);
    let a = g.push(
        Op::Param { index: 0 },
        TensorType::new(vec![64, 96], dtype),
        sp,
    );
    let b = g.push(
        Op::Param { index: 1 },
        TensorType::new(vec![96, 80], dtype),
        sp,
    );
    let c = g.push(
        Op::Matmul {
            a,
            b,
            accum: None,
            epilogue: vec![],
            tile: None,
        },
        TensorType::new(vec![64, 80], dtype),
        sp,
    );
    g.outputs = vec![c];
    g
}

const CALL: Span = Span {
    file: 0,
    lo: 100,
    hi: 110,
};
const TILE_AT: Span = Span {
    file: 0,
    lo: 30,
    hi: 50,
};
const STAGES_AT: Span = Span {
    file: 0,
    lo: 60,
    hi: 80,
};

/// `schedule.tile(tile)` given at [`TILE_AT`], the kernel called at [`CALL`].
fn with_tile(tile: [u32; 3]) -> Directives {
    let mut d = Directives {
        tile: Some(tile),
        ..Directives::default()
    };
    d.given_at(Directive::Tile, TILE_AT);
    d.at_call(CALL)
}

#[test]
fn a_user_tile_that_does_not_fit_spirv_is_refused_at_the_directive() {
    // 128×128×64 is a tensor-core tile: on spirv the FMA kernel stages it in fp32, 2 stages ×
    // (128·64 + 64·128) × 4 bytes = 131072, over the 32 KiB a block may use. It once became
    // a smaller tile without a word.
    let g = matmul(DType::BF16);
    let e = lower(&g, &with_tile([128, 128, 64]), Target::Spirv).expect_err("refused");
    assert!(e.user);
    assert_eq!(e.span, Some(TILE_AT));
    assert_eq!(e.call, Some(CALL));
    assert!(e.message.contains("131072 bytes"), "{}", e.message);
    assert!(
        e.message.contains("spirv has no tensor cores"),
        "{}",
        e.message
    );
    assert!(
        e.message.contains("spirv's limit of 32768"),
        "{}",
        e.message
    );
}

#[test]
fn the_same_tile_is_honoured_on_sm_80() {
    let g = matmul(DType::BF16);
    let p = lower(&g, &with_tile([128, 128, 64]), Target::Sm80).expect("fits");
    let s = &p.kernels[0].schedule;
    assert_eq!(s.tile, [128, 128, 64]);
    assert!(s.tensor_cores);
}

#[test]
fn a_tile_the_fma_kernel_cannot_take_is_refused_on_every_target() {
    // 4×4 outputs: less than one warp; 4×8×4: 32 threads that cannot load a 4×4 A tile
    // evenly; 48×64×16: not a power of two. Each once ran on the cpu (sm_80) or was replaced
    // (spirv).
    let g = matmul(DType::F32);
    for target in [Target::Sm80, Target::Spirv] {
        for (tile, says) in [
            ([4, 4, 4], "fewer than the FMA matmul kernel's one warp"),
            (
                [4, 8, 4],
                "the FMA matmul kernel cannot take tile (4, 8, 4)",
            ),
            ([48, 64, 16], "powers of two, not (48, 64, 16)"),
        ] {
            let e = lower(&g, &with_tile(tile), target).expect_err("refused");
            assert!(
                e.user && e.span == Some(TILE_AT),
                "{target} {tile:?}: {e:?}"
            );
            assert!(e.message.contains(says), "{target} {tile:?}: {}", e.message);
            assert_eq!(
                e.message.contains("spirv has no tensor cores"),
                target == Target::Spirv,
                "{}",
                e.message
            );
        }
    }
}

#[test]
fn fewer_than_two_stages_on_the_fma_kernel_are_refused_at_the_stages_directive() {
    let g = matmul(DType::F32);
    let mut d = Directives {
        stages: Some(1),
        ..Directives::default()
    };
    d.given_at(Directive::Stages, STAGES_AT);
    let d = d.at_call(CALL);
    for target in [Target::Sm90, Target::Spirv] {
        let e = lower(&g, &d, target).expect_err("refused");
        assert_eq!(e.span, Some(STAGES_AT));
        assert!(
            e.message.contains("at least 2 pipeline stages, got 1"),
            "{}",
            e.message
        );
    }
}

#[test]
fn a_tile_the_compiler_picked_is_fitted_to_spirv() {
    // no directive: the default tile is chosen to fit (here it already does)
    for dtype in [DType::BF16, DType::F32, DType::F64] {
        let g = matmul(dtype);
        let p = lower(&g, &Directives::default(), Target::Spirv).expect("fits");
        let s = &p.kernels[0].schedule;
        assert!(!s.tensor_cores);
        assert!(s.smem_bytes(Kind::Matmul) <= 32 * 1024, "{dtype}: {s:?}");
        assert!(fma_even_threads(s.tile[0], s.tile[1], s.tile[2]).is_some());
    }
    // a tensor-core-sized default is shrunk until it fits 32 KiB and the thread layout
    let mut s = Schedule {
        tile: [128, 128, 64],
        warp: [64, 32],
        stages: 3,
        vector: 1,
        tensor_cores: false,
        async_copy: true,
        threads: 256,
        elem_bytes: 4,
    };
    default_fma_tile(&mut s, Target::Spirv, false);
    assert!(s.smem_bytes(Kind::Matmul) <= 32 * 1024, "{s:?}");
    assert_eq!(
        fma_even_threads(s.tile[0], s.tile[1], s.tile[2]),
        Some(u64::from(s.threads))
    );
}

#[test]
fn autotuner_candidates_that_do_not_fit_are_pruned_with_the_reason() {
    let g = matmul(DType::F32);
    let cand = |tile: [u32; 3], stages: u32| Config {
        tile: Some(tile),
        stages: Some(stages),
        ..Config::default()
    };
    let cands = [
        cand([64, 64, 16], 2),
        cand([4, 4, 4], 2),
        cand([128, 128, 32], 3),
    ];
    let r = rank(
        &g,
        &Directives::default(),
        Target::Spirv,
        &cands,
        None,
        &mut || {},
    );
    let ranked: Vec<_> = r.ranked.iter().map(|c| c.config.tile).collect();
    assert_eq!(ranked, vec![Some([64, 64, 16])]);
    assert_eq!(r.pruned.len(), 2);
    assert!(r.pruned[0].1.contains("one warp"), "{}", r.pruned[0].1);
    assert!(r.pruned[1].1.contains("shared memory"), "{}", r.pruned[1].1);
}

#[test]
fn template_limits() {
    assert_eq!(fma_thread_tile(16, 16), [2, 4]);
    assert_eq!(fma_even_threads(64, 64, 16), Some(256));
    assert_eq!(fma_even_threads(4, 8, 4), None);
    assert_eq!(mma_threads([128, 128, 32], [64, 32]), Some(256));
    // 48 is no power of two; BK 8 no multiple of 16; 16×256×16 with 16×8 warps: 1024
    // threads for 256 elements of A
    assert_eq!(mma_threads([128, 128, 32], [48, 32]), None);
    assert_eq!(mma_threads([128, 128, 8], [64, 32]), None);
    assert_eq!(mma_threads([16, 256, 16], [16, 8]), None);
    assert!(conv_mma_tile_ok([64, 128, 32]) && !conv_mma_tile_ok([64, 128, 64]));
}
