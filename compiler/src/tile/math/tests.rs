use super::*;
use crate::graph::DType;
use crate::scalar::{Cmp, Ty};
use crate::tile::build::imm;
use crate::tile::build::Builder;
use crate::tile::ir::ParamRole;
use crate::tile::ir::{Kernel, MathFn, OpKind, Operand, Region, Type};
use std::borrow::Cow;
use tessera_lang::SourceMap;
use tessera_lang::Span;

const MATH_FNS: [MathFn; 10] = [
    MathFn::Exp,
    MathFn::Log,
    MathFn::Tanh,
    MathFn::Sigmoid,
    MathFn::Silu,
    MathFn::Gelu,
    MathFn::Pow,
    MathFn::Erf,
    MathFn::Sin,
    MathFn::Cos,
];

/// A kernel applying every math function, in `ty`, `chain` times over, inside a `tile.if`
/// (so that nested regions are expanded too).
fn kernel(ty: Ty, dt: DType, chain: usize) -> Kernel {
    let mut sm = SourceMap::new();
    let span = Span::new(sm.add("t.tsr", "x\n"), 0, 1);
    let mut b = Builder::new("m", span, [1, 1, 1], [32, 1, 1]);
    let x = b.param("x", Type::Global(dt), ParamRole::Input);
    let y = b.param("y", Type::Global(dt), ParamRole::Output);
    let t = b.tid_x();
    let v = b.load(ty, x, t, None, &[])[0];
    let ok = b.cmp(Cmp::Lt, Ty::U32, t, imm(16));
    let r = b.if_(
        ok,
        &[Type::Scalar(ty)],
        |b| {
            let mut a = v;
            for _ in 0..chain {
                for f in MATH_FNS {
                    let args: Vec<Operand> = if f == MathFn::Pow {
                        vec![a.into(), fc(ty, 0.5)]
                    } else {
                        vec![a.into()]
                    };
                    a = b.math(f, ty, &args);
                }
            }
            vec![a.into()]
        },
        |_| vec![v.into()],
    );
    b.store(ty, y, t, &[r[0].into()], None);
    b.finish()
}

fn math_ops(k: &Kernel, r: &Region) -> usize {
    r.ops
        .iter()
        .filter_map(|&id| k.op(id))
        .map(|o| {
            let own = usize::from(matches!(o.kind, OpKind::Math { .. }));
            own + o.regions.iter().map(|r| math_ops(k, r)).sum::<usize>()
        })
        .sum()
}

fn reachable(k: &Kernel, r: &Region) -> usize {
    r.ops
        .iter()
        .filter_map(|&id| k.op(id))
        .map(|o| 1 + o.regions.iter().map(|r| reachable(k, r)).sum::<usize>())
        .sum()
}

#[test]
fn only_spirv_f32_exp_log_tanh_are_native() {
    for f in MATH_FNS {
        for ty in [Ty::F16, Ty::BF16, Ty::F32, Ty::F64] {
            assert_eq!(form(f, ty, MathTarget::Ptx), Form::Expanded, "{f:?} {ty:?}");
            let native = ty == Ty::F32 && matches!(f, MathFn::Exp | MathFn::Log | MathFn::Tanh);
            let want = if native { Form::Native } else { Form::Expanded };
            assert_eq!(form(f, ty, MathTarget::Spirv), want, "{f:?} {ty:?}");
        }
    }
}

#[test]
fn expanded_kernels_are_valid_tile_ir_with_only_native_math_left() {
    for (ty, dt) in [
        (Ty::F32, DType::F32),
        (Ty::F64, DType::F64),
        (Ty::F16, DType::F16),
        (Ty::BF16, DType::BF16),
    ] {
        let k = kernel(ty, dt, 1);
        for target in [MathTarget::Ptx, MathTarget::Spirv] {
            let e = expand(&k, target);
            assert!(matches!(e, Cow::Owned(_)));
            crate::tile::check::check(&e).unwrap_or_else(|err| panic!("{ty:?} {target:?}: {err}"));
            // every op is reachable once: none left dead in the arena
            assert_eq!(reachable(&e, &e.body), e.ops.len(), "{ty:?} {target:?}");
            let left = math_ops(&e, &e.body);
            let native = if target == MathTarget::Spirv && ty == Ty::F32 {
                3
            } else {
                0
            };
            assert_eq!(left, native, "{ty:?} {target:?}");
        }
    }
}

#[test]
fn a_kernel_without_expanded_math_is_borrowed() {
    let mut k = kernel(Ty::F32, DType::F32, 1);
    for op in &mut k.ops {
        if let OpKind::Math { f, .. } = op.kind {
            if !matches!(f, MathFn::Exp | MathFn::Log | MathFn::Tanh) {
                op.kind = OpKind::Math {
                    f: MathFn::Exp,
                    ty: Ty::F32,
                };
                op.operands.truncate(1);
            }
        }
    }
    assert!(matches!(expand(&k, MathTarget::Spirv), Cow::Borrowed(_)));
    assert!(matches!(expand(&k, MathTarget::Ptx), Cow::Owned(_)));
}

#[test]
fn the_expansion_grows_linearly() {
    let one = expand(&kernel(Ty::F64, DType::F64, 1), MathTarget::Spirv)
        .ops
        .len();
    let eight = expand(&kernel(Ty::F64, DType::F64, 8), MathTarget::Spirv)
        .ops
        .len();
    let base = kernel(Ty::F64, DType::F64, 0).ops.len();
    assert_eq!(eight - base, 8 * (one - base));
}
