//! How a Tile IR op is declared: [`tile_ops!`] takes one row per op (its variant and fields,
//! its mnemonic, its operand syntax and its signature check) and generates the [`OpKind`]
//! enum with everything the text parser, the printer and the checker read from it. The rows
//! themselves are in [`super::ops`].
//!
//! A row, in the manner of MLIR's ODS:
//!
//! ```text
//! /// doc
//! Name { field: Type [= default], … } = "mnemonic.{field}", Syntax, |c| signature check;
//! ```
//!
//! - The mnemonic (after `tile.`) is dot-separated words; `{field}` is the field's spelling
//!   ([`Field::word`]), left out with its dot when empty (`cvt.{rnd}.{sat}.{to}.{from}` is
//!   `cvt.f32.f16` without a rounding mode or `.sat`). A flag (`bool`) is spelled by its name.
//! - Fields the mnemonic does not name are attributes, printed as `{name = int}` (left out
//!   when equal to the row's default). Under [`Syntax::Reg`] the op's one field is written
//!   where the operands go instead (`tile.special %tid.x`).
//! - The check is an expression over `c` (a [`Ctx`] of the op) and the variant's fields
//!   (bound by reference), returning `Result<(), CheckError>`.
//!
//! [`OpKind`]: super::ir::OpKind
//! [`Ctx`]: super::check::types::Ctx

/// How an op's operands are written after its mnemonic.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Syntax {
    /// `a, b, …` (possibly none).
    List,
    /// `%tid.x`: the op's one field, a special register, in the operands' place.
    Reg,
    /// `view[index] [mask %p] [else (d, …)]`.
    LoadGlobal,
    /// `view[index], (v, …) [mask m, …]`.
    StoreGlobal,
    /// `addr [mask %p] [else (d, …)]`.
    LoadAt,
    /// `addr, (v, …) [mask m, …]`.
    StoreAt,
    /// `view[index], a, …`.
    IndexedList,
    /// `buffer[i, j, …]`.
    Subscript,
    /// `dst, view[index] [src_bytes s] [mask m, …]`.
    CopyAsync,
    /// `tile.for`/`tile.if`: written and read with their regions by the structured-op
    /// parts of the parser and printer.
    Structured,
}

/// A field of an op: its spelling as a word of the mnemonic and as an attribute's integer.
pub trait Field: Sized {
    /// Its word in the mnemonic (`f32`, `rn`, `v4`); empty leaves it out. `name` is the
    /// field's name (a flag is spelled by it).
    fn word(&self, name: &str) -> String;
    /// The inverse of [`Field::word`].
    fn from_word(name: &str, w: &str) -> Option<Self>;
    /// Its value as an attribute (`None`: it has no integer form).
    fn int(&self) -> Option<i64> {
        None
    }
    /// The inverse of [`Field::int`] (`None`: out of range).
    fn from_int(_: i64) -> Option<Self> {
        None
    }
}

/// A field of a row: its name and, for an attribute, the default the text may leave out.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FieldDecl {
    pub name: &'static str,
    pub default: Option<i64>,
}

/// One row of the op table.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// The `OpKind` variant.
    pub variant: &'static str,
    /// The mnemonic after `tile.`, with `{field}` words.
    pub mnemonic: &'static str,
    pub syntax: Syntax,
    pub fields: &'static [FieldDecl],
}

/// A piece of a mnemonic.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Part {
    Lit(&'static str),
    Field(&'static str),
}

impl Row {
    /// The mnemonic's dot-separated pieces.
    pub fn parts(&self) -> impl Iterator<Item = Part> {
        self.mnemonic.split('.').map(|p| {
            match p.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                Some(f) => Part::Field(f),
                None => Part::Lit(p),
            }
        })
    }
    /// Whether the mnemonic spells field `name`.
    pub fn in_mnemonic(&self, name: &str) -> bool {
        self.parts()
            .any(|p| matches!(p, Part::Field(f) if f == name))
    }
    /// The fields written as `{name = int}`: those neither in the mnemonic nor the operands.
    pub fn attrs(&self) -> impl Iterator<Item = &'static FieldDecl> + '_ {
        let reg = self.syntax == Syntax::Reg;
        self.fields
            .iter()
            .enumerate()
            .filter(move |(i, f)| !(self.in_mnemonic(f.name) || (reg && *i == 0)))
            .map(|(_, f)| f)
    }
}

/// What the parser found for a field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Given {
    Word(String),
    Int(i64),
}

/// A field's value from what the parser found (`None`: not given or out of range).
pub fn field_from<T: Field>(name: &str, g: Option<Given>) -> Option<T> {
    match g? {
        Given::Word(w) => T::from_word(name, &w),
        Given::Int(i) => T::from_int(i),
    }
}

/// Declares the Tile IR ops: generates `OpKind`, `ROWS` and the per-op methods the text
/// form and the checker use (see the module documentation for the row syntax).
macro_rules! tile_ops {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident
        $( ( $tb:ident : $tt:ty ) )?
        $( { $( $f:ident : $ft:ty $( = $def:literal )? ),* $(,)? } )?
        = $mn:literal, $syn:ident, |$c:ident| $check:expr;
    )*) => {
        /// What an op does. Operands and results are listed per variant as
        /// `(operands) -> results`; `[mask]` is an optional trailing predicate. Declared by
        /// the table in `tile/ops.rs`.
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub enum OpKind {
            $( $(#[doc = $doc])* $name $( ($tt) )? $( { $( $f: $ft ),* } )?, )*
        }

        /// Every op's row, in declaration order.
        pub const ROWS: &[Row] = &[$(
            Row {
                variant: stringify!($name),
                mnemonic: $mn,
                syntax: Syntax::$syn,
                fields: &[
                    $( FieldDecl { name: stringify!($tb), default: None }, )?
                    $( $( FieldDecl {
                        name: stringify!($f),
                        default: tile_ops!(@default $($def)?),
                    }, )* )?
                ],
            },
        )*];

        impl OpKind {
            /// The op's row in the table.
            pub fn row(&self) -> &'static Row {
                let mut i = 0usize;
                $(
                    if matches!(self, OpKind::$name { .. }) {
                        return &ROWS[i];
                    }
                    i += 1;
                )*
                let _ = i;
                &ROWS[0]
            }

            /// The spelling of field `field` in the mnemonic (`None`: no such field).
            #[allow(unused_variables)]
            pub fn field_word(&self, field: &str) -> Option<String> {
                match self {$(
                    OpKind::$name $( ($tb) )? $( { $( $f ),* } )? => {
                        $( if field == stringify!($tb) {
                            return Some(Field::word($tb, field));
                        } )?
                        $( $( if field == stringify!($f) {
                            return Some(Field::word($f, field));
                        } )* )?
                        None
                    }
                )*}
            }

            /// The integer value of attribute `field` (`None`: no such field or no integer).
            #[allow(unused_variables)]
            pub fn field_int(&self, field: &str) -> Option<i64> {
                match self {$(
                    OpKind::$name $( ($tb) )? $( { $( $f ),* } )? => {
                        $( if field == stringify!($tb) {
                            return Field::int($tb);
                        } )?
                        $( $( if field == stringify!($f) {
                            return Field::int($f);
                        } )* )?
                        None
                    }
                )*}
            }

            /// Whether `w` spells field `field` of `variant`.
            #[allow(unused_variables)]
            pub fn word_ok(variant: &str, field: &str, w: &str) -> bool {
                $( if variant == stringify!($name) {
                    $( if field == stringify!($tb) {
                        return <$tt as Field>::from_word(field, w).is_some();
                    } )?
                    $( $( if field == stringify!($f) {
                        return <$ft as Field>::from_word(field, w).is_some();
                    } )* )?
                    return false;
                } )*
                false
            }

            /// The op of `variant` with each field from `get` (`Err`: the first field that
            /// is missing or out of range).
            #[allow(unused_variables)]
            pub fn build(
                variant: &str,
                get: &mut dyn FnMut(&'static str) -> Option<Given>,
            ) -> Result<OpKind, &'static str> {
                $( if variant == stringify!($name) {
                    return Ok(OpKind::$name
                        $( ( field_from::<$tt>(stringify!($tb), get(stringify!($tb)))
                            .ok_or(stringify!($tb))? ) )?
                        $( { $( $f: field_from::<$ft>(stringify!($f), get(stringify!($f)))
                            .ok_or(stringify!($f))?, )* } )?
                    );
                } )*
                Err("")
            }

            /// Checks the op's operand and result types (its row's check).
            #[allow(unused_variables)]
            pub(crate) fn check_signature(&self, c: &Ctx<'_>) -> Result<(), CheckError> {
                match self {$(
                    OpKind::$name $( ($tb) )? $( { $( $f ),* } )? => {
                        let $c = c;
                        $check
                    }
                )*}
            }
        }
    };
    (@default) => { None };
    (@default $d:literal) => { Some($d) };
}

pub(crate) use tile_ops;
