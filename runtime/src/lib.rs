//! `tessera-runtime`: tensors, dtypes and the fast, exact CPU reference ops (SPEC §4).
//!
//! # Types
//! - [`DType`] — `F64 F32 TF32 F16 BF16 F8E4M3 F8E5M2 I64 I32 I8 Bool C64 C128`: [`DType::parse`] (canonical
//!   names and aliases), [`DType::name`], [`DType::size_bytes`], [`DType::is_float`],
//!   [`DType::promote`], [`DType::promote_scalar`] with a [`ScalarKind`].
//! - [`Scalar`] — a Python scalar (`Int(i64) | Float(f64) | Bool(bool)`) mixed with tensors; it
//!   never widens a float tensor (`bf16 * 2.0` is bf16; `int32 * 2.0` is fp32).
//! - [`Tensor`] — shape, dtype and `Arc` storage (cheap to clone; compact per dtype: `bf16`/`f16`
//!   as 2 bytes, fp8 as 1). Abstract tensors have no data: every op returns an abstract result of
//!   the right shape and dtype, and reading values is E0700 "abstract tensor has no data".
//! - [`Nested`] — `tolist()` output; [`IndexItem`] — `Int | Slice{start,stop,step} | NewAxis |
//!   Ellipsis`; [`Operand`] — a `&Tensor` or a [`Scalar`].
//! - [`RuntimeError`] `{ code, message, help }` with the SPEC §9 [`Code`]; no op panics on user
//!   input (shapes, axes, indices, dtypes), and empty and 0-d tensors work everywhere.
//!
//! # Functions (all return [`Result`])
//! - constructors: [`Tensor::from_f64`], [`Tensor::from_f32`], [`Tensor::from_i64`],
//!   [`Tensor::from_bool`], [`Tensor::from_nested`], [`Tensor::scalar`], [`Tensor::zeros`],
//!   [`Tensor::ones`], [`Tensor::full`], [`Tensor::arange`], [`Tensor::eye`], [`Tensor::rand`],
//!   [`Tensor::randn`] (counter-based, docs/decisions.md), [`Tensor::abstract_tensor`].
//! - elementwise with NumPy broadcasting: [`binary`]`(BinaryOp, lhs, rhs)` (either side a scalar)
//!   and the methods `add sub mul div floordiv rem pow maximum minimum eq ne lt le gt ge
//!   logical_and logical_or`; [`unary`]`(UnaryOp, x)` and `neg abs relu exp log sqrt rsqrt tanh
//!   sigmoid gelu silu logical_not`; [`where_`]; [`Tensor::cast`] / `to`.
//!   Low-precision inputs compute in fp32 and round once; fp64 in f64; ints wrap; int `//` and
//!   `%` by zero is E0500.
//! - complex tensors (`C64`, `C128`): [`real`], [`imag`], [`conj`], [`angle`], [`complex`];
//!   `+ - * / ** == !=`, `neg abs exp log sqrt sin cos isnan isfinite`, `where`, `sum`/`mean`;
//!   other ops on them are E0201. [`fft`], [`ifft`], [`rfft`], [`irfft`], [`fft2d`] (NumPy's
//!   FFTs, `rustfft`/`realfft`).
//! - [`matmul`]`(a, b, accum_dtype)` — NumPy semantics, our GEMM on all cores (per-ISA kernels,
//!   [`isa`]).
//! - [`reduce`] / `sum mean max min(axis, keepdim)` — deterministic for any thread count.
//! - [`softmax`], [`layernorm`], [`rmsnorm`], [`flash_attention`].
//! - shape: [`Tensor::transpose`], [`Tensor::T`], [`Tensor::reshape`], [`concat`],
//!   [`Tensor::index`].
//! - [`allclose`], [`max_abs_diff`]; [`Tensor::tolist`], [`Tensor::item`], [`Tensor::repr`]
//!   (also `Display`).
//! - shape/dtype inference without data: [`infer_binary`], [`infer_unary`], [`infer_matmul`],
//!   [`infer_reduce`].
//!
//! # Choices where SPEC.md and docs/decisions.md are silent
//! - A cast to fp8 saturates ±inf as well as large finite values (PTX `cvt.satfinite`).
//! - `Tensor::from_nested` without a dtype: fp32 if any float, bool if every element is a bool,
//!   else int64.
//! - `neg abs relu` of a bool tensor give int64; `maximum`/`minimum` of bools stay bool.
//! - An int tensor with an int scalar computes in int64 and wraps to the tensor's width
//!   (`int8 + 300`); int `**` with a negative exponent is E0500 (NumPy's error).
//! - `sum` of an empty axis is 0, `mean` is NaN, `max`/`min` are E0500 (no identity).
//! - `softmax` of a row holding NaN or +inf, or only -inf, is NaN (as NumPy's formula gives).
//! - `matmul(accum_dtype=tf32)` rounds the operands' mantissas like a tf32 input; an int
//!   `accum_dtype` with float inputs is E0201. `allclose`: NaN is never close, equal infinities are.
//! - An axis out of range, a bad permutation or index, and a zero slice step are E0500.
//! - Elementwise f32 math (`exp`, `tanh`, ...) uses the platform libm; `softmax` uses its own
//!   vectorised exp (about 1 ulp), the same bits on every x86-64 CPU.
//!
//! Every materialisation is checked against `TESSERA_MAX_BYTES` ([`memory::max_bytes`]) before
//! allocating: too large is E0700, never an out-of-memory abort.
//!
//! # Layers
//!
//! A module imports only modules below it (`tests/module_layers.rs` checks it): `dtype`,
//! `error`, `isa` and the device bindings `cuda`, `vulkan`, `tensor_map` < `cast`, `shape` <
//! `emu`, `interp`,
//! `memory`, `rng`, `storage` < `tensor` < `device` < `print`, `ops` < `npy`,
//! `safetensors_file`, `mesh`. Python's float `repr`, which storage's cast errors and printing
//! both use, is [`dtype::python_float`].

// No panics reachable from user input: no unwrap/expect/panic outside tests.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::todo,
        clippy::unimplemented
    )
)]

pub mod cast;
pub mod cuda;
pub mod device;
pub mod dtype;
pub mod emu;
pub mod error;
pub mod interp;
pub mod isa;
pub mod memory;
pub mod mesh;
pub mod npy;
pub mod ops;
pub mod print;
pub mod rng;
pub mod safetensors_file;
pub mod shape;
mod storage;
pub mod tensor;
pub mod tensor_map;
pub mod vulkan;

pub use dtype::{DType, Scalar, ScalarKind, ALL_DTYPES};
pub use error::{Code, Result, RuntimeError};
pub use ops::attention::{attention_grad, attention_lse, AttnWrt};
pub use ops::compare::{allclose, max_abs_diff};
pub use ops::complex::{angle, complex, conj, imag, real};
pub use ops::conv::{conv, conv_with, plan as conv_plan, ConvAlgorithm, ConvPadding, ConvSpec};
pub use ops::elementwise::{
    binary, infer_binary, infer_unary, promote_operands, unary, where_, BinaryOp, Operand,
    OperandType, UnaryOp,
};
pub use ops::fft::{
    double_interior_bins, embed as fft_embed, fft, fft2d, ifft, irfft, rfft, spectral_mul,
    Kind2 as Fft2Kind, Norm as FftNorm,
};
pub use ops::matmul::{infer_matmul, matmul};
pub use ops::nn::{flash_attention, layernorm, rmsnorm, row_fn, softmax};
pub use ops::order::{arg_extreme, cumsum, scatter_add, sort, stack, take, take_at, topk};
pub use ops::reduce::{infer_reduce, reduce, ReduceOp};
pub use ops::shape_ops::{concat, IndexItem};
pub use tensor::{Nested, Tensor};

#[cfg(test)]
mod tests;
