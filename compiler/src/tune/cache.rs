//! The autotune cache on disk: a JSON file of entries, each a key (op, shapes, dtypes, arch,
//! compiler version, source hash) and the chosen schedule with its numbers. Data only: configs
//! and numbers, never code.
//!
//! Schema (version [`SCHEMA_VERSION`]):
//! `{"format": "tessera-autotune", "version": 1, "entries": [{"key": {...}, "config": {...},
//! "predicted_us": 12.5, "measured_us": null, "source": "model", "candidates": 54, "trials": 0}]}`
//!
//! Writes are atomic and safe with several processes tuning at once: the writer takes
//! `FILE.lock` (created exclusively; a lock older than [`STALE_LOCK`] is taken over), re-reads
//! the file, merges its entries in (its own win on equal keys), writes `FILE.tmp-PID-N` and
//! renames it over the file, then drops the lock. A file that does not parse, or has another
//! format or version, is never overwritten: [`save_merged`] refuses with [`CacheError::Corrupt`].

use super::Config;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

pub const FORMAT: &str = "tessera-autotune";
pub const SCHEMA_VERSION: u32 = 1;
/// The compiler version every key carries.
pub const COMPILER_VERSION: &str = env!("CARGO_PKG_VERSION");
/// How long a writer waits for the lock.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(10);
/// A lock file older than this is left over from a crashed writer.
pub const STALE_LOCK: Duration = Duration::from_secs(30);

/// What an entry is for.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Key {
    pub op: String,
    pub shapes: Vec<Vec<usize>>,
    pub dtypes: Vec<String>,
    pub arch: String,
    pub compiler: String,
    /// A stable hash (FNV-1a, hex) of the kernel's source text.
    pub source: String,
}

/// One tuned kernel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub key: Key,
    pub config: Config,
    /// The model's latency for the config (µs).
    pub predicted_us: f64,
    /// The measured latency on the device (µs), when it was measured.
    pub measured_us: Option<f64>,
    /// `measured` or `model`: how the config was chosen.
    pub source: String,
    /// Candidates ranked by the model.
    pub candidates: u32,
    /// Candidates measured on the device.
    pub trials: u32,
    /// The shapes of the tuned entry whose config this one reuses (a shape within an eighth of
    /// it: [`near`]); absent for a searched entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpolated_from: Option<Vec<Vec<usize>>>,
}

/// Whether `tuned` (a searched entry's key) is near `key`: the same op, dtypes, arch, compiler
/// and source, shapes of the same ranks, and every dimension within an eighth of the tuned
/// one (`|d − t| · 8 ≤ t`). The distance (the sum of `|d − t| / t`) when it is.
pub fn near(key: &Key, tuned: &Key) -> Option<f64> {
    if key.op != tuned.op
        || key.dtypes != tuned.dtypes
        || key.arch != tuned.arch
        || key.compiler != tuned.compiler
        || key.source != tuned.source
        || key.shapes.len() != tuned.shapes.len()
    {
        return None;
    }
    let mut dist = 0.0;
    for (s, t) in key.shapes.iter().zip(&tuned.shapes) {
        if s.len() != t.len() {
            return None;
        }
        for (&d, &t) in s.iter().zip(t) {
            if d.abs_diff(t).saturating_mul(8) > t || (t == 0) != (d == 0) {
                return None;
            }
            if t > 0 {
                dist += d.abs_diff(t) as f64 / t as f64;
            }
        }
    }
    Some(dist)
}

#[derive(Debug, Serialize, Deserialize)]
struct FileRepr {
    format: String,
    version: u32,
    entries: Vec<Entry>,
}

/// Why a cache file could not be used.
#[derive(Clone, Debug, PartialEq)]
pub enum CacheError {
    /// Not valid JSON of this schema (or another version): the reason.
    Corrupt(String),
    Io(String),
    /// Another writer held the lock for [`LOCK_TIMEOUT`].
    Locked,
}

impl std::fmt::Display for CacheError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CacheError::Corrupt(m) => write!(f, "not a valid autotune cache ({m})"),
            CacheError::Io(m) => write!(f, "{m}"),
            CacheError::Locked => write!(
                f,
                "another process held its lock for {} s",
                LOCK_TIMEOUT.as_secs()
            ),
        }
    }
}

/// FNV-1a 64 of `text`, as 16 hex digits (stable across builds and platforms).
pub fn stable_hash(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// `$TESSERA_CACHE_DIR`, else `$HOME/.cache/tessera` (`$XDG_CACHE_HOME/tessera` when set).
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("TESSERA_CACHE_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("tessera");
    }
    let home = std::env::var_os("HOME").unwrap_or_default();
    PathBuf::from(home).join(".cache").join("tessera")
}

/// Parses a cache file's text.
pub fn parse(text: &str) -> Result<Vec<Entry>, CacheError> {
    let f: FileRepr = serde_json::from_str(text).map_err(|e| CacheError::Corrupt(e.to_string()))?;
    if f.format != FORMAT {
        return Err(CacheError::Corrupt(format!(
            "format '{}', expected '{FORMAT}'",
            f.format
        )));
    }
    if f.version != SCHEMA_VERSION {
        return Err(CacheError::Corrupt(format!(
            "schema version {}, this compiler reads version {SCHEMA_VERSION}",
            f.version
        )));
    }
    Ok(f.entries)
}

/// The largest cache file read (64 MiB: about 200,000 entries); a larger one is corrupt, so
/// that `load_cache("/dev/zero")` ends at once instead of reading forever.
pub const MAX_CACHE_BYTES: u64 = 64 << 20;

/// The bytes of `path`, at most [`MAX_CACHE_BYTES`] (`InvalidData` beyond).
fn read_capped(path: &Path) -> std::io::Result<Vec<u8>> {
    use tessera_lang::read::{read_bytes, ReadError};
    read_bytes(path, MAX_CACHE_BYTES).map_err(|e| match e {
        ReadError::Io(e) => e,
        _ => std::io::Error::new(std::io::ErrorKind::InvalidData, "larger than 64 MiB"),
    })
}

/// The entries of `path`; a missing file has none.
pub fn load(path: &Path) -> Result<Vec<Entry>, CacheError> {
    match read_capped(path) {
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            Err(CacheError::Corrupt(e.to_string()))
        }
        Ok(bytes) => {
            let text = String::from_utf8(bytes)
                .map_err(|_| CacheError::Corrupt("not UTF-8 text".into()))?;
            parse(&text)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(CacheError::Io(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

/// The JSON text of `entries`.
pub fn to_json(entries: &[Entry]) -> String {
    let f = FileRepr {
        format: FORMAT.to_string(),
        version: SCHEMA_VERSION,
        entries: entries.to_vec(),
    };
    serde_json::to_string_pretty(&f).unwrap_or_default() + "\n"
}

/// Holds `FILE.lock` until dropped.
struct Lock(PathBuf);

impl Lock {
    fn take(path: &Path) -> Result<Lock, CacheError> {
        let mut name = path.as_os_str().to_os_string();
        name.push(".lock");
        let lock = PathBuf::from(name);
        let start = Instant::now();
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&lock)
            {
                Ok(mut f) => {
                    use std::io::Write as _;
                    let _ = writeln!(f, "{}", std::process::id());
                    return Ok(Lock(lock));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let stale = std::fs::metadata(&lock)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| SystemTime::now().duration_since(t).ok())
                        .is_some_and(|age| age > STALE_LOCK);
                    if stale {
                        let _ = std::fs::remove_file(&lock);
                        continue;
                    }
                    if start.elapsed() > LOCK_TIMEOUT {
                        return Err(CacheError::Locked);
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(e) => {
                    return Err(CacheError::Io(format!(
                        "cannot create {}: {e}",
                        lock.display()
                    )))
                }
            }
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

static TMP: AtomicU64 = AtomicU64::new(0);

/// Merges `entries` into the file at `path` (created with its directory when missing) under
/// the lock, atomically. Returns the number of entries the file holds afterwards.
pub fn save_merged(path: &Path, entries: &[Entry]) -> Result<usize, CacheError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| CacheError::Io(format!("cannot create {}: {e}", dir.display())))?;
    }
    let _lock = Lock::take(path)?;
    let mut all = load(path)?;
    for e in entries {
        match all.iter_mut().find(|x| x.key == e.key) {
            Some(x) => *x = e.clone(),
            None => all.push(e.clone()),
        }
    }
    let mut tmp = path.as_os_str().to_os_string();
    tmp.push(format!(
        ".tmp-{}-{}",
        std::process::id(),
        TMP.fetch_add(1, Ordering::Relaxed)
    ));
    let tmp = PathBuf::from(tmp);
    let write = || -> std::io::Result<()> {
        use std::io::Write as _;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(to_json(&all).as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    if let Err(e) = write() {
        let _ = std::fs::remove_file(&tmp);
        return Err(CacheError::Io(format!(
            "cannot write {}: {e}",
            path.display()
        )));
    }
    Ok(all.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(op: &str, n: usize) -> Entry {
        Entry {
            key: Key {
                op: op.to_string(),
                shapes: vec![vec![n, n], vec![n, n]],
                dtypes: vec!["bf16".into(), "bf16".into()],
                arch: "sm_90".into(),
                compiler: COMPILER_VERSION.into(),
                source: stable_hash(op),
            },
            config: Config {
                tile: Some([128, 128, 32]),
                warp: None,
                stages: Some(3),
                vectorize: None,
                warps: None,
            },
            predicted_us: 145.25,
            measured_us: None,
            source: "model".into(),
            candidates: 54,
            trials: 0,
            interpolated_from: None,
        }
    }

    #[test]
    fn near_is_within_an_eighth_of_every_dimension() {
        let tuned = entry("mm", 1000).key;
        let mut k = tuned.clone();
        k.shapes = vec![vec![1008, 1000], vec![1000, 1125]];
        assert!(near(&k, &tuned).is_some_and(|d| d > 0.0));
        k.shapes = vec![vec![1008, 1000], vec![1000, 1126]];
        assert_eq!(near(&k, &tuned), None);
        k.shapes = vec![vec![875, 1000], vec![1000, 1000]];
        assert!(near(&k, &tuned).is_some());
        k.shapes = vec![vec![874, 1000], vec![1000, 1000]];
        assert_eq!(near(&k, &tuned), None);
        k.shapes = vec![vec![1000, 1000], vec![1000, 1000]];
        k.dtypes = vec!["fp16".into(), "bf16".into()];
        assert_eq!(near(&k, &tuned), None);
    }

    fn tmpdir(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("tessera-cache-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn round_trip_and_merge() {
        let d = tmpdir("rt");
        let p = d.join("sub").join("c.json");
        assert_eq!(load(&p).unwrap(), vec![]);
        assert_eq!(save_merged(&p, &[entry("a", 64)]).unwrap(), 1);
        assert_eq!(save_merged(&p, &[entry("b", 64)]).unwrap(), 2);
        let mut changed = entry("a", 64);
        changed.predicted_us = 1.0;
        assert_eq!(save_merged(&p, &[changed.clone()]).unwrap(), 2);
        let got = load(&p).unwrap();
        assert_eq!(got, vec![changed, entry("b", 64)]);
        // No lock or temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(p.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("c.json")]);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn corrupt_file_is_reported_and_left_alone() {
        let d = tmpdir("corrupt");
        let p = d.join("c.json");
        for bad in [
            "{not json",
            "{\"format\": \"tessera-autotune\", \"version\": 99, \"entries\": []}",
            "{\"format\": \"other\", \"version\": 1, \"entries\": []}",
        ] {
            std::fs::write(&p, bad).unwrap();
            assert!(matches!(load(&p), Err(CacheError::Corrupt(_))), "{bad}");
            assert!(matches!(
                save_merged(&p, &[entry("a", 8)]),
                Err(CacheError::Corrupt(_))
            ));
            assert_eq!(std::fs::read_to_string(&p).unwrap(), bad);
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn concurrent_writers_lose_nothing() {
        // 8 writers × 10 entries each, all at once, into one file: every entry survives.
        let d = tmpdir("conc");
        let p = d.join("c.json");
        let handles: Vec<_> = (0..8)
            .map(|w| {
                let p = p.clone();
                std::thread::spawn(move || {
                    for i in 0..10 {
                        save_merged(&p, &[entry(&format!("w{w}"), i + 1)]).unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let got = load(&p).unwrap();
        assert_eq!(got.len(), 80);
        for w in 0..8 {
            for i in 0..10 {
                assert!(got.contains(&entry(&format!("w{w}"), i + 1)));
            }
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn stale_lock_is_taken_over() {
        let d = tmpdir("stale");
        let p = d.join("c.json");
        let lock = d.join("c.json.lock");
        std::fs::write(&lock, "1").unwrap();
        let old = SystemTime::now() - Duration::from_secs(120);
        std::fs::File::options()
            .write(true)
            .open(&lock)
            .unwrap()
            .set_modified(old)
            .unwrap();
        assert_eq!(save_merged(&p, &[entry("a", 8)]).unwrap(), 1);
        assert!(!lock.exists());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn stable_hash_is_fnv1a() {
        // FNV-1a 64 test vectors: "" → cbf29ce484222325, "a" → af63dc4c8601ec8c.
        assert_eq!(stable_hash(""), "cbf29ce484222325");
        assert_eq!(stable_hash("a"), "af63dc4c8601ec8c");
    }
}
