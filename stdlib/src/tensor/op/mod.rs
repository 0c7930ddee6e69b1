//! The `op` module: tensor creation, elementwise ops, matmul, reductions, normalisations,
//! shape ops, attention, comparisons, and the dtype constants.

use crate::tensor::dtype_value;
use tessera_lang::eval::{Module, Value};
use tessera_runtime::{BinaryOp, DType, ALL_DTYPES};

pub(crate) mod eager;
pub mod losses;
pub mod random;
pub mod table;

/// Builds the `op` module.
pub fn module() -> Module {
    let m = Module::new("op", "tensor operations");
    for row in table::rows() {
        if let Some(f) = table::function(row.name) {
            m.set(row.name, f);
        }
    }
    random::install(&m);
    losses::install(&m);
    for d in ALL_DTYPES {
        m.set(d.name(), dtype_value(d));
    }
    for (alias, d) in [
        ("float64", DType::F64),
        ("float32", DType::F32),
        ("float16", DType::F16),
        ("bfloat16", DType::BF16),
        ("f64", DType::F64),
        ("f32", DType::F32),
        ("f16", DType::F16),
        ("complex64", DType::C64),
        ("complex128", DType::C128),
        ("float8_e4m3fn", DType::F8E4M3),
        ("float8_e5m2", DType::F8E5M2),
    ] {
        m.set(alias, dtype_value(d));
    }
    m
}

/// The binary op bound as `op.<name>`, if any.
pub fn binary_op(name: &str) -> Option<BinaryOp> {
    BinaryOp::function(name)
}

/// The native function `op.<name>`: eager, traced or sharded by its arguments (see [`table`]).
pub fn function(name: &str) -> Option<Value> {
    table::function(name)
}
