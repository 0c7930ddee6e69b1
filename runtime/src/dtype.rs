//! Dtypes and Python scalars: the compiler's one definition ([`tessera_compiler::dtype`]).

pub use tessera_compiler::dtype::{DType, Scalar, ScalarKind, ALL_DTYPES};
