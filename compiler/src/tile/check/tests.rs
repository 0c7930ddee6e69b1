use super::check;
use crate::graph::DType;
use crate::scalar::{BinOp, CacheOp, Cmp, MmaKind, Pack, Rnd, ShflMode, Ty, UnOp, Unpack};
use crate::tile::build::*;
use crate::tile::ir::*;
use tessera_lang::{SourceMap, Span};

const KIND: MmaKind = MmaKind::M16n8k16Bf16;

fn span() -> Span {
    let mut sm = SourceMap::new();
    let f = sm.add("t.tsr", "x\n");
    Span::new(f, 0, 1)
}

fn builder(block: [u32; 3]) -> Builder {
    Builder::new("t_0", span(), [1, 1, 1], block)
}

/// `stages × rows × cols` elements of `elem` bytes, rows unpadded.
fn buf(shape: &[u32], elem: u32) -> SharedBuf {
    SharedBuf {
        elem_bytes: elem,
        shape: shape.to_vec(),
        layout: Layout {
            pitch: shape[shape.len() - 1] * elem,
            swizzle: None,
        },
        align: 16,
    }
}

/// A builder with a bf16 input view `h`, the thread index `t` and a 1 KiB buffer `s`.
fn setup() -> (Builder, Value, Value, Value) {
    let mut b = builder([128, 1, 1]);
    let h = b.param("h", global(DType::BF16), ParamRole::Input);
    let s = b.shared("s", buf(&[16, 32], 2));
    let t = b.tid_x();
    (b, h, t, s)
}

fn fails(k: &Kernel, want: &str) {
    match check(k) {
        Ok(_) => panic!("expected an error containing {want:?}"),
        Err(e) => assert!(
            e.message.contains(want),
            "expected {want:?} in {:?}",
            e.message
        ),
    }
}

fn passes(k: &Kernel) {
    if let Err(e) = check(k) {
        panic!("unexpected error: {e}");
    }
}

#[test]
fn every_op_kind_passes() {
    let mut b = builder([128, 1, 1]);
    let x = b.param("x", global(DType::F32), ParamRole::Input);
    let y = b.param("y", global(DType::F32), ParamRole::Output);
    let h = b.param("h", global(DType::BF16), ParamRole::Input);
    let n = b.param("n", Type::Scalar(Ty::U32), ParamRole::Size(512));
    let mut sb = buf(&[2, 16, 16], 2);
    sb.layout.swizzle = Some(Swizzle { mask: 1, shift: 2 });
    sb.align = 128;
    let a_s = b.shared("a_s", sb);
    let w_s = b.shared("w_s", buf(&[1, 32], 4));
    let t = b.tid_x();
    let c = b.mov(Ty::U32, imm(4));
    let bc = b.bitcast(Ty::B32, t);
    let _ng = b.unary(UnOp::Neg, Ty::S32, t);
    let s = b.add(Ty::U32, t, c);
    let m = b.fma(Ty::U32, t, c, s);
    let w = b.mul_wide(Ty::U32, t, m);
    let _w2 = b.mad_wide(Ty::U32, t, c, w);
    let p = b.cmp(Cmp::Lt, Ty::U32, t, n);
    let sel = b.select(Ty::U32, p, t, c);
    let f = b.cast(Ty::F32, Ty::U32, Some(Rnd::Rn), sel);
    let _tf = b.tf32(f);
    let _pk = b.pack(Pack::BF16x2, f, f);
    let p8 = b.pack(Pack::E4m3x2, f, f);
    let _up = b.unpack(Unpack::E4m3x2, p8);
    let e = b.math(MathFn::Exp, Ty::F32, &[f.into()]);
    let v = b.load(Ty::F32, x, t, Some(p), &[fimm(0.0)])[0];
    b.store(Ty::F32, y, t, &[v.into(), e.into()], Some(p));
    let _x2 = b.advance(x, imm(128));
    b.red_add(y, t, v);
    b.op(
        OpKind::AtomAdd,
        vec![y.into(), t.into(), v.into()],
        vec![Type::Scalar(Ty::F32)],
    );
    let base = b.shared_addr(a_s);
    let o = b.offset(a_s, imm(0), imm(1), imm(8));
    b.copy_async(CacheOp::Cg, 16, base, h, t, Some(imm(16)), Some(p));
    b.commit();
    b.wait(0);
    b.barrier();
    let wb = b.shared_addr(w_s);
    b.store_shared(Ty::U32, wb, 4, &[bc.into()], Some(p));
    b.barrier();
    let _ld = b.load_shared(Ty::U32, wb, 4, 1);
    let bs = b.ldmatrix(true, base, vec![frag(KIND, Role::B); 2]);
    let acc = b.frag_make(
        Frag {
            kind: KIND,
            role: Role::C,
        },
        &[fimm(0.0); 4],
    );
    let res = b.for_(imm(0), imm(4), imm(1), &[acc, o], Some(2), |b, _i, c| {
        let fa = b.ldmatrix(false, c[1], vec![frag(KIND, Role::A)])[0];
        let d = b.mma(KIND, fa, bs[0], c[0]);
        vec![d.into(), c[1].into()]
    });
    let r = b.frag_get(res[0], 3);
    let _sh = b.shfl(ShflMode::Bfly, bc, imm(1), imm(31));
    let rw = b.reduce_warp(BinOp::Add, Ty::F32, r);
    let out = b.if_(
        p,
        &[Type::Scalar(Ty::F32)],
        |_| vec![rw.into()],
        |_| vec![fimm(0.0)],
    );
    b.store(Ty::F32, y, t, &[out[0].into()], None);
    let k = b.finish();
    let kinds: std::collections::HashSet<_> = k
        .ops
        .iter()
        .map(|d| std::mem::discriminant(&d.kind))
        .collect();
    assert_eq!(kinds.len(), 37, "every OpKind variant is used");
    passes(&k);
}

#[test]
fn launch_shape() {
    let mut k = builder([2000, 1, 1]).finish();
    fails(&k, "2000 threads");
    k.block = [48, 1, 1];
    fails(&k, "48 threads");
    k.block = [32, 2, 1];
    k.grid = [1, 0, 1];
    fails(&k, "is empty");
    let mut b = builder([32, 1, 1]);
    b.shared("big", buf(&[2, 128, 512], 2));
    let big = b.finish();
    fails(&big, "more than 232448");
    // Over a hardware limit (E0300 to the user) or malformed (E0201).
    let over = |k: &Kernel| check(k).err().map(|e| e.over_limit);
    assert_eq!(over(&big), Some(true));
    k.grid = [1, 1, 1];
    k.block = [2000, 1, 1];
    assert_eq!(over(&k), Some(true));
    k.block = [48, 1, 1];
    assert_eq!(over(&k), Some(false));
}

#[test]
fn wrong_operand_type() {
    let (mut b, _, t, _) = setup();
    let f = b.cast(Ty::F32, Ty::U32, Some(Rnd::Rn), t);
    let s = b.add(Ty::U32, t, f);
    fails(
        &b.finish(),
        &format!(
            "kernel 't_0': tile.add %{}: operand 1 is f32, the op is u32",
            s.0
        ),
    );
}

#[test]
fn wrong_operand_count() {
    let (mut b, _, t, _) = setup();
    b.cmp(Cmp::Lt, Ty::U32, t, imm(3));
    let mut k = b.finish();
    let last = k.body.ops[k.body.ops.len() - 1];
    k.ops[last.0 as usize].operands.push(imm(1));
    fails(&k, "tile.cmp");
    fails(&k, "takes 2 operands, it has 3");

    // A trailing operand of a store is a mask only when it is a pred value.
    let (mut b, _, t, _) = setup();
    let y = b.param("y", global(DType::F32), ParamRole::Output);
    b.store(Ty::F32, y, t, &[fimm(1.0), fimm(2.0)], None);
    let mut k = b.finish();
    k.ops.last_mut().unwrap().kind = OpKind::Store { ty: Ty::F32, n: 1 };
    fails(&k, "operand 3 is an immediate, not a pred value");

    // Load: [mask][defaults…]; a default count other than 0 or n is an error.
    let (mut b, _, t, _) = setup();
    let x = b.param("x", global(DType::F32), ParamRole::Input);
    let p = b.cmp(Cmp::Lt, Ty::U32, t, imm(3));
    b.load(Ty::F32, x, t, Some(p), &[fimm(0.0), fimm(1.0)]);
    let mut k = b.finish();
    k.ops.last_mut().unwrap().operands.pop();
    fails(&k, "has 1 defaults for 2 elements");

    // CopyAsync: a 4th operand that is not pred is src_bytes (u32).
    let (mut b, h, t, s) = setup();
    let a = b.shared_addr(s);
    let f = b.cast(Ty::F32, Ty::U32, Some(Rnd::Rn), t);
    b.copy_async(CacheOp::Cg, 16, a, h, t, Some(f.into()), None);
    fails(&b.finish(), "operand 3 is f32, the op is u32");
}

#[test]
fn use_before_def_and_outside_region() {
    let (mut b, _, t, _) = setup();
    let s = b.add(Ty::U32, t, imm(1));
    b.add(Ty::U32, s, imm(1));
    let mut k = b.finish();
    let n = k.body.ops.len();
    k.body.ops.swap(n - 2, n - 1);
    fails(
        &k,
        &format!("operand 0 %{} is used before its definition", s.0),
    );

    let (mut b, _, t, _) = setup();
    let p = b.cmp(Cmp::Lt, Ty::U32, t, imm(3));
    let mut inner = None;
    b.when(p, |b| inner = Some(b.add(Ty::U32, t, imm(1))));
    let inner = inner.unwrap();
    b.add(Ty::U32, inner, imm(1));
    fails(
        &b.finish(),
        &format!("%{} is used outside the region that defines it", inner.0),
    );

    // A loop's induction variable is visible in its region only.
    let (mut b, _, _, _) = setup();
    let mut iv = None;
    b.for_(imm(0), imm(4), imm(1), &[], None, |_, i, _| {
        iv = Some(i);
        vec![]
    });
    b.add(Ty::U32, iv.unwrap(), imm(1));
    fails(&b.finish(), "used outside the region");
}

#[test]
fn structure() {
    // An op listed twice.
    let (b, _, _, _) = setup();
    let mut k = b.finish();
    k.body.ops.push(k.body.ops[0]);
    fails(&k, "appears in more than one region");
    // An op in no region.
    let (b, _, _, _) = setup();
    let mut k = b.finish();
    k.body.ops.pop();
    fails(&k, "is in no region");
    // A value defined twice.
    let (mut b, _, t, _) = setup();
    b.add(Ty::U32, t, imm(1));
    let mut k = b.finish();
    k.ops.last_mut().unwrap().results = vec![t];
    fails(&k, &format!("value %{} is defined twice", t.0));
    // No span.
    let (b, _, _, _) = setup();
    let mut k = b.finish();
    k.ops[0].span = Span::default();
    fails(&k, "has no span");
    // A yield in the kernel body.
    let (mut b, _, _, _) = setup();
    b.op(OpKind::Yield, vec![], vec![]);
    fails(&b.finish(), "tile.yield is only the last op");
}

#[test]
fn yields() {
    let (mut b, _, t, _) = setup();
    let r = b.for_(imm(0), imm(4), imm(1), &[t], None, |b, _, c| {
        let f = b.cast(Ty::F32, Ty::U32, Some(Rnd::Rn), c[0]);
        vec![f.into()]
    });
    fails(
        &b.finish(),
        &format!("operand 0 is f32, the tile.for %{} carries u32", r[0].0),
    );

    let (mut b, _, t, _) = setup();
    let p = b.cmp(Cmp::Lt, Ty::U32, t, imm(3));
    b.if_(
        p,
        &[Type::Scalar(Ty::U32)],
        |_| vec![t.into()],
        |_| vec![t.into(), t.into()],
    );
    fails(&b.finish(), "yields 2 values, the tile.if");

    // A region that does not end in a yield.
    let (mut b, _, _, _) = setup();
    b.for_(imm(0), imm(4), imm(1), &[], None, |_, _, _| vec![]);
    let mut k = b.finish();
    let y = k.ops.iter().position(|d| d.kind == OpKind::Yield).unwrap();
    k.ops[y].kind = OpKind::Barrier;
    fails(&k, "region 0 does not end in tile.yield");
}

/// A builder with fragments A, B and C of [`KIND`].
fn frags() -> (Builder, Value, Value, Value) {
    let (mut b, _, _, s) = setup();
    let a = b.shared_addr(s);
    let fa = b.ldmatrix(false, a, vec![frag(KIND, Role::A)])[0];
    let fb = b.ldmatrix(true, a, vec![frag(KIND, Role::B); 2])[0];
    let c = b.frag_make(
        Frag {
            kind: KIND,
            role: Role::C,
        },
        &[fimm(0.0); 4],
    );
    (b, fa, fb, c)
}

#[test]
fn fragments() {
    let (mut b, fa, fb, c) = frags();
    b.mma(KIND, fb, fa, c);
    fails(
        &b.finish(),
        "operand 0 is frag<B, M16n8k16Bf16>, the op takes frag<A, M16n8k16Bf16>",
    );
    // An mma of another kind.
    let (mut b, fa, fb, c) = frags();
    b.mma(MmaKind::M16n8k16F16, fa, fb, c);
    fails(
        &b.finish(),
        "operand 0 is frag<A, M16n8k16Bf16>, the op takes frag<A, M16n8k16F16>",
    );

    let (mut b, _, _, s) = setup();
    let a = b.shared_addr(s);
    let fb = b.ldmatrix(true, a, vec![frag(KIND, Role::B); 2])[0];
    b.frag_get(fb, 2);
    fails(&b.finish(), "register 2 of a B fragment, which has 2");

    let (mut b, _, _, s) = setup();
    let a = b.shared_addr(s);
    b.ldmatrix(false, a, vec![Type::Scalar(Ty::B32); 3]);
    fails(&b.finish(), "ldmatrix.x4 gives one A fragment");
}

#[test]
fn shared_bounds() {
    // 16 × 32 bf16: 1024 bytes.
    let (mut b, _, _, s) = setup();
    let a = b.shared_addr(s);
    b.load_shared(Ty::F32, a, 1020, 2);
    fails(
        &b.finish(),
        &format!("bytes [1020, 1028) lie outside buffer %{}", s.0),
    );

    let (mut b, _, _, s) = setup();
    let a = b.shared_addr(s);
    let a2 = b.add(Ty::U32, a, imm(1000));
    let a3 = b.sub(Ty::U32, a2, imm(8));
    b.store_shared(Ty::U32, a3, 32, &[imm(0)], None);
    fails(&b.finish(), "bytes [1024, 1028) lie outside");

    let (mut b, _, _, s) = setup();
    let o = b.offset(s, imm(0), imm(15), imm(31));
    b.load_shared(Ty::B16, o, 0, 1);
    b.load_shared(Ty::B16, o, 2, 1);
    fails(&b.finish(), "bytes [1024, 1026) lie outside");

    let (mut b, _, _, s) = setup();
    b.offset(s, imm(0), imm(16), imm(0));
    fails(
        &b.finish(),
        "row index 16 is outside the buffer's shape [16, 32]",
    );

    // An address through a select has no provenance: not checked.
    let (mut b, _, t, s) = setup();
    let a = b.shared_addr(s);
    let p = b.cmp(Cmp::Lt, Ty::U32, t, imm(3));
    let q = b.select(Ty::U32, p, a, imm(4096));
    b.store_shared(Ty::U32, q, 2048, &[imm(0)], None);
    b.load_shared(Ty::U32, q, 0, 1);
    passes(&b.finish());
}

#[test]
fn async_copies() {
    let (mut b, h, t, s) = setup();
    let a = b.shared_addr(s);
    b.copy_async(CacheOp::Cg, 16, a, h, t, None, None);
    b.commit();
    let o = b.offset(s, imm(0), t, imm(0));
    let r = b.load_shared(Ty::U32, o, 0, 1)[0];
    fails(
        &b.finish(),
        &format!(
            "tile.load_shared %{}: reads buffer %{} with async copies not waited for",
            r.0, s.0
        ),
    );

    let (mut b, h, t, s) = setup();
    let a = b.shared_addr(s);
    b.copy_async(CacheOp::Cg, 16, a, h, t, None, None);
    b.commit();
    b.wait(0);
    b.ldmatrix(false, a, vec![frag(KIND, Role::A)]);
    fails(&b.finish(), "no tile.barrier follows the tile.wait");

    // Copied at the end of an iteration, read at the top of the next.
    let (mut b, h, t, s) = setup();
    let a = b.shared_addr(s);
    b.copy_async(CacheOp::Cg, 16, a, h, t, None, None);
    b.commit();
    b.wait(0);
    b.barrier();
    b.for_(imm(0), imm(4), imm(1), &[a], Some(1), |b, _, c| {
        b.load_shared(Ty::U32, c[0], 0, 1);
        b.copy_async(CacheOp::Cg, 16, c[0], h, t, None, None);
        b.commit();
        vec![c[0].into()]
    });
    fails(&b.finish(), "async copies not waited for");

    // The same pipeline waiting at the top of the body passes.
    let (mut b, h, t, s) = setup();
    let a = b.shared_addr(s);
    b.copy_async(CacheOp::Cg, 16, a, h, t, None, None);
    b.commit();
    b.for_(imm(0), imm(4), imm(1), &[a], Some(2), |b, _, c| {
        b.wait(0);
        b.barrier();
        b.load_shared(Ty::U32, c[0], 0, 1);
        let next = b.add(Ty::U32, c[0], imm(16));
        b.copy_async(CacheOp::Cg, 16, next, h, t, None, None);
        b.commit();
        vec![next.into()]
    });
    passes(&b.finish());

    // A copy in one branch of an if is still pending after it.
    let (mut b, h, t, s) = setup();
    let a = b.shared_addr(s);
    let p = b.cmp(Cmp::Lt, Ty::U32, t, imm(3));
    b.when(p, |b| b.copy_async(CacheOp::Ca, 4, a, h, t, None, Some(p)));
    b.barrier();
    b.load_shared(Ty::U32, a, 0, 1);
    fails(&b.finish(), "async copies not waited for");
}

#[test]
fn barriers() {
    let (mut b, _, t, s) = setup();
    let o = b.offset(s, imm(0), t, imm(0));
    b.store_shared(Ty::U32, o, 0, &[t.into()], None);
    let a = b.shared_addr(s);
    b.load_shared(Ty::U32, a, 4, 1);
    fails(&b.finish(), "written by tile.store_shared #");

    // Read at the top of an iteration, written at its end.
    let (mut b, _, t, s) = setup();
    let a = b.shared_addr(s);
    b.for_(imm(0), imm(4), imm(1), &[], None, |b, _, _| {
        b.load_shared(Ty::U32, a, 0, 1);
        b.store_shared(Ty::U32, a, 0, &[t.into()], None);
        vec![]
    });
    fails(&b.finish(), "with no tile.barrier in between");

    // With a barrier after the read and after the write, it passes.
    let (mut b, _, t, s) = setup();
    let a = b.shared_addr(s);
    b.for_(imm(0), imm(4), imm(1), &[], None, |b, _, _| {
        b.barrier();
        b.load_shared(Ty::U32, a, 0, 1);
        b.barrier();
        b.store_shared(Ty::U32, a, 0, &[t.into()], None);
        vec![]
    });
    passes(&b.finish());
}

#[test]
fn provenance() {
    // Through fma (2·8 added) and both arms of an if (same offset).
    let (mut b, _, _, s) = setup();
    let a = b.shared_addr(s);
    let f = b.fma(Ty::U32, imm(2), imm(8), a);
    b.load_shared(Ty::U32, f, 1008, 2);
    fails(&b.finish(), "bytes [1024, 1032) lie outside");

    let (mut b, _, t, s) = setup();
    let a = b.shared_addr(s);
    let p = b.cmp(Cmp::Lt, Ty::U32, t, imm(3));
    let r = b.if_(
        p,
        &[Type::Scalar(Ty::U32)],
        |b| vec![b.add(Ty::U32, a, imm(8)).into()],
        |b| vec![b.add(Ty::U32, imm(8), a).into()],
    );
    b.load_shared(Ty::U32, r[0], 1016, 1);
    fails(&b.finish(), "bytes [1024, 1028) lie outside");

    // A carried address whose yield points into another buffer has no provenance: its
    // reads are not checked against the store into the first buffer.
    let (mut b, _, t, s) = setup();
    let s2 = b.shared("s2", buf(&[4, 32], 4));
    let a = b.shared_addr(s);
    b.store_shared(Ty::U32, a, 0, &[t.into()], None);
    b.for_(imm(0), imm(4), imm(1), &[a], None, |b, _, c| {
        b.load_shared(Ty::U32, c[0], 0, 1);
        vec![b.shared_addr(s2).into()]
    });
    passes(&b.finish());

    // The same loop yielding into the first buffer keeps it: the read is checked.
    let (mut b, _, t, s) = setup();
    let a = b.shared_addr(s);
    b.store_shared(Ty::U32, a, 0, &[t.into()], None);
    b.for_(imm(0), imm(4), imm(1), &[a], None, |b, _, c| {
        b.load_shared(Ty::U32, c[0], 0, 1);
        vec![b.add(Ty::U32, c[0], t).into()]
    });
    fails(&b.finish(), "with no tile.barrier in between");
}

#[test]
fn parameter_and_shared_names_are_distinct_ptx_names() {
    let (mut b, _, _, _) = setup();
    b.param("h", global(DType::BF16), ParamRole::Output);
    fails(
        &b.finish(),
        "parameter 'h' %3 has the same name as parameter 'h' %0",
    );
    let (mut b, _, _, _) = setup();
    b.shared("t_0", buf(&[4], 4));
    fails(&b.finish(), "as the kernel's name 't_0'");
    // two names that mangle to one PTX name
    let (mut b, _, _, _) = setup();
    b.param("核", global(DType::BF16), ParamRole::Output);
    b.param("$u6838$", global(DType::BF16), ParamRole::Output);
    fails(
        &b.finish(),
        "has the same name as a PTX name as parameter '核'",
    );
    let (mut b, _, _, _) = setup();
    b.param("核", global(DType::BF16), ParamRole::Output);
    b.param("核2", global(DType::BF16), ParamRole::Output);
    passes(&b.finish());
}
