//! Schedule IR → Tile IR: the block program of one scheduled kernel. Kernels whose kind has
//! no block program yet give [`NotLowered`] with the reason (the caller falls back).

use crate::graph::{DType, Graph, Op, TensorType};
use crate::schedule::{Kernel, Kind};
use crate::target::MmaKind;
use crate::tile::{MatmulBatch, RowOp, Shape, Smem, TileKernel, TileOp};
use tessera_lang::Span;

/// Why a kernel has no Tile IR (yet).
#[derive(Clone, Debug, PartialEq)]
pub struct NotLowered {
    pub kernel: String,
    pub reason: String,
}

fn nl(k: &Kernel, reason: impl Into<String>) -> NotLowered {
    NotLowered {
        kernel: k.name.clone(),
        reason: reason.into(),
    }
}

fn u32_of(k: &Kernel, v: usize) -> Result<u32, NotLowered> {
    u32::try_from(v).map_err(|_| nl(k, "a dimension does not fit in 32 bits"))
}

fn numel(t: &TensorType) -> u64 {
    t.shape.iter().map(|&d| d as u64).product()
}

fn float_io(d: DType) -> bool {
    matches!(d, DType::F32 | DType::TF32 | DType::BF16 | DType::F16)
}

fn ceil(a: u64, b: u64) -> u64 {
    a.div_ceil(b.max(1))
}

/// Lowers one kernel of `g`.
mod attention;

pub fn lower(g: &Graph, k: &Kernel) -> Result<TileKernel, NotLowered> {
    let op = g.op(k.root).ok_or_else(|| nl(k, "no such graph value"))?;
    let s = &k.schedule;
    let sp = k.span;
    let mut tk = TileKernel {
        name: k.name.clone(),
        root: k.root,
        inputs: k.inputs.clone(),
        ty: k.ty.clone(),
        grid: [1, 1, 1],
        block: [s.threads, 1, 1],
        smem: vec![],
        body: vec![],
        shape: Shape::Elementwise { n: 0, vector: 1 },
        span: sp,
    };
    let out = format!("%{}", k.root.0);
    match k.kind {
        Kind::Elementwise => {
            let io = |d: DType| {
                float_io(d) || matches!(d, DType::F64 | DType::I32 | DType::I64 | DType::Bool)
            };
            if !io(k.ty.dtype) {
                return Err(nl(k, format!("{} results are not lowered yet", k.ty.dtype)));
            }
            for v in &k.inputs {
                let t = g.ty(*v).ok_or_else(|| nl(k, "untyped input"))?;
                if !io(t.dtype) {
                    return Err(nl(k, format!("{} operands are not lowered yet", t.dtype)));
                }
            }
            let n = numel(&k.ty);
            if n == 0 || n > u64::from(u32::MAX) {
                return Err(nl(k, "empty or too large (>2^32 elements)"));
            }
            let grid = ceil(n, u64::from(s.threads * s.vector));
            tk.grid = [
                u32::try_from(grid).map_err(|_| nl(k, "grid too large"))?,
                1,
                1,
            ];
            tk.shape = Shape::Elementwise {
                n,
                vector: s.vector,
            };
            let body_desc = match op {
                Op::FusedElementwise { body, .. } => {
                    let names: Vec<&str> = body
                        .ids()
                        .filter_map(|i| body.op(i))
                        .filter(|o| !matches!(o, Op::Param { .. } | Op::Const { .. }))
                        .map(Op::name)
                        .collect();
                    names.join(" -> ")
                }
                other => other.name().to_string(),
            };
            tk.body = vec![(
                TileOp::Map(format!(
                    "thread -> {} consecutive elements, block.x -> {} elements",
                    s.vector,
                    s.threads * s.vector
                )),
                sp,
            )];
            for v in &k.inputs {
                tk.body.push((
                    TileOp::Load {
                        src: format!("%{}", v.0),
                        vector: s.vector,
                        masked: true,
                    },
                    g.span(*v),
                ));
            }
            tk.body
                .push((TileOp::Compute(format!("fp32 {body_desc}")), sp));
            tk.body.push((
                TileOp::Store {
                    dst: out,
                    vector: s.vector,
                    masked: true,
                },
                sp,
            ));
        }
        Kind::Softmax => {
            let axis = match op {
                Op::Softmax { axis, .. } => *axis,
                _ => return Err(nl(k, "not a softmax")),
            };
            if !(float_io(k.ty.dtype) || k.ty.dtype == DType::F64) {
                return Err(nl(k, format!("{} softmax", k.ty.dtype)));
            }
            let shape = &k.ty.shape;
            let inner: u64 = shape.iter().skip(axis + 1).map(|&d| d as u64).product();
            if inner > 1 {
                // a middle axis: [outer, len, inner]
                let outer: u64 = shape[..axis].iter().map(|&d| d as u64).product();
                let len = shape.get(axis).map(|&d| d as u64).unwrap_or(1);
                if outer * len * inner > u64::from(u32::MAX) {
                    return Err(nl(k, "a softmax of more than 2^32 elements"));
                }
                if outer * len * inner == 0 {
                    return Err(nl(k, "empty softmax"));
                }
                super::reduce_axis::tile(k, RowOp::Max, outer, len, inner, &mut tk)
                    .map_err(|r| nl(k, r))?;
                tk.shape = Shape::SoftmaxAxis {
                    outer: u32_of(k, outer as usize)?,
                    len: u32_of(k, len as usize)?,
                    inner: u32_of(k, inner as usize)?,
                };
                return Ok(tk);
            }
            let cols = *shape.get(axis).unwrap_or(&1);
            let rows = if cols == 0 {
                0
            } else {
                numel(&k.ty) / cols as u64
            };
            if rows == 0 {
                return Err(nl(k, "empty softmax"));
            }
            let warps = s.threads / 32;
            tk.grid = [
                u32::try_from(ceil(rows, u64::from(warps))).map_err(|_| nl(k, "grid too large"))?,
                1,
                1,
            ];
            tk.shape = Shape::RowSoftmax {
                rows: u32::try_from(rows).map_err(|_| nl(k, "too many rows"))?,
                cols: u32_of(k, cols)?,
                warps,
            };
            let inp = format!("%{}", k.inputs.first().map(|v| v.0).unwrap_or(0));
            let lanes = |what: &str| TileOp::For {
                var: "%j".to_string(),
                extent: format!("{cols} step 32 (lane-strided)"),
                body: vec![
                    (
                        TileOp::Load {
                            src: format!("{inp}[row, %j]"),
                            vector: 1,
                            masked: true,
                        },
                        sp,
                    ),
                    (TileOp::Compute(what.to_string()), sp),
                ],
            };
            tk.body = vec![
                (
                    TileOp::Map("warp -> row, lane -> columns j ≡ lane (mod 32)".into()),
                    sp,
                ),
                (lanes("max"), sp),
                (TileOp::ReduceWarp("max"), sp),
                (lanes("sum exp(x - max)"), sp),
                (TileOp::ReduceWarp("add"), sp),
                (
                    TileOp::For {
                        var: "%j".to_string(),
                        extent: format!("{cols} step 32 (lane-strided)"),
                        body: vec![
                            (TileOp::Compute("exp(x - max) / sum".into()), sp),
                            (
                                TileOp::Store {
                                    dst: format!("{out}[row, %j]"),
                                    vector: 1,
                                    masked: true,
                                },
                                sp,
                            ),
                        ],
                    },
                    sp,
                ),
            ];
        }
        Kind::Matmul => {
            let (a, b, accum, epilogue) = match op {
                Op::Matmul {
                    a,
                    b,
                    accum,
                    epilogue,
                } => (*a, *b, *accum, epilogue),
                _ => return Err(nl(k, "not a matmul")),
            };
            let at = g.ty(a).ok_or_else(|| nl(k, "untyped operand"))?;
            let bt = g.ty(b).ok_or_else(|| nl(k, "untyped operand"))?;
            if at.shape.len() < 2 || bt.shape.len() < 2 || k.ty.shape.len() < 2 {
                return Err(nl(k, "1-D matmul"));
            }
            // Leading batch dims: each operand has the output's batch dims or none (shared).
            let ob = &k.ty.shape[..k.ty.shape.len() - 2];
            let batched = |t: &TensorType| -> Result<bool, NotLowered> {
                let tb = &t.shape[..t.shape.len() - 2];
                if tb == ob {
                    Ok(true)
                } else if tb.iter().all(|&d| d == 1) {
                    Ok(false)
                } else {
                    Err(nl(k, "a matmul with broadcast batch dimensions"))
                }
            };
            let count: u64 = ob.iter().map(|&d| d as u64).product();
            if count > 65535 {
                return Err(nl(k, "more than 65535 batched matmuls"));
            }
            let batch = MatmulBatch {
                count: count.max(1) as u32,
                a: batched(at)?,
                b: batched(bt)?,
            };
            let batch = if batch.count == 1 {
                MatmulBatch::NONE
            } else {
                batch
            };
            let (at, bt) = (
                &TensorType {
                    shape: at.shape[at.shape.len() - 2..].to_vec(),
                    dtype: at.dtype,
                },
                &TensorType {
                    shape: bt.shape[bt.shape.len() - 2..].to_vec(),
                    dtype: bt.dtype,
                },
            );
            let f64_mm = at.dtype == DType::F64 && bt.dtype == DType::F64;
            if !(float_io(k.ty.dtype) || f64_mm && k.ty.dtype == DType::F64 && !s.tensor_cores) {
                return Err(nl(k, format!("{} result", k.ty.dtype)));
            }
            let (m, kk, n) = (
                u32_of(k, at.shape[0])?,
                u32_of(k, at.shape[1])?,
                u32_of(k, bt.shape[1])?,
            );
            let [bm, bn, bk] = s.tile;
            let pow2 = |v: u32| v.is_power_of_two();
            if !(pow2(bm) && pow2(bn) && pow2(bk)) {
                return Err(nl(k, "tile sizes that are not powers of two"));
            }
            tk.grid = [n.div_ceil(bn).max(1), m.div_ceil(bm).max(1), batch.count];
            let eps: Vec<String> = epilogue
                .iter()
                .map(|e| match &e.step {
                    crate::graph::Epilogue::Binary { op, operand } => {
                        format!("{} %{}", op.name(), operand.0)
                    }
                    crate::graph::Epilogue::Scalar { op, value } => {
                        format!("{} {value}", op.name())
                    }
                    crate::graph::Epilogue::Unary(u) => u.name().to_string(),
                    crate::graph::Epilogue::Cast(d) => format!("cast {d}"),
                })
                .collect();
            let a_name = format!("%{}", a.0);
            let b_name = format!("%{}", b.0);
            let epi_span = epilogue.last().map(|e| e.span).unwrap_or(sp);
            if s.tensor_cores {
                let tf32 = crate::schedule::mma_tf32(at.dtype, bt.dtype, accum);
                let kind = match (at.dtype, bt.dtype) {
                    (DType::BF16, DType::BF16) => MmaKind::M16n8k16Bf16,
                    (DType::F16, DType::F16) => MmaKind::M16n8k16F16,
                    _ if tf32 => MmaKind::M16n8k8Tf32,
                    _ => {
                        return Err(nl(
                            k,
                            "tensor cores with operands other than bf16/fp16 pairs or tf32",
                        ))
                    }
                };
                let (esize, mma_shape, kstep) = if tf32 {
                    (4, "m16n8k8", 8)
                } else {
                    (2, "m16n8k16", 16)
                };
                let [wm, wn] = s.warp;
                if !(pow2(wm) && pow2(wn)) || bk % 16 != 0 || s.stages == 0 {
                    return Err(nl(k, "warp tiles that are not powers of two"));
                }
                let threads = (bm / wm) * (bn / wn) * 32;
                if (bm * bk) % threads != 0 || (bk * bn) % threads != 0 || threads > 1024 {
                    return Err(nl(k, "a tile the threads cannot load evenly"));
                }
                tk.block = [threads, 1, 1];
                tk.shape = Shape::MatmulMma {
                    m,
                    n,
                    k: kk,
                    tile: s.tile,
                    warp: s.warp,
                    stages: s.stages,
                    kind,
                    batch,
                };
                tk.smem = vec![
                    Smem {
                        name: "smem_a".into(),
                        elem_bytes: esize,
                        shape: vec![s.stages, bm, bk],
                    },
                    Smem {
                        name: "smem_b".into(),
                        elem_bytes: esize,
                        shape: vec![s.stages, bk, bn],
                    },
                ];
                let tiles = (wm / 16) * (wn / 8);
                // Copies: 16-byte cp.async when rows are 16-byte aligned, else 8 or 4 bytes,
                // else element loads (synchronous).
                let chunk = |pitch: u32, cols: u32| -> u32 {
                    [16u32, 8, 4]
                        .into_iter()
                        .find(|&by| {
                            let ve = by / esize;
                            ve >= 1 && pitch.is_multiple_of(ve) && cols.is_multiple_of(ve)
                        })
                        .unwrap_or(esize)
                };
                let (ca, cb) = (chunk(kk, bk), chunk(n, bn));
                let copy = |src: String, dst: &str, bytes: u32| {
                    (
                        TileOp::Copy {
                            src,
                            dst: dst.to_string(),
                            bytes,
                            is_async: bytes >= 4,
                        },
                        sp,
                    )
                };
                let mut prologue = vec![];
                for st in 0..s.stages - 1 {
                    prologue.push(copy(format!("{a_name}[k-tile {st}]"), "%smem_a[stage]", ca));
                    prologue.push(copy(format!("{b_name}[k-tile {st}]"), "%smem_b[stage]", cb));
                    prologue.push((TileOp::Commit, sp));
                }
                let mut step = vec![];
                let next = |name: &str| format!("{name}[k-tile %kt+{}]", s.stages - 1);
                if s.stages >= 2 {
                    step.push((TileOp::Wait(s.stages - 2), sp));
                    step.push((TileOp::Barrier, sp));
                    step.push(copy(next(&a_name), "%smem_a[stage]", ca));
                    step.push(copy(next(&b_name), "%smem_b[stage]", cb));
                    step.push((TileOp::Commit, sp));
                } else {
                    step.push(copy(format!("{a_name}[k-tile %kt]"), "%smem_a[stage]", ca));
                    step.push(copy(format!("{b_name}[k-tile %kt]"), "%smem_b[stage]", cb));
                    step.push((TileOp::Commit, sp));
                    step.push((TileOp::Wait(0), sp));
                    step.push((TileOp::Barrier, sp));
                }
                step.push((
                    TileOp::For {
                        var: "%ks".into(),
                        extent: format!("{}", bk / kstep),
                        body: vec![
                            (
                                TileOp::Ldmatrix {
                                    src: "%smem_a[stage]".into(),
                                    trans: false,
                                },
                                sp,
                            ),
                            if tf32 {
                                (
                                    TileOp::Load {
                                        src: "%smem_b[stage]".into(),
                                        vector: 1,
                                        masked: false,
                                    },
                                    sp,
                                )
                            } else {
                                (
                                    TileOp::Ldmatrix {
                                        src: "%smem_b[stage]".into(),
                                        trans: true,
                                    },
                                    sp,
                                )
                            },
                            (
                                TileOp::Mma {
                                    shape: mma_shape,
                                    tiles,
                                },
                                sp,
                            ),
                        ],
                    },
                    sp,
                ));
                if s.stages < 2 {
                    step.push((TileOp::Barrier, sp));
                }
                tk.body = vec![(
                    TileOp::Map(format!(
                        "block (x, y) -> C tile ({bm}x{bn}), warp -> {wm}x{wn} warp tile ({} warps)",
                        threads / 32
                    )),
                    sp,
                )];
                tk.body.extend(prologue);
                tk.body.push((
                    TileOp::For {
                        var: "%kt".into(),
                        extent: format!("ceil({kk}/{bk})"),
                        body: step,
                    },
                    sp,
                ));
            } else {
                let threads = bm * bn / 16;
                if !(16..=1024).contains(&threads)
                    || bm < 4
                    || bn < 4
                    || threads % bk != 0
                    || threads % bn != 0
                    || (bm * bk) % threads != 0
                    || (bk * bn) % threads != 0
                    || s.stages < 2
                {
                    return Err(nl(k, "a tile the threads cannot load evenly"));
                }
                tk.block = [threads, 1, 1];
                tk.shape = Shape::MatmulFma {
                    m,
                    n,
                    k: kk,
                    tile: s.tile,
                    stages: s.stages,
                    batch,
                };
                let esize = if f64_mm { 8 } else { 4 };
                tk.smem = vec![
                    Smem {
                        name: "smem_a".into(),
                        elem_bytes: esize,
                        shape: vec![s.stages, bm, bk],
                    },
                    Smem {
                        name: "smem_b".into(),
                        elem_bytes: esize,
                        shape: vec![s.stages, bk, bn],
                    },
                ];
                let copy = |src: &str, dst: &str| {
                    (
                        TileOp::Copy {
                            src: src.to_string(),
                            dst: dst.to_string(),
                            bytes: esize,
                            is_async: true,
                        },
                        sp,
                    )
                };
                let mut prologue = vec![];
                for st in 0..s.stages - 1 {
                    prologue.push(copy(&format!("{a_name}[k-tile {st}]"), "%smem_a[stage]"));
                    prologue.push(copy(&format!("{b_name}[k-tile {st}]"), "%smem_b[stage]"));
                    prologue.push((TileOp::Commit, sp));
                }
                tk.body = vec![(
                    TileOp::Map(format!(
                        "block (x, y) -> C tile ({bm}x{bn}), thread -> 4x4 outputs strided by ({}, {})",
                        bm / 4,
                        bn / 4
                    )),
                    sp,
                )];
                tk.body.extend(prologue);
                tk.body.push((
                    TileOp::For {
                        var: "%kt".into(),
                        extent: format!("ceil({kk}/{bk})"),
                        body: vec![
                            copy(
                                &format!("{a_name}[k-tile %kt+{}]", s.stages - 1),
                                "%smem_a[stage]",
                            ),
                            copy(
                                &format!("{b_name}[k-tile %kt+{}]", s.stages - 1),
                                "%smem_b[stage]",
                            ),
                            (TileOp::Commit, sp),
                            (TileOp::Wait(s.stages - 1), sp),
                            (TileOp::Barrier, sp),
                            (TileOp::Fma { rows: 4, cols: 4 }, sp),
                            (TileOp::Barrier, sp),
                        ],
                    },
                    sp,
                ));
            }
            if !eps.is_empty() {
                tk.body.push((
                    TileOp::Compute(format!("epilogue [{}]", eps.join(", "))),
                    epi_span,
                ));
            }
            tk.body.push((
                TileOp::Store {
                    dst: out,
                    vector: 1,
                    masked: true,
                },
                sp,
            ));
        }
        Kind::LayerNorm | Kind::RmsNorm | Kind::Reduce => {
            let x = *k.inputs.first().ok_or_else(|| nl(k, "no input"))?;
            let xt = g.ty(x).ok_or_else(|| nl(k, "untyped input"))?;
            let (row_op, reduce_all) = match op {
                Op::LayerNorm {
                    weight, bias, eps, ..
                } => (
                    RowOp::LayerNorm {
                        eps: *eps,
                        weight: weight.is_some(),
                        bias: bias.is_some(),
                    },
                    false,
                ),
                Op::RmsNorm { weight, eps, .. } => (
                    RowOp::RmsNorm {
                        eps: *eps,
                        weight: weight.is_some(),
                    },
                    false,
                ),
                Op::Reduce { op: r, axis, .. } => {
                    use crate::graph::ReduceOp as Ro;
                    let ro = match r {
                        Ro::Sum => RowOp::Sum,
                        Ro::Mean => RowOp::Mean,
                        Ro::Max => RowOp::Max,
                        Ro::Min => RowOp::Min,
                    };
                    let inner: u64 = match axis {
                        Some(a) => xt.shape.iter().skip(a + 1).map(|&d| d as u64).product(),
                        None => 1,
                    };
                    match axis {
                        None => (ro, true),
                        Some(_) if inner == 1 => (ro, false),
                        Some(a) => {
                            // A middle axis: [outer, len, inner] -> [outer, inner].
                            let both64 = k.ty.dtype == DType::F64 && xt.dtype == DType::F64;
                            if !both64 && (!float_io(k.ty.dtype) || !float_io(xt.dtype)) {
                                return Err(nl(k, format!("{} reductions", xt.dtype)));
                            }
                            let outer: u64 = xt.shape[..*a].iter().map(|&d| d as u64).product();
                            let len = xt.shape.get(*a).map(|&d| d as u64).unwrap_or(1);
                            if outer * len * inner == 0 || outer * len * inner > u64::from(u32::MAX)
                            {
                                return Err(nl(
                                    k,
                                    "an empty or too large (>2^32 elements) reduction",
                                ));
                            }
                            super::reduce_axis::tile(k, ro, outer, len, inner, &mut tk)
                                .map_err(|r| nl(k, r))?;
                            if tk.body.iter().any(|(_, s)| *s == Span::default()) {
                                return Err(nl(k, "an op without a span"));
                            }
                            return Ok(tk);
                        }
                    }
                }
                _ => return Err(nl(k, "not a row kernel")),
            };
            // fp32 and narrower floats, or fp64 throughout (accumulating in fp64).
            let f64k = k.ty.dtype == DType::F64;
            let io = |d: DType| if f64k { d == DType::F64 } else { float_io(d) };
            if !io(k.ty.dtype) {
                return Err(nl(k, format!("{} results", k.ty.dtype)));
            }
            for v in &k.inputs {
                let t = g.ty(*v).ok_or_else(|| nl(k, "untyped input"))?;
                if !io(t.dtype) {
                    return Err(nl(k, format!("{} operands", t.dtype)));
                }
            }
            let n = numel(xt);
            let cols = match op {
                _ if reduce_all => n,
                // Over an axis followed by unit dims only: rows of `shape[axis..]`.
                Op::Reduce { axis: Some(a), .. } => {
                    xt.shape.iter().skip(*a).map(|&c| c as u64).product()
                }
                _ => xt.shape.last().map(|&c| c as u64).unwrap_or(1),
            };
            if cols == 0 || n == 0 || n > u64::from(u32::MAX) {
                return Err(nl(k, "an empty or too large (>2^32 elements) row kernel"));
            }
            let rows = n / cols;
            let warps = (s.threads / 32).max(1);
            tk.block = [warps * 32, 1, 1];
            tk.grid = [
                u32::try_from(ceil(rows, u64::from(warps))).map_err(|_| nl(k, "grid too large"))?,
                1,
                1,
            ];
            tk.shape = Shape::Rows {
                op: row_op,
                rows: rows as u32,
                cols: cols as u32,
                warps,
            };
            let inp = format!("%{}", x.0);
            let lanes = |what: String| TileOp::For {
                var: "%j".to_string(),
                extent: format!("{cols} step 32 (lane-strided)"),
                body: vec![
                    (
                        TileOp::Load {
                            src: format!("{inp}[row, %j]"),
                            vector: 1,
                            masked: true,
                        },
                        sp,
                    ),
                    (TileOp::Compute(what), sp),
                ],
            };
            tk.body = vec![(
                TileOp::Map("warp -> row, lane -> columns j ≡ lane (mod 32)".into()),
                sp,
            )];
            let store_row = |what: String| TileOp::For {
                var: "%j".to_string(),
                extent: format!("{cols} step 32 (lane-strided)"),
                body: vec![
                    (TileOp::Compute(what), sp),
                    (
                        TileOp::Store {
                            dst: format!("{out}[row, %j]"),
                            vector: 1,
                            masked: true,
                        },
                        sp,
                    ),
                ],
            };
            match row_op {
                RowOp::LayerNorm { weight, bias, .. } => {
                    tk.body.push((lanes("fp32 sum x".into()), sp));
                    tk.body.push((TileOp::ReduceWarp("add"), sp));
                    tk.body.push((lanes("fp32 sum (x - mean)^2".into()), sp));
                    tk.body.push((TileOp::ReduceWarp("add"), sp));
                    let mut what = "(x - mean) * rsqrt(var + eps)".to_string();
                    if weight {
                        what.push_str(" * weight[%j]");
                    }
                    if bias {
                        what.push_str(" + bias[%j]");
                    }
                    tk.body.push((store_row(what), sp));
                }
                RowOp::RmsNorm { weight, .. } => {
                    tk.body.push((lanes("fp32 sum x^2".into()), sp));
                    tk.body.push((TileOp::ReduceWarp("add"), sp));
                    let mut what = "x * rsqrt(mean(x^2) + eps)".to_string();
                    if weight {
                        what.push_str(" * weight[%j]");
                    }
                    tk.body.push((store_row(what), sp));
                }
                RowOp::Sum | RowOp::Mean | RowOp::Max | RowOp::Min => {
                    let (acc, red) = match row_op {
                        RowOp::Max => ("max", "max"),
                        RowOp::Min => ("min", "min"),
                        _ => ("sum", "add"),
                    };
                    tk.body.push((lanes(format!("fp32 {acc}")), sp));
                    tk.body.push((TileOp::ReduceWarp(red), sp));
                    tk.body.push((
                        TileOp::Store {
                            dst: format!("{out}[row] (lane 0)"),
                            vector: 1,
                            masked: true,
                        },
                        sp,
                    ));
                }
            }
        }
        Kind::FlashAttention => attention::tile(g, k, op, &mut tk)?,
        Kind::Copy => {
            super::copy::tile(g, k, op, &mut tk).map_err(|r| nl(k, r))?;
        }
    }
    if tk.body.iter().any(|(_, s)| *s == Span::default()) {
        return Err(nl(k, "an op without a span"));
    }
    Ok(tk)
}
