#!/usr/bin/env python3
"""Writes the .safetensors files tests/safetensors_files.rs loads, with the `safetensors`
Python package (raw little-endian bytes; bf16 and fp8 through ml_dtypes):
  hf_mixed.safetensors    one tensor of each dtype Tessera reads, values listed in the test
  hf_complex.safetensors  a C64 tensor (Tessera's c64)
Run from the repository root: .venv/bin/python tests/data/make_safetensors.py"""

import ml_dtypes
import numpy as np
import safetensors


KEEP = []  # the arrays whose memory the specs point at


def entry(arr):
    arr = np.ascontiguousarray(arr)
    KEEP.append(arr)
    return safetensors.TensorSpec(dtype=arr.dtype.name, shape=list(arr.shape), data_ptr=arr.ctypes.data,
                                  data_len=arr.nbytes)


mixed = {
    "a_bf16": entry(np.array([[1.0, -2.5, 3.140625], [0.0078125, -0.0, 65280.0]],
                                     dtype=ml_dtypes.bfloat16)),
    "b_e4m3": entry(np.array([448.0, -0.001953125, 1.125], dtype=ml_dtypes.float8_e4m3fn)),
    "c_e5m2": entry(np.array([57344.0, -1.5e-05, 3.0], dtype=ml_dtypes.float8_e5m2)),
    "d_u8": entry(np.array([0, 7, 255], dtype=np.uint8)),
    "e_i16": entry(np.array([-32768, 5, 32767], dtype=np.int16)),
    "f_u32": entry(np.array([4294967295, 1], dtype=np.uint32)),
    "g_f64": entry(np.array([0.1, -1e300], dtype=np.float64)),
    "h_bool": entry(np.array([True, False, True], dtype=np.bool_)),
    "i_f16": entry(np.array([[65504.0], [-6.1035156e-05]], dtype=np.float16)),
}
with open("tests/data/hf_mixed.safetensors", "wb") as f:
    f.write(safetensors.serialize(mixed))
with open("tests/data/hf_complex.safetensors", "wb") as f:
    f.write(safetensors.serialize({"z": entry(np.array([1 + 2j], dtype=np.complex64))}))
