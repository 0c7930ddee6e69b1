//! CPU reference ops. Each op infers its result shape and dtype first, so abstract tensors get
//! their result without computing; values are computed only for concrete tensors.

mod assign;
pub mod attention;
pub mod cmath;
pub mod compare;
pub mod complex;
pub mod conv;
pub(crate) mod cpu_gemm;
pub mod elementwise;
pub mod fastmath;
pub mod fft;
pub(crate) mod gemm_kernels;
mod kernel;
pub mod matmul;
pub mod nn;
pub mod order;
mod real;
pub mod reduce;
pub mod shape_ops;
pub(crate) mod vmath;
