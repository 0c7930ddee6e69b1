//! The `TESSERA_*` environment variables, checked when a session opens: a value a variable
//! does not accept is E0101 naming the variable and what it takes, never silently ignored
//! (`TESSERA_MAX_BYTES=4GB`, `TESSERA_STEP_LIMIT=lots`). Variables that name paths take any
//! value; names this list does not know are left alone (other tools share the prefix).

use tessera_lang::diag::{Code, Diagnostic};
use tessera_runtime::isa::Isa;

/// What a variable accepts.
enum Accepts {
    /// One of these words (case-insensitive).
    Words(&'static [&'static str]),
    /// A whole number, at least this.
    IntAtLeast(u64),
    /// A positive, finite number of seconds.
    Seconds,
    /// A byte count: `123`, `64K`, `512M`, `4G`, `1T` (binary units).
    Bytes,
    /// A CPU instruction set this CPU runs (`scalar`, `avx2`, `avx512`, `avx512bf16`, `neon`), or
    /// empty.
    CpuIsa,
}

const BOOL: &[&str] = &["0", "1", "on", "off", "true", "false", "yes", "no"];

/// The variables with constrained values.
const VARS: &[(&str, Accepts)] = &[
    ("TESSERA_AUTOTUNE", Accepts::Words(BOOL)),
    ("TESSERA_CUDA", Accepts::Words(&["off", "on", "auto"])),
    ("TESSERA_CUDA_DEVICE", Accepts::IntAtLeast(0)),
    ("TESSERA_CUDA_POISON", Accepts::Words(&["0", "1"])),
    ("TESSERA_CUDA_TIMEOUT", Accepts::Seconds),
    ("TESSERA_MAX_BYTES", Accepts::Bytes),
    ("TESSERA_MESH_THREADS", Accepts::Words(&["1"])),
    ("TESSERA_STEP_LIMIT", Accepts::IntAtLeast(1)),
    ("TESSERA_BLESS", Accepts::Words(&["0", "1"])),
    ("TESSERA_CPU_ISA", Accepts::CpuIsa),
];

impl Accepts {
    fn ok(&self, v: &str) -> bool {
        let v = v.trim();
        match self {
            Accepts::Words(w) => w.iter().any(|w| w.eq_ignore_ascii_case(v)),
            Accepts::IntAtLeast(min) => v.parse::<u64>().is_ok_and(|n| n >= *min),
            Accepts::Seconds => v.parse::<f64>().is_ok_and(|s| s.is_finite() && s > 0.0),
            Accepts::Bytes => tessera_runtime::memory::parse_bytes(v).is_some_and(|b| b > 0),
            Accepts::CpuIsa => v.is_empty() || Isa::parse(v).is_some_and(Isa::supported),
        }
    }
    fn describe(&self) -> String {
        match self {
            Accepts::Words(w) => format!("one of {}", w.join(", ")),
            Accepts::IntAtLeast(0) => "a whole number".to_string(),
            Accepts::IntAtLeast(n) => format!("a whole number of at least {n}"),
            Accepts::Seconds => "a positive number of seconds".to_string(),
            Accepts::Bytes => "a byte count such as 4294967296, 512M or 4G".to_string(),
            Accepts::CpuIsa => {
                let names: Vec<&str> = Isa::available().iter().map(|i| i.name()).collect();
                format!(
                    "an instruction set this CPU runs: {} (this CPU: {})",
                    names.join(", "),
                    tessera_runtime::isa::cpu_description()
                )
            }
        }
    }
}

/// E0101 for the first `TESSERA_*` variable whose value it does not accept (or that is not
/// Unicode), and for an invalid `TESSERA_CROSSCHECK`.
pub fn check() -> Result<(), Diagnostic> {
    for (name, accepts) in VARS {
        match std::env::var(name) {
            Err(std::env::VarError::NotPresent) => {}
            Err(std::env::VarError::NotUnicode(_)) => {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!("{name} is not valid Unicode"),
                ));
            }
            Ok(v) if accepts.ok(&v) => {}
            Ok(v) => {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!("{name}={v:?} is not valid: it takes {}", accepts.describe()),
                )
                .with_help(format!("fix or unset {name}")));
            }
        }
    }
    crate::crosscheck::mode().map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_value_is_told_apart() {
        assert!(Accepts::Words(BOOL).ok("Off") && !Accepts::Words(BOOL).ok("offf"));
        assert!(Accepts::IntAtLeast(1).ok("20000") && !Accepts::IntAtLeast(1).ok("0"));
        assert!(!Accepts::IntAtLeast(0).ok("-1") && !Accepts::IntAtLeast(0).ok("2.5"));
        assert!(Accepts::Seconds.ok("1.5") && !Accepts::Seconds.ok("inf"));
        assert!(Accepts::Bytes.ok("4G") && Accepts::Bytes.ok("4294967296"));
        assert!(!Accepts::Bytes.ok("4 gigs") && !Accepts::Bytes.ok("0"));
        assert!(Accepts::CpuIsa.ok("scalar") && Accepts::CpuIsa.ok(Isa::best().name()));
        assert!(!Accepts::CpuIsa.ok("sse9") && !Accepts::CpuIsa.ok("x"));
        let missing = Isa::ALL.into_iter().find(|i| !i.supported());
        assert!(missing.is_some_and(|i| !Accepts::CpuIsa.ok(i.name())));
    }
}
