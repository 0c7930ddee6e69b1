//! The PTX printer: one template per instruction ([`template`], an exhaustive match) plus one
//! walk ([`print`]) that declares registers, names blocks and emits `.loc` when the source line
//! changes. Output is stable (snapshot-tested).

use super::verify::verify;
use super::{
    BinOp, CacheOp, Cmp, Dim, Instr, Kernel, MmaKind, Op, Operand, Pack, Reg, Rnd, SReg, ShflMode,
    Space, Target, TargetError, Terminator, Ty, UnOp, Unpack, ALL_TYS,
};
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

fn operand(n: &RegNames, o: Operand) -> String {
    match o {
        Operand::Reg(r) => n.get(r).to_string(),
        Operand::Imm(v) => v.to_string(),
        Operand::F32(bits) => format!("0f{bits:08X}"),
        Operand::F64(bits) => format!("0d{bits:016X}"),
    }
}

fn vector(n: &RegNames, regs: &[Reg]) -> String {
    let names: Vec<&str> = regs.iter().map(|r| n.get(*r)).collect();
    if names.len() == 1 {
        names.concat()
    } else {
        format!("{{{}}}", names.join(", "))
    }
}

fn address(n: &RegNames, r: Reg, offset: i32) -> String {
    match offset {
        0 => format!("[{}]", n.get(r)),
        o if o > 0 => format!("[{}+{}]", n.get(r), o),
        o => format!("[{}{}]", n.get(r), o),
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

/// The template table: each op's opcode (with its modifiers) and its operands.
pub fn template(k: &Kernel, n: &RegNames, op: &Op) -> (String, Vec<String>) {
    let r = |reg: Reg| n.get(reg).to_string();
    let o = |x: Operand| operand(n, x);
    let float = |ty: Ty| matches!(ty, Ty::F32 | Ty::F64);
    match op {
        Op::Special { dst, sreg: s } => ("mov.u32".into(), vec![r(*dst), sreg(*s).into()]),
        Op::LdParam { dst, param } => {
            let p = k.params.get(param.0 as usize);
            let ty = p.map(|p| p.ty.ty().name()).unwrap_or("u64");
            let name = p.map(|p| p.name.as_str()).unwrap_or("invalid");
            (format!("ld.param.{ty}"), vec![r(*dst), format!("[{name}]")])
        }
        Op::SharedAddr { dst, shared } => {
            let addr = if k.dynamic_shared_bytes() > 0 {
                // one extern array: each declared array at its layout offset
                let (offsets, _) = k.shared_layout();
                match offsets.get(shared.0 as usize) {
                    Some(0) => super::DYNAMIC_SHARED.to_string(),
                    Some(off) => format!("{}+{off}", super::DYNAMIC_SHARED),
                    None => "invalid".into(),
                }
            } else {
                k.shared
                    .get(shared.0 as usize)
                    .map(|s| s.name.clone())
                    .unwrap_or_else(|| "invalid".into())
            };
            ("mov.u32".into(), vec![r(*dst), addr])
        }
        Op::Mov { ty, dst, src } => (format!("mov.{}", move_ty(*ty)), vec![r(*dst), o(*src)]),
        Op::Unary { op, ty, dst, src } => {
            let t = ty.name();
            let opcode = match op {
                UnOp::Neg => format!("neg.{t}"),
                UnOp::Abs => format!("abs.{t}"),
                UnOp::Not => format!("not.{t}"),
                UnOp::Rcp => format!("rcp.rn.{t}"),
                UnOp::RcpApprox => format!("rcp.approx.{t}"),
                UnOp::Sqrt => format!("sqrt.rn.{t}"),
                UnOp::SqrtApprox => format!("sqrt.approx.{t}"),
                UnOp::RsqrtApprox => format!("rsqrt.approx.{t}"),
                UnOp::Ex2Approx => format!("ex2.approx.{t}"),
                UnOp::Lg2Approx => format!("lg2.approx.{t}"),
                UnOp::TanhApprox => format!("tanh.approx.{t}"),
            };
            (opcode, vec![r(*dst), o(*src)])
        }
        Op::Binary { op, ty, dst, a, b } => {
            let t = ty.name();
            let f = float(*ty);
            let opcode = match op {
                BinOp::Add if f => format!("add.rn.{t}"),
                BinOp::Add => format!("add.{t}"),
                BinOp::Sub if f => format!("sub.rn.{t}"),
                BinOp::Sub => format!("sub.{t}"),
                BinOp::Mul if f => format!("mul.rn.{t}"),
                BinOp::Mul => format!("mul.lo.{t}"),
                BinOp::MulHi => format!("mul.hi.{t}"),
                BinOp::Min if *ty == Ty::F32 => "min.NaN.f32".to_string(),
                BinOp::Max if *ty == Ty::F32 => "max.NaN.f32".to_string(),
                BinOp::Min => format!("min.{t}"),
                BinOp::Max => format!("max.{t}"),
                BinOp::Div if f => format!("div.rn.{t}"),
                BinOp::Div => format!("div.{t}"),
                BinOp::DivApprox => format!("div.approx.{t}"),
                BinOp::Rem => format!("rem.{t}"),
                BinOp::And => format!("and.{t}"),
                BinOp::Or => format!("or.{t}"),
                BinOp::Xor => format!("xor.{t}"),
                BinOp::Shl => format!("shl.{t}"),
                BinOp::Shr => format!("shr.{t}"),
            };
            (opcode, vec![r(*dst), o(*a), o(*b)])
        }
        Op::Fma { ty, dst, a, b, c } => {
            let opcode = if float(*ty) {
                format!("fma.rn.{}", ty.name())
            } else {
                format!("mad.lo.{}", ty.name())
            };
            (opcode, vec![r(*dst), o(*a), o(*b), o(*c)])
        }
        Op::MulWide { ty, dst, a, b } => (
            format!("mul.wide.{}", ty.name()),
            vec![r(*dst), o(*a), o(*b)],
        ),
        Op::MadWide { ty, dst, a, b, c } => (
            format!("mad.wide.{}", ty.name()),
            vec![r(*dst), o(*a), o(*b), o(*c)],
        ),
        Op::Setp {
            cmp: c,
            ty,
            dst,
            a,
            b,
        } => (
            format!("setp.{}.{}", cmp(*c), ty.name()),
            vec![r(*dst), o(*a), o(*b)],
        ),
        Op::Selp {
            ty,
            dst,
            a,
            b,
            pred,
        } => (
            format!("selp.{}", ty.name()),
            vec![r(*dst), o(*a), o(*b), r(*pred)],
        ),
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
            (
                format!("cvt{rm}{sat}.{}.{}", dty.name(), sty.name()),
                vec![r(*dst), r(*src)],
            )
        }
        Op::CvtTf32 { dst, src } => ("cvt.rna.tf32.f32".into(), vec![r(*dst), r(*src)]),
        Op::CvtPack { pack, dst, hi, lo } => {
            let opcode = match pack {
                Pack::F16x2 => "cvt.rn.f16x2.f32",
                Pack::BF16x2 => "cvt.rn.bf16x2.f32",
                Pack::E4m3x2 => "cvt.rn.satfinite.e4m3x2.f32",
                Pack::E5m2x2 => "cvt.rn.satfinite.e5m2x2.f32",
            };
            (opcode.into(), vec![r(*dst), r(*hi), r(*lo)])
        }
        Op::CvtUnpack { unpack, dst, src } => {
            let opcode = match unpack {
                Unpack::E4m3x2 => "cvt.rn.f16x2.e4m3x2",
                Unpack::E5m2x2 => "cvt.rn.f16x2.e5m2x2",
            };
            (opcode.into(), vec![r(*dst), r(*src)])
        }
        Op::CvtaGlobal { dst, src } => ("cvta.to.global.u64".into(), vec![r(*dst), r(*src)]),
        Op::Ld {
            space: s,
            ty,
            dsts,
            addr,
            offset,
        } => (
            format!(
                "ld.{}{}.{}",
                space(*s),
                vec_suffix(dsts.len()),
                move_ty(*ty)
            ),
            vec![vector(n, dsts), address(n, *addr, *offset)],
        ),
        Op::St {
            space: s,
            ty,
            srcs,
            addr,
            offset,
        } => {
            let vals: Vec<String> = srcs.iter().map(|x| o(*x)).collect();
            let vals = if vals.len() == 1 {
                vals.concat()
            } else {
                format!("{{{}}}", vals.join(", "))
            };
            (
                format!(
                    "st.{}{}.{}",
                    space(*s),
                    vec_suffix(srcs.len()),
                    move_ty(*ty)
                ),
                vec![address(n, *addr, *offset), vals],
            )
        }
        Op::CpAsync {
            cache,
            dst,
            src,
            bytes,
            src_size,
        } => {
            let c = match cache {
                CacheOp::Ca => "ca",
                CacheOp::Cg => "cg",
            };
            let mut ops = vec![address(n, *dst, 0), address(n, *src, 0), bytes.to_string()];
            if let Some(s) = src_size {
                ops.push(o(*s));
            }
            (format!("cp.async.{c}.shared.global"), ops)
        }
        Op::CpAsyncCommit => ("cp.async.commit_group".into(), vec![]),
        Op::CpAsyncWait { n: w } => ("cp.async.wait_group".into(), vec![w.to_string()]),
        Op::BarSync => ("bar.sync".into(), vec!["0".into()]),
        Op::Shfl {
            mode,
            dst,
            src,
            lane,
            clamp,
            mask,
        } => {
            let m = match mode {
                ShflMode::Up => "up",
                ShflMode::Down => "down",
                ShflMode::Bfly => "bfly",
                ShflMode::Idx => "idx",
            };
            (
                format!("shfl.sync.{m}.b32"),
                vec![
                    r(*dst),
                    o(*src),
                    o(*lane),
                    o(*clamp),
                    format!("0x{mask:08x}"),
                ],
            )
        }
        Op::Ldmatrix { trans, dsts, addr } => (
            format!(
                "ldmatrix.sync.aligned.m8n8.x4{}.shared.b16",
                if *trans { ".trans" } else { "" }
            ),
            vec![vector(n, dsts), address(n, *addr, 0)],
        ),
        Op::Mma { kind, d, a, b, c } => {
            let opcode = match kind {
                MmaKind::M16n8k16Bf16 => "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                MmaKind::M16n8k16F16 => "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                MmaKind::M16n8k8Tf32 => "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
            };
            (
                opcode.into(),
                vec![vector(n, d), vector(n, a), vector(n, b), vector(n, c)],
            )
        }
        Op::AtomAddF32 { dst, addr, src } => (
            "atom.global.add.f32".into(),
            vec![r(*dst), address(n, *addr, 0), o(*src)],
        ),
        Op::RedAddF32 { addr, src } => (
            "red.global.add.f32".into(),
            vec![address(n, *addr, 0), o(*src)],
        ),
    }
}

/// One instruction as PTX text, without indentation: `@%p0 ld.global.f32 %f1, [%ud2];`.
pub fn instr_text(k: &Kernel, n: &RegNames, i: &Instr) -> String {
    let (opcode, ops) = template(k, n, &i.op);
    let mut s = String::new();
    if let Some(g) = i.guard {
        let _ = write!(s, "@{}{} ", if g.negate { "!" } else { "" }, n.get(g.pred));
    }
    s.push_str(&opcode);
    if !ops.is_empty() {
        s.push(' ');
        s.push_str(&ops.join(", "));
    }
    s.push(';');
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
    check_target(k, target)?;
    let n = RegNames::new(k);
    let mut files = BTreeSet::new();
    for b in &k.blocks {
        for s in b.spans.iter().chain(std::iter::once(&b.term_span)) {
            files.insert(s.file);
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
        let _ = writeln!(out, "\t.param .{} {}{sep}", p.ty.ty().name(), p.name);
    }
    let _ = writeln!(out, ")");
    if let Some(t) = k.max_threads {
        let _ = writeln!(out, ".maxntid {t}, 1, 1");
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
        for (i, span) in b.insts.iter().zip(&b.spans) {
            loc(&mut out, *span)?;
            let _ = writeln!(out, "\t{}", instr_text(k, &n, i));
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
