//! Which vector instruction set the CPU kernels use: detected once per process, overridable with
//! `TESSERA_CPU_ISA=scalar|avx2|avx512|neon` (and, for one thread, [`with_isa`]).
//!
//! Every path computes the same bits for fp32 and fp64 (docs/decisions.md, "One answer on every
//! CPU"): the GEMM kernels accumulate each output element over k in one fixed order with fused
//! multiply-adds and the same k blocking, and the other kernels are one Rust body compiled for
//! each ISA (Rust never contracts a multiply and an add, so a wider vector cannot change a sum).

use std::cell::Cell;
use std::sync::OnceLock;

/// A family of vector instructions the CPU kernels are written for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Isa {
    /// Portable Rust, no explicit vectors (fused multiply-adds through `mul_add`).
    Scalar,
    /// x86-64 AVX2 with FMA3: 256-bit vectors.
    Avx2,
    /// x86-64 AVX-512 (F): 512-bit vectors, 32 registers.
    Avx512,
    /// AVX-512 with its bf16 dot products (`avx512_bf16`): the AVX-512 kernels, except that a
    /// matmul of two bf16 operands multiplies pairs of them with `vdpbf16ps` instead of
    /// widening them to fp32 (docs/decisions.md, "bf16 dot products"). Only by name: never
    /// [`Isa::best`] until it has been checked on a CPU that has the instruction.
    Avx512Bf16,
    /// aarch64 Advanced SIMD: 128-bit vectors, 32 registers.
    Neon,
}

impl Isa {
    pub const ALL: [Isa; 5] = [
        Isa::Scalar,
        Isa::Avx2,
        Isa::Avx512,
        Isa::Avx512Bf16,
        Isa::Neon,
    ];

    /// The name `TESSERA_CPU_ISA` takes.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
            Isa::Avx512Bf16 => "avx512bf16",
            Isa::Neon => "neon",
        }
    }

    pub fn parse(s: &str) -> Option<Isa> {
        Isa::ALL
            .into_iter()
            .find(|i| i.name().eq_ignore_ascii_case(s.trim()))
    }

    /// Whether this CPU (and this build's target) can run the ISA's kernels.
    pub fn supported(self) -> bool {
        match self {
            Isa::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512Bf16 => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bf16")
            }
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => std::arch::is_aarch64_feature_detected!("neon"),
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// The ISAs this CPU runs, widest last.
    pub fn available() -> Vec<Isa> {
        Isa::ALL.into_iter().filter(|i| i.supported()).collect()
    }

    /// The widest ISA this CPU runs ([`Isa::Avx512Bf16`] only by name, see there).
    pub fn best() -> Isa {
        [Isa::Avx512, Isa::Neon, Isa::Avx2]
            .into_iter()
            .find(|i| i.supported())
            .unwrap_or(Isa::Scalar)
    }
}

impl std::fmt::Display for Isa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The process-wide choice: `TESSERA_CPU_ISA` when it names an ISA this CPU runs, else the best.
/// A name this CPU cannot run falls back to the best with one warning on stderr (running it would
/// stop the process with an illegal instruction).
fn process_choice() -> Isa {
    static CHOICE: OnceLock<Isa> = OnceLock::new();
    *CHOICE.get_or_init(|| {
        let Ok(want) = std::env::var("TESSERA_CPU_ISA") else {
            return Isa::best();
        };
        if want.trim().is_empty() {
            return Isa::best();
        }
        let best = Isa::best();
        match Isa::parse(&want) {
            Some(isa) if isa.supported() => isa,
            Some(isa) => {
                eprintln!("tessera: TESSERA_CPU_ISA={isa}: this CPU cannot run it; using {best}");
                best
            }
            None => {
                let names: Vec<&str> = Isa::ALL.iter().map(|i| i.name()).collect();
                eprintln!(
                    "tessera: TESSERA_CPU_ISA={want:?} is not one of {}; using {best}",
                    names.join(", ")
                );
                best
            }
        }
    })
}

thread_local! {
    static OVERRIDE: Cell<Option<Isa>> = const { Cell::new(None) };
}

/// The ISA the CPU kernels use on this thread now. A kernel reads it once, on the calling
/// thread, and hands the choice to its worker threads.
pub fn current() -> Isa {
    OVERRIDE.with(Cell::get).unwrap_or_else(process_choice)
}

/// Runs `f` with the kernels called from this thread using `isa` (the tests and benchmarks
/// compare paths this way). An ISA this CPU cannot run is replaced by the best one it can.
pub fn with_isa<R>(isa: Isa, f: impl FnOnce() -> R) -> R {
    let isa = if isa.supported() { isa } else { Isa::best() };
    let prev = OVERRIDE.with(|o| o.replace(Some(isa)));
    struct Restore(Option<Isa>);
    impl Drop for Restore {
        fn drop(&mut self) {
            OVERRIDE.with(|o| o.set(self.0));
        }
    }
    let _restore = Restore(prev);
    f()
}

/// Defines `$name(isa, args…)`: the `#[inline(always)]` function `$body` compiled once per ISA
/// (a copy with AVX-512F, one with AVX2+FMA, the portable one) and called for `isa`, so its
/// loops vectorise as wide as the CPU allows. The results are the same bits on every ISA: Rust
/// neither contracts a multiply and an add nor reassociates float operations.
#[macro_export]
macro_rules! isa_versions {
    ($(#[$m:meta])* $vis:vis fn $name:ident $(<$($g:ident $(: $b:path)?),*>)? ($($a:ident: $t:ty),* $(,)?) $(-> $r:ty)? => $body:path) => {
        $(#[$m])*
        $vis fn $name $(<$($g $(: $b)?),*>)? (isa: $crate::isa::Isa, $($a: $t),*) $(-> $r)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                unsafe fn avx512 $(<$($g $(: $b)?),*>)? ($($a: $t),*) $(-> $r)? {
                    $body($($a),*)
                }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn avx2 $(<$($g $(: $b)?),*>)? ($($a: $t),*) $(-> $r)? {
                    $body($($a),*)
                }
                match isa {
                    // SAFETY: `isa` names an ISA this CPU runs (checked just here).
                    $crate::isa::Isa::Avx512 | $crate::isa::Isa::Avx512Bf16 if isa.supported() => {
                        return unsafe { avx512($($a),*) }
                    }
                    // SAFETY: as above.
                    $crate::isa::Isa::Avx2 if isa.supported() => return unsafe { avx2($($a),*) },
                    _ => {}
                }
            }
            let _ = isa;
            $body($($a),*)
        }
    };
}

/// The CPU's model name and the vector features the kernels care about, for benchmark records
/// and `tessera --version`: e.g. `AMD EPYC 9R14 (avx2 fma avx512f avx512bf16)`.
pub fn cpu_description() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name") || l.starts_with("Model"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let mut flags: Vec<&str> = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        macro_rules! probe {
            ($($f:tt),*) => {$(
                if std::arch::is_x86_feature_detected!($f) {
                    flags.push($f);
                }
            )*};
        }
        probe!("avx2", "fma", "avx512f", "avx512bf16", "avx512fp16");
    }
    #[cfg(target_arch = "aarch64")]
    {
        macro_rules! probe {
            ($($f:tt),*) => {$(
                if std::arch::is_aarch64_feature_detected!($f) {
                    flags.push($f);
                }
            )*};
        }
        probe!("neon", "bf16", "fp16", "sve");
    }
    format!("{model} ({})", flags.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_scalar_always_runs() {
        for isa in Isa::ALL {
            assert_eq!(Isa::parse(isa.name()), Some(isa));
        }
        assert_eq!(Isa::parse(" AVX512 "), Some(Isa::Avx512));
        assert_eq!(Isa::parse("sse"), None);
        assert!(Isa::Scalar.supported());
        assert!(Isa::best().supported());
        assert!(Isa::available().contains(&Isa::best()));
    }

    #[test]
    fn override_is_scoped_to_the_thread_and_restored() {
        let before = current();
        let inner = with_isa(Isa::Scalar, || {
            let other = std::thread::spawn(current).join().unwrap_or(Isa::Scalar);
            (current(), other)
        });
        assert_eq!(inner.0, Isa::Scalar);
        assert_eq!(inner.1, process_choice());
        assert_eq!(current(), before);
    }
}
