//! The cost model against rooflines computed by hand (sm_90 = H100 SXM5: 132 SMs, bf16 tensor
//! cores 989.4 TFLOP/s → 7.495454e12 FLOP/s per SM, HBM 3350 GB/s), registers fixed at 128 per
//! thread so occupancy is known: 128 regs → 4096 per warp → 4 warps per sub-partition → 16
//! warps per SM (the register limit in every case below).

use super::*;
use crate::graph::{Graph, Op, TensorType};
use crate::pipeline::lower;
use crate::schedule::Directives;
use tessera_lang::Span;

/// The estimate of the one matmul kernel with tile (bm, bn, 32) and `stages` stages.
fn est(m: usize, n: usize, k: usize, bm: u32, bn: u32, stages: u32) -> Estimate {
    let g = crate::graph::bf16_matmul(m, n, k);
    let d = Directives {
        tile: Some([bm, bn, 32]),
        stages: Some(stages),
        ..Directives::default()
    };
    let l = lower(&g, &d, Target::Sm90).expect("lowers");
    estimate(&l, 0, Target::Sm90, Some(128)).expect("estimate")
}

fn close(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= want.abs() * 2e-3,
        "{what}: model {got}, by hand {want}"
    );
}

#[test]
fn square_4096_compute_bound() {
    // 128×128×32, 3 stages, 256 threads: 1024 tiles; busiest SM ceil(1024/132) = 8 tiles of
    // 2·128·128·4096 = 134217728 FLOPs → 8·134217728 / 7.495454e12 = 143.25 µs. Pipeline: one
    // k-step 2·128·128·32 / 7.495454e12 = 0.13989 µs; 2 resident blocks → 0.27979 µs ≥
    // (0.5 + 0.13989)/3 = 0.21330 µs: efficiency 1. DRAM: waves of 264 blocks over 32 N tiles
    // touch 9, 9, 9, 8 row panels and 32 column panels each, panels of 1 MiB: 163 MiB =
    // 170917888 B, + C 33554432 B = 204472320 B → 61.04 µs. Latency 2 + 143.25 = 145.25 µs.
    let e = est(4096, 4096, 4096, 128, 128, 3);
    assert_eq!(e.occupancy.blocks_per_sm, 2);
    assert_eq!(e.occupancy.limiter, Limiter::Registers);
    assert_eq!(e.blocks, 1024);
    close(e.flops, 2.0 * 4096f64.powi(3), "flops");
    close(e.bytes, 204_472_320.0, "bytes");
    close(e.compute_us, 143.25, "compute");
    close(e.memory_us, 61.04, "memory");
    close(e.latency_us, 145.25, "latency");
    assert_eq!(e.bound, Bound::Compute);
    // 32×32×32 (1 warp): 16384 tiles, busiest ceil(16384/132) = 125 tiles of 2·32·32·4096 =
    // 8388608 → 139.89 µs at peak; 16 resident blocks (registers: 16 warps), k-step 0.0087436
    // µs, 16·0.0087436 = 0.13990 < (0.5 + 0.0087436)/3 = 0.16958: efficiency 0.82497 →
    // 169.57 µs. DRAM: waves of 2112 blocks over 128 N tiles touch 17,17,17,17,17,17,17,13 row
    // panels and 128 column panels each (256 KiB): 1156 panels = 289 MiB + C = 336592896 B →
    // 100.47 µs. Latency 171.57 µs: the larger tile ranks first.
    let s = est(4096, 4096, 4096, 32, 32, 3);
    close(s.bytes, 336_592_896.0, "bytes 32x32");
    close(s.memory_us, 100.47, "memory 32x32");
    close(s.latency_us, 171.57, "latency 32x32");
    assert!(e.latency_us < s.latency_us);
}

#[test]
fn skinny_128_rows_ranking() {
    // M=128, N=K=8192. 128×128, 3 stages: 64 blocks, one per SM: 2·128·128·8192 = 268435456
    // FLOPs → 35.813 µs at peak; one resident block: k-step 0.139892 µs against (0.5 +
    // 0.139892)/3 = 0.213297 µs → efficiency 0.65585 → 54.606 µs. DRAM: one wave, 1 row panel
    // (2 MiB) + 64 column panels (2 MiB) = 130 MiB + C 2 MiB = 138412032 B → 41.317 µs.
    // Latency 56.606 µs, compute (pipeline) bound.
    let a = est(128, 8192, 8192, 128, 128, 3);
    close(a.bytes, 138_412_032.0, "bytes");
    close(a.compute_us, 54.606, "compute");
    close(a.memory_us, 41.317, "memory");
    close(a.latency_us, 56.606, "latency");
    // 4 stages: (0.5 + 0.139892)/4 = 0.159973 → efficiency 0.87447 → 40.954 µs < 41.317:
    // memory bound, latency 43.317 µs.
    let b = est(128, 8192, 8192, 128, 128, 4);
    close(b.compute_us, 40.954, "compute s4");
    close(b.latency_us, 43.317, "latency s4");
    assert_eq!(b.bound, Bound::Memory);
    // 64×64, 3 stages: 256 blocks, busiest 2 of 2·64·64·8192 = 67108864 → 17.907 µs; 2
    // resident, k-step 0.034973: 0.069946 against 0.178324 → efficiency 0.39224 → 45.651 µs.
    // DRAM: 2 row panels + 128 column panels of 1 MiB + C = 138412032 B → 41.317 µs. 47.651 µs.
    let c = est(128, 8192, 8192, 64, 64, 3);
    close(c.compute_us, 45.651, "compute 64");
    close(c.latency_us, 47.651, "latency 64");
    // Ranking: 128×128×4 stages < 64×64 < 128×128×3 stages.
    assert!(b.latency_us < c.latency_us && c.latency_us < a.latency_us);
}

#[test]
fn wave_quantisation_1536() {
    // M=N=1536, K=4096. 128×128: 144 tiles on 132 SMs → busiest 2 → 2·134217728 / 7.495454e12
    // = 35.813 µs (efficiency 1: 2 resident). DRAM: one wave, 12 + 12 panels of 1 MiB + C
    // 4718592 B = 29884416 B → 8.921 µs. Latency 37.813 µs.
    let a = est(1536, 1536, 4096, 128, 128, 3);
    close(a.bytes, 29_884_416.0, "bytes 128");
    close(a.latency_us, 37.813, "latency 128");
    // 64×64: 576 tiles → busiest ceil(4.36) = 5 of 33554432 → 22.383 µs; 5 resident, k-step
    // 0.034974: 0.17487 against 0.17832 → efficiency 0.98065 → 22.825 µs. DRAM 24 + 24 panels
    // of 512 KiB + C = 29884416 B. Latency 24.825 µs.
    let b = est(1536, 1536, 4096, 64, 64, 3);
    close(b.compute_us, 22.825, "compute 64");
    close(b.latency_us, 24.825, "latency 64");
    // 32×32: 2304 tiles → busiest 18 of 8388608 → 20.145 µs; 16 resident: efficiency 0.82497
    // → 24.419 µs. DRAM: waves of 2112 over 48 N tiles: 44 + 48 then 4 + 48 panels of 256 KiB
    // = 36 MiB + C = 42467328 B → 12.677 µs. Latency 26.419 µs.
    let c = est(1536, 1536, 4096, 32, 32, 3);
    close(c.bytes, 42_467_328.0, "bytes 32");
    close(c.latency_us, 26.419, "latency 32");
    assert!(b.latency_us < c.latency_us && c.latency_us < a.latency_us);
}

#[test]
fn collectives_ring_and_tree() {
    // 8 GPUs on H100 NVLink (450 GB/s one way), 1 GB all-reduce: n/β = 2222.2 µs; ring
    // 2·7·2 + 2·7/8·2222.2 = 28 + 3888.9 = 3916.9 µs; tree 2·3·2 + 2·2222.2 = 4456.4: ring.
    let (t, alg) = collective_us(Collective::AllReduce, 1e9, 8, Target::Sm90);
    close(t, 3916.9, "ring all-reduce");
    assert_eq!(alg, "ring");
    // 8 KB: n/β = 0.017778 µs; ring 28 + 0.031 = 28.031; tree 12 + 0.0356 = 12.036: tree.
    let (t, alg) = collective_us(Collective::AllReduce, 8e3, 8, Target::Sm90);
    close(t, 12.036, "tree all-reduce");
    assert_eq!(alg, "tree");
    // All-gather of 1 GB over 4 A100s (300 GB/s one way): 3·2 + 3/4·3333.3 = 2506 µs.
    let (t, _) = collective_us(Collective::AllGather, 1e9, 4, Target::Sm80);
    close(t, 2506.0, "all-gather");
    // All-to-all of 1 GB over 8 B200s (900 GB/s one way): 7·2 + 7/8·1111.1 = 986.2 µs.
    let (t, alg) = collective_us(Collective::AllToAll, 1e9, 8, Target::Sm100);
    close(t, 986.2, "all-to-all");
    assert_eq!(alg, "pairwise");
    assert_eq!(
        collective_us(Collective::AllReduce, 1e9, 1, Target::Sm90).0,
        0.0
    );
}

#[test]
fn elementwise_is_memory_bound() {
    // x + y over 2^24 fp32: 2 reads + 1 write = 3·64 MiB = 201326592 B → 60.10 µs at 3350
    // GB/s (256 threads × 64 warps resident, vector 4 × 4 B × 2 streams in flight per thread:
    // 64·32·16·2 = 65536 B ≥ 12689 needed). 2^24 FLOPs at 66.9 TFLOP/s: 0.25 µs.
    let mut g = Graph::new("add");
    let sp = Span::new(0, 0, 0);
    let ty = TensorType::new(vec![4096, 4096], DType::F32);
    let x = g.push(Op::Param { index: 0 }, ty.clone(), sp);
    let y = g.push(Op::Param { index: 1 }, ty.clone(), sp);
    let z = g.push(
        Op::Binary {
            op: crate::graph::BinaryOp::Add,
            a: x,
            b: y,
        },
        ty,
        sp,
    );
    g.outputs = vec![z];
    let l = lower(&g, &Directives::default(), Target::Sm90).expect("lowers");
    let e = estimate(&l, 0, Target::Sm90, Some(32)).expect("estimate");
    close(e.bytes, 201_326_592.0, "bytes");
    close(e.memory_us, 60.10, "memory");
    assert_eq!(e.bound, Bound::Memory);
    assert_eq!(e.occupancy.fraction, 1.0);
}

#[test]
fn huge_schedule_sizes_saturate_and_are_refused() {
    // sizes as an autotune cache entry may hold them (the directive parser stops them at
    // 65536): the schedule arithmetic saturates instead of overflowing, and the check
    // refuses the kernel
    let g = crate::graph::bf16_matmul(64, 64, 64);
    for (tile, warp) in [
        ([u32::MAX, u32::MAX, u32::MAX], [u32::MAX, u32::MAX]),
        ([1 << 31, 1 << 31, 1 << 31], [1, 1]),
    ] {
        let d = Directives {
            tile: Some(tile),
            warp: Some(warp),
            tensor_cores: Some(false),
            stages: Some(u32::MAX),
            span: Some(Span::default()),
            ..Directives::default()
        };
        let p = crate::schedule::lower::lower(&g, &d, Target::Sm90);
        assert!(p.is_err(), "{tile:?} {warp:?} was accepted");
        let s = crate::schedule::Schedule {
            tile,
            warp,
            stages: u32::MAX,
            vector: 1,
            tensor_cores: true,
            async_copy: true,
            threads: 128,
            elem_bytes: 8,
        };
        assert_eq!(s.smem_bytes(crate::schedule::Kind::Matmul), u64::MAX);
    }
}
