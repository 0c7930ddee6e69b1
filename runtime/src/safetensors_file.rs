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

/// Writes the named tensors to `path`. Names must be distinct (E0101).
pub fn save(path: &Path, tensors: &[(String, Tensor)]) -> Result<()> {
    let mut entries: Vec<(String, Entry)> = Vec::with_capacity(tensors.len());
    for (name, t) in tensors {
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

/// Reads every tensor in the `.safetensors` file at `path`, sorted by name (as the
/// `safetensors` package lists them).
pub fn load(path: &Path) -> Result<Vec<(String, Tensor)>> {
    let raw = memory::read_file(path)?;
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
