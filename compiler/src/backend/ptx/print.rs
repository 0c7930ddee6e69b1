//! The PTX printer: one template per instruction ([`write_instr`], an exhaustive match) plus one
//! walk ([`print`]) that declares registers, names blocks and emits `.loc` when the source line
//! changes. Output is stable (snapshot-tested). The asynchronous copies and matrix products
//! (`cp.async`, `mbarrier`, `wgmma`) and the targets that lack them are in [`async_ops`].

mod async_ops;

use super::verify::verify;
use super::{
    BinOp, Cmp, Dim, Instr, Kernel, MmaKind, Op, Operand, Pack, ParamTy, Reg, Rnd, SReg, SharedId,
    ShflMode, Space, Target, TargetError, Terminator, Ty, UnOp, Unpack, ALL_TYS,
};
use async_ops::{hopper_only, write_cp_async, write_hopper, write_tma};
use std::collections::BTreeSet;
use std::fmt::Write;
use tessera_lang::SourceMap;

/// PTX register names: one prefix per declared type, numbered per type in register order.
pub struct RegNames {
    names: Vec<String>,
    counts: Vec<(Ty, usize)>,
}

fn prefix(ty: Ty) -> &'static str {
    match ty {
        Ty::Pred => "%p",
        Ty::B16 => "%rs",
        Ty::B32 => "%r",
        Ty::B64 => "%rd",
        Ty::U32 => "%u",
        Ty::U64 => "%ud",
        Ty::S32 => "%s",
        Ty::S64 => "%sd",
        Ty::F16 => "%h",
        Ty::F16x2 => "%hh",
        Ty::BF16 => "%bh",
        Ty::BF16x2 => "%bhh",
        Ty::F32 => "%f",
        Ty::F64 => "%fd",
        Ty::U8 => "%rc",
    }
}

/// The type a register is declared with (PTX has no `.bf16` registers: they live in `.b16`/`.b32`).
fn decl_ty(ty: Ty) -> &'static str {
    match ty {
        Ty::BF16 => "b16",
        Ty::BF16x2 => "b32",
        Ty::Pred
        | Ty::B16
        | Ty::B32
        | Ty::B64
        | Ty::U32
        | Ty::U64
        | Ty::S32
        | Ty::S64
        | Ty::F16
        | Ty::F16x2
        | Ty::F32
        | Ty::F64
        | Ty::U8 => ty.name(),
    }
}

/// The instruction type for moves, loads and stores (half types move as bits).
fn move_ty(ty: Ty) -> &'static str {
    match ty {
        Ty::F16 | Ty::BF16 => "b16",
        Ty::F16x2 | Ty::BF16x2 => "b32",
        Ty::Pred
        | Ty::B16
        | Ty::B32
        | Ty::B64
        | Ty::U32
        | Ty::U64
        | Ty::S32
        | Ty::S64
        | Ty::F32
        | Ty::F64
        | Ty::U8 => ty.name(),
    }
}

impl RegNames {
    pub fn new(k: &Kernel) -> RegNames {
        let mut next = [0usize; ALL_TYS.len()];
        let slot = |ty: Ty| ALL_TYS.iter().position(|t| *t == ty).unwrap_or(0);
        let names = k
            .regs
            .iter()
            .map(|ty| {
                let i = slot(*ty);
                let n = next[i];
                next[i] += 1;
                format!("{}{}", prefix(*ty), n)
            })
            .collect();
        let counts = ALL_TYS
            .iter()
            .zip(next)
            .filter(|(_, n)| *n > 0)
            .map(|(t, n)| (*t, n))
            .collect();
        RegNames { names, counts }
    }
    pub fn get(&self, r: Reg) -> &str {
        self.names
            .get(r.0 as usize)
            .map(String::as_str)
            .unwrap_or("%invalid")
    }
}

/// One instruction being written: the opcode, then operands separated by `, `.
struct Line<'a> {
    out: &'a mut String,
    n: &'a RegNames,
    args: usize,
}

impl Line<'_> {
    /// Appends opcode pieces (`"add.rn."`, `"f32"`).
    fn op(&mut self, parts: &[&str]) {
        for p in parts {
            self.out.push_str(p);
        }
    }
    fn sep(&mut self) {
        self.out.push_str(if self.args == 0 { " " } else { ", " });
        self.args += 1;
    }
    fn reg(&mut self, r: Reg) {
        self.sep();
        self.out.push_str(self.n.get(r));
    }
    fn opnd(&mut self, o: Operand) {
        self.sep();
        push_operand(self.out, self.n, o);
    }
    fn text(&mut self, s: &str) {
        self.sep();
        self.out.push_str(s);
    }
    fn num(&mut self, v: i64) {
        self.sep();
        let _ = write!(self.out, "{v}");
    }
    /// `[%r1]`, `[%r1+8]`, `[%r1-8]`.
    fn addr(&mut self, r: Reg, offset: i32) {
        self.sep();
        self.out.push('[');
        self.out.push_str(self.n.get(r));
        if offset != 0 {
            let _ = write!(self.out, "{offset:+}");
        }
        self.out.push(']');
    }
    /// One register, or `{%r1, %r2, …}`.
    fn regs(&mut self, regs: &[Reg]) {
        self.sep();
        if let [r] = regs {
            self.out.push_str(self.n.get(*r));
            return;
        }
        self.out.push('{');
        for (i, r) in regs.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.out.push_str(self.n.get(*r));
        }
        self.out.push('}');
    }
    /// One operand, or `{a, b, …}`.
    fn opnds(&mut self, ops: &[Operand]) {
        self.sep();
        if let [o] = ops {
            push_operand(self.out, self.n, *o);
            return;
        }
        self.out.push('{');
        for (i, o) in ops.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            push_operand(self.out, self.n, *o);
        }
        self.out.push('}');
    }
}

fn push_operand(out: &mut String, n: &RegNames, o: Operand) {
    match o {
        Operand::Reg(r) => out.push_str(n.get(r)),
        Operand::Imm(v) => {
            let _ = write!(out, "{v}");
        }
        Operand::F32(bits) => {
            let _ = write!(out, "0f{bits:08X}");
        }
        Operand::F64(bits) => {
            let _ = write!(out, "0d{bits:016X}");
        }
    }
}

fn vec_suffix(len: usize) -> &'static str {
    match len {
        2 => ".v2",
        4 => ".v4",
        _ => "",
    }
}

fn space(s: Space) -> &'static str {
    match s {
        Space::Global => "global",
        Space::Shared => "shared",
    }
}

fn sreg(s: SReg) -> &'static str {
    match s {
        SReg::Tid(Dim::X) => "%tid.x",
        SReg::Tid(Dim::Y) => "%tid.y",
        SReg::Tid(Dim::Z) => "%tid.z",
        SReg::Ntid(Dim::X) => "%ntid.x",
        SReg::Ntid(Dim::Y) => "%ntid.y",
        SReg::Ntid(Dim::Z) => "%ntid.z",
        SReg::Ctaid(Dim::X) => "%ctaid.x",
        SReg::Ctaid(Dim::Y) => "%ctaid.y",
        SReg::Ctaid(Dim::Z) => "%ctaid.z",
        SReg::Nctaid(Dim::X) => "%nctaid.x",
        SReg::Nctaid(Dim::Y) => "%nctaid.y",
        SReg::Nctaid(Dim::Z) => "%nctaid.z",
        SReg::LaneId => "%laneid",
        SReg::WarpId => "%warpid",
    }
}

fn rnd(r: Rnd) -> &'static str {
    match r {
        Rnd::Rn => ".rn",
        Rnd::Rz => ".rz",
        Rnd::Rm => ".rm",
        Rnd::Rp => ".rp",
        Rnd::Rni => ".rni",
        Rnd::Rzi => ".rzi",
        Rnd::Rmi => ".rmi",
        Rnd::Rpi => ".rpi",
    }
}

fn cmp(c: Cmp) -> &'static str {
    match c {
        Cmp::Eq => "eq",
        Cmp::Ne => "ne",
        Cmp::Lt => "lt",
        Cmp::Le => "le",
        Cmp::Gt => "gt",
        Cmp::Ge => "ge",
        Cmp::Nan => "nan",
    }
}

/// The template table: writes each op's opcode (with its modifiers) and its operands.
fn float(ty: Ty) -> bool {
    matches!(ty, Ty::F32 | Ty::F64)
}

fn write_op(w: &mut Line, k: &Kernel, op: &Op) {
    match op {
        Op::Special { dst, sreg: s } => {
            w.op(&["mov.u32"]);
            w.reg(*dst);
            w.text(sreg(*s));
        }
        Op::LdParam { dst, param } => {
            let p = k.params.get(param.0 as usize);
            let ty = p.map(|p| p.ty.ty().name()).unwrap_or("u64");
            let name = p.map(|p| p.name.as_str()).unwrap_or("invalid");
            w.op(&["ld.param.", ty]);
            w.reg(*dst);
            w.sep();
            w.op(&["[", name, "]"]);
        }
        Op::SharedAddr { dst, shared } => write_shared_addr(w, k, dst, shared),
        Op::Mov { ty, dst, src } => {
            w.op(&["mov.", move_ty(*ty)]);
            w.reg(*dst);
            w.opnd(*src);
        }
        Op::Unary { op, ty, dst, src } => write_unary(w, op, ty, dst, src),
        Op::Binary { op, ty, dst, a, b } => write_binary(w, op, ty, dst, a, b),
        Op::Fma { ty, dst, a, b, c } => {
            let name = if float(*ty) { "fma.rn." } else { "mad.lo." };
            w.op(&[name, ty.name()]);
            w.reg(*dst);
            w.opnd(*a);
            w.opnd(*b);
            w.opnd(*c);
        }
        Op::MulWide { ty, dst, a, b } => {
            w.op(&["mul.wide.", ty.name()]);
            w.reg(*dst);
            w.opnd(*a);
            w.opnd(*b);
        }
        Op::MadWide { ty, dst, a, b, c } => {
            w.op(&["mad.wide.", ty.name()]);
            w.reg(*dst);
            w.opnd(*a);
            w.opnd(*b);
            w.opnd(*c);
        }
        Op::Setp {
            cmp: c,
            ty,
            dst,
            a,
            b,
        } => {
            w.op(&["setp.", cmp(*c), ".", ty.name()]);
            w.reg(*dst);
            w.opnd(*a);
            w.opnd(*b);
        }
        Op::Selp {
            ty,
            dst,
            a,
            b,
            pred,
        } => {
            w.op(&["selp.", ty.name()]);
            w.reg(*dst);
            w.opnd(*a);
            w.opnd(*b);
            w.reg(*pred);
        }
        Op::Cvt {
            dty,
            sty,
            rnd: rm,
            sat,
            dst,
            src,
        } => {
            let rm = rm.map(rnd).unwrap_or("");
            let sat = if *sat { ".sat" } else { "" };
            w.op(&["cvt", rm, sat, ".", dty.name(), ".", sty.name()]);
            w.reg(*dst);
            w.reg(*src);
        }
        Op::CvtTf32 { dst, src } => {
            w.op(&["cvt.rna.tf32.f32"]);
            w.reg(*dst);
            w.reg(*src);
        }
        Op::CvtPack { pack, dst, hi, lo } => {
            w.op(&[match pack {
                Pack::F16x2 => "cvt.rn.f16x2.f32",
                Pack::BF16x2 => "cvt.rn.bf16x2.f32",
                Pack::E4m3x2 => "cvt.rn.satfinite.e4m3x2.f32",
                Pack::E5m2x2 => "cvt.rn.satfinite.e5m2x2.f32",
            }]);
            w.reg(*dst);
            w.reg(*hi);
            w.reg(*lo);
        }
        Op::CvtUnpack { unpack, dst, src } => {
            w.op(&[match unpack {
                Unpack::E4m3x2 => "cvt.rn.f16x2.e4m3x2",
                Unpack::E5m2x2 => "cvt.rn.f16x2.e5m2x2",
            }]);
            w.reg(*dst);
            w.reg(*src);
        }
        Op::CvtaGlobal { dst, src } => {
            w.op(&["cvta.to.global.u64"]);
            w.reg(*dst);
            w.reg(*src);
        }
        Op::Ld {
            space: s,
            ty,
            dsts,
            addr,
            offset,
        } => {
            w.op(&["ld.", space(*s), vec_suffix(dsts.len()), ".", move_ty(*ty)]);
            w.regs(dsts);
            w.addr(*addr, *offset);
        }
        Op::St {
            space: s,
            ty,
            srcs,
            addr,
            offset,
        } => {
            w.op(&["st.", space(*s), vec_suffix(srcs.len()), ".", move_ty(*ty)]);
            w.addr(*addr, *offset);
            w.opnds(srcs);
        }
        Op::CpAsync {
            cache,
            dst,
            src,
            bytes,
            src_size,
        } => write_cp_async(w, cache, dst, src, bytes, src_size),
        Op::CpAsyncCommit => w.op(&["cp.async.commit_group"]),
        Op::FenceProxyAsync => w.op(&["fence.proxy.async.shared::cta"]),
        Op::CpAsyncWait { n } => {
            w.op(&["cp.async.wait_group"]);
            w.num(i64::from(*n));
        }
        Op::BarSync => {
            w.op(&["bar.sync"]);
            w.text("0");
        }
        Op::Shfl {
            mode,
            dst,
            src,
            lane,
            clamp,
            mask,
        } => write_shfl(w, mode, dst, src, lane, clamp, mask),
        Op::Ldmatrix { trans, dsts, addr } => {
            let t = if *trans { ".trans" } else { "" };
            w.op(&["ldmatrix.sync.aligned.m8n8.x4", t, ".shared.b16"]);
            w.regs(dsts);
            w.addr(*addr, 0);
        }
        Op::Mma { kind, d, a, b, c } => write_mma(w, kind, d, a, b, c),
        Op::MbarrierInit { .. }
        | Op::MbarrierArrive { .. }
        | Op::MbarrierCompleteTx { .. }
        | Op::MbarrierTryWait { .. }
        | Op::MbarrierWait { .. }
        | Op::WgmmaFence
        | Op::WgmmaCommit
        | Op::WgmmaWait { .. }
        | Op::WgmmaMmaAsync { .. }
        | Op::SetMaxNReg { .. } => write_hopper(w, op),
        Op::TensorMapAddr { .. }
        | Op::TmaLoad { .. }
        | Op::TmaStore { .. }
        | Op::BulkCommit
        | Op::BulkWaitRead { .. } => write_tma(w, k, op),
        Op::AtomAddF32 { dst, addr, src } => {
            w.op(&["atom.global.add.f32"]);
            w.reg(*dst);
            w.addr(*addr, 0);
            w.opnd(*src);
        }
        Op::RedAddF32 { addr, src } => {
            w.op(&["red.global.add.f32"]);
            w.addr(*addr, 0);
            w.opnd(*src);
        }
    }
}

fn write_shared_addr(w: &mut Line, k: &Kernel, dst: &Reg, shared: &SharedId) {
    w.op(&["mov.u32"]);
    w.reg(*dst);
    w.sep();
    if k.dynamic_shared_bytes() > 0 {
        // one extern array: each declared array at its layout offset
        let (offsets, _) = k.shared_layout();
        match offsets.get(shared.0 as usize) {
            Some(0) => w.op(&[super::DYNAMIC_SHARED]),
            Some(off) => {
                w.op(&[super::DYNAMIC_SHARED, "+"]);
                let _ = write!(w.out, "{off}");
            }
            None => w.op(&["invalid"]),
        }
    } else {
        let name = k.shared.get(shared.0 as usize).map(|s| s.name.as_str());
        w.op(&[name.unwrap_or("invalid")]);
    }
}

fn write_unary(w: &mut Line, op: &UnOp, ty: &Ty, dst: &Reg, src: &Operand) {
    let name = match op {
        UnOp::Neg => "neg.",
        UnOp::Abs => "abs.",
        UnOp::Not => "not.",
        UnOp::Rcp => "rcp.rn.",
        UnOp::RcpApprox => "rcp.approx.",
        UnOp::Sqrt => "sqrt.rn.",
        UnOp::SqrtApprox => "sqrt.approx.",
        UnOp::RsqrtApprox => "rsqrt.approx.",
        UnOp::Ex2Approx => "ex2.approx.",
        UnOp::Lg2Approx => "lg2.approx.",
        UnOp::TanhApprox => "tanh.approx.",
    };
    w.op(&[name, ty.name()]);
    w.reg(*dst);
    w.opnd(*src);
}

fn write_binary(w: &mut Line, op: &BinOp, ty: &Ty, dst: &Reg, a: &Operand, b: &Operand) {
    let f = float(*ty);
    let name = match op {
        BinOp::Add if f => "add.rn.",
        BinOp::Add => "add.",
        BinOp::Sub if f => "sub.rn.",
        BinOp::Sub => "sub.",
        BinOp::Mul if f => "mul.rn.",
        BinOp::Mul => "mul.lo.",
        BinOp::MulHi => "mul.hi.",
        BinOp::Min if *ty == Ty::F32 => "min.NaN.",
        BinOp::Max if *ty == Ty::F32 => "max.NaN.",
        BinOp::Min => "min.",
        BinOp::Max => "max.",
        BinOp::Div if f => "div.rn.",
        BinOp::Div => "div.",
        BinOp::DivApprox => "div.approx.",
        BinOp::Rem => "rem.",
        BinOp::And => "and.",
        BinOp::Or => "or.",
        BinOp::Xor => "xor.",
        BinOp::Shl => "shl.",
        BinOp::Shr => "shr.",
    };
    w.op(&[name, ty.name()]);
    w.reg(*dst);
    w.opnd(*a);
    w.opnd(*b);
}

fn write_shfl(
    w: &mut Line,
    mode: &ShflMode,
    dst: &Reg,
    src: &Operand,
    lane: &Operand,
    clamp: &Operand,
    mask: &u32,
) {
    let m = match mode {
        ShflMode::Up => "up",
        ShflMode::Down => "down",
        ShflMode::Bfly => "bfly",
        ShflMode::Idx => "idx",
    };
    w.op(&["shfl.sync.", m, ".b32"]);
    w.reg(*dst);
    w.opnd(*src);
    w.opnd(*lane);
    w.opnd(*clamp);
    w.sep();
    let _ = write!(w.out, "0x{mask:08x}");
}

/// Writes one instruction as PTX text, without indentation or newline:
/// `@%p0 ld.global.f32 %f1, [%ud2];`.
/// `mma.sync` of `kind`: d = a·b + c.
fn write_mma(w: &mut Line, kind: &MmaKind, d: &[Reg; 4], a: &[Reg; 4], b: &[Reg; 2], c: &[Reg; 4]) {
    w.op(&[match kind {
        MmaKind::M16n8k16Bf16 => "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
        MmaKind::M16n8k16F16 => "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        MmaKind::M16n8k8Tf32 => "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
    }]);
    w.regs(d);
    w.regs(a);
    w.regs(b);
    w.regs(c);
}

pub fn write_instr(out: &mut String, k: &Kernel, n: &RegNames, i: &Instr) {
    if let Some(g) = i.guard {
        out.push('@');
        if g.negate {
            out.push('!');
        }
        out.push_str(n.get(g.pred));
        out.push(' ');
    }
    let mut w = Line { out, n, args: 0 };
    write_op(&mut w, k, &i.op);
    out.push(';');
}

/// One instruction as PTX text (see [`write_instr`]).
pub fn instr_text(k: &Kernel, n: &RegNames, i: &Instr) -> String {
    let mut s = String::new();
    write_instr(&mut s, k, n, i);
    s
}

/// Target checks on verified IR: what the target lacks, and its limits.
fn check_target(k: &Kernel, target: Target) -> Result<(), TargetError> {
    let limits = target.limits();
    let (_, bytes) = k.shared_layout();
    if bytes > limits.max_dynamic_shared_bytes {
        return Err(TargetError::SharedTooLarge {
            bytes,
            limit: limits.max_dynamic_shared_bytes,
            target,
        });
    }
    if let Some(t) = k.max_threads {
        if t == 0 || t > limits.max_threads_per_block {
            return Err(TargetError::TooManyThreads {
                threads: t,
                limit: limits.max_threads_per_block,
                target,
            });
        }
    }
    for b in &k.blocks {
        for (i, span) in b.insts.iter().zip(&b.spans) {
            let fp8 = matches!(
                i.op,
                Op::CvtPack {
                    pack: Pack::E4m3x2 | Pack::E5m2x2,
                    ..
                } | Op::CvtUnpack { .. }
            );
            if fp8 && !target.has_fp8_cvt() {
                return Err(TargetError::Unsupported {
                    what: "fp8 conversion (cvt ... e4m3x2/e5m2x2, sm_89+)",
                    target,
                    span: *span,
                });
            }
            if let Some(what) = hopper_only(&i.op, target) {
                return Err(TargetError::Unsupported {
                    what,
                    target,
                    span: *span,
                });
            }
        }
    }
    Ok(())
}

fn quote(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Prints a verified kernel as a PTX module for `target`. `sources` resolves spans into
/// `.file`/`.loc` directives.
pub fn print(k: &Kernel, target: Target, sources: &SourceMap) -> Result<String, TargetError> {
    verify(k)?;
    emit(k, target, sources)
}

/// [`print`] for a kernel that [`KernelBuilder::finish`](super::builder::KernelBuilder::finish)
/// verified and nothing changed since (every kernel of a lowered pipeline): the verifier runs
/// again only in debug builds.
pub fn print_verified(
    k: &Kernel,
    target: Target,
    sources: &SourceMap,
) -> Result<String, TargetError> {
    if cfg!(debug_assertions) {
        verify(k)?;
    }
    emit(k, target, sources)
}

fn emit(k: &Kernel, target: Target, sources: &SourceMap) -> Result<String, TargetError> {
    check_target(k, target)?;
    let n = RegNames::new(k);
    let mut files = BTreeSet::new();
    for b in &k.blocks {
        for s in b.spans.iter().chain(std::iter::once(&b.term_span)) {
            // `loc(unknown)`: no file, no `.loc`
            if s.file != super::NO_FILE {
                files.insert(s.file);
            }
        }
    }
    let mut out = String::new();
    let (major, minor) = target.ptx_version();
    let _ = writeln!(out, "//\n// Generated by tessera: Target IR -> PTX\n//\n");
    let _ = writeln!(out, ".version {major}.{minor}");
    let _ = writeln!(out, ".target {}", target.name());
    let _ = writeln!(out, ".address_size 64\n");
    if k.dynamic_shared_bytes() > 0 {
        // dynamic shared memory: one module-scope array, sized at launch
        let align = k.shared.iter().map(|s| s.align).max().unwrap_or(16).max(16);
        let _ = writeln!(
            out,
            ".extern .shared .align {align} .b8 {}[];",
            super::DYNAMIC_SHARED
        );
    }
    for f in &files {
        let file = sources
            .get(*f)
            .ok_or(TargetError::UnknownFile { file: *f })?;
        let _ = writeln!(out, ".file {} \"{}\"", f + 1, quote(&file.name));
    }
    let _ = writeln!(out, "\n.visible .entry {}(", k.name);
    for (i, p) in k.params.iter().enumerate() {
        let sep = if i + 1 < k.params.len() { "," } else { "" };
        match p.ty {
            ParamTy::TensorMap => {
                let _ = writeln!(out, "\t.param .align 64 .b8 {}[128]{sep}", p.name);
            }
            _ => {
                let _ = writeln!(out, "\t.param .{} {}{sep}", p.ty.ty().name(), p.name);
            }
        }
    }
    let _ = writeln!(out, ")");
    if let Some(t) = k.max_threads {
        let _ = writeln!(out, ".maxntid {t}, 1, 1");
        if let Some(n) = k.min_blocks {
            let _ = writeln!(out, ".minnctapersm {n}");
        }
    }
    let _ = writeln!(out, "{{");
    for (ty, count) in &n.counts {
        let _ = writeln!(out, "\t.reg .{} {}<{}>;", decl_ty(*ty), prefix(*ty), count);
    }
    if k.dynamic_shared_bytes() == 0 {
        for s in &k.shared {
            let _ = writeln!(
                out,
                "\t.shared .align {} .b8 {}[{}];",
                s.align, s.name, s.size
            );
        }
    }
    let mut last_loc: Option<(u32, usize)> = None;
    let mut loc = |out: &mut String, span: tessera_lang::Span| -> Result<(), TargetError> {
        if span.file == super::NO_FILE {
            return Ok(());
        }
        let file = sources
            .get(span.file)
            .ok_or(TargetError::UnknownFile { file: span.file })?;
        let (line, col) = file.line_col(span.lo as usize);
        if last_loc != Some((span.file, line)) {
            let _ = writeln!(out, "\t.loc {} {} {}", span.file + 1, line, col);
            last_loc = Some((span.file, line));
        }
        Ok(())
    };
    for (bi, b) in k.blocks.iter().enumerate() {
        let _ = writeln!(out, "\n{}:", b.label);
        if b.nounroll {
            out.push_str("\t.pragma \"nounroll\";\n");
        }
        for (i, span) in b.insts.iter().zip(&b.spans) {
            loc(&mut out, *span)?;
            out.push('\t');
            write_instr(&mut out, k, &n, i);
            out.push('\n');
        }
        loc(&mut out, b.term_span)?;
        let next = bi + 1;
        let label = |id: u32| {
            k.blocks
                .get(id as usize)
                .map(|b| b.label.as_str())
                .unwrap_or("invalid")
        };
        match b.term {
            Terminator::Bra(t) => {
                if t.0 as usize != next {
                    let _ = writeln!(out, "\tbra.uni {};", label(t.0));
                }
            }
            Terminator::CondBra {
                pred,
                negate,
                then,
                els,
            } => {
                let bang = if negate { "!" } else { "" };
                let _ = writeln!(out, "\t@{bang}{} bra {};", n.get(pred), label(then.0));
                if els.0 as usize != next {
                    let _ = writeln!(out, "\tbra.uni {};", label(els.0));
                }
            }
            Terminator::Ret => {
                let _ = writeln!(out, "\tret;");
            }
        }
    }
    let _ = writeln!(out, "}}");
    Ok(out)
}
