//! GPU targets and the limits the compiler checks against (data only).

/// A compilation target (`.target sm_XX`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    Sm80,
    Sm90,
    /// sm_90 with the architecture-specific features (wgmma, setmaxnreg)
    Sm90a,
    Sm100,
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
    pub const ALL: [Target; 4] = [Target::Sm80, Target::Sm90, Target::Sm90a, Target::Sm100];

    /// The `.target` name, also ptxas' `--gpu-name`.
    pub fn name(self) -> &'static str {
        match self {
            Target::Sm80 => "sm_80",
            Target::Sm90 => "sm_90",
            Target::Sm90a => "sm_90a",
            Target::Sm100 => "sm_100",
        }
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
        }
    }

    /// The PTX ISA version printed in `.version` (ISA 8.x: accepted by CUDA 12.x ptxas;
    /// sm_100 first appears in ISA 8.6).
    pub fn ptx_version(self) -> (u32, u32) {
        match self {
            Target::Sm80 | Target::Sm90 | Target::Sm90a => (8, 0),
            Target::Sm100 => (8, 6),
        }
    }

    pub fn limits(self) -> Limits {
        let max_dynamic_shared_bytes = match self {
            Target::Sm80 => 163 * 1024,
            Target::Sm90 | Target::Sm90a | Target::Sm100 => 227 * 1024,
        };
        Limits {
            max_threads_per_block: 1024,
            static_shared_bytes: 48 * 1024,
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
