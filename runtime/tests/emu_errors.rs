//! Planted bugs the emulator must report (E0500, naming the instruction and its span), and
//! malformed input it must refuse without panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use tessera_compiler::backend::ptx::builder::{fimm, imm};
use tessera_compiler::backend::ptx::{
    BinOp, CacheOp, Cmp, Dim, KernelBuilder, Op, ParamTy, SReg, ShflMode, Space, Ty,
};
use tessera_lang::{Code, SourceMap, Span};
use tessera_runtime::emu::{run, run_with, Arg, EmuErrorKind, Launch, Options};

#[path = "../../compiler/tests/common/samples.rs"]
mod samples;

const SRC: &str = "def planted(x):\n    s[t] = x\n    y = s[t + 1]\n    return y\n";

fn span(needle: &str) -> Span {
    let lo = SRC.find(needle).unwrap();
    Span::new(0, lo, lo + needle.len())
}

fn sources() -> SourceMap {
    let mut s = SourceMap::new();
    s.add("planted.tsr", SRC);
    s
}

#[test]
fn out_of_bounds_load_is_reported() {
    let (k, s) = samples::sample("gelu_affine");
    // n = 8 but x holds only 6 floats: the second thread's v4 load runs off the end.
    let mut bufs = vec![vec![0u8; 24], vec![0u8; 32]];
    let args = [
        Arg::Ptr {
            buffer: 0,
            offset: 0,
        },
        Arg::Ptr {
            buffer: 1,
            offset: 0,
        },
        Arg::U32(1f32.to_bits()),
        Arg::U32(0f32.to_bits()),
        Arg::U32(8),
    ];
    let e = run(&k, Launch::linear(1, 32), &args, &mut bufs).unwrap_err();
    assert!(
        matches!(
            e.kind,
            EmuErrorKind::OutOfBounds {
                space: Space::Global,
                bytes: 16,
                limit: 24,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(e.code(), Code::E0500);
    assert_eq!(
        e.inst.as_deref(),
        Some("ld.global.v4.f32 {%f2, %f3, %f4, %f5}, [%ud4];")
    );
    assert_eq!(e.thread, Some([1, 0, 0]));
    let r = e.to_runtime_error(Some(&s));
    assert_eq!(r.code, Code::E0500);
    assert!(r.message.contains("ld.global.v4.f32"), "{}", r.message);
    assert!(r.message.contains("samples.tsr:3:9"), "{}", r.message);
}

/// Each thread writes s[t], then (optionally after bar.sync) reads s[t+1].
fn neighbour_kernel(barrier: bool) -> tessera_compiler::backend::ptx::Kernel {
    let mut b = KernelBuilder::new("planted", span("def planted"));
    let y = b.param("y", ParamTy::Ptr);
    let smem = b.shared("s", 4 * 64, 16);
    let yp = b.ld_param(y);
    let tid = b.special(SReg::Tid(Dim::X));
    let base = b.shared_addr(smem);
    b.at(span("s[t] = x"));
    let a = b.fma(Ty::U32, tid, imm(4), base);
    let v = b.cvt(
        Ty::F32,
        Ty::U32,
        Some(tessera_compiler::backend::ptx::Rnd::Rn),
        tid,
    );
    b.st(Space::Shared, Ty::F32, a, 0, &[v.into()]);
    if barrier {
        b.bar_sync();
    }
    b.at(span("y = s[t + 1]"));
    let r = b.ld(Space::Shared, Ty::F32, a, 4, 1)[0];
    let out = b.mad_wide(Ty::U32, tid, imm(4), yp);
    b.st(Space::Global, Ty::F32, out, 0, &[r.into()]);
    b.ret();
    b.finish().unwrap()
}

#[test]
fn shared_race_is_reported() {
    let k = neighbour_kernel(false);
    let mut bufs = vec![vec![0u8; 4 * 63]];
    let e = run(
        &k,
        Launch::linear(1, 63),
        &[Arg::Ptr {
            buffer: 0,
            offset: 0,
        }],
        &mut bufs,
    )
    .unwrap_err();
    match &e.kind {
        EmuErrorKind::SharedRace {
            write: false,
            other_write: true,
            other_thread: 1,
            other_inst,
            ..
        } => {
            assert_eq!(other_inst, "st.shared.f32 [%u2], %f0;")
        }
        k => panic!("{k:?}"),
    }
    assert_eq!(e.inst.as_deref(), Some("ld.shared.f32 %f1, [%u2+4];"));
    assert_eq!(e.span, Some(span("y = s[t + 1]")));
    assert_eq!(e.code(), Code::E0500);
    let text = e.to_runtime_error(Some(&sources())).to_string();
    assert!(
        text.starts_with("error[E0500]: shared-memory race"),
        "{text}"
    );
    assert!(text.contains("planted.tsr:3:5"), "{text}");

    // With the barrier the same kernel is race-free and reads its neighbour's value.
    let k = neighbour_kernel(true);
    let mut bufs = vec![vec![0u8; 4 * 63]];
    run(
        &k,
        Launch::linear(1, 63),
        &[Arg::Ptr {
            buffer: 0,
            offset: 0,
        }],
        &mut bufs,
    )
    .unwrap();
    let y: Vec<f32> = bufs[0]
        .chunks(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    assert_eq!(y[0], 1.0);
    assert_eq!(y[61], 62.0);
    assert_eq!(y[62], 0.0); // s[63] was never written: shared memory starts zeroed
}

#[test]
fn shared_out_of_bounds_is_reported() {
    let k = neighbour_kernel(true);
    let mut bufs = vec![vec![0u8; 4 * 64]];
    let e = run(
        &k,
        Launch::linear(1, 64),
        &[Arg::Ptr {
            buffer: 0,
            offset: 0,
        }],
        &mut bufs,
    )
    .unwrap_err();
    assert!(
        matches!(
            e.kind,
            EmuErrorKind::OutOfBounds {
                space: Space::Shared,
                addr: 256,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(e.thread, Some([63, 0, 0]));
}

#[test]
fn reading_before_cp_async_wait_is_a_race() {
    for wait_first in [false, true] {
        let mut b = KernelBuilder::new("early", span("def planted"));
        let x = b.param("x", ParamTy::Ptr);
        let smem = b.shared("s", 4 * 32, 16);
        let xp = b.ld_param(x);
        let xg = b.cvta_global(xp);
        let tid = b.special(SReg::Tid(Dim::X));
        let base = b.shared_addr(smem);
        let dst = b.fma(Ty::U32, tid, imm(4), base);
        let src = b.mad_wide(Ty::U32, tid, imm(4), xg);
        b.at(span("s[t] = x"));
        b.push(Op::CpAsync {
            cache: CacheOp::Ca,
            dst,
            src,
            bytes: 4,
            src_size: None,
        });
        b.push(Op::CpAsyncCommit);
        if wait_first {
            b.push(Op::CpAsyncWait { n: 0 });
        }
        b.at(span("y = s[t + 1]"));
        let v = b.ld(Space::Shared, Ty::F32, dst, 0, 1)[0];
        let v = b.add(Ty::F32, v, fimm(1.0));
        b.st(Space::Global, Ty::F32, src, 0, &[v.into()]);
        b.ret();
        let k = b.finish().unwrap();
        let x: Vec<u8> = (0..32).flat_map(|i| (i as f32).to_le_bytes()).collect();
        let mut bufs = vec![x];
        let r = run(
            &k,
            Launch::linear(1, 32),
            &[Arg::Ptr {
                buffer: 0,
                offset: 0,
            }],
            &mut bufs,
        );
        if wait_first {
            r.unwrap();
            assert_eq!(&bufs[0][4..8], &2.0f32.to_le_bytes());
        } else {
            let e = r.unwrap_err();
            assert!(
                matches!(e.kind, EmuErrorKind::AsyncPending { addr: 0, issuer: 0 }),
                "{e}"
            );
            assert_eq!(e.inst.as_deref(), Some("ld.shared.f32 %f0, [%u2];"));
        }
    }
}

#[test]
fn divergent_shfl_is_reported() {
    let mut b = KernelBuilder::new("div", span("def planted"));
    let tid = b.special(SReg::Tid(Dim::X));
    let p = b.setp(Cmp::Lt, Ty::U32, tid, imm(16));
    let v = b.cvt(
        Ty::F32,
        Ty::U32,
        Some(tessera_compiler::backend::ptx::Rnd::Rn),
        tid,
    );
    let then = b.block("half");
    let exit = b.block("exit");
    b.cbr(p, then, exit);
    b.switch_to(then);
    let t = b.reg(Ty::F32);
    b.push(Op::Shfl {
        mode: ShflMode::Bfly,
        dst: t,
        src: v.into(),
        lane: imm(1),
        clamp: imm(31),
        mask: u32::MAX,
    });
    b.br(exit);
    b.switch_to(exit);
    b.ret();
    let k = b.finish().unwrap();
    let e = run(&k, Launch::linear(1, 32), &[], &mut []).unwrap_err();
    assert!(
        matches!(
            e.kind,
            EmuErrorKind::Divergent {
                active: 0xffff,
                required: u32::MAX
            }
        ),
        "{e}"
    );
}

#[test]
fn shfl_modes_follow_the_ptx_rules() {
    // d = shfl(mode, lane id, b) for every mode; c = 31 for down/bfly/idx, 0 for up.
    for (mode, bval, c, want) in [
        (
            ShflMode::Bfly,
            5i64,
            31i64,
            (0..32u32).map(|i| i ^ 5).collect::<Vec<_>>(),
        ),
        (
            ShflMode::Down,
            3,
            31,
            (0..32u32)
                .map(|i| if i + 3 <= 31 { i + 3 } else { i })
                .collect(),
        ),
        (
            ShflMode::Up,
            3,
            0,
            (0..32u32).map(|i| if i >= 3 { i - 3 } else { i }).collect(),
        ),
        (ShflMode::Idx, 7, 31, vec![7; 32]),
        // Segments of 8 lanes (c = 0x1807: segmask 0x18, clamp 7): idx 2 within each segment.
        (
            ShflMode::Idx,
            2,
            0x1807,
            (0..32u32).map(|i| (i & !7) | 2).collect(),
        ),
    ] {
        let mut b = KernelBuilder::new("shfl", span("def planted"));
        let y = b.param("y", ParamTy::Ptr);
        let yp = b.ld_param(y);
        let tid = b.special(SReg::Tid(Dim::X));
        let t = b.reg(Ty::U32);
        b.push(Op::Shfl {
            mode,
            dst: t,
            src: tid.into(),
            lane: imm(bval),
            clamp: imm(c),
            mask: u32::MAX,
        });
        let a = b.mad_wide(Ty::U32, tid, imm(4), yp);
        b.st(Space::Global, Ty::U32, a, 0, &[t.into()]);
        b.ret();
        let k = b.finish().unwrap();
        let mut bufs = vec![vec![0u8; 128]];
        run(
            &k,
            Launch::linear(1, 32),
            &[Arg::Ptr {
                buffer: 0,
                offset: 0,
            }],
            &mut bufs,
        )
        .unwrap();
        let got: Vec<u32> = bufs[0]
            .chunks(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(got, want, "{mode:?}");
    }
}

#[test]
fn endless_loop_hits_the_step_limit() {
    let mut b = KernelBuilder::new("spin", span("def planted"));
    let l = b.block("loop");
    b.br(l);
    b.switch_to(l);
    b.mov(Ty::U32, imm(1));
    b.br(l);
    let k = b.finish().unwrap();
    let e = run_with(
        &k,
        Launch::linear(1, 32),
        &[],
        &mut [],
        &Options { max_steps: 1000 },
    )
    .unwrap_err();
    assert!(
        matches!(e.kind, EmuErrorKind::StepLimit { steps: 1000 }),
        "{e}"
    );
}

#[test]
fn malformed_input_is_an_error_not_a_panic() {
    // Unverified IR: a register read before any write.
    let mut b = KernelBuilder::new("bad", span("def planted"));
    let r = b.reg(Ty::U32);
    b.bin(BinOp::Add, Ty::U32, r, imm(1));
    let k = b.into_unverified();
    let e = run(&k, Launch::linear(1, 32), &[], &mut []).unwrap_err();
    assert!(matches!(e.kind, EmuErrorKind::InvalidKernel(_)), "{e}");

    let k = neighbour_kernel(true);
    let launch = Launch::linear(1, 32);
    let e = run(&k, launch, &[], &mut []).unwrap_err();
    assert!(
        matches!(
            e.kind,
            EmuErrorKind::ArgCount {
                expected: 1,
                got: 0
            }
        ),
        "{e}"
    );
    let e = run(&k, launch, &[Arg::F32(1.0)], &mut []).unwrap_err();
    assert!(
        matches!(e.kind, EmuErrorKind::ArgType { index: 0, .. }),
        "{e}"
    );
    let e = run(
        &k,
        launch,
        &[Arg::Ptr {
            buffer: 3,
            offset: 0,
        }],
        &mut [],
    )
    .unwrap_err();
    assert!(matches!(e.kind, EmuErrorKind::NoBuffer { .. }), "{e}");
    let e = run(
        &k,
        Launch::linear(1, 2048),
        &[Arg::Ptr {
            buffer: 0,
            offset: 0,
        }],
        &mut [vec![]],
    )
    .unwrap_err();
    assert!(matches!(e.kind, EmuErrorKind::BadLaunch { .. }), "{e}");
    // A wild pointer (not from any buffer) is out of bounds, not a crash.
    let e = run(&k, launch, &[Arg::U64(12345)], &mut []).unwrap_err();
    assert!(
        matches!(
            e.kind,
            EmuErrorKind::OutOfBounds {
                space: Space::Global,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn integer_division_by_zero_is_reported() {
    let mut b = KernelBuilder::new("divz", span("def planted"));
    let tid = b.special(SReg::Tid(Dim::X));
    b.bin(BinOp::Div, Ty::U32, imm(7), tid);
    b.ret();
    let k = b.finish().unwrap();
    let e = run(&k, Launch::linear(1, 4), &[], &mut []).unwrap_err();
    assert!(matches!(e.kind, EmuErrorKind::DivideByZero), "{e}");
    assert_eq!(e.thread, Some([0, 0, 0]));
}

/// Tile IR text (ops without `loc`s get the line's own) translated to Target IR.
fn tile(text: &str) -> tessera_compiler::backend::ptx::Kernel {
    let text: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let t = l.trim();
            if t.is_empty() || t == "}" || t == "} else {" {
                format!("{l}\n")
            } else {
                format!("{l}   loc(\"t.tsr\":{}:1)\n", i + 1)
            }
        })
        .collect();
    let mut sources = SourceMap::new();
    let k = tessera_compiler::tile::text::parse(&text, &mut sources).expect("parses");
    let checked = tessera_compiler::tile::check::check(&k).expect("checks");
    tessera_compiler::backend::ptx::from_tile::translate(checked)
        .expect("translates")
        .kernel
}

fn ptrs(n: usize) -> Vec<Arg> {
    (0..n)
        .map(|buffer| Arg::Ptr { buffer, offset: 0 })
        .collect()
}

/// A barrier inside a branch: `cond` (on %2 = tid.x, %5 = warp) picks the threads that reach
/// it; `other` is what the others do (another barrier, or nothing).
fn barrier_in_if(cond: &str, other: &str) -> tessera_compiler::backend::ptx::Kernel {
    tile(&format!(
        "tile.kernel @bar(%0 @x: !tile.global<fp32> in, %1 @y: !tile.global<fp32> out) grid = [1, 1, 1] block = [64, 1, 1] {{
  %2 = tile.special %tid.x : u32
  %3 = tile.load.f32 %0[%2] : f32
  %5 = tile.shr.u32 %2, 5 : u32
  %4 = {cond}
  tile.if %4 {{
    tile.barrier
    tile.yield
  }} else {{
    {other}
    tile.yield
  }}
  tile.store.f32 %1[%2], (%3)
}}"
    ))
}

#[test]
fn a_barrier_not_every_thread_reaches_is_reported() {
    let bufs = || vec![vec![0u8; 256], vec![0u8; 256]];
    let launch = Launch::linear(1, 64);
    // 16 threads of warp 0 wait; the other 48 finish the kernel
    let k = barrier_in_if("tile.setp.lt.u32 %2, 16 : pred", "");
    let e = run(&k, launch, &ptrs(2), &mut bufs()).unwrap_err();
    assert!(
        matches!(
            e.kind,
            EmuErrorKind::DivergentBarrier {
                waiting: 16,
                threads: 64,
                other_inst: None,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(e.code(), Code::E0500);
    assert_eq!(e.inst.as_deref(), Some("bar.sync 0;"));
    assert!(e.to_string().contains("divergent barrier"), "{e}");
    // warp 0 waits in the then-branch, warp 1 at the else-branch's barrier
    let k = barrier_in_if("tile.setp.eq.u32 %5, 0 : pred", "tile.barrier");
    let e = run(&k, launch, &ptrs(2), &mut bufs()).unwrap_err();
    match &e.kind {
        EmuErrorKind::DivergentBarrier {
            waiting: 32,
            other_thread,
            other_inst: Some(i),
            ..
        } => {
            assert_eq!(i, "bar.sync 0;");
            assert!(*other_thread >= 32, "{e}");
        }
        _ => panic!("{e}"),
    }
    // every thread takes the branch: one barrier for all, no error
    let k = barrier_in_if("tile.setp.lt.u32 %2, 64 : pred", "");
    let mut b = bufs();
    b[0] = (0..64u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let stats = run(&k, launch, &ptrs(2), &mut b).expect("a uniform barrier");
    assert_eq!(stats.barriers, 1);
    assert_eq!(b[1], b[0]);
}

#[test]
fn a_barrier_in_a_loop_whose_trip_count_differs_between_threads_is_reported() {
    // thread t runs t / 8 + 1 iterations, each with a barrier
    let k = tile(
        "tile.kernel @trips(%0 @y: !tile.global<fp32> out) grid = [1, 1, 1] block = [64, 1, 1] {
  %1 = tile.special %tid.x : u32
  %2 = tile.shr.u32 %1, 3 : u32
  %3 = tile.add.u32 %2, 1 : u32
  tile.for %4 = 0 to %3 step 1 {
    tile.barrier
    tile.yield
  }
  %5 = tile.cvt.rn.f32.u32 %1 : f32
  tile.store.f32 %0[%1], (%5)
}",
    );
    let e = run(&k, Launch::linear(1, 64), &ptrs(1), &mut [vec![0u8; 256]]).unwrap_err();
    assert!(
        matches!(e.kind, EmuErrorKind::DivergentBarrier { .. }),
        "{e}"
    );
    assert_eq!(e.inst.as_deref(), Some("bar.sync 0;"));
}

/// Each block's 32 threads store `value` to y[tid]: every block writes the same elements.
fn every_block_stores(value: &str) -> tessera_compiler::backend::ptx::Kernel {
    tile(&format!(
        "tile.kernel @race(%0 @x: !tile.global<fp32> in, %1 @y: !tile.global<fp32> out) grid = [4, 1, 1] block = [32, 1, 1] {{
  %2 = tile.special %tid.x : u32
  %3 = tile.special %ctaid.x : u32
  %4 = {value}
  tile.store.f32 %1[%2], (%4)
}}"
    ))
}

#[test]
fn blocks_storing_different_values_to_one_global_address_race() {
    let bufs = || {
        vec![
            (0..4u32)
                .flat_map(|i| (i as f32 + 1.0).to_le_bytes())
                .collect(),
            vec![0u8; 128],
        ]
    };
    let launch = Launch::linear(4, 32);
    // y[tid] = x[blockIdx]: block 1 overwrites block 0's value
    let k = every_block_stores("tile.load.f32 %0[%3] : f32");
    let e = run(&k, launch, &ptrs(2), &mut bufs()).unwrap_err();
    match e.kind {
        EmuErrorKind::GlobalRace { addr, other_block } => {
            assert_eq!(other_block, [0, 0, 0]);
            assert_eq!(addr & ((1 << 40) - 1), 0, "y[0], thread 0's element");
        }
        _ => panic!("{e}"),
    }
    assert_eq!(e.code(), Code::E0500);
    assert_eq!(e.block, Some([1, 0, 0]));
    assert_eq!(
        e.inst.as_deref().map(|i| i.starts_with("st.global.f32")),
        Some(true)
    );
    assert!(
        e.to_string().contains("global-memory race between blocks"),
        "{e}"
    );
    // the same value from every block: the result does not depend on the order; no error
    let k = every_block_stores("tile.load.f32 %0[0] : f32");
    let mut b = bufs();
    run(&k, launch, &ptrs(2), &mut b).expect("same value");
    assert_eq!(&b[1][..4], &1f32.to_le_bytes());
    // atomics from every block are not races
    let k = tile(
        "tile.kernel @sum(%0 @x: !tile.global<fp32> in, %1 @y: !tile.global<fp32> out) grid = [4, 1, 1] block = [32, 1, 1] {
  %2 = tile.special %tid.x : u32
  %3 = tile.special %ctaid.x : u32
  %4 = tile.load.f32 %0[%3] : f32
  tile.red.add.f32 %1[%2], %4
}",
    );
    let mut b = bufs();
    run(&k, launch, &ptrs(2), &mut b).expect("atomics");
    assert_eq!(&b[1][..4], &10f32.to_le_bytes());
    // one block: no shadow, its threads' stores are its own business
    let k = tile(
        "tile.kernel @one(%0 @x: !tile.global<fp32> in, %1 @y: !tile.global<fp32> out) grid = [1, 1, 1] block = [32, 1, 1] {
  %2 = tile.special %tid.x : u32
  %3 = tile.load.f32 %0[0] : f32
  tile.store.f32 %1[%2], (%3)
}",
    );
    run(&k, Launch::linear(1, 32), &ptrs(2), &mut bufs()).expect("one block");
}
