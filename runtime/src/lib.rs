//! Tensors, dtypes and CPU reference ops.
