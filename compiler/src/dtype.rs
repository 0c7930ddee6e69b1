//! The one definition of dtypes, Python scalars and type promotion (SPEC §4, docs/decisions.md
//! "Dtypes and promotion"), used by Graph IR, the lowering, the runtime's tensors and eager
//! ops, and the host bindings alike.

use std::fmt;

/// The element types of SPEC §4.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    F64,
    F32,
    /// fp32 storage with the mantissa rounded to 10 bits.
    TF32,
    F16,
    BF16,
    F8E4M3,
    F8E5M2,
    I64,
    I32,
    I8,
    Bool,
    /// complex64: two fp32 (real, imaginary).
    C64,
    /// complex128: two fp64 (real, imaginary).
    C128,
}

/// Every dtype, in canonical order.
pub const ALL_DTYPES: [DType; 13] = [
    DType::F64,
    DType::F32,
    DType::TF32,
    DType::F16,
    DType::BF16,
    DType::F8E4M3,
    DType::F8E5M2,
    DType::I64,
    DType::I32,
    DType::I8,
    DType::Bool,
    DType::C64,
    DType::C128,
];

/// The kind of a Python scalar operand.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ScalarKind {
    Int,
    Float,
    Bool,
}

/// A Python scalar mixed with tensors (`x * 2.0`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Scalar {
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl Scalar {
    pub fn kind(self) -> ScalarKind {
        match self {
            Scalar::Int(_) => ScalarKind::Int,
            Scalar::Float(_) => ScalarKind::Float,
            Scalar::Bool(_) => ScalarKind::Bool,
        }
    }

    /// The value as f64 (ints may round above 2^53).
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
            Scalar::Bool(b) => f64::from(u8::from(b)),
        }
    }

    /// The dtype a lone scalar has when it must become a tensor: int64, fp32 or bool.
    pub fn default_dtype(self) -> DType {
        match self {
            Scalar::Int(_) => DType::I64,
            Scalar::Float(_) => DType::F32,
            Scalar::Bool(_) => DType::Bool,
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(x) => write!(f, "{x:?}"),
            Scalar::Bool(true) => write!(f, "True"),
            Scalar::Bool(false) => write!(f, "False"),
        }
    }
}

impl DType {
    /// Parses a canonical name or an alias (`float32`, `f32`, `half`, `int`, `e4m3`, ...).
    pub fn parse(name: &str) -> Option<DType> {
        Some(match name {
            "fp64" | "float64" | "f64" | "double" => DType::F64,
            "fp32" | "float32" | "f32" | "float" => DType::F32,
            "tf32" => DType::TF32,
            "fp16" | "float16" | "f16" | "half" => DType::F16,
            "bf16" | "bfloat16" => DType::BF16,
            // `float8_e4m3fn` is the name of this format (no infinities, ±448) in ml_dtypes,
            // JAX and PyTorch.
            "fp8_e4m3" | "e4m3" | "float8_e4m3fn" | "float8_e4m3" => DType::F8E4M3,
            "fp8_e5m2" | "e5m2" | "float8_e5m2" => DType::F8E5M2,
            "int64" | "int" | "i64" => DType::I64,
            "int32" | "i32" => DType::I32,
            "int8" | "i8" => DType::I8,
            "bool" => DType::Bool,
            "c64" | "complex64" => DType::C64,
            "c128" | "complex128" => DType::C128,
            _ => return None,
        })
    }

    /// The canonical name (`bf16`, `fp8_e4m3`).
    pub fn name(self) -> &'static str {
        match self {
            DType::F64 => "fp64",
            DType::F32 => "fp32",
            DType::TF32 => "tf32",
            DType::F16 => "fp16",
            DType::BF16 => "bf16",
            DType::F8E4M3 => "fp8_e4m3",
            DType::F8E5M2 => "fp8_e5m2",
            DType::I64 => "int64",
            DType::I32 => "int32",
            DType::I8 => "int8",
            DType::Bool => "bool",
            DType::C64 => "c64",
            DType::C128 => "c128",
        }
    }

    /// Bytes per element as stored (tf32 is stored as fp32).
    pub fn size_bytes(self) -> usize {
        match self {
            DType::C128 => 16,
            DType::F64 | DType::I64 | DType::C64 => 8,
            DType::F32 | DType::TF32 | DType::I32 => 4,
            DType::F16 | DType::BF16 => 2,
            DType::F8E4M3 | DType::F8E5M2 | DType::I8 | DType::Bool => 1,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(
            self,
            DType::F64
                | DType::F32
                | DType::TF32
                | DType::F16
                | DType::BF16
                | DType::F8E4M3
                | DType::F8E5M2
        )
    }

    /// int64, int32 or int8 (not bool).
    pub fn is_int(self) -> bool {
        matches!(self, DType::I64 | DType::I32 | DType::I8)
    }

    pub fn is_bool(self) -> bool {
        self == DType::Bool
    }

    /// c64 or c128.
    pub fn is_complex(self) -> bool {
        matches!(self, DType::C64 | DType::C128)
    }

    /// The complex dtype whose parts have this float dtype's precision: fp64 gives c128,
    /// every other dtype c64 (c64 and c128 are their own).
    pub fn to_complex(self) -> DType {
        match self {
            DType::F64 | DType::C128 => DType::C128,
            _ => DType::C64,
        }
    }

    /// The dtype of a complex dtype's parts (fp32 for c64, fp64 for c128); other dtypes are
    /// their own.
    pub fn real_part(self) -> DType {
        match self {
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            d => d,
        }
    }

    /// Significand precision in bits, including the implicit bit (floats only).
    pub fn precision(self) -> Option<u32> {
        match self {
            DType::F64 => Some(53),
            DType::F32 => Some(24),
            DType::TF32 => Some(11),
            DType::F16 => Some(11),
            DType::BF16 => Some(8),
            DType::F8E4M3 => Some(4),
            DType::F8E5M2 => Some(3),
            DType::I64 | DType::I32 | DType::I8 | DType::Bool | DType::C64 | DType::C128 => None,
        }
    }

    /// Rank in the float lattice (fp8 0, 16-bit 1, tf32 2, fp32 3, fp64 4).
    fn float_rank(self) -> u8 {
        match self {
            DType::F8E4M3 | DType::F8E5M2 => 0,
            DType::F16 | DType::BF16 => 1,
            DType::TF32 => 2,
            DType::F32 => 3,
            DType::F64 => 4,
            DType::I64 | DType::I32 | DType::I8 | DType::Bool | DType::C64 | DType::C128 => 0,
        }
    }

    /// Rank in the int lattice (bool 0, int8 1, int32 2, int64 3).
    fn int_rank(self) -> u8 {
        match self {
            DType::Bool => 0,
            DType::I8 => 1,
            DType::I32 => 2,
            DType::I64 => 3,
            _ => 3,
        }
    }

    /// The promoted dtype of two tensor operands (docs/decisions.md lattice).
    pub fn promote(a: DType, b: DType) -> DType {
        if a == b {
            return a;
        }
        if a.is_complex() || b.is_complex() {
            // NumPy's: complex wins; c128 when either side is c128 or fp64 (the parts keep
            // the wider precision), else c64 (ints, bools and floats up to fp32 with c64).
            let wide = |d: DType| matches!(d, DType::C128 | DType::F64);
            return if wide(a) || wide(b) {
                DType::C128
            } else {
                DType::C64
            };
        }
        match (a.is_float(), b.is_float()) {
            (true, false) => a,
            (false, true) => b,
            (false, false) => {
                if a.int_rank() >= b.int_rank() {
                    a
                } else {
                    b
                }
            }
            (true, true) => {
                let (ra, rb) = (a.float_rank(), b.float_rank());
                if ra != rb {
                    return if ra > rb { a } else { b };
                }
                // Same rank, different types: the two fp8s give fp16, fp16 with bf16 gives fp32.
                match ra {
                    0 => DType::F16,
                    _ => DType::F32,
                }
            }
        }
    }

    /// The dtype of `tensor ⊕ python_scalar`: a scalar never widens a tensor of its own kind.
    pub fn promote_scalar(t: DType, s: ScalarKind) -> DType {
        match s {
            ScalarKind::Float => {
                if t.is_float() || t.is_complex() {
                    t
                } else {
                    DType::F32
                }
            }
            ScalarKind::Int => {
                if t == DType::Bool {
                    DType::I64
                } else {
                    t
                }
            }
            ScalarKind::Bool => t,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DType::*;

    #[test]
    fn parse_names_and_aliases() {
        for d in ALL_DTYPES {
            assert_eq!(DType::parse(d.name()), Some(d));
        }
        let aliases = [
            ("float64", F64),
            ("f64", F64),
            ("double", F64),
            ("float32", F32),
            ("f32", F32),
            ("float", F32),
            ("float16", F16),
            ("f16", F16),
            ("half", F16),
            ("bfloat16", BF16),
            ("int", I64),
            ("i64", I64),
            ("i32", I32),
            ("i8", I8),
            ("e4m3", F8E4M3),
            ("e5m2", F8E5M2),
            ("float8_e4m3fn", F8E4M3),
            ("float8_e5m2", F8E5M2),
        ];
        for (s, d) in aliases {
            assert_eq!(DType::parse(s), Some(d), "{s}");
        }
        assert_eq!(DType::parse("fp128"), None);
        assert_eq!(DType::parse(""), None);
        assert_eq!(DType::parse("FP32"), None);
    }

    #[test]
    fn sizes() {
        assert_eq!(TF32.size_bytes(), 4);
        assert_eq!(BF16.size_bytes(), 2);
        assert_eq!(F8E5M2.size_bytes(), 1);
        assert_eq!(Bool.size_bytes(), 1);
        assert!(TF32.is_float() && !I8.is_float() && !Bool.is_float());
    }

    #[test]
    fn promotion_table() {
        let cases = [
            (F16, BF16, F32),
            (BF16, F16, F32),
            (F8E4M3, F8E5M2, F16),
            (F8E4M3, F16, F16),
            (F8E5M2, BF16, BF16),
            (BF16, TF32, TF32),
            (F16, TF32, TF32),
            (F8E4M3, TF32, TF32),
            (TF32, F32, F32),
            (F32, F64, F64),
            (BF16, F64, F64),
            (I64, F16, F16),
            (Bool, F8E4M3, F8E4M3),
            (I8, BF16, BF16),
            (Bool, I8, I8),
            (I8, I32, I32),
            (I32, I64, I64),
            (Bool, Bool, Bool),
            (F8E5M2, F8E5M2, F8E5M2),
        ];
        for (a, b, r) in cases {
            assert_eq!(DType::promote(a, b), r, "{a} with {b}");
            assert_eq!(DType::promote(b, a), r, "{b} with {a}");
        }
        // Commutative over the whole table.
        for a in ALL_DTYPES {
            for b in ALL_DTYPES {
                assert_eq!(DType::promote(a, b), DType::promote(b, a));
            }
        }
    }

    #[test]
    fn scalar_promotion() {
        use ScalarKind as K;
        assert_eq!(DType::promote_scalar(BF16, K::Float), BF16);
        assert_eq!(DType::promote_scalar(F8E4M3, K::Int), F8E4M3);
        assert_eq!(DType::promote_scalar(I32, K::Float), F32);
        assert_eq!(DType::promote_scalar(I8, K::Int), I8);
        assert_eq!(DType::promote_scalar(Bool, K::Int), I64);
        assert_eq!(DType::promote_scalar(Bool, K::Float), F32);
        assert_eq!(DType::promote_scalar(Bool, K::Bool), Bool);
        assert_eq!(DType::promote_scalar(I32, K::Bool), I32);
    }
}
