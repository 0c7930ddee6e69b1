//! How each field type of an op is spelled in the text form ([`Field`]): enums by their
//! names in [`super::names`], a vector width as `vN` (none for 1), a flag by its field's
//! name, integers as attributes.

use super::names::*;
use crate::scalar::{BinOp, CacheOp, Cmp, MmaKind, Pack, Rnd, SReg, ShflMode, Ty, UnOp, Unpack};
use crate::tile::ir::MathFn;
use crate::tile::opdef::Field;

/// `Field` for an enum spelled by a `name` function and parsed by a `parse` function.
macro_rules! named {
    ($($t:ty => $name:expr, $parse:expr;)*) => {$(
        impl Field for $t {
            fn word(&self, _: &str) -> String {
                ($name)(*self).to_string()
            }
            fn from_word(_: &str, w: &str) -> Option<Self> {
                ($parse)(w)
            }
        }
    )*};
}

named! {
    Ty => Ty::name, parse_ty;
    UnOp => unop_name, parse_unop;
    BinOp => binop_name, parse_binop;
    Cmp => cmp_name, parse_cmp;
    Rnd => rnd_name, parse_rnd;
    Pack => pack_name, parse_pack;
    Unpack => unpack_name, parse_unpack;
    MathFn => math_name, parse_math;
    CacheOp => cache_name, parse_cache;
    MmaKind => mma_name, parse_mma;
    ShflMode => shfl_name, parse_shfl;
    SReg => sreg_name, parse_sreg;
}

/// In a mnemonic, a vector width: `vN` for `N > 1`, nothing for 1; as an attribute, an
/// integer.
impl Field for u8 {
    fn word(&self, _: &str) -> String {
        if *self == 1 {
            String::new()
        } else {
            format!("v{self}")
        }
    }
    fn from_word(_: &str, w: &str) -> Option<Self> {
        if w.is_empty() {
            return Some(1);
        }
        let n: u8 = w.strip_prefix('v')?.parse().ok()?;
        (n > 1 && w == format!("v{n}")).then_some(n)
    }
    fn int(&self) -> Option<i64> {
        Some(i64::from(*self))
    }
    fn from_int(i: i64) -> Option<Self> {
        u8::try_from(i).ok()
    }
}

/// A flag: spelled by its field's name when set.
impl Field for bool {
    fn word(&self, name: &str) -> String {
        if *self {
            name.to_string()
        } else {
            String::new()
        }
    }
    fn from_word(name: &str, w: &str) -> Option<Self> {
        match w {
            "" => Some(false),
            _ => (w == name).then_some(true),
        }
    }
}

macro_rules! int {
    ($($t:ty),*) => {$(
        impl Field for $t {
            fn word(&self, _: &str) -> String {
                self.to_string()
            }
            fn from_word(_: &str, w: &str) -> Option<Self> {
                w.parse().ok()
            }
            fn int(&self) -> Option<i64> {
                Some(i64::from(*self))
            }
            fn from_int(i: i64) -> Option<Self> {
                <$t>::try_from(i).ok()
            }
        }
    )*};
}

int!(u32, i32);

/// An optional field: nothing when absent.
impl<T: Field> Field for Option<T> {
    fn word(&self, name: &str) -> String {
        self.as_ref().map(|x| x.word(name)).unwrap_or_default()
    }
    fn from_word(name: &str, w: &str) -> Option<Self> {
        if w.is_empty() {
            Some(None)
        } else {
            T::from_word(name, w).map(Some)
        }
    }
    fn int(&self) -> Option<i64> {
        self.as_ref().and_then(T::int)
    }
    fn from_int(i: i64) -> Option<Self> {
        T::from_int(i).map(Some)
    }
}
