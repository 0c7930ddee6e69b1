//! NumPy's `.npy` format (version 1.0, little-endian, C order): one tensor per file, readable by
//! `numpy.load`. Dtypes NumPy has: fp16, fp32, fp64, int8, int32, int64, bool. bf16 and
//! fp8 have no NumPy dtype and are E0201 (NumPy would need the `ml_dtypes` package). A file that
//! is not a well-formed `.npy` of those dtypes is E0500 naming the file.

use crate::dtype::DType;
use crate::error::{Result, RuntimeError};
use crate::memory;
use crate::tensor::Tensor;
use std::path::Path;
use tessera_compiler::graph::TensorType;

const MAGIC: &[u8] = b"\x93NUMPY";

fn descr(d: DType) -> Option<&'static str> {
    Some(match d {
        DType::F16 => "<f2",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::I8 => "|i1",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::Bool => "|b1",
        DType::C64 => "<c8",
        DType::C128 => "<c16",
        _ => return None,
    })
}

fn bad(path: &Path, why: impl std::fmt::Display) -> RuntimeError {
    RuntimeError::runtime(format!(
        "{}: not a .npy file Tessera reads: {why}",
        path.display()
    ))
}

/// Writes `t` to `path` as `.npy`.
pub fn save(path: &Path, t: &Tensor) -> Result<()> {
    let Some(d) = descr(t.dtype()) else {
        return Err(RuntimeError::dtype(format!(
            "{} tensors have no NumPy dtype, so they cannot be saved as .npy",
            t.dtype()
        )));
    };
    let shape = match t.shape() {
        [] => "()".to_string(),
        [n] => format!("({n},)"),
        s => format!(
            "({})",
            s.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header = format!("{{'descr': '{d}', 'fortran_order': False, 'shape': {shape}, }}");
    // magic (6) + version (2) + length (2) + header + '\n', padded to a multiple of 64
    let unpadded = MAGIC.len() + 4 + header.len() + 1;
    header.push_str(&" ".repeat((64 - unpadded % 64) % 64));
    header.push('\n');
    let data = crate::device::bytes_of(t)?;
    let mut out = Vec::with_capacity(10 + header.len() + data.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&data);
    std::fs::write(path, out)
        .map_err(|e| RuntimeError::runtime(format!("cannot write {}: {e}", path.display())))
}

/// The value of `key` in the header dict text (`'descr': '<f4'` → `'<f4'`).
fn field<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let at = header.find(&format!("'{key}'"))? + key.len() + 2;
    let rest = header[at..].trim_start().strip_prefix(':')?.trim_start();
    let end = if rest.starts_with('(') {
        rest.find(')')? + 1
    } else {
        rest.find([',', '}'])?
    };
    Some(rest[..end].trim())
}

/// The longest header Tessera reads (NumPy's `max_header_size` is 10000 by default).
const MAX_HEADER: usize = 1 << 20;

/// Reads the tensor in the `.npy` file at `path`: the magic string and the header first, then
/// exactly the data bytes the header's shape needs, so a file that is not `.npy` (or has no
/// end) is refused after its first bytes.
pub fn load(path: &Path) -> Result<Tensor> {
    let mut file = memory::FileReader::open(path)?;
    let mut raw = file.read(10)?;
    if !raw.starts_with(MAGIC) || raw.len() < 10 {
        return Err(bad(path, "no NumPy magic string"));
    }
    let (major, len_bytes) = (raw[6], if raw[6] == 1 { 2 } else { 4 });
    if !(1..=3).contains(&major) {
        return Err(bad(path, format!("format version {major}")));
    }
    let hlen = if len_bytes == 2 {
        u16::from_le_bytes([raw[8], raw[9]]) as usize
    } else {
        file.read_into(&mut raw, 2)?;
        let b = raw
            .get(8..12)
            .ok_or_else(|| bad(path, "truncated header"))?;
        u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize
    };
    if hlen > MAX_HEADER {
        return Err(bad(
            path,
            format!("a header of {hlen} bytes (Tessera reads headers up to {MAX_HEADER} bytes)"),
        ));
    }
    let start = 8 + len_bytes;
    file.read_into(&mut raw, hlen as u64)?;
    let header = raw
        .get(start..start + hlen)
        .and_then(|h| std::str::from_utf8(h).ok())
        .ok_or_else(|| bad(path, "truncated or unreadable header"))?;
    let d = field(header, "descr").ok_or_else(|| bad(path, "no 'descr'"))?;
    let d = d.trim_matches(|c| c == '\'' || c == '"');
    let dtype = [
        DType::F16,
        DType::F32,
        DType::F64,
        DType::I8,
        DType::I32,
        DType::I64,
        DType::Bool,
        DType::C64,
        DType::C128,
    ]
    .into_iter()
    .find(|t| descr(*t) == Some(d) || descr(*t).map(|x| x.replace('<', "|")) == Some(d.to_string()))
    .ok_or_else(|| {
        bad(
            path,
            format!("dtype {d} (Tessera reads <f2 <f4 <f8 |i1 <i4 <i8 |b1 <c8 <c16)"),
        )
    })?;
    match field(header, "fortran_order") {
        Some("False") => {}
        Some("True") => return Err(bad(path, "Fortran order")),
        Some(v) => return Err(bad(path, format!("'fortran_order': {v}"))),
        None => return Err(bad(path, "no 'fortran_order'")),
    }
    let shape_text = field(header, "shape").ok_or_else(|| bad(path, "no 'shape'"))?;
    let shape: Vec<usize> = shape_text
        .trim_matches(|c| c == '(' || c == ')')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| bad(path, format!("shape {shape_text}")))?;
    let numel = memory::check_shape_alloc(&shape, dtype)?;
    let need = numel
        .checked_mul(dtype.size_bytes())
        .ok_or_else(|| bad(path, "too many elements"))?;
    let data = file.read(need as u64)?;
    if data.len() != need || !file.at_end()? {
        let got = if data.len() == need {
            format!("more than {need}")
        } else {
            data.len().to_string()
        };
        return Err(bad(
            path,
            format!("{got} data bytes for shape {shape:?} of {dtype}, want {need}"),
        ));
    }
    crate::device::tensor_of(&data, &TensorType::new(shape, dtype))
}
