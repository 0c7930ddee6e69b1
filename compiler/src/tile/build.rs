//! The one way to build Tile IR: a cursor over a kernel that carries the current span and the
//! region being filled. Structured ops take closures that fill their regions.
//!
//! ```ignore
//! let mut b = Builder::new("scale", span, [4, 1, 1], [128, 1, 1]);
//! let x = b.param("x", Type::Global(DType::F32), ParamRole::Input);
//! let y = b.param("y", Type::Global(DType::F32), ParamRole::Output);
//! let n = b.param("n", Type::Scalar(Ty::U32), ParamRole::Size(512));
//! let i = b.global_thread_x();
//! let ok = b.cmp(Cmp::Lt, Ty::U32, i, n);
//! b.if_(ok, &[], |b| {
//!     let v = b.load(Ty::F32, x, i, None, &[])[0];
//!     let w = b.mul(Ty::F32, v, fimm(2.0));
//!     b.store(Ty::F32, y, i, &[w.into()], None);
//!     vec![]
//! }, |_| vec![]);
//! let kernel = b.finish();
//! ```

use super::ir::*;
use crate::graph::DType;
use crate::scalar::{
    BinOp, CacheOp, Cmp, Dim, MmaKind, Pack, Rnd, SReg, ShflMode, Ty, UnOp, Unpack,
};
use tessera_lang::Span;

/// An integer immediate.
pub fn imm(v: i64) -> Operand {
    Operand::Imm(v)
}

/// An f32 immediate.
pub fn fimm(v: f32) -> Operand {
    Operand::F32(v.to_bits())
}

/// An f64 immediate.
pub fn dimm(v: f64) -> Operand {
    Operand::F64(v.to_bits())
}

pub struct Builder {
    k: Kernel,
    /// The regions being filled, innermost last.
    stack: Vec<Region>,
    span: Span,
}

impl Builder {
    pub fn new(name: impl Into<String>, span: Span, grid: [u32; 3], block: [u32; 3]) -> Builder {
        Builder {
            k: Kernel {
                name: name.into(),
                params: vec![],
                shared: vec![],
                grid,
                block,
                values: vec![],
                ops: vec![],
                body: Region::default(),
                span,
            },
            stack: vec![Region::default()],
            span,
        }
    }

    /// Sets the span given to the ops pushed from now on.
    pub fn at(&mut self, span: Span) -> &mut Self {
        self.span = span;
        self
    }
    pub fn span(&self) -> Span {
        self.span
    }

    fn value(&mut self, ty: Type) -> Value {
        self.k.values.push(ty);
        Value(self.k.values.len() as u32 - 1)
    }

    /// The type of a value (`u32` for an unknown one).
    pub fn ty(&self, v: Value) -> Type {
        self.k.ty(v).cloned().unwrap_or(Type::Scalar(Ty::U32))
    }

    pub fn param(&mut self, name: impl Into<String>, ty: Type, role: ParamRole) -> Value {
        let value = self.value(ty);
        self.k.params.push(Param {
            name: name.into(),
            value,
            role,
        });
        value
    }

    /// Declares a shared buffer.
    pub fn shared(&mut self, name: impl Into<String>, buf: SharedBuf) -> Value {
        let value = self.value(Type::Shared(buf));
        self.k.shared.push(SharedDecl {
            name: name.into(),
            value,
        });
        value
    }

    /// Appends an op with results of `tys`; returns them.
    pub fn op(&mut self, kind: OpKind, operands: Vec<Operand>, tys: Vec<Type>) -> Vec<Value> {
        let results: Vec<Value> = tys.into_iter().map(|t| self.value(t)).collect();
        self.push(OpData {
            kind,
            operands,
            results: results.clone(),
            regions: vec![],
            span: self.span,
        });
        results
    }

    fn push(&mut self, data: OpData) -> OpId {
        let id = OpId(self.k.ops.len() as u32);
        self.k.ops.push(data);
        if let Some(r) = self.stack.last_mut() {
            r.ops.push(id);
        }
        id
    }

    fn one(&mut self, kind: OpKind, operands: Vec<Operand>, ty: Ty) -> Value {
        let v = self.value(Type::Scalar(ty));
        self.push(OpData {
            kind,
            operands,
            results: vec![v],
            regions: vec![],
            span: self.span,
        });
        v
    }

    /// The kernel as built (verify it with [`super::verify`]).
    pub fn finish(mut self) -> Kernel {
        self.k.body = self.stack.pop().unwrap_or_default();
        self.k
    }

    // ---- scalars ----

    pub fn special(&mut self, s: SReg) -> Value {
        self.one(OpKind::Special(s), vec![], Ty::U32)
    }
    pub fn tid_x(&mut self) -> Value {
        self.special(SReg::Tid(Dim::X))
    }
    pub fn mov(&mut self, ty: Ty, a: impl Into<Operand>) -> Value {
        self.one(OpKind::Mov { ty }, vec![a.into()], ty)
    }
    pub fn bitcast(&mut self, to: Ty, a: impl Into<Operand>) -> Value {
        self.one(OpKind::Bitcast { to }, vec![a.into()], to)
    }
    pub fn unary(&mut self, op: UnOp, ty: Ty, a: impl Into<Operand>) -> Value {
        self.one(OpKind::Unary { op, ty }, vec![a.into()], ty)
    }
    pub fn bin(
        &mut self,
        op: BinOp,
        ty: Ty,
        a: impl Into<Operand>,
        b: impl Into<Operand>,
    ) -> Value {
        self.one(OpKind::Binary { op, ty }, vec![a.into(), b.into()], ty)
    }
    pub fn add(&mut self, ty: Ty, a: impl Into<Operand>, b: impl Into<Operand>) -> Value {
        self.bin(BinOp::Add, ty, a, b)
    }
    pub fn sub(&mut self, ty: Ty, a: impl Into<Operand>, b: impl Into<Operand>) -> Value {
        self.bin(BinOp::Sub, ty, a, b)
    }
    pub fn mul(&mut self, ty: Ty, a: impl Into<Operand>, b: impl Into<Operand>) -> Value {
        self.bin(BinOp::Mul, ty, a, b)
    }
    pub fn fma(
        &mut self,
        ty: Ty,
        a: impl Into<Operand>,
        b: impl Into<Operand>,
        c: impl Into<Operand>,
    ) -> Value {
        self.one(OpKind::Fma { ty }, vec![a.into(), b.into(), c.into()], ty)
    }
    pub fn mul_wide(&mut self, ty: Ty, a: impl Into<Operand>, b: impl Into<Operand>) -> Value {
        let r = if ty == Ty::S32 { Ty::S64 } else { Ty::U64 };
        self.one(OpKind::MulWide { ty }, vec![a.into(), b.into()], r)
    }
    pub fn mad_wide(
        &mut self,
        ty: Ty,
        a: impl Into<Operand>,
        b: impl Into<Operand>,
        c: impl Into<Operand>,
    ) -> Value {
        let r = if ty == Ty::S32 { Ty::S64 } else { Ty::U64 };
        self.one(
            OpKind::MadWide { ty },
            vec![a.into(), b.into(), c.into()],
            r,
        )
    }
    pub fn cmp(&mut self, cmp: Cmp, ty: Ty, a: impl Into<Operand>, b: impl Into<Operand>) -> Value {
        self.one(OpKind::Cmp { cmp, ty }, vec![a.into(), b.into()], Ty::Pred)
    }
    pub fn select(
        &mut self,
        ty: Ty,
        p: Value,
        a: impl Into<Operand>,
        b: impl Into<Operand>,
    ) -> Value {
        self.one(
            OpKind::Select { ty },
            vec![p.into(), a.into(), b.into()],
            ty,
        )
    }
    pub fn cast(&mut self, to: Ty, from: Ty, rnd: Option<Rnd>, a: impl Into<Operand>) -> Value {
        self.cast_sat(to, from, rnd, false, a)
    }
    pub fn cast_sat(
        &mut self,
        to: Ty,
        from: Ty,
        rnd: Option<Rnd>,
        sat: bool,
        a: impl Into<Operand>,
    ) -> Value {
        self.one(OpKind::Cast { to, from, rnd, sat }, vec![a.into()], to)
    }
    pub fn tf32(&mut self, a: impl Into<Operand>) -> Value {
        self.one(OpKind::Tf32, vec![a.into()], Ty::B32)
    }
    pub fn pack(&mut self, p: Pack, hi: impl Into<Operand>, lo: impl Into<Operand>) -> Value {
        let ty = match p {
            Pack::F16x2 => Ty::F16x2,
            Pack::BF16x2 => Ty::BF16x2,
            Pack::E4m3x2 | Pack::E5m2x2 => Ty::B16,
        };
        self.one(OpKind::Pack(p), vec![hi.into(), lo.into()], ty)
    }
    pub fn unpack(&mut self, u: Unpack, a: impl Into<Operand>) -> Value {
        self.one(OpKind::Unpack(u), vec![a.into()], Ty::F16x2)
    }
    pub fn math(&mut self, f: MathFn, ty: Ty, args: &[Operand]) -> Value {
        self.one(OpKind::Math { f, ty }, args.to_vec(), ty)
    }

    // ---- global memory ----

    /// `n` elements of type `ty` from element `index` of `view`; with `mask`, masked-off
    /// lanes get `defaults` (or 0).
    pub fn load(
        &mut self,
        ty: Ty,
        view: Value,
        index: impl Into<Operand>,
        mask: Option<Value>,
        defaults: &[Operand],
    ) -> Vec<Value> {
        let n = defaults.len().max(1);
        let rty = if ty == Ty::U8 { Ty::U32 } else { ty };
        self.load_n(ty, rty, n, view, index, mask, defaults)
    }
    /// [`Self::load`] of `n` elements into registers of `rty`.
    #[allow(clippy::too_many_arguments)]
    pub fn load_n(
        &mut self,
        ty: Ty,
        rty: Ty,
        n: usize,
        view: Value,
        index: impl Into<Operand>,
        mask: Option<Value>,
        defaults: &[Operand],
    ) -> Vec<Value> {
        let mut ops = vec![view.into(), index.into()];
        if let Some(m) = mask {
            ops.push(m.into());
        }
        ops.extend_from_slice(defaults);
        self.op(
            OpKind::Load { ty, n: n as u8 },
            ops,
            vec![Type::Scalar(rty); n],
        )
    }
    pub fn store(
        &mut self,
        ty: Ty,
        view: Value,
        index: impl Into<Operand>,
        values: &[Operand],
        mask: Option<Value>,
    ) {
        let mut ops = vec![view.into(), index.into()];
        ops.extend_from_slice(values);
        if let Some(m) = mask {
            ops.push(m.into());
        }
        self.op(
            OpKind::Store {
                ty,
                n: values.len() as u8,
            },
            ops,
            vec![],
        );
    }
    pub fn advance(&mut self, view: Value, count: impl Into<Operand>) -> Value {
        let ty = self.ty(view);
        self.op(OpKind::Advance, vec![view.into(), count.into()], vec![ty])[0]
    }
    pub fn red_add(&mut self, view: Value, index: impl Into<Operand>, v: impl Into<Operand>) {
        self.op(
            OpKind::RedAdd,
            vec![view.into(), index.into(), v.into()],
            vec![],
        );
    }

    // ---- shared memory ----

    pub fn shared_addr(&mut self, buf: Value) -> Value {
        self.one(OpKind::SharedAddr, vec![buf.into()], Ty::U32)
    }
    pub fn offset(
        &mut self,
        buf: Value,
        stage: impl Into<Operand>,
        row: impl Into<Operand>,
        col: impl Into<Operand>,
    ) -> Value {
        self.one(
            OpKind::Offset,
            vec![buf.into(), stage.into(), row.into(), col.into()],
            Ty::U32,
        )
    }
    pub fn load_shared(&mut self, ty: Ty, addr: Value, offset: i32, n: usize) -> Vec<Value> {
        self.op(
            OpKind::LoadShared {
                ty,
                n: n as u8,
                offset,
            },
            vec![addr.into()],
            vec![Type::Scalar(ty); n],
        )
    }
    pub fn store_shared(
        &mut self,
        ty: Ty,
        addr: Value,
        offset: i32,
        values: &[Operand],
        mask: Option<Value>,
    ) {
        let mut ops = vec![addr.into()];
        ops.extend_from_slice(values);
        if let Some(m) = mask {
            ops.push(m.into());
        }
        self.op(
            OpKind::StoreShared {
                ty,
                n: values.len() as u8,
                offset,
            },
            ops,
            vec![],
        );
    }
    #[allow(clippy::too_many_arguments)]
    pub fn copy_async(
        &mut self,
        cache: CacheOp,
        bytes: u32,
        dst: Value,
        view: Value,
        index: impl Into<Operand>,
        src_bytes: Option<Operand>,
        mask: Option<Value>,
    ) {
        let mut ops = vec![dst.into(), view.into(), index.into()];
        ops.extend(src_bytes);
        if let Some(m) = mask {
            ops.push(m.into());
        }
        let kind = OpKind::CopyAsync { cache, bytes };
        let data = OpData {
            kind,
            operands: ops,
            results: vec![],
            regions: vec![],
            span: self.span,
        };
        self.push(data);
    }
    pub fn commit(&mut self) {
        self.op(OpKind::Commit, vec![], vec![]);
    }
    pub fn wait(&mut self, n: u32) {
        self.op(OpKind::Wait { n }, vec![], vec![]);
    }
    pub fn barrier(&mut self) {
        self.op(OpKind::Barrier, vec![], vec![]);
    }
    /// `ldmatrix.x4` at `addr` into results of `tys` (one A fragment, two B fragments or
    /// four `b32`).
    pub fn ldmatrix(&mut self, trans: bool, addr: Value, tys: Vec<Type>) -> Vec<Value> {
        self.op(OpKind::Ldmatrix { trans }, vec![addr.into()], tys)
    }

    // ---- warps and tensor cores ----

    pub fn mma(&mut self, kind: MmaKind, a: Value, b: Value, c: Value) -> Value {
        self.op(
            OpKind::Mma { kind },
            vec![a.into(), b.into(), c.into()],
            vec![Type::Frag(Frag {
                kind,
                role: Role::C,
            })],
        )[0]
    }
    pub fn frag_get(&mut self, f: Value, index: u8) -> Value {
        let ty = match self.ty(f) {
            Type::Frag(fr) => fr.reg_ty(),
            _ => Ty::B32,
        };
        self.one(OpKind::FragGet { index }, vec![f.into()], ty)
    }
    pub fn frag_make(&mut self, frag: Frag, regs: &[Operand]) -> Value {
        self.op(OpKind::FragMake, regs.to_vec(), vec![Type::Frag(frag)])[0]
    }
    pub fn shfl(
        &mut self,
        mode: ShflMode,
        src: impl Into<Operand>,
        lane: impl Into<Operand>,
        clamp: impl Into<Operand>,
    ) -> Value {
        self.one(
            OpKind::Shfl {
                mode,
                mask: 0xffff_ffff,
            },
            vec![src.into(), lane.into(), clamp.into()],
            Ty::B32,
        )
    }
    /// [`Builder::shfl`] of a value of `ty` (32 or 64 bits; a 64-bit one moves as two
    /// 32-bit halves), the result of `ty`.
    pub fn shfl_typed(
        &mut self,
        mode: ShflMode,
        ty: Ty,
        src: Value,
        lane: impl Into<Operand>,
        clamp: impl Into<Operand>,
    ) -> Value {
        let (lane, clamp) = (lane.into(), clamp.into());
        if ty.bits() != 64 {
            let r = self.shfl(mode, src, lane, clamp);
            return if ty == Ty::B32 {
                r
            } else {
                self.bitcast(ty, r)
            };
        }
        let bits = self.bitcast(Ty::B64, src);
        let lo = self.cast(Ty::U32, Ty::U64, None, bits);
        let hi = self.bin(BinOp::Shr, Ty::U64, bits, imm(32));
        let hi = self.cast(Ty::U32, Ty::U64, None, hi);
        let [lo, hi] = [lo, hi].map(|h| {
            let s = self.shfl(mode, h, lane, clamp);
            let s = self.bitcast(Ty::U32, s);
            self.cast(Ty::U64, Ty::U32, None, s)
        });
        let hi = self.bin(BinOp::Shl, Ty::B64, hi, imm(32));
        let joined = self.bin(BinOp::Or, Ty::B64, lo, hi);
        self.bitcast(ty, joined)
    }
    pub fn reduce_block(&mut self, op: BinOp, ty: Ty, v: Value, scratch: Value) -> Value {
        self.one(
            OpKind::ReduceBlock { op, ty },
            vec![v.into(), scratch.into()],
            ty,
        )
    }
    pub fn reduce_warp(&mut self, op: BinOp, ty: Ty, v: Value) -> Value {
        self.one(OpKind::ReduceWarp { op, ty }, vec![v.into()], ty)
    }

    // ---- structure ----

    /// [`Builder::for_`] with `{unroll = 1}`: the assembler keeps the loop (for loops whose
    /// unrolled iterations would each keep their loads live at once).
    pub fn for_rolled(
        &mut self,
        lb: impl Into<Operand>,
        ub: impl Into<Operand>,
        step: impl Into<Operand>,
        inits: &[Value],
        body: impl FnOnce(&mut Builder, Value, &[Value]) -> Vec<Operand>,
    ) -> Vec<Value> {
        let rs = self.for_(lb, ub, step, inits, None, body);
        let last = self.stack.last().and_then(|r| r.ops.last().copied());
        if let Some(OpKind::For { rolled, .. }) = last.map(|id| &mut self.k.ops[id.0 as usize].kind)
        {
            *rolled = true;
        }
        rs
    }

    /// A counted loop `for i in lb..ub step step` carrying `inits`; `body(b, i, carried)`
    /// returns the carried values of the next iteration. Returns the final carried values.
    pub fn for_(
        &mut self,
        lb: impl Into<Operand>,
        ub: impl Into<Operand>,
        step: impl Into<Operand>,
        inits: &[Value],
        pipeline: Option<u32>,
        body: impl FnOnce(&mut Builder, Value, &[Value]) -> Vec<Operand>,
    ) -> Vec<Value> {
        let iv = self.value(Type::Scalar(Ty::U32));
        let carried: Vec<Value> = inits
            .iter()
            .map(|&v| {
                let t = self.ty(v);
                self.value(t)
            })
            .collect();
        let mut args = vec![iv];
        args.extend(&carried);
        self.stack.push(Region { args, ops: vec![] });
        let ys = body(self, iv, &carried);
        self.op(OpKind::Yield, ys, vec![]);
        let region = self.stack.pop().unwrap_or_default();
        let results: Vec<Value> = inits
            .iter()
            .map(|&v| {
                let t = self.ty(v);
                self.value(t)
            })
            .collect();
        let mut operands = vec![lb.into(), ub.into(), step.into()];
        operands.extend(inits.iter().map(|&v| Operand::Value(v)));
        self.push(OpData {
            kind: OpKind::For {
                pipeline,
                rolled: false,
            },
            operands,
            results: results.clone(),
            regions: vec![region],
            span: self.span,
        });
        results
    }

    /// `if cond { then } else { els }` with results of `tys`; each closure returns its
    /// results.
    pub fn if_(
        &mut self,
        cond: Value,
        tys: &[Type],
        then: impl FnOnce(&mut Builder) -> Vec<Operand>,
        els: impl FnOnce(&mut Builder) -> Vec<Operand>,
    ) -> Vec<Value> {
        let mut regions = Vec::with_capacity(2);
        for f in [
            Box::new(then) as Box<dyn FnOnce(&mut Builder) -> Vec<Operand>>,
            Box::new(els),
        ] {
            self.stack.push(Region::default());
            let ys = f(self);
            self.op(OpKind::Yield, ys, vec![]);
            regions.push(self.stack.pop().unwrap_or_default());
        }
        let results: Vec<Value> = tys.iter().map(|t| self.value(t.clone())).collect();
        self.push(OpData {
            kind: OpKind::If,
            operands: vec![cond.into()],
            results: results.clone(),
            regions,
            span: self.span,
        });
        results
    }

    /// `tile.warpgroup_role {first, count} { body }`: `body` run by warpgroups `first ..
    /// first + count` only.
    pub fn warpgroup_role(&mut self, first: u32, count: u32, body: impl FnOnce(&mut Builder)) {
        self.stack.push(Region::default());
        body(self);
        self.op(OpKind::Yield, vec![], vec![]);
        let region = self.stack.pop().unwrap_or_default();
        self.push(OpData {
            kind: OpKind::WarpgroupRole { first, count },
            operands: vec![],
            results: vec![],
            regions: vec![region],
            span: self.span,
        });
    }

    /// `if cond { then }` without results.
    pub fn when(&mut self, cond: Value, then: impl FnOnce(&mut Builder)) {
        self.if_(
            cond,
            &[],
            |b| {
                then(b);
                vec![]
            },
            |_| vec![],
        );
    }
}

/// The fragment type of operand `role` of `kind`.
pub fn frag(kind: MmaKind, role: Role) -> Type {
    Type::Frag(Frag { kind, role })
}

/// A global view of `d`.
pub fn global(d: DType) -> Type {
    Type::Global(d)
}
