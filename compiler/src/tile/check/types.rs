//! Op signatures: operand counts and types, result counts and types, the regions of
//! `tile.for`/`tile.if` and the types of their `tile.yield`s. Runs after the op's operands
//! were found in range and in scope, and after its regions were walked (each ends in a
//! yield).
//!
//! Scalars follow PTX's operand rule ([`Ty::accepts`]); an integer immediate fits any scalar
//! slot, an f32 (f64) immediate any 32-bit (64-bit) float or bit-size slot. Optional trailing
//! operands are told apart by type: a mask is a `pred` value.

use super::{op_err, type_name, widened, CheckError};
use crate::scalar::BinOp;
use crate::scalar::{CacheOp, MmaKind, Pack, Ty, TyClass};
use crate::tile::ir::*;

mod hopper;

/// Checks the signature of op `id` (its row's check in [`crate::tile::ops`]).
pub(super) fn op(k: &Kernel, id: OpId) -> Result<(), CheckError> {
    let c = Ctx {
        k,
        id,
        d: &k.ops[id.0 as usize],
    };
    if !matches!(
        c.d.kind,
        OpKind::For { .. } | OpKind::If | OpKind::WarpgroupRole { .. }
    ) && !c.d.regions.is_empty()
    {
        return Err(
            c.err("the op has regions; only tile.for, tile.if and tile.warpgroup_role have them")
        );
    }
    c.d.kind.check_signature(&c)
}

/// The 64-bit product type of a 32-bit `ty`.
pub(crate) fn wide(ty: Ty) -> Ty {
    if ty == Ty::S32 {
        Ty::S64
    } else {
        Ty::U64
    }
}

/// The register type of a pair packed by `p`.
pub(crate) fn packed(p: Pack) -> Ty {
    match p {
        Pack::F16x2 => Ty::F16x2,
        Pack::BF16x2 => Ty::BF16x2,
        Pack::E4m3x2 | Pack::E5m2x2 => Ty::B16,
    }
}

/// The checks of one op (its row's check calls these).
pub(crate) struct Ctx<'a> {
    k: &'a Kernel,
    id: OpId,
    d: &'a OpData,
}

impl<'a> Ctx<'a> {
    fn err(&self, m: impl std::fmt::Display) -> CheckError {
        op_err(self.k, self.id, m)
    }

    fn count(&self, n: usize) -> Result<(), CheckError> {
        let have = self.d.operands.len();
        if have == n {
            Ok(())
        } else {
            Err(self.err(format!("takes {n} operands, it has {have}")))
        }
    }

    fn at_least(&self, n: usize) -> Result<(), CheckError> {
        let have = self.d.operands.len();
        if have >= n {
            Ok(())
        } else {
            Err(self.err(format!("takes at least {n} operands, it has {have}")))
        }
    }

    /// The type of operand `j`: `None` for an immediate.
    fn value_ty(&self, j: usize) -> Result<Option<&'a Type>, CheckError> {
        match self.d.operands.get(j) {
            None => Err(self.err(format!("operand {j} is missing"))),
            Some(Operand::Value(v)) => match self.k.ty(*v) {
                Some(t) => Ok(Some(t)),
                None => Err(self.err(format!("operand {j} %{} is out of range", v.0))),
            },
            Some(_) => Ok(None),
        }
    }

    /// Operand `j` in messages: its type, or "an immediate".
    fn describe(&self, j: usize) -> String {
        match self.value_ty(j) {
            Ok(Some(t)) => type_name(t),
            _ => "an immediate".into(),
        }
    }

    fn is_pred(&self, j: usize) -> bool {
        matches!(self.value_ty(j), Ok(Some(Type::Scalar(Ty::Pred))))
    }

    /// Operand `j` fits a scalar slot of type `ty`.
    fn scalar(&self, j: usize, ty: Ty) -> Result<(), CheckError> {
        let ok = match self.d.operands.get(j) {
            None => return Err(self.err(format!("operand {j} is missing"))),
            Some(Operand::Value(_)) => match self.value_ty(j)? {
                Some(Type::Scalar(t)) => *t != Ty::U8 && ty.accepts(*t),
                _ => false,
            },
            Some(Operand::Imm(_)) => true,
            Some(Operand::F32(_)) => {
                ty.bits() == 32 && matches!(ty.class(), TyClass::Float | TyClass::Bits)
            }
            Some(Operand::F64(_)) => {
                ty.bits() == 64 && matches!(ty.class(), TyClass::Float | TyClass::Bits)
            }
        };
        if ok {
            Ok(())
        } else {
            let what = match self.d.operands[j] {
                Operand::F32(_) => "an f32 immediate".to_string(),
                Operand::F64(_) => "an f64 immediate".to_string(),
                _ => self.describe(j),
            };
            Err(self.err(format!("operand {j} is {what}, the op is {}", ty.name())))
        }
    }

    fn mask(&self, j: usize) -> Result<(), CheckError> {
        if self.is_pred(j) {
            Ok(())
        } else {
            Err(self.err(format!(
                "operand {j} is {}, not a pred value",
                self.describe(j)
            )))
        }
    }

    /// Operands of `tys` and one scalar result of `res`.
    pub(crate) fn same(&self, tys: &[Ty], res: Ty) -> Result<(), CheckError> {
        self.count(tys.len())?;
        for (j, &t) in tys.iter().enumerate() {
            self.scalar(j, t)?;
        }
        self.res(&[res])
    }

    /// Scalar results of `tys` (a `u8` memory type gives `u32` registers).
    fn res(&self, tys: &[Ty]) -> Result<(), CheckError> {
        let r = &self.d.results;
        if r.len() != tys.len() {
            return Err(self.err(format!(
                "has {} results, the op gives {}",
                r.len(),
                tys.len()
            )));
        }
        for (i, (&v, &ty)) in r.iter().zip(tys).enumerate() {
            let found = self.k.ty(v);
            let ok = matches!(found, Some(Type::Scalar(t)) if *t == ty || (*t != Ty::U8 && ty.accepts(*t)));
            if !ok {
                let name = found.map_or("?".into(), type_name);
                return Err(self.err(format!(
                    "result {i} %{} is {name}, the op gives {}",
                    v.0,
                    ty.name()
                )));
            }
        }
        Ok(())
    }

    /// Results of exactly `tys`.
    fn res_types(&self, tys: &[Type]) -> Result<(), CheckError> {
        let r = &self.d.results;
        if r.len() != tys.len() {
            return Err(self.err(format!(
                "has {} results, the op gives {}",
                r.len(),
                tys.len()
            )));
        }
        for (i, (&v, ty)) in r.iter().zip(tys).enumerate() {
            if self.k.ty(v) != Some(ty) {
                let name = self.k.ty(v).map_or("?".into(), type_name);
                return Err(self.err(format!(
                    "result {i} %{} is {name}, the op gives {}",
                    v.0,
                    type_name(ty)
                )));
            }
        }
        Ok(())
    }

    fn view(&self, j: usize) -> Result<crate::graph::DType, CheckError> {
        match self.value_ty(j)? {
            Some(Type::Global(d)) => Ok(*d),
            _ => Err(self.err(format!(
                "operand {j} is {}, not a global view",
                self.describe(j)
            ))),
        }
    }

    fn buffer(&self, j: usize) -> Result<&'a SharedBuf, CheckError> {
        match self.value_ty(j)? {
            Some(Type::Shared(b)) => Ok(b),
            _ => Err(self.err(format!(
                "operand {j} is {}, not a shared buffer",
                self.describe(j)
            ))),
        }
    }

    fn frag(&self, j: usize, f: Frag) -> Result<(), CheckError> {
        match self.value_ty(j)? {
            Some(Type::Frag(g)) if *g == f => Ok(()),
            _ => Err(self.err(format!(
                "operand {j} is {}, the op takes {}",
                self.describe(j),
                type_name(&Type::Frag(f))
            ))),
        }
    }

    /// The optional `[mask][, defaults…]` from operand `from` and `n` results of `ty`.
    fn loaded(&self, from: usize, ty: Ty, n: u8) -> Result<(), CheckError> {
        if n == 0 {
            return Err(self.err("loads 0 elements"));
        }
        let rest = self.d.operands.len() - from;
        let mask = usize::from(rest > 0 && self.is_pred(from));
        let defaults = rest - mask;
        if defaults != 0 && defaults != usize::from(n) {
            return Err(self.err(format!(
                "has {defaults} defaults for {n} elements (a mask is a pred value)"
            )));
        }
        for j in from + mask..self.d.operands.len() {
            self.scalar(j, widened(ty))?;
        }
        self.res(&vec![widened(ty); usize::from(n)])
    }

    /// `n` values of `ty` from operand `from`, then an optional mask.
    fn stored(&self, from: usize, ty: Ty, n: u8) -> Result<(), CheckError> {
        let n = usize::from(n);
        let rest = self.d.operands.len() - from;
        if n == 0 || (rest != n && rest != n + 1) {
            return Err(self.err(format!(
                "stores {n} values; it has {rest} value and mask operands"
            )));
        }
        for j in from..from + n {
            self.scalar(j, widened(ty))?;
        }
        if rest == n + 1 {
            self.mask(from + n)?;
        }
        Ok(())
    }

    /// The types of the yield ending region `ri` equal `tys` (`what` names them).
    fn yields(&self, ri: usize, tys: &[&Type], what: &str) -> Result<(), CheckError> {
        let Some(&y) = self.d.regions[ri].ops.last() else {
            return Ok(());
        };
        let yd = &self.k.ops[y.0 as usize];
        let me = format!(
            "{} {}",
            super::op_name(&self.d.kind),
            super::op_ref(self.d, self.id)
        );
        if yd.operands.len() != tys.len() {
            return Err(op_err(
                self.k,
                y,
                format!(
                    "yields {} values, the {me} {what} {}",
                    yd.operands.len(),
                    tys.len()
                ),
            ));
        }
        for (j, (o, &want)) in yd.operands.iter().zip(tys).enumerate() {
            let ok = match (o, want) {
                (Operand::Value(v), _) => self.k.ty(*v) == Some(want),
                (Operand::Imm(_), Type::Scalar(_)) => true,
                (Operand::F32(_), Type::Scalar(t)) => t.bits() == 32,
                (Operand::F64(_), Type::Scalar(t)) => t.bits() == 64,
                _ => false,
            };
            if !ok {
                let found = match o {
                    Operand::Value(v) => self.k.ty(*v).map_or("?".into(), type_name),
                    _ => "an immediate".into(),
                };
                return Err(op_err(
                    self.k,
                    y,
                    format!(
                        "operand {j} is {found}, the {me} {what} {}",
                        type_name(want)
                    ),
                ));
            }
        }
        Ok(())
    }

    pub(crate) fn for_(&self) -> Result<(), CheckError> {
        self.at_least(3)?;
        for j in 0..3 {
            self.scalar(j, Ty::U32)?;
        }
        let carried = self.d.operands.len() - 3;
        let [r] = self.d.regions.as_slice() else {
            return Err(self.err(format!("has {} regions, not 1", self.d.regions.len())));
        };
        if r.args.len() != 1 + carried {
            return Err(self.err(format!(
                "the region has {} arguments, not 1 + {carried} carried values",
                r.args.len()
            )));
        }
        if self.k.ty(r.args[0]) != Some(&Type::Scalar(Ty::U32)) {
            return Err(self.err(format!(
                "the induction variable %{} is not u32",
                r.args[0].0
            )));
        }
        if self.d.results.len() != carried {
            return Err(self.err(format!(
                "has {} results for {carried} carried values",
                self.d.results.len()
            )));
        }
        let mut tys = Vec::with_capacity(carried);
        for i in 0..carried {
            let a = r.args[1 + i];
            let at = self.k.ty(a).ok_or_else(|| self.err("value out of range"))?;
            match (self.value_ty(3 + i)?, at) {
                (Some(t), _) if t == at => {}
                (None, Type::Scalar(s)) => self.scalar(3 + i, *s)?,
                _ => {
                    return Err(self.err(format!(
                        "carried value {i}: the initial value is {}, the region argument %{} is {}",
                        self.describe(3 + i),
                        a.0,
                        type_name(at)
                    )))
                }
            }
            let res = self.d.results[i];
            if self.k.ty(res) != Some(at) {
                return Err(self.err(format!(
                    "result {i} %{} is {}, the carried value is {}",
                    res.0,
                    self.k.ty(res).map_or("?".into(), type_name),
                    type_name(at)
                )));
            }
            tys.push(at);
        }
        self.yields(0, &tys, "carries")
    }

    pub(crate) fn if_(&self) -> Result<(), CheckError> {
        self.count(1)?;
        self.mask(0)?;
        if self.d.regions.len() != 2 {
            return Err(self.err(format!("has {} regions, not 2", self.d.regions.len())));
        }
        let mut tys = Vec::with_capacity(self.d.results.len());
        for &v in &self.d.results {
            tys.push(
                self.k
                    .ty(v)
                    .ok_or_else(|| self.err("result out of range"))?,
            );
        }
        for ri in 0..2 {
            if !self.d.regions[ri].args.is_empty() {
                return Err(self.err(format!("region {ri} has arguments")));
            }
            self.yields(ri, &tys, "gives")?;
        }
        Ok(())
    }
}

/// The signatures of the ops whose rows need more than [`Ctx::same`] or [`Ctx::sig`].
impl Ctx<'_> {
    /// No operands but `tys`'s scalars and scalar results of `res`.
    pub(crate) fn sig(&self, tys: &[Ty], res: &[Ty]) -> Result<(), CheckError> {
        self.count(tys.len())?;
        for (j, &t) in tys.iter().enumerate() {
            self.scalar(j, t)?;
        }
        self.res(res)
    }

    pub(crate) fn bitcast(&self, to: Ty) -> Result<(), CheckError> {
        self.count(1)?;
        if let Some(Type::Scalar(t)) = self.value_ty(0)? {
            if t.bits() != to.bits() || *t == Ty::Pred || to == Ty::Pred {
                return Err(self.err(format!(
                    "operand 0 is {}, not a {}-bit value",
                    t.name(),
                    to.bits()
                )));
            }
        } else if self.value_ty(0)?.is_some() {
            self.scalar(0, to)?;
        }
        self.res(&[to])
    }

    /// A shift's amount is `u32`.
    pub(crate) fn binary(&self, op: BinOp, ty: Ty) -> Result<(), CheckError> {
        let b = if matches!(op, BinOp::Shl | BinOp::Shr) {
            Ty::U32
        } else {
            ty
        };
        self.same(&[ty, b], ty)
    }

    pub(crate) fn select(&self, ty: Ty) -> Result<(), CheckError> {
        match self.value_ty(1)? {
            // a select of two global views of one dtype is a view (a `selp.u64` of addresses)
            Some(g @ Type::Global(_)) => {
                self.count(3)?;
                self.scalar(0, Ty::Pred)?;
                let same = self.value_ty(2)? == Some(g)
                    && self.d.results.len() == 1
                    && self.d.results.first().and_then(|&r| self.k.ty(r)) == Some(g);
                if ty != Ty::U64 || !same {
                    return Err(self.err(
                        "a select of views takes two views of one dtype, gives one, and is u64",
                    ));
                }
                Ok(())
            }
            _ => self.same(&[Ty::Pred, ty, ty], ty),
        }
    }

    pub(crate) fn cast(&self, to: Ty, from: Ty) -> Result<(), CheckError> {
        self.count(1)?;
        let half_in_b32 = matches!(from, Ty::F16 | Ty::BF16)
            && matches!(self.value_ty(0)?, Some(Type::Scalar(Ty::B32)));
        if !half_in_b32 {
            self.scalar(0, from)?;
        }
        self.res(&[to])
    }

    pub(crate) fn math(&self, f: MathFn, ty: Ty) -> Result<(), CheckError> {
        if !matches!(ty, Ty::F32 | Ty::F64) {
            return Err(self.err(format!("{f:?} of {} (math takes f32 or f64)", ty.name())));
        }
        let n = if f == MathFn::Pow { 2 } else { 1 };
        self.same(&vec![ty; n], ty)
    }

    pub(crate) fn load(&self, ty: Ty, n: u8) -> Result<(), CheckError> {
        self.at_least(2)?;
        self.view(0)?;
        self.scalar(1, Ty::U32)?;
        self.loaded(2, ty, n)
    }

    pub(crate) fn store(&self, ty: Ty, n: u8) -> Result<(), CheckError> {
        self.at_least(2)?;
        self.view(0)?;
        self.scalar(1, Ty::U32)?;
        self.stored(2, ty, n)?;
        self.res(&[])
    }

    pub(crate) fn advance(&self) -> Result<(), CheckError> {
        self.count(2)?;
        let d = self.view(0)?;
        self.scalar(1, Ty::U32)?;
        self.res_types(&[Type::Global(d)])
    }

    /// `red.add`/`atom.add` (`res`: the old value's type, or none).
    pub(crate) fn red_add(&self, res: &[Ty]) -> Result<(), CheckError> {
        self.count(3)?;
        self.view(0)?;
        self.scalar(1, Ty::U32)?;
        self.scalar(2, Ty::F32)?;
        self.res(res)
    }

    pub(crate) fn shared_addr(&self) -> Result<(), CheckError> {
        self.count(1)?;
        self.buffer(0)?;
        self.res(&[Ty::U32])
    }

    pub(crate) fn offset(&self) -> Result<(), CheckError> {
        self.count(4)?;
        let b = self.buffer(0)?;
        let r = b.shape.len();
        let lead: u64 = b.shape[..r.saturating_sub(2)]
            .iter()
            .map(|&d| u64::from(d))
            .product();
        let rows = if r >= 2 { u64::from(b.shape[r - 2]) } else { 1 };
        let cols = b.shape.last().map_or(1, |&d| u64::from(d));
        for (j, (what, dim)) in [("stage", lead), ("row", rows), ("column", cols)]
            .into_iter()
            .enumerate()
        {
            self.scalar(j + 1, Ty::U32)?;
            if let Operand::Imm(i) = self.d.operands[j + 1] {
                if i < 0 || i as u64 >= dim {
                    return Err(self.err(format!(
                        "{what} index {i} is outside the buffer's shape {:?}",
                        b.shape
                    )));
                }
            }
        }
        self.res(&[Ty::U32])
    }

    pub(crate) fn load_shared(&self, ty: Ty, n: u8) -> Result<(), CheckError> {
        self.at_least(1)?;
        self.scalar(0, Ty::U32)?;
        self.loaded(1, ty, n)
    }

    pub(crate) fn store_shared(&self, ty: Ty, n: u8) -> Result<(), CheckError> {
        self.at_least(1)?;
        self.scalar(0, Ty::U32)?;
        self.stored(1, ty, n)?;
        self.res(&[])
    }

    pub(crate) fn copy_async(&self, cache: CacheOp, bytes: u32) -> Result<(), CheckError> {
        let ok = match cache {
            CacheOp::Ca => matches!(bytes, 4 | 8 | 16),
            CacheOp::Cg => bytes == 16,
        };
        if !ok {
            return Err(self.err(format!(
                "copies {bytes} bytes; cp.async.ca copies 4, 8 or 16, .cg 16"
            )));
        }
        let n = self.d.operands.len();
        if !(3..=5).contains(&n) {
            return Err(self.err(format!(
                "takes dst, view, index[, src_bytes][, mask]: 3 to 5 operands, it has {n}"
            )));
        }
        self.scalar(0, Ty::U32)?;
        self.view(1)?;
        self.scalar(2, Ty::U32)?;
        match n {
            4 if self.is_pred(3) => {}
            4 => self.scalar(3, Ty::U32)?,
            5 => {
                self.scalar(3, Ty::U32)?;
                self.mask(4)?;
            }
            _ => {}
        }
        self.res(&[])
    }

    pub(crate) fn ldmatrix(&self) -> Result<(), CheckError> {
        self.count(1)?;
        self.scalar(0, Ty::U32)?;
        let tys: Vec<Option<&Type>> = self.d.results.iter().map(|&v| self.k.ty(v)).collect();
        let ok = match tys.as_slice() {
            [Some(Type::Frag(a))] => a.role == Role::A,
            [Some(Type::Frag(a)), Some(Type::Frag(b))] => {
                a.role == Role::B && b.role == Role::B && a.kind == b.kind
            }
            [_, _, _, _] => tys.iter().all(|t| match t {
                Some(Type::Scalar(t)) => *t != Ty::U8 && Ty::B32.accepts(*t),
                _ => false,
            }),
            _ => false,
        };
        if ok {
            Ok(())
        } else {
            let names: Vec<String> = tys
                .iter()
                .map(|t| t.map_or("?".into(), type_name))
                .collect();
            Err(self.err(format!(
                "results are [{}]; ldmatrix.x4 gives one A fragment, two B fragments or four b32",
                names.join(", ")
            )))
        }
    }

    pub(crate) fn mma(&self, kind: MmaKind) -> Result<(), CheckError> {
        self.count(3)?;
        for (j, role) in [Role::A, Role::B, Role::C].into_iter().enumerate() {
            self.frag(j, Frag { kind, role })?;
        }
        self.res_types(&[Type::Frag(Frag {
            kind,
            role: Role::C,
        })])
    }

    pub(crate) fn frag_get(&self, index: u8) -> Result<(), CheckError> {
        self.count(1)?;
        let Some(Type::Frag(f)) = self.value_ty(0)? else {
            return Err(self.err(format!("operand 0 is {}, not a fragment", self.describe(0))));
        };
        if usize::from(index) >= f.regs() {
            return Err(self.err(format!(
                "register {index} of a {:?} fragment, which has {}",
                f.role,
                f.regs()
            )));
        }
        self.res(&[f.reg_ty()])
    }

    pub(crate) fn frag_make(&self) -> Result<(), CheckError> {
        let f = match self.d.results.as_slice() {
            [v] => match self.k.ty(*v) {
                Some(Type::Frag(f)) => *f,
                _ => return Err(self.err(format!("result %{} is not a fragment", v.0))),
            },
            r => return Err(self.err(format!("has {} results, not 1", r.len()))),
        };
        self.count(f.regs())?;
        for j in 0..f.regs() {
            self.scalar(j, f.reg_ty())?;
        }
        Ok(())
    }

    pub(crate) fn reduce_block(&self, ty: Ty) -> Result<(), CheckError> {
        self.count(2)?;
        self.scalar(0, ty)?;
        let buf = self.buffer(1)?;
        let need = u64::from(self.k.threads().div_ceil(32) as u32) * u64::from(ty.bits() / 8);
        if buf.bytes() < need {
            return Err(self.err(format!(
                "its scratch buffer has {} bytes, one {} per warp needs {need}",
                buf.bytes(),
                ty.name()
            )));
        }
        self.res(&[ty])
    }
}
