//! Reading a script file: bounded in size (a device file such as `/dev/urandom` must not be
//! read forever) and checked to be UTF-8, with the first bad byte located for the diagnostic.

use crate::diag::{Code, Diagnostic};
use crate::span::{SourceMap, Span};
use std::io::Read;
use std::path::Path;

/// The largest script read (64 MiB): far beyond any real script.
pub const MAX_SCRIPT_BYTES: u64 = 64 << 20;

/// Why a script could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// The file cannot be opened or read.
    Io(std::io::Error),
    /// The file holds more than the limit.
    TooLarge { limit: u64 },
    /// Not UTF-8: the text with the bad bytes replaced (U+FFFD), and the byte offset of the
    /// first bad byte (the same in both: the text before it is unchanged) and its value.
    NotUtf8 { lossy: String, at: usize, byte: u8 },
}

/// Reads the bytes of `path`, at most `limit`: a larger file (or a device with no end) is
/// `TooLarge` once `limit + 1` bytes have been read.
pub fn read_bytes(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let f = std::fs::File::open(path).map_err(ReadError::Io)?;
    let mut bytes = Vec::new();
    f.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge { limit });
    }
    Ok(bytes)
}

/// Reads the text of `path`, at most `limit` bytes.
pub fn read_text(path: &Path, limit: u64) -> Result<String, ReadError> {
    let bytes = read_bytes(path, limit)?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let byte = e.as_bytes().get(at).copied().unwrap_or(0);
        ReadError::NotUtf8 {
            lossy: String::from_utf8_lossy(e.as_bytes()).into_owned(),
            at,
            byte,
        }
    })
}

impl ReadError {
    /// The error as a diagnostic about file `name`; a UTF-8 error is E0001 at the first bad
    /// byte, its text added to `sources` for the excerpt.
    pub fn diagnostic(&self, name: &str, sources: &mut SourceMap) -> Diagnostic {
        match self {
            ReadError::Io(e) => Diagnostic::new(Code::E0101, format!("cannot read {name}: {e}")),
            ReadError::TooLarge { limit } => Diagnostic::new(
                Code::E0700,
                format!("{name} is larger than {} MiB: not a script", limit >> 20),
            ),
            ReadError::NotUtf8 { lossy, at, byte } => {
                let file = sources.add(name, lossy.clone());
                // U+FFFD is three bytes in the replaced text.
                let end = (*at + 3).min(lossy.len());
                Diagnostic::new(Code::E0001, format!("{name} is not UTF-8 text"))
                    .at(Span::new(file, *at, end))
                    .with_label(format!("byte 0x{byte:02x} is not UTF-8"))
                    .with_help("scripts are UTF-8 text; save the file as UTF-8")
            }
        }
    }
}
