//! The materialisation guard: no allocation over `TESSERA_MAX_BYTES` (E0700), checked before
//! allocating, so a huge tensor is an error and never an out-of-memory abort.

use crate::dtype::DType;
use crate::error::{Result, RuntimeError};

/// Fallback limit when physical memory cannot be read: 4 GiB.
const FALLBACK_LIMIT: u64 = 4 << 30;

/// The limit from the environment value and `/proc/meminfo` text (pure, for tests).
pub fn parse_limit(env: Option<&str>, meminfo: Option<&str>) -> u64 {
    if let Some(v) = env.and_then(parse_bytes) {
        return v;
    }
    meminfo
        .and_then(|text| {
            text.lines().find_map(|l| {
                let rest = l.strip_prefix("MemTotal:")?;
                let kb: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
                Some(kb.saturating_mul(1024) / 4)
            })
        })
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

/// The current limit in bytes: `TESSERA_MAX_BYTES`, else a quarter of physical memory, else 4 GiB.
pub fn max_bytes() -> u64 {
    static MEMINFO: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let meminfo = MEMINFO.get_or_init(|| std::fs::read_to_string("/proc/meminfo").ok());
    let env = std::env::var("TESSERA_MAX_BYTES").ok();
    parse_limit(env.as_deref(), meminfo.as_deref())
}

/// The element count of a shape, or E0700 when it overflows.
pub fn checked_numel(shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
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
    Ok(())
}

/// `checked_numel` then `check_alloc`.
pub fn check_shape_alloc(shape: &[usize], dtype: DType) -> Result<usize> {
    let n = checked_numel(shape)?;
    check_alloc(n, dtype)?;
    Ok(n)
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
            check_shape_alloc(&[0, usize::MAX], DType::F64).ok(),
            Some(0)
        );
    }
}
