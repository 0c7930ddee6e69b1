use super::names::*;
use super::*;
use crate::graph::DType;
use crate::scalar::{
    BinOp, CacheOp, Cmp, Dim, MmaKind, Pack, Rnd, SReg, ShflMode, Ty, UnOp, Unpack, ALL_TYS,
};
use crate::tile::build::{dimm, fimm, frag, global, imm, Builder};
use crate::tile::ir::*;
use crate::tile::opdef::Row;
use std::collections::HashSet;
use tessera_lang::{SourceMap, Span};

const SRC: &str = "let a = 1\n  let b = é + 2\n\nfn f(x) {\n    return x * 3.0\n}\n";

fn sources() -> SourceMap {
    let mut sm = SourceMap::new();
    sm.add("scripts/t.tsr", SRC);
    sm.add("other \"q\".tsr", "x\ny\nzzzzzzzz\n");
    sm
}

fn sp(file: u32, lo: usize) -> Span {
    Span::new(file, lo, lo + 1)
}

fn buf(swizzle: Option<Swizzle>) -> SharedBuf {
    SharedBuf {
        elem_bytes: 2,
        shape: vec![3, 128, 32],
        layout: Layout { pitch: 80, swizzle },
        align: 16,
    }
}

/// A kernel with every op kind, masks, defaults, vector loads, fragments, nested structure.
fn big() -> Kernel {
    let mut b = Builder::new("gemm_all", sp(0, 4), [16, 2, 1], [128, 1, 1]);
    let x = b.param("x", global(DType::F32), ParamRole::Input);
    let w = b.param("w\"eird name", global(DType::BF16), ParamRole::Input);
    let y = b.param("y", global(DType::BF16), ParamRole::Output);
    let n = b.param("n", Type::Scalar(Ty::U32), ParamRole::Size(64));
    let st = b.param("status", global(DType::I32), ParamRole::Status);
    let map = b.param(
        "map",
        Type::TensorMap(TensorMapTy {
            dtype: DType::BF16,
            box_dims: vec![64, 64],
            swizzle: 128,
        }),
        ParamRole::Input,
    );
    let sa = b.shared("smem_a", buf(Some(Swizzle { mask: 7, shift: 3 })));
    let sb = b.shared("smem_b", buf(None));
    b.at(sp(0, 14));
    let tid = b.tid_x();
    let lane = b.special(SReg::LaneId);
    let warp = b.special(SReg::WarpId);
    let cy = b.special(SReg::Ctaid(Dim::Y));
    let i = b.bin(BinOp::Shr, Ty::U32, tid, imm(5));
    let p = b.cmp(Cmp::Lt, Ty::U32, i, n);
    b.at(sp(0, 22));
    let v4 = b.load(
        Ty::F32,
        x,
        i,
        Some(p),
        &[fimm(0.0), fimm(-0.0), fimm(f32::NAN), fimm(f32::INFINITY)],
    );
    let v1 = b.load(Ty::F32, x, i, None, &[])[0];
    let bytes = b.load(Ty::U8, w, imm(-3), Some(p), &[])[0];
    let one = b.load(Ty::F32, x, i, None, &[fimm(1.5)])[0];
    let d = b.mov(Ty::F64, dimm(-0.0));
    let dn = b.mov(Ty::F64, dimm(f64::NAN));
    let de = b.math(MathFn::Exp, Ty::F64, &[d.into()]);
    let _ = b.bin(BinOp::Add, Ty::F64, de, dn);
    let big_i = b.mov(Ty::S64, imm(i64::MIN));
    let _ = b.mov(Ty::U64, imm(i64::MAX));
    let _ = b.bitcast(Ty::B64, big_i);
    let r = b.unary(UnOp::RcpApprox, Ty::F32, v4[0]);
    let f = b.fma(Ty::F32, r, v4[1], fimm(2.0));
    let mw = b.mul_wide(Ty::S32, tid, imm(-7));
    let _ = b.mad_wide(Ty::U32, tid, lane, mw);
    let s = b.select(Ty::F32, p, f, v1);
    let c = b.cast_sat(Ty::S32, Ty::F32, Some(Rnd::Rzi), true, s);
    let _ = b.cast(Ty::F32, Ty::S32, None, c);
    let _ = b.cast(Ty::BF16, Ty::F32, Some(Rnd::Rn), s);
    let _ = b.cast_sat(Ty::F16, Ty::F32, None, true, s);
    let t = b.tf32(s);
    let pk = b.pack(Pack::BF16x2, s, one);
    let e8 = b.pack(Pack::E4m3x2, s, one);
    let _ = b.unpack(Unpack::E5m2x2, e8);
    let _ = b.math(MathFn::Pow, Ty::F32, &[s.into(), fimm(0.5)]);
    b.store(Ty::BF16, y, i, &[pk.into(), bytes.into()], Some(p));
    b.store(Ty::F32, x, imm(0), &[t.into()], None);
    let x2 = b.advance(x, cy);
    b.red_add(x2, i, s);
    b.at(sp(1, 2));
    let _ = b.op(
        OpKind::AtomAdd,
        vec![x2.into(), i.into(), fimm(1.0)],
        vec![Type::Scalar(Ty::F32)],
    );
    let base = b.shared_addr(sa);
    let off = b.offset(sb, imm(1), warp, lane);
    let _ = b.load_shared(Ty::B32, off, 16, 4);
    let _ = b.op(
        OpKind::LoadShared {
            ty: Ty::F32,
            n: 2,
            offset: -8,
        },
        vec![off.into(), p.into(), fimm(0.0), fimm(1.0)],
        vec![Type::Scalar(Ty::F32); 2],
    );
    b.store_shared(Ty::F32, base, -4, &[s.into(), fimm(3.0)], Some(p));
    b.store_shared(Ty::B32, base, 0, &[imm(0)], None);
    b.copy_async(CacheOp::Cg, 16, base, w, i, Some(imm(8)), Some(p));
    b.copy_async(CacheOp::Ca, 4, base, w, i, None, Some(p));
    b.copy_async(CacheOp::Ca, 8, base, w, i, Some(n.into()), None);
    b.copy_async(CacheOp::Cg, 16, base, w, imm(0), None, None);
    b.commit();
    b.wait(1);
    b.barrier();
    b.op(OpKind::FenceProxyAsync, vec![], vec![]);
    let (b64, pred, u64_) = (
        Type::Scalar(Ty::B64),
        Type::Scalar(Ty::Pred),
        Type::Scalar(Ty::U64),
    );
    b.op(OpKind::MbarrierInit, vec![base.into(), imm(128)], vec![]);
    b.op(OpKind::MbarrierArrive, vec![base.into()], vec![b64.clone()]);
    b.op(
        OpKind::MbarrierArriveExpectTx,
        vec![base.into(), n.into()],
        vec![b64],
    );
    b.op(
        OpKind::MbarrierCompleteTx,
        vec![base.into(), imm(256)],
        vec![],
    );
    b.op(
        OpKind::MbarrierTryWait,
        vec![base.into(), imm(0)],
        vec![pred],
    );
    b.op(OpKind::MbarrierWait, vec![base.into(), i.into()], vec![]);
    let desc = b.op(
        OpKind::WgmmaDesc { swizzle: 128 },
        vec![base.into(), imm(16), imm(1024)],
        vec![u64_.clone()],
    )[0];
    let plain = b.op(
        OpKind::WgmmaDesc { swizzle: 0 },
        vec![base.into(), i.into(), imm(256)],
        vec![u64_],
    )[0];
    b.op(OpKind::WgmmaFence, vec![], vec![]);
    let f32s = vec![Type::Scalar(Ty::F32); 4];
    let d = b.op(
        OpKind::WgmmaMmaAsync { n: 8, ab: Ty::BF16 },
        vec![desc.into(), plain.into()],
        f32s.clone(),
    );
    let mut acc_ops: Vec<Operand> = vec![desc.into(), desc.into()];
    acc_ops.extend(d.iter().map(|&v| Operand::from(v)));
    b.op(OpKind::WgmmaMmaAsync { n: 8, ab: Ty::F16 }, acc_ops, f32s);
    b.op(OpKind::WgmmaCommit, vec![], vec![]);
    b.op(OpKind::WgmmaWait { n: 0 }, vec![], vec![]);
    b.warpgroup_role(0, 1, |b| {
        b.op(OpKind::SetmaxnregDec { n: 40 }, vec![], vec![]);
    });
    b.warpgroup_role(0, 1, |b| {
        b.op(OpKind::SetmaxnregInc { n: 232 }, vec![], vec![]);
    });
    b.op(
        OpKind::TmaLoad,
        vec![base.into(), map.into(), base.into(), imm(-3), i.into()],
        vec![],
    );
    b.op(
        OpKind::TmaStore,
        vec![map.into(), base.into(), i.into(), imm(0)],
        vec![],
    );
    b.op(OpKind::TmaCommit, vec![], vec![]);
    b.op(OpKind::TmaWaitRead { n: 1 }, vec![], vec![]);
    let kind = MmaKind::M16n8k16Bf16;
    let fa = b.ldmatrix(false, off, vec![frag(kind, Role::A)])[0];
    let fb = b.ldmatrix(true, off, vec![frag(kind, Role::B); 2]);
    let _ = b.ldmatrix(false, off, vec![Type::Scalar(Ty::B32); 4]);
    let zero = b.mov(Ty::F32, fimm(0.0));
    let acc = b.frag_make(
        crate::tile::ir::Frag {
            kind,
            role: Role::C,
        },
        &[zero.into(); 4],
    );
    b.at(sp(0, 40));
    let out = b.for_(imm(0), n, imm(32), &[acc, fa], Some(3), |b, k, cs| {
        let m = b.mma(kind, cs[1], fb[0], cs[0]);
        let g = b.frag_get(m, 3);
        let sh = b.shfl(ShflMode::Bfly, g, imm(1), imm(31));
        let q = b.cmp(Cmp::Nan, Ty::F32, g, g);
        let inner = b.if_(
            q,
            &[Type::Scalar(Ty::F32), frag(kind, Role::C)],
            |b| {
                let z = b.reduce_warp(BinOp::Max, Ty::F32, g);
                let q2 = b.cmp(Cmp::Ge, Ty::U32, k, imm(64));
                let deep = b.if_(
                    q2,
                    &[Type::Scalar(Ty::F32)],
                    |_| vec![z.into()],
                    |_| vec![fimm(f32::NEG_INFINITY)],
                );
                vec![deep[0].into(), m.into()]
            },
            |b| {
                let h = b.bitcast(Ty::F32, sh);
                vec![h.into(), cs[0].into()]
            },
        );
        vec![inner[1].into(), cs[1].into()]
    });
    b.at(Span {
        file: 99,
        lo: 0,
        hi: 0,
    });
    b.for_(imm(0), imm(4), imm(1), &[], None, |b, k, _| {
        let q = b.cmp(Cmp::Eq, Ty::U32, k, imm(0));
        b.when(q, |b| {
            let g = b.frag_get(out[0], 0);
            b.store(Ty::F32, st, k, &[g.into()], None);
        });
        vec![]
    });
    b.finish()
}

/// Every spelling of every enum the text form names.
fn enums() -> Kernel {
    let mut b = Builder::new("enums", sp(0, 0), [1, 1, 1], [32, 1, 1]);
    for (i, d) in super::names::ALL_DTYPES.into_iter().enumerate() {
        b.param(format!("p{i}"), global(d), ParamRole::Input);
    }
    let mut sregs = vec![SReg::LaneId, SReg::WarpId];
    for d in [Dim::X, Dim::Y, Dim::Z] {
        sregs.extend([SReg::Tid(d), SReg::Ntid(d), SReg::Ctaid(d), SReg::Nctaid(d)]);
    }
    for (i, s) in sregs.into_iter().enumerate() {
        b.at(sp(0, i));
        b.special(s);
    }
    let a = b.tid_x();
    for t in ALL_TYS.into_iter().chain([Ty::U8]) {
        b.mov(t, imm(1));
    }
    for op in ALL_UNOPS {
        b.unary(op, Ty::F32, a);
    }
    for op in ALL_BINOPS {
        b.bin(op, Ty::U32, a, imm(2));
        b.reduce_warp(op, Ty::S32, a);
    }
    for c in super::names::CMPS {
        b.cmp(c, Ty::F64, a, dimm(1.0));
    }
    for r in super::names::RNDS {
        b.cast(Ty::F16x2, Ty::BF16x2, Some(r), a);
    }
    for p in [Pack::F16x2, Pack::BF16x2, Pack::E4m3x2, Pack::E5m2x2] {
        b.pack(p, a, a);
    }
    for u in [Unpack::E4m3x2, Unpack::E5m2x2] {
        b.unpack(u, a);
    }
    for f in super::names::MATH_FNS {
        b.math(f, Ty::F32, &[a.into()]);
    }
    for m in [ShflMode::Up, ShflMode::Down, ShflMode::Bfly, ShflMode::Idx] {
        b.shfl(m, a, imm(1), imm(0));
    }
    for k in [
        MmaKind::M16n8k16Bf16,
        MmaKind::M16n8k16F16,
        MmaKind::M16n8k8Tf32,
    ] {
        let fa = b.ldmatrix(false, a, vec![frag(k, Role::A)])[0];
        let fb = b.ldmatrix(true, a, vec![frag(k, Role::B), frag(k, Role::B)])[0];
        let fc = b.frag_make(
            Frag {
                kind: k,
                role: Role::C,
            },
            &[fimm(0.0); 4],
        );
        b.mma(k, fa, fb, fc);
    }
    b.finish()
}

/// Prints, parses, prints again: the texts agree, and a second parse gives the same kernel.
fn roundtrip(k: &Kernel, sm: &SourceMap) -> (String, Kernel, SourceMap) {
    let t1 = print(k, sm);
    let mut sm2 = SourceMap::new();
    let k2 = parse(&t1, &mut sm2).unwrap_or_else(|e| panic!("{e}\n{t1}"));
    let t2 = print(&k2, &sm2);
    assert_eq!(t1, t2);
    assert_eq!(k.ops.len(), k2.ops.len());
    assert_eq!(k.values.len(), k2.values.len());
    assert_eq!(k.params.len(), k2.params.len());
    assert_eq!(k.shared, {
        let mut s = k2.shared.clone();
        for (a, b) in s.iter_mut().zip(&k.shared) {
            a.value = b.value;
        }
        s
    });
    let mut sm3 = SourceMap::new();
    let k3 = parse(&t2, &mut sm3).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(k2, k3);
    (t1, k2, sm2)
}

fn kind_set(k: &Kernel) -> HashSet<std::mem::Discriminant<OpKind>> {
    k.ops
        .iter()
        .map(|o| std::mem::discriminant(&o.kind))
        .collect()
}

#[test]
fn big_kernel_roundtrips_and_covers_every_op_kind() {
    let k = big();
    let (text, k2, _) = roundtrip(&k, &sources());
    // every row of the op table but `tile.reduce_block` (its checker tests cover it)
    let missing: Vec<&str> = ROWS
        .iter()
        .filter(|r| !k.ops.iter().any(|o| o.kind.row().variant == r.variant))
        .map(|r| r.variant)
        .collect();
    assert_eq!(missing, ["ReduceBlock"], "{text}");
    assert_eq!(kind_set(&k).len(), ROWS.len() - missing.len(), "{text}");
    assert_eq!(kind_set(&k2).len(), ROWS.len() - missing.len());
    for want in [
        "tile.kernel @gemm_all(%0 @x: !tile.global<fp32> in, %1 @\"w\\\"eird name\": ",
        "%3 @n: u32 = 64, %4 @status: !tile.global<int32> status, %5 @map: !tile.tensormap<bf16, [64, 64], swizzle = 128> in) grid = [16, 2, 1] block = [128, 1, 1] {   loc(\"t.tsr\":1:5)",
        "%6 = tile.shared @smem_a : !tile.shared<[3, 128, 32] x 2, pitch = 80, swizzle = (7, 3), align = 16>\n",
        "tile.shared @smem_b : !tile.shared<[3, 128, 32] x 2, pitch = 80, align = 16>\n",
        "  %8 = tile.special %tid.x : u32   loc(\"t.tsr\":2:5)\n",
        " = tile.load.v4.f32 %0[%12] mask %13 else (0f00000000, 0f80000000, 0f7FC00000, 0f7F800000) : f32   loc(\"t.tsr\":2:12)",
        "tile.mov.f64 0d8000000000000000 : f64",
        "tile.mov.s64 -9223372036854775808 : s64",
        "tile.cvt.rzi.sat.s32.f32 ",
        "tile.store.v2.bf16 %2[%12], (",
        "tile.tma.load %",
        ", %5, %",
        ", -3, %12",
        "tile.tma.wait_group.read {n = 1}",
        "tile.cp.async.cg %",
        "src_bytes 8 mask %13 {bytes = 16}",
        "tile.wait {n = 1}   loc(\"other \\\"q\\\".tsr\":2:1)",
        "tile.ld.shared.v2.f32 ",
        "{offset = -8}",
        " = tile.ldmatrix.x4.trans ",
        " : !tile.frag<b, m16n8k16.bf16>   loc(",
        "iter_args(",
        "{pipeline = 3} : !tile.frag<c, m16n8k16.bf16>, !tile.frag<a, m16n8k16.bf16> {   loc(\"t.tsr\":5:3)",
        "      } else {\n",
        "tile.shfl.bfly ",
        "{mask = 4294967295} : b32",
        "tile.for %",
        " step 1 {   loc(unknown)\n",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
}

#[test]
fn every_enum_spelling_roundtrips() {
    let k = enums();
    let (text, _, _) = roundtrip(&k, &sources());
    assert!(text.contains("tile.special %nctaid.z"));
    assert!(text.contains("tile.mov.u8 1 : u8"));
    assert!(text.contains("tile.reduce_warp.div.approx.s32"));
    assert!(text.contains("tile.cvt.rpi.f16x2.bf16x2"));
    assert!(text.contains("tile.mma.m16n8k8.tf32"));
}

#[test]
fn locs_become_spans_at_the_same_line_and_column() {
    let sm = sources();
    let k = big();
    let (_, k2, sm2) = roundtrip(&k, &sm);
    // The ops of both kernels in print order have the same (name, line, col).
    fn order(k: &Kernel, r: &Region, out: &mut Vec<Span>) {
        for &id in &r.ops {
            let op = &k.ops[id.0 as usize];
            out.push(op.span);
            for r in &op.regions {
                order(k, r, out);
            }
        }
    }
    let (mut a, mut b) = (vec![k.span], vec![k2.span]);
    order(&k, &k.body, &mut a);
    order(&k2, &k2.body, &mut b);
    assert_eq!(a.len(), b.len());
    let names: Vec<&str> = sm2.files().iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["t.tsr", "other \"q\".tsr"]);
    for (x, y) in a.iter().zip(&b) {
        match sm.get(x.file) {
            Some(f) => {
                let g = sm2.get(y.file).expect("file");
                assert_eq!(f.name.rsplit('/').next(), Some(g.name.as_str()));
                assert_eq!(f.line_col(x.lo as usize), g.line_col(y.lo as usize));
            }
            None => assert!(sm2.get(y.file).is_none()),
        }
    }
}

#[test]
fn errors_have_positions() {
    let mut sm = SourceMap::new();
    let e = parse("tile.kernel @k() grid = [1, 1, 1] block = [1, 1, 1] {   loc(unknown)\n  tile.yield %3   loc(unknown)\n}\n", &mut sm)
        .unwrap_err();
    assert_eq!((e.line, e.col), (2, 14));
    assert_eq!(e.to_string(), "2:14: value %3 is not defined");
    let e = parse("tile.kernel @k() grid = [1, 1, 1] block = [1, 1, 1] {   loc(unknown)\n  tile.frobnicate.u32 1   loc(unknown)\n}\n", &mut sm)
        .unwrap_err();
    assert_eq!((e.line, e.col), (2, 3));
    let e = parse(
        "tile.kernel @k() grid = [1, 1, 1] block = [1, 1, 1] {   loc(\"a\":0:1)\n}",
        &mut sm,
    )
    .unwrap_err();
    assert_eq!(e.line, 1);
    assert!(e.message.contains("out of range"), "{e}");
    let e = parse("", &mut sm).unwrap_err();
    assert_eq!((e.line, e.col), (1, 1));
}

#[test]
fn malformed_text_never_panics() {
    let sm = sources();
    let text = print(&big(), &sm);
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for &(i, _) in &chars {
        let mut s = SourceMap::new();
        if let Ok(k) = parse(&text[..i], &mut s) {
            let _ = print(&k, &s);
        }
    }
    let subs = [
        "", "%", "{", "}", "0", "x", "\"", " ", "\n", "9", "-", "@", "(", ",",
    ];
    for (n, &(i, c)) in chars.iter().enumerate().step_by(3) {
        let sub = subs[n % subs.len()];
        let mutated = format!("{}{sub}{}", &text[..i], &text[i + c.len_utf8()..]);
        let mut s = SourceMap::new();
        if let Ok(k) = parse(&mutated, &mut s) {
            let _ = print(&k, &s);
        }
    }
    for bad in [
        "tile.kernel @k() grid = [1, 1, 1] block = [1, 1, 1] {   loc(\"a\\u{110000}\":1:1)\n}",
        "tile.kernel @k(%99999999999: u32 in) grid = [1, 1, 1] block = [1, 1, 1] {",
        "tile.kernel @k() grid = [1, 1, 1] block = [1, 1, 1] {   loc(unknown)\n  tile.mma 1   loc(unknown)\n}",
        "tile.kernel @k() grid = [1, 1, 1] block = [1, 1, 1] {   loc(unknown)\n  %0 = tile.load.v0.f32 1[2] : f32   loc(unknown)\n}",
        "tile.kernel @k() grid = [1, 1, 1] block = [1, 1, 1] {   loc(unknown)\n  tile.wait {n = -1}   loc(unknown)\n}",
    ] {
        assert!(parse(bad, &mut SourceMap::new()).is_err(), "{bad}");
    }
    let wide = format!(
        "tile.kernel @k() grid = [1, 1, 1] block = [1, 1, 1] {{   loc(unknown)\n{}}}",
        (1..800)
            .map(|i| format!("tile.barrier   loc(\"a\":{i}:100000)\n"))
            .collect::<String>()
    );
    let e = parse(&wide, &mut SourceMap::new()).unwrap_err();
    assert!(e.message.contains("too much"), "{e}");
    let deep = format!(
        "tile.kernel @k() grid = [1, 1, 1] block = [1, 1, 1] {{   loc(unknown)\n{}",
        "tile.if 0 {   loc(unknown)\n".repeat(5000)
    );
    assert!(parse(&deep, &mut SourceMap::new()).is_err());
}

#[test]
fn dtype_and_type_names_parse_back() {
    for t in ALL_TYS.into_iter().chain([Ty::U8]) {
        assert_eq!(parse_ty(t.name()), Some(t));
    }
    assert_eq!(parse_dtype("fp8_e5m2"), Some(DType::F8E5M2));
    assert_eq!(parse_dtype("float"), None);
    assert_eq!(
        type_text(&frag(MmaKind::M16n8k16F16, Role::A)),
        "!tile.frag<a, m16n8k16.f16>"
    );
    assert!(is_bare("a.b_1") && !is_bare("a b") && !is_bare(""));
}

#[test]
fn random_mutations_never_panic() {
    let text = print(&big(), &sources());
    let chars: Vec<char> = text.chars().collect();
    let pool: Vec<char> = "%@\"{}()[]<>,:=!-0123456789xfdé\\ \nabtile."
        .chars()
        .collect();
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rnd = |n: usize| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) as usize % n
    };
    for _ in 0..1500 {
        let mut c = chars.clone();
        for _ in 0..1 + rnd(3) {
            let i = rnd(c.len());
            match rnd(3) {
                0 => c[i] = pool[rnd(pool.len())],
                1 => {
                    c.remove(i);
                }
                _ => c.insert(i, pool[rnd(pool.len())]),
            }
        }
        let s: String = c.into_iter().collect();
        let mut sm = SourceMap::new();
        if let Ok(k) = parse(&s, &mut sm) {
            let again = print(&k, &sm);
            let mut sm2 = SourceMap::new();
            let k2 = parse(&again, &mut sm2).expect("a printed kernel parses");
            assert_eq!(print(&k2, &sm2), again);
        }
    }
}

#[test]
fn hand_written_numbers_are_renumbered() {
    let text =
        "tile.kernel @k(%7 @n: u32 = 8) grid = [1, 1, 1] block = [32, 1, 1] {   loc(\"k.tsr\":1:1)
  %3 = tile.special %tid.x : u32   loc(\"k.tsr\":2:3)
  %9 = tile.add.u32 %3, %7 : u32   loc(\"k.tsr\":3:3)
}
";
    let mut sm = SourceMap::new();
    let k = parse(text, &mut sm).expect("parses");
    assert_eq!(k.values.len(), 3);
    let printed = print(&k, &sm);
    assert!(
        printed.contains("%2 = tile.add.u32 %1, %0 : u32   loc(\"k.tsr\":3:3)"),
        "{printed}"
    );
    let e = parse(&text.replace("%9 =", "%3 ="), &mut sm).unwrap_err();
    assert_eq!(
        (e.line, e.message.as_str()),
        (3, "value %3 is defined twice")
    );
}

/// The guide's hand-written kernel (docs/guide/src/debugging.md, "Writing Tile IR by hand"):
/// every op at `loc(unknown)`, lowered to PTX for every target with no `.file`/`.loc` (it once
/// failed: "span refers to unknown file 4294967295").
#[test]
fn unknown_locs_lower_to_ptx() {
    let text = "tile.kernel @twice(%0 @x: !tile.global<fp32> in, %1 @y: !tile.global<fp32> out) grid = [2, 1, 1] block = [32, 1, 1] {   loc(unknown)
  %2 = tile.special %tid.x : u32   loc(unknown)
  %3 = tile.special %ctaid.x : u32   loc(unknown)
  %4 = tile.fma.u32 %3, 32, %2 : u32   loc(unknown)
  %5 = tile.load.f32 %0[%4] : f32   loc(unknown)
  %6 = tile.add.f32 %5, %5 : f32   loc(unknown)
  tile.store.f32 %1[%4], (%6)   loc(unknown)
}
";
    let mut sm = SourceMap::new();
    let k = parse(text, &mut sm).unwrap();
    assert_eq!(k.span.file, crate::scalar::NO_FILE);
    let checked = crate::tile::check::check(&k).unwrap();
    let l = crate::backend::ptx::from_tile::translate(checked).unwrap();
    for target in crate::arch::Target::PTX {
        let ptx = crate::backend::ptx::print::print(&l.kernel, target, &sm).unwrap();
        assert!(!ptx.contains(".file") && !ptx.contains(".loc"), "{ptx}");
        assert!(ptx.contains("add.rn.f32 %f1, %f0, %f0;"), "{ptx}");
    }
    // the same text round-trips with its `loc(unknown)`s
    assert_eq!(print(&k, &sm), text);
}

/// `tile.fence.proxy.async`, declared by its row in the op table alone: the text form parses,
/// prints back and checks with no code of its own; Tile → Target gives
/// `fence.proxy.async.shared::cta`, printed for sm_90 and refused (E0300, at the op) for
/// sm_80; the SPIR-V back end refuses it.
#[test]
fn fence_proxy_async_is_declared_by_its_row() {
    let text = "tile.kernel @fence(%0 @x: !tile.global<fp32> in, %1 @y: !tile.global<fp32> out) grid = [1, 1, 1] block = [32, 1, 1] {   loc(\"f.tsr\":1:1)
  %2 = tile.special %tid.x : u32   loc(\"f.tsr\":2:1)
  %3 = tile.load.f32 %0[%2] : f32   loc(\"f.tsr\":3:1)
  tile.fence.proxy.async   loc(\"f.tsr\":4:3)
  tile.store.f32 %1[%2], (%3)   loc(\"f.tsr\":5:1)
}
";
    let rows: Vec<&Row> = ROWS
        .iter()
        .filter(|r| r.mnemonic == "fence.proxy.async")
        .collect();
    assert_eq!(rows.len(), 1);
    let mut sm = SourceMap::new();
    let k = parse(text, &mut sm).unwrap();
    assert_eq!(k.ops[2].kind, OpKind::FenceProxyAsync);
    assert_eq!(print(&k, &sm), text);
    crate::tile::check::check(&k).unwrap();
    // operands or results are refused by the row's signature
    let bad = text.replace("tile.fence.proxy.async ", "tile.fence.proxy.async %2");
    let kb = parse(&bad, &mut SourceMap::new()).unwrap();
    let e = crate::tile::check::check(&kb).unwrap_err();
    assert!(
        e.message.contains("takes 0 operands, it has 1"),
        "{}",
        e.message
    );
    let e = parse(
        &text.replace("fence.proxy.async", "fence.proxy"),
        &mut SourceMap::new(),
    );
    assert_eq!(e.unwrap_err().message, "unknown op `tile.fence.proxy`");

    let checked = crate::tile::check::check(&k).unwrap();
    let l = crate::backend::ptx::from_tile::translate(checked).unwrap();
    let ptx = crate::backend::ptx::print::print(&l.kernel, crate::arch::Target::Sm90, &sm).unwrap();
    assert!(ptx.contains("\tfence.proxy.async.shared::cta;\n"), "{ptx}");
    let e =
        crate::backend::ptx::print::print(&l.kernel, crate::arch::Target::Sm80, &sm).unwrap_err();
    let d = e.to_diagnostic();
    assert_eq!(d.code, tessera_lang::Code::E0300);
    assert!(
        d.message.contains("fence.proxy.async (sm_90+)"),
        "{}",
        d.message
    );
    assert_eq!(e.span(), Some(k.ops[2].span));

    match crate::backend::spirv::translate(checked) {
        Err(crate::backend::Error::NotLowered(why)) => {
            assert!(why.contains("fence.proxy.async"), "{why}")
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}
