//! Runs NVIDIA's `ptxas` on printed PTX and reads its `-v` report (registers, spills, shared
//! memory). Install it with `scripts/install-ptxas` (pip `nvidia-cuda-nvcc-cu12` in `.venv`).

use super::Target;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// What `ptxas -v` reported for one entry function.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PtxasReport {
    pub registers: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
    pub stack_frame: u32,
    pub shared_bytes: u32,
    /// The whole stderr, for messages.
    pub log: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PtxasError {
    NotFound,
    Io(String),
    /// ptxas rejected the PTX: its exit status and stderr.
    Rejected {
        status: Option<i32>,
        log: String,
    },
    /// ptxas accepted it but printed no `Used N registers` line.
    NoReport {
        log: String,
    },
}

impl std::fmt::Display for PtxasError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PtxasError::NotFound => write!(
                f,
                "ptxas not found: run scripts/install-ptxas (or set TESSERA_PTXAS to a ptxas binary)"
            ),
            PtxasError::Io(e) => write!(f, "running ptxas: {e}"),
            PtxasError::Rejected { status, log } => {
                write!(f, "ptxas rejected the PTX (status {status:?}):\n{log}")
            }
            PtxasError::NoReport { log } => write!(f, "ptxas printed no register report:\n{log}"),
        }
    }
}

impl std::error::Error for PtxasError {}

/// The workspace root (the parent of the compiler crate).
pub fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| here.to_path_buf())
}

/// `$TESSERA_PTXAS`, then `.venv/lib/python*/site-packages/nvidia/cuda_nvcc/bin/ptxas` under the
/// workspace root, then `ptxas` on `PATH`.
pub fn find_ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TESSERA_PTXAS") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Some(p);
        }
    }
    let lib = workspace_root().join(".venv").join("lib");
    if let Ok(entries) = std::fs::read_dir(&lib) {
        let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        dirs.sort();
        for d in dirs {
            let p = d.join("site-packages/nvidia/cuda_nvcc/bin/ptxas");
            if p.is_file() {
                return Some(p);
            }
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("ptxas"))
        .find(|p| p.is_file())
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// Assembles `ptx` for `target` (`ptxas -v --gpu-name sm_XX -o /dev/null file.ptx`).
pub fn run_ptxas(ptx: &str, target: Target) -> Result<PtxasReport, PtxasError> {
    let ptxas = find_ptxas().ok_or(PtxasError::NotFound)?;
    let file = std::env::temp_dir().join(format!(
        "tessera-{}-{}.ptx",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&file, ptx).map_err(|e| PtxasError::Io(e.to_string()))?;
    let out = Command::new(&ptxas)
        .arg("-v")
        .arg("--gpu-name")
        .arg(target.name())
        .arg("-o")
        .arg("/dev/null")
        .arg(&file)
        .output();
    let _ = std::fs::remove_file(&file);
    let out = out.map_err(|e| PtxasError::Io(format!("{}: {e}", ptxas.display())))?;
    let log =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(PtxasError::Rejected {
            status: out.status.code(),
            log,
        });
    }
    parse_report(&log).ok_or(PtxasError::NoReport { log })
}

/// The number just before `what` in `log` (`"12 registers"`, `"0 bytes spill stores"`).
fn number_before(log: &str, what: &str) -> Option<u32> {
    let at = log.find(what)?;
    let head = log.get(..at)?.trim_end();
    let digits: String = head
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.chars().rev().collect::<String>().parse().ok()
}

/// Reads a `ptxas -v` log (one entry function).
pub fn parse_report(log: &str) -> Option<PtxasReport> {
    Some(PtxasReport {
        registers: number_before(log, " registers")?,
        spill_stores: number_before(log, " bytes spill stores").unwrap_or(0),
        spill_loads: number_before(log, " bytes spill loads").unwrap_or(0),
        stack_frame: number_before(log, " bytes stack frame").unwrap_or(0),
        shared_bytes: number_before(log, " bytes smem").unwrap_or(0),
        log: log.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ptxas_v() {
        let log = "ptxas info    : 0 bytes gmem\nptxas info    : Compiling entry function 'k' for 'sm_90'\n\
ptxas info    : Function properties for k\n    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n\
ptxas info    : Used 40 registers, used 1 barriers, 16384 bytes smem\n";
        let r = parse_report(log).unwrap();
        assert_eq!(
            (
                r.registers,
                r.spill_stores,
                r.spill_loads,
                r.stack_frame,
                r.shared_bytes
            ),
            (40, 4, 12, 8, 16384)
        );
        assert!(parse_report("nothing").is_none());
    }
}
