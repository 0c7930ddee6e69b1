//! Unit tests of the verifier and the printer's templates.

use super::builder::{fimm, imm};
use super::print::{instr_text, print, RegNames};
use super::*;
use tessera_lang::SourceMap;

fn sp() -> Span {
    Span::new(0, 1, 2)
}

fn sources() -> SourceMap {
    let mut s = SourceMap::new();
    s.add("t.tsr", "x = 1\ny = 2\n");
    s
}

#[test]
fn verifier_rejects_undefined_register() {
    let mut b = KernelBuilder::new("k", sp());
    let r = b.reg(Ty::F32);
    b.add(Ty::F32, r, fimm(1.0));
    b.ret();
    let e = b.finish().unwrap_err();
    assert!(matches!(e, TargetError::Undefined { reg: 0, .. }), "{e}");
}

#[test]
fn verifier_rejects_type_mismatch() {
    let mut b = KernelBuilder::new("k", sp());
    let x = b.mov(Ty::U32, imm(3));
    b.add(Ty::F32, x, fimm(1.0));
    b.ret();
    let e = b.finish().unwrap_err();
    assert!(
        matches!(
            e,
            TargetError::TypeMismatch {
                expected: Ty::F32,
                found: Ty::U32,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "block 0 instruction 1: register %0 is .u32 where .f32 is expected"
    );
}

#[test]
fn u8_is_a_memory_type_only() {
    // ld/st.u8 move bytes through 32-bit integer registers.
    let mut b = KernelBuilder::new("k", sp());
    let p = b.param("p", ParamTy::Ptr);
    let a = b.ld_param(p);
    let v = b.mov(Ty::U32, imm(0));
    b.ld_to(Space::Global, Ty::U8, &[v], a, 0);
    b.st(Space::Global, Ty::U8, a, 1, &[v.into()]);
    b.ret();
    let k = b.finish().unwrap();
    let text = print(&k, Target::Sm90, &sources()).unwrap();
    assert!(text.contains("ld.global.u8 %u"), "{text}");
    assert!(text.contains("st.global.u8 [%ud"), "{text}");
    // No register has type .u8 ...
    let mut b = KernelBuilder::new("k", sp());
    let p = b.param("p", ParamTy::Ptr);
    let a = b.ld_param(p);
    b.ld(Space::Global, Ty::U8, a, 0, 1);
    b.ret();
    assert!(b.finish().is_err());
    // ... and a byte moves through a 32-bit integer register, not a 64-bit one.
    let mut b = KernelBuilder::new("k", sp());
    let p = b.param("p", ParamTy::Ptr);
    let a = b.ld_param(p);
    let v = b.mov(Ty::U64, imm(0));
    b.ld_to(Space::Global, Ty::U8, &[v], a, 0);
    b.ret();
    let e = b.finish().unwrap_err();
    assert!(matches!(e, TargetError::TypeMismatch { .. }), "{e}");
}

#[test]
fn bit_types_accept_same_size_registers() {
    assert!(Ty::B32.accepts(Ty::F32));
    assert!(Ty::U32.accepts(Ty::S32));
    assert!(!Ty::U32.accepts(Ty::F32));
    assert!(!Ty::F32.accepts(Ty::U32));
    assert!(Ty::F32.accepts(Ty::B32));
    assert!(!Ty::B32.accepts(Ty::U64));
}

#[test]
fn verifier_rejects_missing_span_and_bad_branch() {
    let mut b = KernelBuilder::new("k", Span::default());
    b.mov(Ty::U32, imm(3));
    let e = b.finish().unwrap_err();
    assert!(matches!(e, TargetError::MissingSpan { .. }), "{e}");

    let mut b = KernelBuilder::new("k", sp());
    b.br(BlockId(7));
    let e = b.finish().unwrap_err();
    assert!(
        matches!(
            e,
            TargetError::OutOfRange {
                what: "block",
                index: 7,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn verifier_checks_cvt_rounding() {
    let mut b = KernelBuilder::new("k", sp());
    let x = b.mov(Ty::F32, fimm(1.5));
    b.cvt(Ty::BF16, Ty::F32, None, x);
    let e = b.finish().unwrap_err();
    assert!(matches!(e, TargetError::Invalid { reason, .. } if reason.contains("narrowing")));

    let mut b = KernelBuilder::new("k", sp());
    let x = b.mov(Ty::F32, fimm(1.5));
    let h = b.cvt(Ty::BF16, Ty::F32, Some(Rnd::Rn), x);
    b.cvt(Ty::F32, Ty::BF16, None, h);
    b.cvt(Ty::S32, Ty::F32, Some(Rnd::Rzi), x);
    b.finish().unwrap();
}

#[test]
fn verifier_rejects_bad_vector_and_cp_async() {
    let mut b = KernelBuilder::new("k", sp());
    let a = b.mov(Ty::U64, imm(0));
    b.ld(Space::Global, Ty::F32, a, 0, 3);
    assert!(matches!(
        b.finish().unwrap_err(),
        TargetError::Invalid { .. }
    ));

    let mut b = KernelBuilder::new("k", sp());
    let g = b.mov(Ty::U64, imm(0));
    let s = b.mov(Ty::U32, imm(0));
    b.push(Op::CpAsync {
        cache: CacheOp::Cg,
        dst: s,
        src: g,
        bytes: 4,
        src_size: None,
    });
    assert!(matches!(
        b.finish().unwrap_err(),
        TargetError::Invalid { .. }
    ));
}

#[test]
fn verifier_rejects_bad_names() {
    // the builder gives every name as a PTX identifier; a kernel changed afterwards is checked
    let mut b = KernelBuilder::new("bad name", sp());
    b.ret();
    let mut k = b.finish().expect("the builder mangles the name");
    assert_eq!(k.name, "bad$u20$name");
    k.name = "bad name".into();
    assert!(matches!(
        verify::verify(&k).unwrap_err(),
        TargetError::BadName { .. }
    ));
    let mut b = KernelBuilder::new("k", sp());
    b.param("x", ParamTy::U32);
    b.param("x", ParamTy::U32);
    assert!(matches!(
        b.finish().unwrap_err(),
        TargetError::DuplicateName { .. }
    ));
}

#[test]
fn templates() {
    let mut b = KernelBuilder::new("k", sp());
    let p = b.param("x", ParamTy::Ptr);
    let x = b.ld_param(p);
    let f = b.ld(Space::Global, Ty::F32, x, 16, 4);
    let q = b.setp(Cmp::Lt, Ty::F32, f[0], fimm(1.0));
    b.when(q);
    b.st(Space::Global, Ty::F32, x, -4, &[f[1].into()]);
    let s = b.mov(Ty::U32, imm(0));
    b.push(Op::CpAsync {
        cache: CacheOp::Cg,
        dst: s,
        src: x,
        bytes: 16,
        src_size: Some(imm(8)),
    });
    b.push(Op::CpAsyncWait { n: 1 });
    let t = b.reg(Ty::F32);
    b.push(Op::Shfl {
        mode: ShflMode::Bfly,
        dst: t,
        src: f[2].into(),
        lane: imm(16),
        clamp: imm(31),
        mask: u32::MAX,
    });
    b.ret();
    let k = b.finish().unwrap();
    let n = RegNames::new(&k);
    let text: Vec<String> = k.blocks[0]
        .insts
        .iter()
        .map(|i| instr_text(&k, &n, i))
        .collect();
    assert_eq!(
        text,
        [
            "ld.param.u64 %ud0, [x];",
            "ld.global.v4.f32 {%f0, %f1, %f2, %f3}, [%ud0+16];",
            "setp.lt.f32 %p0, %f0, 0f3F800000;",
            "@%p0 st.global.f32 [%ud0-4], %f1;",
            "mov.u32 %u0, 0;",
            "cp.async.cg.shared.global [%u0], [%ud0], 16, 8;",
            "cp.async.wait_group 1;",
            "shfl.sync.bfly.b32 %f4, %f2, 16, 31, 0xffffffff;",
        ]
    );
}

#[test]
fn fp8_needs_sm89() {
    let mut b = KernelBuilder::new("k", sp());
    let x = b.mov(Ty::F32, fimm(1.0));
    let d = b.reg(Ty::B16);
    b.push(Op::CvtPack {
        pack: Pack::E4m3x2,
        dst: d,
        hi: x,
        lo: x,
    });
    b.ret();
    let k = b.finish().unwrap();
    let e = print(&k, Target::Sm80, &sources()).unwrap_err();
    assert!(
        matches!(
            e,
            TargetError::Unsupported {
                target: Target::Sm80,
                ..
            }
        ),
        "{e}"
    );
    let ptx = print(&k, Target::Sm90, &sources()).unwrap();
    assert!(
        ptx.contains("cvt.rn.satfinite.e4m3x2.f32 %rs0, %f0, %f0;"),
        "{ptx}"
    );
}

#[test]
fn loc_changes_with_the_line() {
    let mut b = KernelBuilder::new("k", Span::new(0, 0, 1));
    b.mov(Ty::U32, imm(1));
    b.mov(Ty::U32, imm(2));
    b.at(Span::new(0, 6, 7));
    b.ret();
    let k = b.finish().unwrap();
    let ptx = print(&k, Target::Sm90, &sources()).unwrap();
    assert!(ptx.contains(".file 1 \"t.tsr\""), "{ptx}");
    assert_eq!(ptx.matches(".loc 1 1 1").count(), 1, "{ptx}");
    assert!(ptx.contains(".loc 1 2 1\n\tret;"), "{ptx}");
}

#[test]
fn shared_limit_is_checked() {
    // Over 48 KiB: one dynamic `.extern .shared` array, within the target's opt-in limit.
    let mut b = KernelBuilder::new("k", sp());
    b.shared("big", 64 * 1024, 16);
    b.ret();
    let k = b.finish().unwrap();
    assert_eq!(k.dynamic_shared_bytes(), 64 * 1024);
    let ptx = print(&k, Target::Sm90, &sources()).unwrap();
    assert!(
        ptx.contains(".extern .shared .align 16 .b8 tessera_dyn_smem[];"),
        "{ptx}"
    );
    assert!(!ptx.contains(".shared .align 16 .b8 big["), "{ptx}");
    // 200 KiB fits sm_90 (227 KiB) but not sm_80 (163 KiB).
    let mut b = KernelBuilder::new("k", sp());
    b.shared("huge", 200 * 1024, 16);
    b.ret();
    let k = b.finish().unwrap();
    assert!(print(&k, Target::Sm90, &sources()).is_ok());
    let e = print(&k, Target::Sm80, &sources()).unwrap_err();
    assert!(matches!(e, TargetError::SharedTooLarge { .. }), "{e}");
}

#[test]
fn unknown_loc_prints_no_file_and_no_loc() {
    // `loc(unknown)` (hand-written Tile IR): no `.file`, no `.loc`; a real span beside it
    // keeps its own (this once failed with "span refers to unknown file 4294967295")
    let none = Span::new(NO_FILE, 0, 0);
    let mut b = KernelBuilder::new("k", none);
    b.mov(Ty::U32, imm(1));
    b.ret();
    let k = b.finish().unwrap();
    let ptx = print(&k, Target::Sm90, &sources()).unwrap();
    assert!(!ptx.contains(".file") && !ptx.contains(".loc"), "{ptx}");
    let mut b = KernelBuilder::new("k", none);
    b.mov(Ty::U32, imm(1));
    b.at(Span::new(0, 6, 7));
    b.ret();
    let k = b.finish().unwrap();
    let ptx = print(&k, Target::Sm90, &sources()).unwrap();
    assert!(ptx.contains(".file 1 \"t.tsr\""), "{ptx}");
    assert_eq!(ptx.matches(".loc").count(), 1, "{ptx}");
    assert!(ptx.contains(".loc 1 2 1\n\tret;"), "{ptx}");
    // a file the source map does not have is still a bug
    let mut b = KernelBuilder::new("k", Span::new(7, 0, 1));
    b.ret();
    let k = b.finish().unwrap();
    let e = print(&k, Target::Sm90, &sources()).unwrap_err();
    assert_eq!(e, TargetError::UnknownFile { file: 7 });
}

#[test]
fn errors_at_unknown_loc_have_no_span() {
    let mut b = KernelBuilder::new("k", Span::new(NO_FILE, 0, 0));
    let x = b.mov(Ty::U32, imm(3));
    b.add(Ty::F32, x, fimm(1.0));
    b.ret();
    let e = b.finish().unwrap_err();
    assert!(matches!(e, TargetError::TypeMismatch { .. }), "{e}");
    assert_eq!(e.span(), None);
    let d = e.to_diagnostic();
    assert_eq!(d.span, None);
    let text = d.render(&sources(), false);
    assert!(!text.contains("4294967295"), "{text}");
}

#[test]
fn names_become_ptx_identifiers() {
    use super::ptx_name;
    for keep in ["axpy", "_x", "f_elementwise_0", "a$b", "$x"] {
        assert_eq!(ptx_name(keep), keep);
    }
    assert_eq!(
        ptx_name("核函数_elementwise_0"),
        "$u6838u51fdu6570$_elementwise_0"
    );
    assert_eq!(ptx_name("étape_0"), "$ue9$tape_0");
    assert_eq!(ptx_name("a b"), "a$u20$b");
    assert_eq!(ptx_name("_"), "$$_");
    assert_eq!(ptx_name(""), "$$");
    assert_eq!(ptx_name("$"), "$u24$");
    assert_eq!(ptx_name("1x"), "$$1x");
    // distinct names stay distinct, and every result is an identifier the verifier takes
    let names = [
        "核", "核a", "核_a", "核$", "$u6838$", "a核", "_", "$$_", "1", "", "x y",
    ];
    let mut seen = std::collections::HashSet::new();
    for n in names {
        let m = ptx_name(n).into_owned();
        assert!(m.is_ascii(), "{m}");
        assert_eq!(ptx_name(&m), m, "idempotent");
        let mut b = KernelBuilder::new(n, sp());
        b.ret();
        assert!(b.finish().is_ok(), "{n:?} -> {m:?} verifies");
        seen.insert(m);
    }
    // "$u6838$" and "$$_" are identifiers kept as they are, and so meet the mangled "核" and
    // "_" (no Python name holds a `$`)
    assert_eq!(seen.len(), names.len() - 2);
}

/// `setmaxnreg` needs `.maxntid` and `.minnctapersm` (ptxas drops it otherwise, C7508) and a
/// count that is a multiple of 8 from 24 to 256; with both it prints for sm_90a only.
#[test]
fn verifier_checks_setmaxnreg_launch_bounds_and_count() {
    let build = |n: u32, min_blocks: bool| {
        let mut b = KernelBuilder::new("k", sp());
        b.max_threads(256);
        if min_blocks {
            b.min_blocks(1);
        }
        b.push(Op::SetMaxNReg { inc: true, n });
        b.ret();
        b.finish()
    };
    let e = build(232, false).unwrap_err().to_string();
    assert!(e.contains(".maxntid and .minnctapersm"), "{e}");
    let e = build(20, true).unwrap_err().to_string();
    assert!(e.contains("multiple of 8 from 24 to 256"), "{e}");
    let k = build(232, true).unwrap();
    let ptx = print(&k, Target::Sm90a, &sources()).unwrap();
    assert!(
        ptx.contains("\tsetmaxnreg.inc.sync.aligned.u32 232;\n"),
        "{ptx}"
    );
    assert!(ptx.contains(".minnctapersm 1"), "{ptx}");
    let e = print(&k, Target::Sm90, &sources()).unwrap_err().to_string();
    assert!(e.contains("setmaxnreg (sm_90a only)"), "{e}");
}
