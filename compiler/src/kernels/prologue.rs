//! A matmul's norm prologue in its kernel (`matmul_mma`, `matmul_fma`): the layernorm or
//! rmsnorm of A's rows over K ([`crate::graph::Prologue`]), computed in two parts.
//!
//! - Statistics, once per block before the k loop (after the first tiles' copies are issued,
//!   so that they overlap): warp `w` of `W` takes rows `w, w + W, …` of the block's BM rows
//!   and computes, as the layernorm row kernel's warp per row does (lane-strided sums over K
//!   read from global memory, butterfly all-reduces, fp32 — fp64 for an fp64 A), the row's
//!   mean and `1/sqrt(var + eps)` (rmsnorm: `1/sqrt(mean(a²) + eps)`); lane 0 stores them to
//!   the shared buffer `smem_norm` (`[2, BM]`: means, then reciprocal deviations; rows past M
//!   get zeros).
//! - Normalisation, every k-tile, once the tile has landed (after the loop's `wait` and
//!   `barrier`) and before any fragment or operand is read from it: each thread rewrites its
//!   elements of the A tile in shared memory, `(a − mean)·rstd·w + b` in the row kernel's order
//!   of operations, rounded to A's dtype as the unfused norm's result is stored, then a
//!   `barrier`. Columns past K stay zero (the zero-filled copies), so the edge tiles still
//!   multiply B's zero rows by zeros.
//!
//! With the same statistics the normalised tile holds the bits the unfused layernorm kernel
//! (warp per row) stores, so the MMA sees the same operands and the fused kernel's result is
//! bit-identical to the unfused pair's on the emulator. A row kernel that takes a block per
//! row (at most 512 rows of 1024 columns or more: `tile::row_block`) sums in another order;
//! there the results agree within the dtype's rounding instead.

use super::blocks::{add_imm, fconst, lane_loop, load_elem, round_tf32};
use super::{no, R};
use crate::graph::{split_steps, DType, Graph, NormKind, Op};
use crate::scalar::{BinOp, Cmp, Dim, Rnd, SReg, Ty, UnOp};
use crate::tile::build::{imm, Builder};
use crate::tile::ir::{Layout, ParamRole, SharedBuf, Type, Value};
use crate::tile::TileKernel;
use tessera_lang::Span;

/// A matmul's norm prologue in its kernel: the parameters it reads and how it computes.
pub struct NormPrologue {
    norm: NormKind,
    eps: f64,
    weight: Option<(Value, DType)>,
    bias: Option<(Value, DType)>,
    /// A's dtype (the normalised values are rounded to it) and the compute type.
    xd: DType,
    ty: Ty,
    span: Span,
}

/// One column of a chunk: in range (`< k`), its weight and bias.
type Col = (Value, Option<Value>, Option<Value>);

/// The block's row statistics in shared memory.
pub struct Stats {
    /// The buffer: row `r`'s mean at byte `r·es`, its reciprocal deviation at `(BM + r)·es`.
    buf: Value,
    rows: i64,
    es: i64,
}

/// Declares the prologue's weight and bias parameters (after A and B, in operand order) when
/// the kernel's matmul has a prologue.
pub fn declare(b: &mut Builder, g: &Graph, tk: &TileKernel) -> R<Option<NormPrologue>> {
    let Some(Op::Matmul { a, epilogue, .. }) = g.op(tk.root) else {
        return Ok(None);
    };
    let (Some(p), _) = split_steps(epilogue) else {
        return Ok(None);
    };
    let span = epilogue.first().map_or(tk.span, |s| s.span);
    let xd = g.ty(*a).map_or(DType::F32, |t| t.dtype);
    if !crate::graph::prologue_dtype(xd) {
        return no(format!("a norm prologue of {xd} A"));
    }
    b.at(span);
    let mut param = |name: &str, v: Option<crate::graph::ValueId>| -> R<Option<(Value, DType)>> {
        let Some(v) = v else { return Ok(None) };
        let d = g.ty(v).map(|t| t.dtype).unwrap_or(DType::F32);
        if !d.is_float() {
            return no(format!("a norm prologue {name} of {d}"));
        }
        Ok(Some((b.param(name, Type::Global(d), ParamRole::Input), d)))
    };
    let weight = param("norm_w", p.weight)?;
    let bias = param("norm_b", p.bias)?;
    Ok(Some(NormPrologue {
        norm: p.norm,
        eps: p.eps,
        weight,
        bias,
        xd,
        ty: if xd == DType::F64 { Ty::F64 } else { Ty::F32 },
        span,
    }))
}

impl NormPrologue {
    /// Computes the statistics of the block's `rows` rows (the first is `row0`; rows at or
    /// past `m` get zeros) of the `m × k` matrix `a` with `threads` threads into shared memory.
    #[allow(clippy::too_many_arguments)]
    pub fn stats(
        &self,
        b: &mut Builder,
        a: Value,
        [m, k]: [Value; 2],
        row0: Value,
        tid: Value,
        threads: i64,
        rows: i64,
    ) -> Stats {
        let restore = b.span();
        b.at(self.span);
        let ty = self.ty;
        let es = i64::from(ty.bits() / 8);
        let buf = b.shared(
            "smem_norm",
            SharedBuf {
                elem_bytes: es as u32,
                shape: vec![1, 2, rows as u32],
                layout: Layout {
                    pitch: (rows * es) as u32,
                    swizzle: None,
                },
                align: 16,
            },
        );
        let addr = b.shared_addr(buf);
        let lane = b.bin(BinOp::And, Ty::B32, tid, imm(31));
        let warp = b.bin(BinOp::Shr, Ty::U32, tid, imm(5));
        let warps = (threads / 32).max(1);
        let (norm, eps, xd) = (self.norm, self.eps, self.xd);
        b.for_(warp, imm(rows), imm(warps), &[], None, |b, r, _| {
            let gr = b.add(Ty::U32, row0, r);
            let inr = b.cmp(Cmp::Lt, Ty::U32, gr, m);
            let st = b.if_(
                inr,
                &[Type::Scalar(ty), Type::Scalar(ty)],
                |b| {
                    let rowbase = b.mul(Ty::U32, gr, k);
                    let colsf = b.cast(ty, Ty::U32, Some(Rnd::Rn), k);
                    let a0 = b.mov(ty, fconst(ty, 0.0));
                    let square = norm == NormKind::RmsNorm;
                    let acc = lane_loop(b, lane, k, &[a0], |b, j, c| {
                        let i = b.add(Ty::U32, rowbase, j);
                        let v = load_elem(b, ty, xd, a, i, None);
                        let next = if square {
                            b.fma(ty, v, v, c[0])
                        } else {
                            b.add(ty, c[0], v)
                        };
                        vec![next.into()]
                    })[0];
                    let acc = b.reduce_warp(BinOp::Add, ty, acc);
                    let (mean, ms) = if square {
                        (b.mov(ty, fconst(ty, 0.0)), acc)
                    } else {
                        let mean = b.bin(BinOp::Div, ty, acc, colsf);
                        let v0 = b.mov(ty, fconst(ty, 0.0));
                        let var = lane_loop(b, lane, k, &[v0], |b, j, c| {
                            let i = b.add(Ty::U32, rowbase, j);
                            let v = load_elem(b, ty, xd, a, i, None);
                            let d = b.sub(ty, v, mean);
                            vec![b.fma(ty, d, d, c[0]).into()]
                        })[0];
                        (mean, b.reduce_warp(BinOp::Add, ty, var))
                    };
                    let ms = b.bin(BinOp::Div, ty, ms, colsf);
                    let ms = b.add(ty, ms, fconst(ty, eps));
                    let sd = b.unary(UnOp::Sqrt, ty, ms);
                    let rstd = b.unary(UnOp::Rcp, ty, sd);
                    vec![mean.into(), rstd.into()]
                },
                |_| vec![fconst(ty, 0.0), fconst(ty, 0.0)],
            );
            let first = b.cmp(Cmp::Eq, Ty::U32, lane, imm(0));
            let at = b.fma(Ty::U32, r, imm(es), addr);
            b.store_shared(ty, at, 0, &[st[0].into()], Some(first));
            b.store_shared(ty, at, (rows * es) as i32, &[st[1].into()], Some(first));
            vec![]
        });
        b.at(restore);
        Stats { buf, rows, es }
    }

    /// Normalises, in place, the A tile of k-tile `kt` in stage `stage` of the shared buffer
    /// `sa` (`stages × rows × cols` elements held as `sty`: `b16` for 16-bit A, else the
    /// kernel's compute type), then a barrier. The tile is read in chunks of `v` consecutive
    /// elements (at most 16 bytes, one vector access), chunk `tid + i·threads` by this
    /// thread; elements past column `k` are written back as they were (zeros). Each chunk is
    /// read and written by its thread alone; with `read_first` (outside a pipelined loop,
    /// where the verifier wants no read of a buffer after a store to it without a barrier)
    /// every chunk is read before any is written, else chunk by chunk (fewer live registers).
    #[allow(clippy::too_many_arguments)]
    pub fn normalize(
        &self,
        b: &mut Builder,
        s: &Stats,
        (sa, sty): (Value, Ty),
        stage: Value,
        kt: Value,
        k: Value,
        threads: i64,
        [rows, cols]: [i64; 2],
        read_first: bool,
    ) -> R<()> {
        let restore = b.span();
        b.at(self.span);
        let ty = self.ty;
        // read here rather than kept live across the k loop beside the accumulators
        let tid = b.special(SReg::Tid(Dim::X));
        let stats = b.shared_addr(s.buf);
        let esize = i64::from(sty.bits() / 8);
        let Some(v) = [4i64, 2, 1]
            .into_iter()
            .find(|&v| v * esize <= 16 && cols % v == 0 && (rows * cols / v) % threads == 0)
        else {
            return no("a norm prologue of a tile the threads do not share evenly");
        };
        if cols <= 0 || cols & (cols - 1) != 0 {
            return no("a norm prologue of a k-tile that is not a power of two");
        }
        let cpr = cols / v;
        let lc = i64::from(cpr.trailing_zeros());
        let cc = b.bin(BinOp::And, Ty::B32, tid, imm(cpr - 1));
        let c0 = b.mul(Ty::U32, cc, imm(v));
        let r0 = b.bin(BinOp::Shr, Ty::U32, tid, imm(lc));
        let k0 = b.mul(Ty::U32, kt, imm(cols));
        let kc0 = b.add(Ty::U32, k0, c0);
        // a chunk: its column in the tile, address, first k, raw elements, row statistics
        struct Chunk {
            dc: i64,
            addr: Value,
            kg: Value,
            raw: Vec<Value>,
            mean: Option<Value>,
            rstd: Value,
        }
        let read = |b: &mut Builder, i: i64| -> Chunk {
            let off = i * threads;
            let (dr, dc) = (off / cpr, (off % cpr) * v);
            let c = add_imm(b, c0, dc);
            let r = add_imm(b, r0, dr);
            let kg = add_imm(b, kc0, dc);
            let addr = b.offset(sa, stage, r, c);
            let raw = b.load_shared(sty, addr, 0, v as usize);
            let at = b.fma(Ty::U32, r, imm(s.es), stats);
            let mean = (self.norm == NormKind::LayerNorm).then(|| b.load_shared(ty, at, 0, 1)[0]);
            let rstd = b.load_shared(ty, at, (s.rows * s.es) as i32, 1)[0];
            Chunk {
                dc,
                addr,
                kg,
                raw,
                mean,
                rstd,
            }
        };
        // the weight and bias of each column a thread visits, loaded once
        let mut params: Vec<(i64, Vec<Col>)> = vec![];
        let mut write = |b: &mut Builder, ch: Chunk| -> R<()> {
            let cols: Vec<Col> = match params.iter().find(|p| p.0 == ch.dc) {
                Some(p) => p.1.clone(),
                None => {
                    let cs: Vec<Col> = (0..v)
                        .map(|j| {
                            let kj = add_imm(b, ch.kg, j);
                            let ok = b.cmp(Cmp::Lt, Ty::U32, kj, k);
                            let w = self
                                .weight
                                .map(|(p, d)| load_elem(b, ty, d, p, kj, Some(ok)));
                            let bias = self.bias.map(|(p, d)| load_elem(b, ty, d, p, kj, Some(ok)));
                            (ok, w, bias)
                        })
                        .collect();
                    params.push((ch.dc, cs.clone()));
                    cs
                }
            };
            let mut out = vec![];
            for (j, &(ok, w, bias)) in cols.iter().enumerate() {
                let raw = ch.raw[j];
                let x = self.load_value(b, sty, raw);
                let cv = match ch.mean {
                    Some(m) => b.sub(ty, x, m),
                    None => x,
                };
                let mut y = b.mul(ty, cv, ch.rstd);
                if let Some(wv) = w {
                    y = b.mul(ty, y, wv);
                }
                if let Some(bv) = bias {
                    y = b.add(ty, y, bv);
                }
                let y = self.store_value(b, sty, y)?;
                out.push(b.select(sty, ok, y, raw).into());
            }
            b.store_shared(sty, ch.addr, 0, &out, None);
            Ok(())
        };
        let n = rows * cols / v / threads;
        if read_first {
            let chunks: Vec<Chunk> = (0..n).map(|i| read(b, i)).collect();
            for ch in chunks {
                write(b, ch)?;
            }
        } else {
            for i in 0..n {
                let ch = read(b, i);
                write(b, ch)?;
            }
        }
        b.barrier();
        b.at(restore);
        Ok(())
    }

    /// An element of the A tile (held as `sty`) as a value of the compute type.
    fn load_value(&self, b: &mut Builder, sty: Ty, raw: Value) -> Value {
        let ty = self.ty;
        match sty {
            Ty::B16 => {
                let t = if self.xd == DType::F16 {
                    Ty::F16
                } else {
                    Ty::BF16
                };
                let h = b.bitcast(t, raw);
                b.cast(Ty::F32, t, None, h)
            }
            s if s == ty => raw,
            Ty::F64 => b.cast(Ty::F32, Ty::F64, Some(Rnd::Rn), raw),
            _ => b.cast(Ty::F64, Ty::F32, None, raw),
        }
    }

    /// A normalised value (compute type) rounded to A's dtype, as an element held as `sty`.
    fn store_value(&self, b: &mut Builder, sty: Ty, x: Value) -> R<Value> {
        if self.ty == Ty::F64 {
            return if sty == Ty::F64 {
                Ok(x)
            } else {
                no("an fp64 norm prologue staged narrower")
            };
        }
        let r = match self.xd {
            DType::BF16 | DType::F16 => {
                let t = if self.xd == DType::F16 {
                    Ty::F16
                } else {
                    Ty::BF16
                };
                let h = b.cast(t, Ty::F32, Some(Rnd::Rn), x);
                if sty == Ty::B16 {
                    return Ok(b.bitcast(Ty::B16, h));
                }
                b.cast(Ty::F32, t, None, h)
            }
            DType::TF32 => {
                let r = round_tf32(b, x);
                b.bitcast(Ty::F32, r)
            }
            _ => x,
        };
        Ok(match sty {
            Ty::F32 => r,
            Ty::F64 => b.cast(Ty::F64, Ty::F32, None, r),
            other => return no(format!("a norm prologue of A staged as {other:?}")),
        })
    }
}
