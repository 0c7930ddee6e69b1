//! The materialisation guard: no allocation over `TESSERA_MAX_BYTES` (E0700), checked before
//! allocating, so a huge tensor is an error and never an out-of-memory abort.

use crate::dtype::DType;
use crate::error::{Result, RuntimeError};

/// Fallback limit when physical memory cannot be read: 4 GiB.
const FALLBACK_LIMIT: u64 = 4 << 30;

/// The limit from the environment value and `/proc/meminfo` text (pure, for tests).
pub fn parse_limit(env: Option<&str>, meminfo: Option<&str>) -> u64 {
    parse_limits(env, meminfo, None, None)
}

/// The limit: `TESSERA_MAX_BYTES` when it parses, else a quarter of the least of physical
/// memory (`/proc/meminfo`), the process's address-space limit (`ulimit -v`, from
/// `/proc/self/limits`) and the cgroup's memory limit (`memory.max`); 4 GiB when none is known.
/// A quarter leaves room for an op's inputs, its output and the process itself.
pub fn parse_limits(
    env: Option<&str>,
    meminfo: Option<&str>,
    proc_limits: Option<&str>,
    cgroup_max: Option<&str>,
) -> u64 {
    if let Some(v) = env.and_then(parse_bytes) {
        return v;
    }
    let total = meminfo.and_then(|text| {
        text.lines().find_map(|l| {
            let rest = l.strip_prefix("MemTotal:")?;
            let kb: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
            Some(kb.saturating_mul(1024))
        })
    });
    let address_space = proc_limits.and_then(|text| {
        text.lines().find_map(|l| {
            let rest = l.strip_prefix("Max address space")?;
            rest.split_whitespace().next()?.parse::<u64>().ok()
        })
    });
    let cgroup = cgroup_max.and_then(|t| t.trim().parse::<u64>().ok());
    [total, address_space, cgroup]
        .into_iter()
        .flatten()
        .min()
        .map(|b| b / 4)
        .unwrap_or(FALLBACK_LIMIT)
}

/// Parses `123`, `64K`, `512M`, `4G`, `1T` (binary units, optional trailing `B`/`iB`).
pub fn parse_bytes(s: &str) -> Option<u64> {
    let s = s.trim();
    let s = s
        .strip_suffix("iB")
        .or_else(|| s.strip_suffix('B'))
        .unwrap_or(s);
    let (num, mul) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1u64 << 10),
        'm' | 'M' => (&s[..s.len() - 1], 1 << 20),
        'g' | 'G' => (&s[..s.len() - 1], 1 << 30),
        't' | 'T' => (&s[..s.len() - 1], 1 << 40),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(mul)
}

/// The current limit in bytes ([`parse_limits`]).
pub fn max_bytes() -> u64 {
    // the variable and the files are read and parsed once per process: this runs on every
    // allocation check (reading the environment each time cost a few percent of a run of
    // small ops)
    static LIMIT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| {
        let env = std::env::var("TESSERA_MAX_BYTES").ok();
        if let Some(v) = env.as_deref().and_then(parse_bytes) {
            return v;
        }
        let read = |p: &str| std::fs::read_to_string(p).ok();
        parse_limits(
            None,
            read("/proc/meminfo").as_deref(),
            read("/proc/self/limits").as_deref(),
            read("/sys/fs/cgroup/memory.max").as_deref(),
        )
    })
}

/// The bytes of all tensors alive in the process (each storage once, however many tensors
/// share it).
static LIVE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The bytes of the tensor storage alive now.
pub fn live_bytes() -> u64 {
    LIVE.load(std::sync::atomic::Ordering::Relaxed)
}

pub(crate) fn add_live(bytes: u64) {
    LIVE.fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
}

pub(crate) fn sub_live(bytes: u64) {
    LIVE.fetch_sub(bytes, std::sync::atomic::Ordering::Relaxed);
}

/// The most bytes all live tensors may take together: twice [`max_bytes`], so that a value at
/// the limit can still be an operand with room for its result, while tensors collected in a
/// loop (a list or dict of them) stop with E0700 instead of exhausting memory.
pub fn max_live_bytes() -> u64 {
    max_bytes().saturating_mul(2)
}

/// The element count of a shape, or E0700 when the product of its nonzero dimensions is over
/// `isize::MAX` (NumPy's "array is too big", also for an empty shape such as `(0, 2**62,
/// 2**62)`): every partial product of a valid shape's dimensions then fits a `usize`, so the
/// ops' lane and stride arithmetic cannot overflow.
pub fn checked_numel(shape: &[usize]) -> Result<usize> {
    let nonzero = shape
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .filter(|&n| n <= isize::MAX as usize);
    nonzero
        .map(|n| if shape.contains(&0) { 0 } else { n })
        .ok_or_else(|| {
            RuntimeError::resource(format!(
                "tensor of shape {} has too many elements to index",
                crate::shape::fmt_shape(shape)
            ))
        })
}

/// E0700 unless `numel` elements of `dtype` fit under the limit.
pub fn check_alloc(numel: usize, dtype: DType) -> Result<()> {
    let limit = max_bytes();
    let bytes = (numel as u128) * (dtype.size_bytes() as u128);
    if bytes > u128::from(limit) {
        return Err(RuntimeError::resource(format!(
            "tensor too large to materialise: {bytes} bytes ({numel} x {}) exceeds the limit of {limit} bytes",
            dtype.name()
        ))
        .with_help("raise TESSERA_MAX_BYTES, or use dist.tensor for an abstract tensor"));
    }
    let live = live_bytes();
    let total = max_live_bytes();
    if (live as u128) + bytes > u128::from(total) {
        return Err(RuntimeError::resource(format!(
            "tensor of {bytes} bytes ({numel} x {}) would bring the tensors alive to {} bytes, over the limit of {total} bytes for all of them together (twice TESSERA_MAX_BYTES)",
            dtype.name(),
            (live as u128) + bytes
        ))
        .with_help("let go of tensors no longer needed (rebind names, remove them from lists and dicts), or raise TESSERA_MAX_BYTES"));
    }
    Ok(())
}

/// E0700 unless `numel` host values of `per_elem` bytes each (lists, scalars: what `tolist`
/// and iteration build from a tensor) fit under the limit; `what` names the operation.
pub fn check_host(numel: usize, per_elem: usize, what: &str) -> Result<()> {
    let limit = max_bytes();
    let bytes = (numel as u128) * (per_elem as u128);
    if bytes > u128::from(limit) {
        return Err(RuntimeError::resource(format!(
            "{what} of {numel} elements would take about {bytes} bytes of host values, over the limit of {limit} bytes"
        ))
        .with_help("raise TESSERA_MAX_BYTES, or read a slice of the tensor"));
    }
    Ok(())
}

/// `checked_numel` then `check_alloc`.
pub fn check_shape_alloc(shape: &[usize], dtype: DType) -> Result<usize> {
    let n = checked_numel(shape)?;
    check_alloc(n, dtype)?;
    Ok(n)
}

/// The bytes of the file at `path`, read only while they fit under the limit (plus 1 MiB for
/// headers): a larger file is E0700 before it is read whole, and a device with no end
/// (`/dev/zero`) stops at the limit. A file that cannot be read is E0500 naming it.
pub fn read_file(path: &std::path::Path) -> Result<Vec<u8>> {
    use tessera_lang::read::{read_bytes, ReadError};
    let limit = max_bytes().saturating_add(1 << 20);
    read_bytes(path, limit).map_err(|e| match e {
        ReadError::TooLarge { limit } => RuntimeError::resource(format!(
            "{} holds more than {limit} bytes, over the memory limit",
            path.display()
        ))
        .with_help("raise TESSERA_MAX_BYTES"),
        ReadError::Io(e) => RuntimeError::runtime(format!("cannot read {}: {e}", path.display())),
        // `read_bytes` does not decode text: never reached
        ReadError::NotUtf8 { .. } => {
            RuntimeError::runtime(format!("cannot read {}", path.display()))
        }
    })
}

/// A file read in pieces, each one checked against the memory limit before it is allocated:
/// a format reader takes its fixed-size magic and header first and learns from them how much
/// more to read, so an endless or huge non-file (`/dev/urandom`) is refused after a few bytes
/// instead of being read up to the limit.
pub struct FileReader {
    file: std::io::BufReader<std::fs::File>,
    path: std::path::PathBuf,
}

impl FileReader {
    /// Opens `path` (E0500 naming it when it cannot be opened).
    pub fn open(path: &std::path::Path) -> Result<FileReader> {
        let file = std::fs::File::open(path)
            .map_err(|e| RuntimeError::runtime(format!("cannot read {}: {e}", path.display())))?;
        Ok(FileReader {
            file: std::io::BufReader::new(file),
            path: path.to_path_buf(),
        })
    }

    /// Appends up to `n` more bytes to `buf` (fewer when the file ends first); E0700 before
    /// reading when `buf` would grow over the limit.
    pub fn read_into(&mut self, buf: &mut Vec<u8>, n: u64) -> Result<()> {
        use std::io::Read;
        let limit = max_bytes().saturating_add(1 << 20);
        let want = (buf.len() as u64).saturating_add(n);
        if want > limit {
            return Err(RuntimeError::resource(format!(
                "{} needs {want} bytes read, over the memory limit of {limit} bytes",
                self.path.display()
            ))
            .with_help("raise TESSERA_MAX_BYTES"));
        }
        // reserve only what a regular file can hold: a short file allocates its own size
        let size_left = self
            .file
            .get_ref()
            .metadata()
            .ok()
            .filter(|m| m.is_file())
            .map_or(n, |m| m.len().min(n));
        buf.try_reserve(usize::try_from(size_left).unwrap_or(usize::MAX))
            .map_err(|_| {
                RuntimeError::resource(format!("cannot hold {n} bytes of {}", self.path.display()))
            })?;
        (&mut self.file).take(n).read_to_end(buf).map_err(|e| {
            RuntimeError::runtime(format!("cannot read {}: {e}", self.path.display()))
        })?;
        Ok(())
    }

    /// Up to `n` bytes (fewer when the file ends first).
    pub fn read(&mut self, n: u64) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.read_into(&mut buf, n)?;
        Ok(buf)
    }

    /// Whether every byte has been read (reads one more byte to tell).
    pub fn at_end(&mut self) -> Result<bool> {
        Ok(self.read(1)?.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_sources() {
        assert_eq!(parse_limit(Some("1000"), None), 1000);
        assert_eq!(parse_limit(Some("2G"), None), 2 << 30);
        assert_eq!(parse_limit(Some("512MiB"), None), 512 << 20);
        assert_eq!(parse_limit(Some("16KB"), None), 16 << 10);
        let mi = "MemTotal:       16000000 kB\nMemFree: 1 kB\n";
        assert_eq!(parse_limit(None, Some(mi)), 16_000_000 * 1024 / 4);
        assert_eq!(parse_limit(Some("junk"), Some(mi)), 16_000_000 * 1024 / 4);
        assert_eq!(parse_limit(None, None), 4 << 30);
        let limits = "Limit  Soft Limit  Hard Limit  Units\nMax address space         4096000000           unlimited            bytes\n";
        assert_eq!(
            parse_limits(None, Some(mi), Some(limits), None),
            1_024_000_000
        );
        let unlimited =
            "Max address space         unlimited            unlimited            bytes\n";
        assert_eq!(
            parse_limits(None, Some(mi), Some(unlimited), Some("max\n")),
            16_000_000 * 1024 / 4
        );
        assert_eq!(
            parse_limits(None, Some(mi), None, Some("8000000000\n")),
            2_000_000_000
        );
        // an explicit value wins over every limit
        assert_eq!(
            parse_limits(Some("5G"), Some(mi), Some(limits), None),
            5 << 30
        );
        assert_eq!(parse_limit(Some("99999999999T"), None), 4 << 30);
    }

    #[test]
    fn guard_errors_before_allocating() {
        let e = check_shape_alloc(&[1_000_000, 1_000_000, 1000], DType::F32).unwrap_err();
        assert_eq!(e.code, crate::Code::E0700);
        assert!(
            e.message.contains("4000000000000000 bytes"),
            "{}",
            e.message
        );
        assert!(e.message.contains("limit"));
        let e = checked_numel(&[usize::MAX, 2]).unwrap_err();
        assert_eq!(e.code, crate::Code::E0700);
        assert!(check_shape_alloc(&[10, 10], DType::F64).is_ok());
        assert_eq!(
            check_shape_alloc(&[0, 10_000_000_000], DType::F64).ok(),
            Some(0)
        );
        // NumPy's "array is too big": the nonzero dimensions' product must fit an isize,
        // empty or not, so no partial product of a tensor's shape overflows
        for shape in [
            &[0, usize::MAX][..],
            &[0, 1 << 62, 1 << 62],
            &[1 << 62, 0, 1 << 62],
        ] {
            let e = checked_numel(shape).unwrap_err();
            assert_eq!(e.code, crate::Code::E0700, "{shape:?}");
        }
        assert_eq!(checked_numel(&[1 << 31, 1 << 31, 0]).ok(), Some(0));
    }
}
