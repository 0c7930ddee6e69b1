//! Occupancy as NVIDIA's occupancy calculator computes it (`cuda_occupancy.h`,
//! `cudaOccMaxActiveBlocksPerMultiprocessor`): the resident blocks per SM are the least of the
//! limits set by warps, registers and shared memory, and by the SM's block limit.
//!
//! - warps: a block of `T` threads takes `ceil(T / 32)` warps; `floor(max_warps / warps)` blocks.
//! - registers: each warp is allocated `ceil(regs · 32 / 256) · 256` registers; an SM has four
//!   sub-partitions (the warp allocation granularity) of `regs_per_sm / 4` registers each, so
//!   `floor(regs_per_sm / 4 / per_warp) · 4` warps fit, and `floor(that / warps)` blocks. A block
//!   whose registers exceed `max_regs_per_block` cannot launch (0 blocks).
//! - shared memory: each block is allocated `ceil((static + dynamic + 1 KiB reserved) / 128) ·
//!   128` bytes; `floor(smem_per_sm / that)` blocks. A block over `max_smem_per_block` cannot
//!   launch.
//! - occupancy = resident warps / `max_warps_per_sm`.

use crate::arch::Spec;

/// What limits the resident blocks.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Limiter {
    Warps,
    Registers,
    SharedMemory,
    Blocks,
}

impl Limiter {
    pub fn name(self) -> &'static str {
        match self {
            Limiter::Warps => "warps",
            Limiter::Registers => "registers",
            Limiter::SharedMemory => "shared memory",
            Limiter::Blocks => "blocks per SM",
        }
    }
}

/// The calculator's answer for one kernel configuration.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Occupancy {
    /// Resident blocks per SM (0: the block cannot launch).
    pub blocks_per_sm: u32,
    pub warps_per_block: u32,
    pub active_warps: u32,
    /// `active_warps / max_warps_per_sm`, in [0, 1].
    pub fraction: f64,
    pub limiter: Limiter,
    /// Each limit, in blocks per SM: (warps, registers, shared memory, blocks per SM).
    pub limits: [u32; 4],
    /// Registers allocated per warp and shared memory allocated per block.
    pub regs_per_warp: u32,
    pub smem_per_block: u32,
}

/// Whether the registers came from ptxas or from the Target IR estimate.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RegSource {
    Ptxas,
    Estimate,
}

fn round_up(x: u64, unit: u64) -> u64 {
    if unit == 0 {
        x
    } else {
        x.div_ceil(unit) * unit
    }
}

/// Occupancy of a kernel with `threads` per block, `regs` registers per thread and `smem` bytes
/// of shared memory per block (static plus dynamic) on `spec`.
pub fn occupancy(spec: &Spec, threads: u32, regs: u32, smem: u32) -> Occupancy {
    let warp = 32u64;
    let warps_per_block = (u64::from(threads).div_ceil(warp)).max(1);
    // Warps.
    let by_warps = u64::from(spec.max_warps_per_sm) / warps_per_block;
    // Registers.
    let regs_per_warp = round_up(
        u64::from(regs.max(1)) * warp,
        u64::from(spec.reg_alloc_unit),
    );
    let by_regs = if regs > spec.max_regs_per_thread
        || regs_per_warp * warps_per_block > u64::from(spec.max_regs_per_block)
    {
        0
    } else {
        let gran = u64::from(spec.warp_alloc_granularity.max(1));
        let per_part = u64::from(spec.regs_per_sm) / gran;
        let warps = (per_part / regs_per_warp) * gran;
        warps / warps_per_block
    };
    // Shared memory.
    let smem_alloc = round_up(
        u64::from(smem) + u64::from(spec.reserved_smem_per_block),
        u64::from(spec.smem_alloc_unit),
    );
    let by_smem = if u64::from(smem) > u64::from(spec.max_smem_per_block) {
        0
    } else {
        u64::from(spec.smem_per_sm)
            .checked_div(smem_alloc)
            .unwrap_or(u64::from(spec.max_blocks_per_sm))
    };
    let by_blocks = u64::from(spec.max_blocks_per_sm);
    let limits = [by_warps, by_regs, by_smem, by_blocks].map(|v| v.min(u64::from(u32::MAX)) as u32);
    let order = [
        Limiter::Warps,
        Limiter::Registers,
        Limiter::SharedMemory,
        Limiter::Blocks,
    ];
    let mut best = 0;
    for i in 1..4 {
        if limits[i] < limits[best] {
            best = i;
        }
    }
    let blocks = limits[best];
    let active = u64::from(blocks) * warps_per_block;
    Occupancy {
        blocks_per_sm: blocks,
        warps_per_block: warps_per_block as u32,
        active_warps: active.min(u64::from(u32::MAX)) as u32,
        fraction: if spec.max_warps_per_sm == 0 {
            0.0
        } else {
            active as f64 / f64::from(spec.max_warps_per_sm)
        },
        limiter: order[best],
        limits,
        regs_per_warp: regs_per_warp.min(u64::from(u32::MAX)) as u32,
        smem_per_block: smem_alloc.min(u64::from(u32::MAX)) as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::Target;

    fn a100() -> Spec {
        Target::Sm80.spec()
    }
    fn h100() -> Spec {
        Target::Sm90.spec()
    }

    #[test]
    fn full_occupancy_small_kernel() {
        // 256 threads = 8 warps; 32 regs: 32·32 = 1024 per warp (a multiple of 256).
        // warps: 64 / 8 = 8 blocks. regs: 65536 / 4 = 16384 per sub-partition; 16384 / 1024 =
        // 16 warps each, ·4 = 64 warps → 64 / 8 = 8 blocks. smem: 0 + 1024 reserved = 1024 →
        // 167936 / 1024 = 164 blocks. blocks: 32. → 8 blocks, 64 warps, 100 %.
        let o = occupancy(&a100(), 256, 32, 0);
        assert_eq!(o.limits, [8, 8, 164, 32]);
        assert_eq!(o.blocks_per_sm, 8);
        assert_eq!(o.active_warps, 64);
        assert_eq!(o.fraction, 1.0);
        assert_eq!(o.smem_per_block, 1024);
    }

    #[test]
    fn registers_limit_with_allocation_unit() {
        // 128 threads = 4 warps; 100 regs: 100·32 = 3200 → rounded up to 256s: 3328 per warp.
        // per sub-partition 16384 / 3328 = 4 (4.92) warps → 16 warps per SM → 16 / 4 = 4 blocks.
        // warps: 64 / 4 = 16. smem 0 → 164. → 4 blocks, 16 warps, 25 %, limited by registers.
        let o = occupancy(&h100(), 128, 100, 0);
        assert_eq!(o.regs_per_warp, 3328);
        assert_eq!(o.limits[1], 4);
        assert_eq!(o.blocks_per_sm, 4);
        assert_eq!(o.active_warps, 16);
        assert_eq!(o.fraction, 0.25);
        assert_eq!(o.limiter, Limiter::Registers);
    }

    #[test]
    fn registers_255_one_block_of_256() {
        // 255 regs: 255·32 = 8160 → 8192 per warp; 16384 / 8192 = 2 warps per sub-partition,
        // 8 per SM. 256 threads = 8 warps → 1 block; registers per block 8192·8 = 65536 = the
        // block limit (allowed). → 1 block, 8 warps, 12.5 %.
        let o = occupancy(&a100(), 256, 255, 0);
        assert_eq!(o.limits[1], 1);
        assert_eq!(o.active_warps, 8);
        assert_eq!(o.fraction, 0.125);
        // 512 threads at 255 regs: 8192·16 = 131072 > 65536 per block → cannot launch.
        let o = occupancy(&a100(), 512, 255, 0);
        assert_eq!(o.blocks_per_sm, 0);
        assert_eq!(o.fraction, 0.0);
    }

    #[test]
    fn shared_memory_limit_with_reservation() {
        // sm_80, 48 KiB static smem: 49152 + 1024 = 50176, a multiple of 128 → 167936 / 50176 =
        // 3 blocks (3.35). 256 threads, 64 regs: 2048 per warp, 16384/2048 = 8 per part, 32
        // warps → 4 blocks. → 3 blocks, 24 warps, 37.5 %, limited by shared memory.
        let o = occupancy(&a100(), 256, 64, 48 * 1024);
        assert_eq!(o.smem_per_block, 50176);
        assert_eq!(o.limits, [8, 4, 3, 32]);
        assert_eq!(o.blocks_per_sm, 3);
        assert_eq!(o.fraction, 0.375);
        assert_eq!(o.limiter, Limiter::SharedMemory);
        // The default bf16 matmul: 3 stages · (128·32 + 32·128) · 2 B = 49152 on sm_90: 233472
        // / 50176 = 4 blocks (4.65); 256 threads at 128 regs: 4096 per warp, 4 per part, 16
        // warps → 2 blocks. → 2 blocks (registers), 16 warps, 25 %.
        let o = occupancy(&h100(), 256, 128, 49152);
        assert_eq!(o.limits, [8, 2, 4, 32]);
        assert_eq!(o.fraction, 0.25);
    }

    #[test]
    fn shared_memory_rounding_and_opt_in_limit() {
        // 1000 B: 1000 + 1024 = 2024 → 2048 (128 units); 233472 / 2048 = 114 blocks; the SM's
        // 32-block limit wins for 32 threads (1 warp, 64 warps / 1 = 64), 16 regs (512 per warp,
        // 32 per part, 128 warps → 128 blocks). → 32 blocks, 32 warps, 50 %.
        let o = occupancy(&h100(), 32, 16, 1000);
        assert_eq!(o.smem_per_block, 2048);
        assert_eq!(o.limits, [64, 128, 114, 32]);
        assert_eq!(o.limiter, Limiter::Blocks);
        assert_eq!(o.fraction, 0.5);
        // 163 KiB on sm_80 is the opt-in maximum: 166912 + 1024 = 167936 = exactly one block.
        assert_eq!(occupancy(&a100(), 128, 32, 163 * 1024).blocks_per_sm, 1);
        // One byte more cannot launch.
        assert_eq!(occupancy(&a100(), 128, 32, 163 * 1024 + 1).blocks_per_sm, 0);
    }

    #[test]
    fn odd_thread_counts_round_up_to_warps() {
        // 96 threads = 3 warps: 64 / 3 = 21 blocks by warps; 40 regs: 1280 per warp, 16384 /
        // 1280 = 12 per part, 48 warps → 16 blocks. → 16 blocks, 48 warps, 75 %.
        let o = occupancy(&h100(), 96, 40, 0);
        assert_eq!(o.limits[..2], [21, 16]);
        assert_eq!(o.active_warps, 48);
        assert_eq!(o.fraction, 0.75);
        // 1024 threads at 32 regs: 32 warps → 2 blocks, 100 %.
        assert_eq!(occupancy(&a100(), 1024, 32, 0).fraction, 1.0);
    }
}
