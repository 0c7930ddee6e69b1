//! TMA tensor maps: what `cuTensorMapEncodeTiled` takes to describe a tensor to the bulk
//! tensor copies (`cp.async.bulk.tensor`), checked as the driver checks it. The emulator reads
//! this struct (`emu::Arg::TensorMap`); on a GPU, [`TensorMap::encode`] turns it into the
//! 128-byte `CUtensorMap` passed by value as a kernel parameter
//! (`.param .align 64 .b8 name[128]`).
//!
//! Dimensions are in the driver's order, innermost (contiguous) first: `dims[0]` elements
//! are adjacent, `strides[i]` is the byte distance between consecutive indices of dimension
//! `i + 1`. Interleave is none, every element stride 1, the L2 promotion none, and elements
//! outside the tensor read as zero (no NaN fill).

use crate::DType;

/// How a box is laid out in shared memory: the 16-byte chunks of each `bytes`-wide row are
/// permuted by XORing address bits 4.. with bits 7.. (CuTe's `Swizzle<1|2|3, 4, 3>`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Swizzle {
    None,
    B32,
    B64,
    B128,
}

impl Swizzle {
    /// From its span in bytes (0: none).
    pub fn from_bytes(b: u32) -> Option<Swizzle> {
        Some(match b {
            0 => Swizzle::None,
            32 => Swizzle::B32,
            64 => Swizzle::B64,
            128 => Swizzle::B128,
            _ => return None,
        })
    }

    /// Its span in bytes (0: none).
    pub fn bytes(self) -> u32 {
        match self {
            Swizzle::None => 0,
            Swizzle::B32 => 32,
            Swizzle::B64 => 64,
            Swizzle::B128 => 128,
        }
    }

    /// The shared address of byte `addr` of a box written from a base aligned to the
    /// pattern's repeat (`8 × bytes`): bits 4.. XORed with bits 7.. (1, 2 or 3 bits).
    pub fn apply(self, addr: u32) -> u32 {
        let bits = match self {
            Swizzle::None => return addr,
            Swizzle::B32 => 1,
            Swizzle::B64 => 3,
            Swizzle::B128 => 7,
        };
        addr ^ (((addr >> 7) & bits) << 4)
    }
}

/// A tiled tensor map.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct TensorMap {
    /// The tensor's global address (16-byte aligned).
    pub address: u64,
    pub dtype: DType,
    /// Dimensions used, 1 to 5.
    pub rank: u8,
    /// Elements per dimension, innermost first.
    pub dims: [u64; 5],
    /// Byte strides of dimensions 1..rank (each a multiple of 16 below 2^40).
    pub strides: [u64; 4],
    /// The box one copy moves, innermost first (1 to 256 each).
    pub box_dims: [u32; 5],
    pub swizzle: Swizzle,
}

impl TensorMap {
    /// The map of a contiguous row-major tensor of `shape` (outermost first) at `address`,
    /// copied in boxes of `box_shape` (outermost first), checked ([`TensorMap::check`]).
    pub fn tiled(
        address: u64,
        dtype: DType,
        shape: &[u64],
        box_shape: &[u32],
        swizzle: Swizzle,
    ) -> Result<TensorMap, String> {
        if shape.is_empty() || shape.len() > 5 || shape.len() != box_shape.len() {
            return Err(format!(
                "a tensor map has rank 1 to 5 and one box dimension per tensor dimension \
                 (tensor rank {}, box rank {})",
                shape.len(),
                box_shape.len()
            ));
        }
        let rank = shape.len();
        let mut m = TensorMap {
            address,
            dtype,
            rank: rank as u8,
            dims: [1; 5],
            strides: [0; 4],
            box_dims: [1; 5],
            swizzle,
        };
        let mut stride = dtype.size_bytes() as u64;
        for i in 0..rank {
            m.dims[i] = shape[rank - 1 - i];
            m.box_dims[i] = box_shape[rank - 1 - i];
            if i > 0 {
                m.strides[i - 1] = stride;
            }
            stride = stride.saturating_mul(m.dims[i]);
        }
        m.check()?;
        Ok(m)
    }

    /// Bytes per element.
    pub fn elem_bytes(&self) -> u32 {
        self.dtype.size_bytes() as u32
    }

    /// Bytes one box moves (the transaction count a load completes on its mbarrier).
    pub fn box_bytes(&self) -> u32 {
        let n: u32 = self.box_dims[..self.rank as usize].iter().product();
        n * self.elem_bytes()
    }

    /// The driver's rules for a tiled map without interleave.
    pub fn check(&self) -> Result<(), String> {
        let r = self.rank as usize;
        if !(1..=5).contains(&r) {
            return Err(format!("a tensor map has rank 1 to 5, not {r}"));
        }
        if data_type(self.dtype).is_none() {
            return Err(format!(
                "a tensor map has no {} elements",
                self.dtype.name()
            ));
        }
        if !self.address.is_multiple_of(16) {
            return Err("a tensor map's global address is 16-byte aligned".into());
        }
        for (i, &d) in self.dims[..r].iter().enumerate() {
            if d == 0 || d > 1 << 32 {
                return Err(format!(
                    "tensor map dimension {i} has {d} elements (1 to 2^32)"
                ));
            }
        }
        for (i, &s) in self.strides[..r - 1].iter().enumerate() {
            if !s.is_multiple_of(16) || s >= 1 << 40 {
                return Err(format!(
                    "tensor map stride {} is {s} bytes: a multiple of 16 below 2^40 (the \
                     innermost dimension's bytes must be a multiple of 16)",
                    i + 1
                ));
            }
        }
        for (i, &b) in self.box_dims[..r].iter().enumerate() {
            if b == 0 || b > 256 {
                return Err(format!("tensor map box dimension {i} is {b} (1 to 256)"));
            }
        }
        let inner = self.box_dims[0] * self.elem_bytes();
        if !inner.is_multiple_of(16) {
            return Err(format!(
                "the box's innermost dimension is {inner} bytes: a multiple of 16"
            ));
        }
        let span = self.swizzle.bytes();
        if span != 0 && inner > span {
            return Err(format!(
                "the box's innermost dimension is {inner} bytes, wider than its {span}-byte swizzle"
            ));
        }
        Ok(())
    }

    /// The 128-byte `CUtensorMap` the driver encodes for the map, with the tensor at device
    /// address `address` instead of [`TensorMap::address`] (the emulator's pointer).
    ///
    /// # Safety
    /// The CUDA driver library must have been loaded (a `cuda` device opened): cudarc's
    /// dynamically loaded entry points abort the process otherwise.
    pub unsafe fn encode(&self, address: u64) -> Result<[u64; 16], String> {
        use cudarc::driver::sys;
        self.check()?;
        let r = self.rank as usize;
        let dtype = data_type(self.dtype).ok_or("no such element type")?;
        let swizzle = match self.swizzle {
            Swizzle::None => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
            Swizzle::B32 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
            Swizzle::B64 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
            Swizzle::B128 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
        };
        let element_strides = [1u32; 5];
        let mut out = sys::CUtensorMap { opaque: [0; 16] };
        // SAFETY: the arrays outlive the call and hold `rank` (`rank - 1` strides) entries;
        // the caller loaded the driver.
        let res = unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut out,
                dtype,
                r as u32,
                address as *mut std::ffi::c_void,
                self.dims.as_ptr(),
                self.strides.as_ptr(),
                self.box_dims.as_ptr(),
                element_strides.as_ptr(),
                sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzle,
                sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_NONE,
                sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        };
        match res {
            sys::CUresult::CUDA_SUCCESS => Ok(out.opaque),
            e => Err(format!("cuTensorMapEncodeTiled failed: {e:?}")),
        }
    }
}

/// The driver's element type of a dtype (`None`: a tensor map cannot name it).
fn data_type(d: DType) -> Option<cudarc::driver::sys::CUtensorMapDataType> {
    use cudarc::driver::sys::CUtensorMapDataType as T;
    Some(match d {
        DType::F64 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
        DType::F32 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        DType::TF32 => T::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32,
        DType::F16 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        DType::BF16 => T::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        DType::F8E4M3 | DType::F8E5M2 | DType::I8 | DType::Bool => T::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        DType::I32 => T::CU_TENSOR_MAP_DATA_TYPE_INT32,
        DType::I64 => T::CU_TENSOR_MAP_DATA_TYPE_INT64,
        DType::C64 | DType::C128 => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiled_orders_dims_innermost_first_and_checks_the_driver_rules() {
        let m = TensorMap::tiled(0, DType::BF16, &[100, 72], &[64, 64], Swizzle::B128).unwrap();
        assert_eq!(
            (m.rank, m.dims[0], m.dims[1], m.strides[0]),
            (2, 72, 100, 144)
        );
        assert_eq!(m.box_bytes(), 8192);
        // 72 bf16 = 144 bytes per row is fine; 70 (140 bytes) is not a multiple of 16
        let e = TensorMap::tiled(0, DType::BF16, &[100, 70], &[64, 64], Swizzle::B128);
        assert!(e.unwrap_err().contains("multiple of 16"));
        // a 64-element bf16 row (128 bytes) is wider than a 64-byte swizzle
        let e = TensorMap::tiled(0, DType::BF16, &[64, 64], &[64, 64], Swizzle::B64);
        assert!(e.unwrap_err().contains("wider than its 64-byte swizzle"));
        let e = TensorMap::tiled(0, DType::F32, &[512], &[512], Swizzle::None);
        assert!(e.unwrap_err().contains("1 to 256"));
        assert!(TensorMap::tiled(8, DType::F32, &[16], &[16], Swizzle::None).is_err());
    }

    #[test]
    fn the_128_byte_swizzle_is_cute_swizzle_3_4_3() {
        // Swizzle<3,4,3>: bits [4,7) ^= bits [7,10); rows of 128 bytes, 8 rows per period
        for row in 0..8u32 {
            for chunk in 0..8u32 {
                let a = row * 128 + chunk * 16 + 5;
                assert_eq!(Swizzle::B128.apply(a), row * 128 + ((chunk ^ row) * 16) + 5);
            }
        }
        assert_eq!(Swizzle::B64.apply(7 * 128 + 16), 7 * 128 + 16 * (1 ^ 3));
        assert_eq!(Swizzle::B32.apply(3 * 128), 3 * 128 + 16);
        assert_eq!(Swizzle::None.apply(1000), 1000);
    }
}
