//! The `.safetensors` format (Hugging Face's), through the `safetensors` crate: named tensors in
//! one file, readable by the `safetensors` Python package. Every Tessera dtype is stored
//! exactly: bf16 as `BF16`, the fp8 formats as `F8_E4M3` / `F8_E5M2`, tf32 as `F32` (its
//! values are fp32 values). Reading also takes the integer types Tessera has no dtype for when
//! a wider one holds every value (`U8`, `I16`, `U16` → int32; `U32` → int64); any other dtype
//! in a file is E0201 naming the tensor. A file that is not a well-formed `.safetensors` is
//! E0500 naming the file.

use std::borrow::Cow;
use std::path::Path;

use safetensors::{Dtype as FileDtype, SafeTensors, View};
use tessera_compiler::graph::TensorType;

use crate::dtype::DType;
use crate::error::{Result, RuntimeError};
use crate::memory;
use crate::tensor::Tensor;

/// One tensor ready to be written: its file dtype, shape and little-endian bytes.
struct Entry {
    dtype: FileDtype,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

impl View for &Entry {
    fn dtype(&self) -> FileDtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.bytes)
    }
    fn data_len(&self) -> usize {
        self.bytes.len()
    }
}

/// The file dtype of a Tessera dtype (E0201 for c128: the format has no complex128).
fn file_dtype(d: DType) -> Result<FileDtype> {
    Ok(match d {
        DType::F64 => FileDtype::F64,
        DType::F32 | DType::TF32 => FileDtype::F32,
        DType::F16 => FileDtype::F16,
        DType::BF16 => FileDtype::BF16,
        DType::F8E4M3 => FileDtype::F8_E4M3,
        DType::F8E5M2 => FileDtype::F8_E5M2,
        DType::I64 => FileDtype::I64,
        DType::I32 => FileDtype::I32,
        DType::I8 => FileDtype::I8,
        DType::Bool => FileDtype::BOOL,
        DType::C64 => FileDtype::C64,
        DType::C128 => {
            return Err(RuntimeError::dtype(
                "c128 tensors cannot be saved as .safetensors: the format has no complex128",
            )
            .with_help("save it as .npy, or cast it to c64 first"))
        }
    })
}

/// The Tessera dtype a file dtype is read as, if any.
fn tessera_dtype(d: FileDtype) -> Option<DType> {
    Some(match d {
        FileDtype::F64 => DType::F64,
        FileDtype::F32 => DType::F32,
        FileDtype::F16 => DType::F16,
        FileDtype::BF16 => DType::BF16,
        FileDtype::F8_E4M3 => DType::F8E4M3,
        FileDtype::F8_E5M2 => DType::F8E5M2,
        FileDtype::I64 | FileDtype::U32 => DType::I64,
        FileDtype::I32 | FileDtype::U8 | FileDtype::I16 | FileDtype::U16 => DType::I32,
        FileDtype::I8 => DType::I8,
        FileDtype::BOOL => DType::Bool,
        FileDtype::C64 => DType::C64,
        _ => return None,
    })
}

fn bad(path: &Path, why: impl std::fmt::Display) -> RuntimeError {
    RuntimeError::runtime(format!(
        "{}: not a .safetensors file Tessera reads: {why}",
        path.display()
    ))
}

/// The header key the format reserves for its string-to-string metadata.
const METADATA_KEY: &str = "__metadata__";

/// The format's largest header (the `safetensors` crate's and package's limit).
const MAX_HEADER: u64 = 100_000_000;

/// Writes the named tensors to `path`. Names must be distinct and not the format's reserved
/// `__metadata__` (E0101).
pub fn save(path: &Path, tensors: &[(String, Tensor)]) -> Result<()> {
    let mut entries: Vec<(String, Entry)> = Vec::with_capacity(tensors.len());
    for (name, t) in tensors {
        if name == METADATA_KEY {
            return Err(RuntimeError::args(format!(
                "the name {name:?} is reserved by the .safetensors format for its metadata: a tensor cannot have it"
            ))
            .with_help("give the tensor another name"));
        }
        if entries.iter().any(|(n, _)| n == name) {
            return Err(RuntimeError::args(format!(
                "the name {name:?} is given twice: each tensor in a .safetensors file needs its own name"
            )));
        }
        let bytes = crate::device::bytes_of(t)?;
        let entry = Entry {
            dtype: file_dtype(t.dtype())?,
            shape: t.shape().to_vec(),
            bytes,
        };
        entries.push((name.clone(), entry));
    }
    let out = safetensors::serialize(entries.iter().map(|(n, e)| (n.as_str(), e)), None)
        .map_err(|e| RuntimeError::runtime(format!("cannot write {}: {e}", path.display())))?;
    std::fs::write(path, out)
        .map_err(|e| RuntimeError::runtime(format!("cannot write {}: {e}", path.display())))
}

/// The top-level names of a `.safetensors` header and the data length its tensors' offsets
/// declare. A name given twice is an error (the JSON parser behind the format would keep one
/// silently; the `safetensors` package refuses the file).
struct HeaderScan {
    names: std::collections::HashSet<String>,
    data_len: u64,
}

impl<'de> serde::Deserialize<'de> for HeaderScan {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = HeaderScan;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object of tensors")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<HeaderScan, A::Error> {
                let mut scan = HeaderScan {
                    names: std::collections::HashSet::new(),
                    data_len: 0,
                };
                while let Some(name) = map.next_key::<String>()? {
                    let value: serde_json::Value = map.next_value()?;
                    if name != METADATA_KEY {
                        let end = value
                            .get("data_offsets")
                            .and_then(|o| o.get(1))
                            .and_then(serde_json::Value::as_u64)
                            .unwrap_or(0);
                        scan.data_len = scan.data_len.max(end);
                    }
                    if !scan.names.insert(name.clone()) {
                        return Err(serde::de::Error::custom(format!(
                            "the name {name:?} is given twice"
                        )));
                    }
                }
                Ok(scan)
            }
        }
        d.deserialize_map(V)
    }
}

/// Reads every tensor in the `.safetensors` file at `path`, sorted by name (as the
/// `safetensors` package lists them). The header's length and the header come first, then
/// exactly the data bytes the header declares: a file that is not `.safetensors` (or has no
/// end) is refused after its first bytes.
pub fn load(path: &Path) -> Result<Vec<(String, Tensor)>> {
    let mut reader = memory::FileReader::open(path)?;
    let mut raw = reader.read(8)?;
    let Ok(len_bytes) = <[u8; 8]>::try_from(raw.as_slice()) else {
        return Err(bad(path, "shorter than the 8-byte header length"));
    };
    let n = u64::from_le_bytes(len_bytes);
    if n > MAX_HEADER {
        return Err(bad(
            path,
            format!("a header of {n} bytes, over the format's limit of {MAX_HEADER}"),
        ));
    }
    reader.read_into(&mut raw, n)?;
    if raw.len() as u64 != 8 + n {
        return Err(bad(path, "the header is cut short"));
    }
    let text = std::str::from_utf8(&raw[8..]).map_err(|e| bad(path, e))?;
    let scan: HeaderScan = serde_json::from_str(text).map_err(|e| bad(path, e))?;
    reader.read_into(&mut raw, scan.data_len)?;
    if !reader.at_end()? {
        return Err(bad(
            path,
            format!(
                "more than the {} data bytes its header declares",
                scan.data_len
            ),
        ));
    }
    let file = SafeTensors::deserialize(&raw).map_err(|e| bad(path, e))?;
    let mut named = file.tensors();
    named.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = Vec::with_capacity(named.len());
    for (name, view) in named {
        let fd = view.dtype();
        let Some(dtype) = tessera_dtype(fd) else {
            return Err(RuntimeError::dtype(format!(
                "{}: tensor {name:?} has dtype {fd:?}, which Tessera cannot hold",
                path.display()
            )));
        };
        let shape = view.shape().to_vec();
        memory::check_shape_alloc(&shape, dtype)?;
        let data = view.data();
        let t = match fd {
            FileDtype::U8 => widen(&shape, data.iter().map(|&b| i64::from(b)), dtype),
            FileDtype::I16 => widen(
                &shape,
                data.chunks_exact(2)
                    .map(|c| i64::from(i16::from_le_bytes([c[0], c[1]]))),
                dtype,
            ),
            FileDtype::U16 => widen(
                &shape,
                data.chunks_exact(2)
                    .map(|c| i64::from(u16::from_le_bytes([c[0], c[1]]))),
                dtype,
            ),
            FileDtype::U32 => widen(
                &shape,
                data.chunks_exact(4)
                    .map(|c| i64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]]))),
                dtype,
            ),
            _ => crate::device::tensor_of(data, &TensorType::new(shape, dtype)),
        }?;
        out.push((name, t));
    }
    Ok(out)
}

fn widen(shape: &[usize], vals: impl Iterator<Item = i64>, dtype: DType) -> Result<Tensor> {
    Tensor::from_i64(shape, vals.collect(), dtype)
}
