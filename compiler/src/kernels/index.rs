//! Two small pieces the Schedule → Tile builders share: how an epilogue operand is indexed from
//! the output's flat index, and the instruction of a float binary op.

use super::Error;
use crate::graph::BinaryOp;
use crate::scalar::{BinOp, Ty};

type R<T> = Result<T, Error>;

fn no<T>(why: impl Into<String>) -> R<T> {
    Err(Error::NotLowered(why.into()))
}

/// The instruction of a float binary op in `ty` (`.f32` or `.f64`).
pub(crate) fn float_binop(op: BinaryOp, ty: Ty) -> R<BinOp> {
    Ok(match op {
        BinaryOp::Add => BinOp::Add,
        BinaryOp::Sub => BinOp::Sub,
        BinaryOp::Mul => BinOp::Mul,
        BinaryOp::Div => BinOp::Div,
        BinaryOp::Maximum => BinOp::Max,
        BinaryOp::Minimum => BinOp::Min,
        other if ty == Ty::F64 => return no(format!("fp64 {}", other.name())),
        other => return no(format!("the elementwise op {}", other.name())),
    })
}

/// How an operand's element is found from the output's flat index.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) enum Index {
    Same,
    Scalar,
    /// `i % inner` (a trailing-dims vector like a bias).
    Mod(u32),
    /// `i / inner`: rows of a `[M, 1]` operand.
    Div(u32),
    /// `(i / inner) % run`: a run of the output's dims broadcast along those before and after.
    DivMod(u32, u32),
}

pub(crate) fn index_of(shape: &[usize], out: &[usize]) -> R<Index> {
    let n: usize = shape.iter().product();
    let on: usize = out.iter().product();
    if shape == out
        || (n == on
            && n > 0
            && shape
                .iter()
                .filter(|&&d| d != 1)
                .eq(out.iter().filter(|&&d| d != 1)))
    {
        return Ok(Index::Same);
    }
    if n == 1 {
        return Ok(Index::Scalar);
    }
    let s: Vec<usize> = shape.iter().copied().skip_while(|&d| d == 1).collect();
    if s.len() <= out.len() && out[out.len() - s.len()..] == s[..] {
        return Ok(Index::Mod(
            u32::try_from(n).map_err(|_| Error::NotLowered("size".into()))?,
        ));
    }
    // One contiguous run of the output's dims, broadcast along the dims before and after it
    // (`[.., M, 1]` against `[.., M, N]`, a `[B, 1, N, 1]` cotangent of a keepdim reduction):
    // `(i / inner) % run`, the `%` dropped when the dims before the run are all 1.
    if shape.len() <= out.len() {
        let mut full = vec![1usize; out.len() - shape.len()];
        full.extend_from_slice(shape);
        let first = full.iter().position(|&d| d != 1);
        let last = full.iter().rposition(|&d| d != 1);
        if let (Some(a), Some(b)) = (first, last) {
            if full[a..=b] == out[a..=b] {
                let size = |d: &[usize]| {
                    u32::try_from(d.iter().product::<usize>())
                        .map_err(|_| Error::NotLowered("size".into()))
                };
                let inner = size(&out[b + 1..])?;
                return Ok(if out[..a].iter().all(|&d| d == 1) {
                    Index::Div(inner)
                } else {
                    Index::DivMod(inner, size(&out[a..=b])?)
                });
            }
        }
    }
    no(format!("broadcasting {shape:?} to {out:?}"))
}
