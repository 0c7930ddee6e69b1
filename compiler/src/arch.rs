//! GPU targets and the limits the compiler checks against (data only).

/// A compilation target (`.target sm_XX`); sm_90 when none is named.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Target {
    Sm80,
    #[default]
    Sm90,
    /// sm_90 with the architecture-specific features (wgmma, setmaxnreg)
    Sm90a,
    Sm100,
    /// Vulkan 1.3 compute SPIR-V (`backend::spirv`): no tensor cores, a warp is a 32-lane
    /// subgroup.
    Spirv,
}

/// Per-target limits.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_threads_per_block: u32,
    /// Static `.shared` per block.
    pub static_shared_bytes: u32,
    /// Dynamic shared memory per block (opt-in).
    pub max_dynamic_shared_bytes: u32,
    pub max_registers_per_thread: u32,
    pub warp_size: u32,
}

impl Target {
    pub const ALL: [Target; 5] = [
        Target::Sm80,
        Target::Sm90,
        Target::Sm90a,
        Target::Sm100,
        Target::Spirv,
    ];
    /// The PTX targets.
    pub const PTX: [Target; 4] = [Target::Sm80, Target::Sm90, Target::Sm90a, Target::Sm100];

    /// The `.target` name, also ptxas' `--gpu-name`.
    pub fn name(self) -> &'static str {
        match self {
            Target::Sm80 => "sm_80",
            Target::Sm90 => "sm_90",
            Target::Sm90a => "sm_90a",
            Target::Sm100 => "sm_100",
            Target::Spirv => "spirv",
        }
    }

    /// Whether kernels for this target are SPIR-V (run through Vulkan) rather than PTX.
    pub fn is_spirv(self) -> bool {
        self == Target::Spirv
    }

    /// Whether the target has `mma.sync` tensor cores.
    pub fn tensor_cores(self) -> bool {
        !self.is_spirv()
    }

    /// Whether the target copies global memory to shared memory asynchronously (`cp.async`).
    pub fn async_copy(self) -> bool {
        !self.is_spirv()
    }

    pub fn parse(s: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == s)
    }

    /// Compute capability times ten (80, 90, 100).
    pub fn sm(self) -> u32 {
        match self {
            Target::Sm80 => 80,
            Target::Sm90 | Target::Sm90a => 90,
            Target::Sm100 => 100,
            // no PTX features: the checks of sm_80 and later apply to the Tile IR alone
            Target::Spirv => 80,
        }
    }

    /// The PTX ISA version printed in `.version` (ISA 8.x: accepted by CUDA 12.x ptxas;
    /// sm_100 first appears in ISA 8.6).
    pub fn ptx_version(self) -> (u32, u32) {
        match self {
            Target::Sm80 | Target::Sm90 | Target::Sm90a | Target::Spirv => (8, 0),
            Target::Sm100 => (8, 6),
        }
    }

    pub fn limits(self) -> Limits {
        let max_dynamic_shared_bytes = match self {
            Target::Sm80 => 163 * 1024,
            Target::Sm90 | Target::Sm90a | Target::Sm100 => 227 * 1024,
            // Vulkan guarantees 16 KiB (maxComputeSharedMemorySize); lavapipe gives 32 KiB
            Target::Spirv => 32 * 1024,
        };
        Limits {
            max_threads_per_block: 1024,
            static_shared_bytes: max_dynamic_shared_bytes.min(48 * 1024),
            max_dynamic_shared_bytes,
            max_registers_per_thread: 255,
            warp_size: 32,
        }
    }

    /// fp8 (e4m3/e5m2) conversions need sm_89 or later.
    pub fn has_fp8_cvt(self) -> bool {
        self.sm() >= 89
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Peak dense (no sparsity) throughput in TFLOP/s per operand type. `None`: the target has no
/// such path (fp8 on sm_80).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Peaks {
    pub fp64: f64,
    /// fp32 on the CUDA cores (FFMA).
    pub fp32: f64,
    /// tf32 on the tensor cores.
    pub tf32: f64,
    /// bf16 and fp16 on the tensor cores (fp32 accumulation).
    pub bf16: f64,
    pub fp8: Option<f64>,
}

/// What a target's GPU is: the numbers the occupancy calculator and the cost model use.
///
/// The per-SM limits are the CUDA C++ Programming Guide's "Technical Specifications per Compute
/// Capability" table (compute capabilities 8.0, 9.0, 10.0); the allocation granularities are
/// those of NVIDIA's occupancy calculator (`cuda_occupancy.h`, shipped with the CUDA toolkit);
/// the rates are the datasheet/whitepaper figures of the GPU named in `gpu`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Spec {
    /// The GPU the rates describe.
    pub gpu: &'static str,
    pub sm_count: u32,
    pub max_threads_per_sm: u32,
    pub max_warps_per_sm: u32,
    pub max_blocks_per_sm: u32,
    /// 32-bit registers per SM.
    pub regs_per_sm: u32,
    pub max_regs_per_block: u32,
    pub max_regs_per_thread: u32,
    /// Registers are allocated per warp in units of this many (occupancy calculator:
    /// "register allocation unit size").
    pub reg_alloc_unit: u32,
    /// Warps are allocated registers in groups of this many per SM (occupancy calculator:
    /// "warp allocation granularity"; one group per SM sub-partition).
    pub warp_alloc_granularity: u32,
    /// Shared memory per SM, bytes (the largest carveout).
    pub smem_per_sm: u32,
    /// Shared memory one block may use, bytes (dynamic, opt-in).
    pub max_smem_per_block: u32,
    /// Shared memory is allocated per block in units of this many bytes.
    pub smem_alloc_unit: u32,
    /// Shared memory the system reserves per resident block (bytes).
    pub reserved_smem_per_block: u32,
    /// The `mma` instruction shapes of the target's tensor cores.
    pub mma_shapes: &'static [&'static str],
    pub peak_tflops: Peaks,
    /// DRAM (HBM) bandwidth, GB/s (10^9 bytes/s).
    pub hbm_gbps: f64,
    pub l2_bytes: u64,
    /// NVLink bandwidth per GPU, GB/s, both directions together (the datasheet figure).
    pub nvlink_gbps: f64,
}

/// Fixed cost of one kernel launch (µs), an assumption (CUDA launch overhead is 2–5 µs): the
/// cost model's and the spectral rewrite's.
pub const LAUNCH_US: f64 = 2.0;

const KIB: u32 = 1024;
const MIB: u64 = 1024 * 1024;

/// The occupancy-relevant limits shared by compute capabilities 8.0, 9.0 and 10.0.
/// Source: CUDA C++ Programming Guide, "Technical Specifications per Compute Capability":
/// 32 resident blocks, 64 resident warps, 2048 resident threads per SM; 64 K 32-bit registers
/// per SM and per block; 255 registers per thread. Occupancy calculator (`cuda_occupancy.h`,
/// CUDA 12): register allocation unit 256 (`cudaOccRegAllocationGranularity`), 4 sub-partitions
/// per SM (`cudaOccSubPartitionsPerMultiprocessor`, the warp allocation granularity), shared
/// memory allocation unit 128 bytes for compute capability 8.x and later
/// (`cudaOccSMemAllocationGranularity`); `cudaDeviceProp::reservedSharedMemPerBlock` is 1 KiB
/// on compute capability 8.0 and later (Programming Guide: "1 KB of shared memory is reserved
/// for system use").
const COMMON: Spec = Spec {
    gpu: "",
    sm_count: 0,
    max_threads_per_sm: 2048,
    max_warps_per_sm: 64,
    max_blocks_per_sm: 32,
    regs_per_sm: 65536,
    max_regs_per_block: 65536,
    max_regs_per_thread: 255,
    reg_alloc_unit: 256,
    warp_alloc_granularity: 4,
    smem_per_sm: 0,
    max_smem_per_block: 0,
    smem_alloc_unit: 128,
    reserved_smem_per_block: 1024,
    mma_shapes: &[],
    peak_tflops: Peaks {
        fp64: 0.0,
        fp32: 0.0,
        tf32: 0.0,
        bf16: 0.0,
        fp8: None,
    },
    hbm_gbps: 0.0,
    l2_bytes: 0,
    nvlink_gbps: 0.0,
};

/// `mma.sync` shapes of sm_80 and later (PTX ISA, "Matrix shapes" of `mma`): m16n8k16 for
/// f16/bf16, m16n8k8 for tf32, m16n8k32 for 8-bit integers.
const MMA_SYNC: &[&str] = &["m16n8k16 (f16, bf16)", "m16n8k8 (tf32)", "m16n8k32 (s8)"];
/// sm_90a adds warpgroup MMA (PTX ISA, `wgmma.mma_async`: m64nNk16 for f16/bf16, m64nNk8 for
/// tf32, m64nNk32 for e4m3/e5m2, N a multiple of 8 up to 256).
const MMA_SM90A: &[&str] = &[
    "m16n8k16 (f16, bf16)",
    "m16n8k8 (tf32)",
    "m16n8k32 (s8, e4m3, e5m2)",
    "wgmma m64nNk16 (f16, bf16)",
    "wgmma m64nNk8 (tf32)",
    "wgmma m64nNk32 (e4m3, e5m2)",
];
/// sm_89 and later add fp8 `mma.sync` m16n8k32 (PTX ISA 8.4 for sm_90).
const MMA_SM90: &[&str] = &[
    "m16n8k16 (f16, bf16)",
    "m16n8k8 (tf32)",
    "m16n8k32 (s8, e4m3, e5m2)",
];

/// A100 SXM4 80 GB.
const A100: Spec = Spec {
    gpu: "A100 SXM4 80GB",
    // NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), "A100 SXM4": 108 SMs.
    sm_count: 108,
    // Programming Guide, compute capability 8.0: 164 KB shared memory per SM, 163 KB per block.
    smem_per_sm: 164 * KIB,
    max_smem_per_block: 163 * KIB,
    mma_shapes: MMA_SYNC,
    // NVIDIA A100 datasheet (dense): FP64 9.7, FP32 19.5, TF32 156, BF16/FP16 312 TFLOPS;
    // no fp8 tensor cores on sm_80.
    peak_tflops: Peaks {
        fp64: 9.7,
        fp32: 19.5,
        tf32: 156.0,
        bf16: 312.0,
        fp8: None,
    },
    // A100 datasheet: 80 GB HBM2e, 2,039 GB/s (SXM).
    hbm_gbps: 2039.0,
    // A100 whitepaper: 40 MB L2 cache.
    l2_bytes: 40 * MIB,
    // A100 datasheet: NVLink 600 GB/s.
    nvlink_gbps: 600.0,
    ..COMMON
};

/// H100 SXM5 80 GB.
const H100: Spec = Spec {
    gpu: "H100 SXM5 80GB",
    // NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), Table 1: H100 SXM5 has 132 SMs.
    sm_count: 132,
    // Programming Guide, compute capability 9.0: 228 KB per SM, 227 KB per block.
    smem_per_sm: 228 * KIB,
    max_smem_per_block: 227 * KIB,
    mma_shapes: MMA_SM90,
    // H100 whitepaper Table 1 (H100 SXM5, dense): FP64 33.5, FP32 66.9, TF32 494.7,
    // BF16/FP16 989.4, FP8 1978.9 TFLOPS.
    peak_tflops: Peaks {
        fp64: 33.5,
        fp32: 66.9,
        tf32: 494.7,
        bf16: 989.4,
        fp8: Some(1978.9),
    },
    // H100 datasheet: H100 SXM 80 GB HBM3, 3.35 TB/s.
    hbm_gbps: 3350.0,
    // H100 whitepaper: 50 MB L2 cache (SXM5).
    l2_bytes: 50 * MIB,
    // H100 datasheet: NVLink 900 GB/s (SXM).
    nvlink_gbps: 900.0,
    ..COMMON
};

/// B200 (HGX B200, 180 GB).
const B200: Spec = Spec {
    gpu: "B200",
    // cudaGetDeviceProperties on a B200 reports multiProcessorCount = 148 (NVIDIA's datasheets
    // do not state the SM count).
    sm_count: 148,
    // Programming Guide, compute capability 10.0: 228 KB per SM, 227 KB per block.
    smem_per_sm: 228 * KIB,
    max_smem_per_block: 227 * KIB,
    mma_shapes: MMA_SM90,
    // NVIDIA HGX B200 specifications (8 GPUs, tensor figures with 2:4 sparsity): FP64 296 TF,
    // FP32 600 TF, TF32 18 PF, FP16/BF16 36 PF, FP8 72 PF. Per GPU and dense (sparse / 2):
    // FP64 37, FP32 75, TF32 1125, BF16 2250, FP8 4500 TFLOPS.
    peak_tflops: Peaks {
        fp64: 37.0,
        fp32: 75.0,
        tf32: 1125.0,
        bf16: 2250.0,
        fp8: Some(4500.0),
    },
    // DGX B200 datasheet: 64 TB/s HBM3e for 8 GPUs, 8 TB/s per GPU.
    hbm_gbps: 8000.0,
    // l2CacheSize reported by cudaGetDeviceProperties on a B200 (126 MB; not in the
    // datasheets).
    l2_bytes: 126 * MIB,
    // HGX B200 specifications: fifth-generation NVLink, 1.8 TB/s per GPU.
    nvlink_gbps: 1800.0,
    ..COMMON
};

impl Target {
    /// The GPU description the occupancy calculator and the cost model use.
    pub fn spec(self) -> Spec {
        match self {
            Target::Sm80 => A100,
            Target::Sm90 => H100,
            Target::Sm90a => Spec {
                mma_shapes: MMA_SM90A,
                ..H100
            },
            Target::Sm100 => B200,
            Target::Spirv => VULKAN,
        }
    }
}

/// A Vulkan device whose rates Tessera does not know: the cost model's figures for `spirv`
/// are sm_80's CUDA-core ones (no tensor cores), the shared memory Vulkan's lavapipe gives
/// (`maxComputeSharedMemorySize`, 32 KiB).
const VULKAN: Spec = Spec {
    gpu: "Vulkan device (model: A100 CUDA-core rates)",
    smem_per_sm: 32 * KIB,
    max_smem_per_block: 32 * KIB,
    // Vulkan reserves no shared memory per workgroup (CUDA's 1 KiB is a CUDA driver's): a
    // block of the whole 32 KiB fits, as `schedule::fit` lets it
    reserved_smem_per_block: 0,
    mma_shapes: &[],
    peak_tflops: Peaks {
        fp64: 9.7,
        fp32: 19.5,
        tf32: 19.5,
        bf16: 19.5,
        fp8: None,
    },
    ..A100
};
