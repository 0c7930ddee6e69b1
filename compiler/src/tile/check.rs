//! The Tile IR checker: [`check`] verifies the invariants documented in [`super::ir`].
//!
//! Passes, in order (the first error is returned):
//! 1. launch shape: 1..=1024 threads per block in whole warps, a non-zero grid, shared
//!    buffers (each placed at its alignment, in declaration order) within [`MAX_SHARED_BYTES`];
//! 2. ownership: every op id in range and listed in exactly one region;
//! 3. definitions and dominance (one walk over the regions, in program order): each value is
//!    defined once (parameter, shared declaration, region argument or op result); an operand
//!    is visible if it was defined earlier in its region or an enclosing one (a region's
//!    arguments and the results of its ops go out of scope when the region ends); every op
//!    has a real span; `tile.yield` is the last op of every `tile.for`/`tile.if` region and
//!    appears nowhere else; then the op's signature (`types`);
//! 4. shared memory (`flow`): address provenance, constant bounds, async copies waited for,
//!    barriers between shared writes and reads.

use super::ir::*;
use crate::scalar::{BinOp, Ty, UnOp};
use std::fmt;
use tessera_lang::Span;

mod flow;
pub(crate) mod types;

#[cfg(test)]
mod tests;

/// Shared memory a block may use (sm_80+ opt-in maximum), in bytes.
pub const MAX_SHARED_BYTES: u64 = 227 * 1024;

/// A violated invariant: the op (if the error is about one), its span (the kernel's span
/// otherwise) and a message naming the kernel, the op and the values involved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckError {
    pub op: Option<OpId>,
    pub span: Span,
    pub message: String,
    /// The launch is over a hardware limit (more than 1024 threads per block, more shared
    /// memory than a block gets): an invalid schedule for the target (E0300), where every
    /// other violation is malformed Tile IR (E0201).
    pub over_limit: bool,
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CheckError {}

/// A Tile IR program the checker accepted: what the back ends take, so that no back end sees
/// an unchecked program.
#[derive(Copy, Clone, Debug)]
pub struct Checked<'a>(&'a Kernel);

impl std::ops::Deref for Checked<'_> {
    type Target = Kernel;
    fn deref(&self) -> &Kernel {
        self.0
    }
}

/// A program of the compiler's own kernel templates, taken as checked without running the
/// checker: what a release build's pipeline does, since checking costs about a tenth of a cold
/// compile (bench/RESULTS.md "Compile latency after the compiler's restructuring"). Debug
/// builds, and so every test, run [`check`] on every such program instead; text a user wrote
/// (`tessera lower`, `graph.run_tile`) is always checked.
pub fn trusted(k: &Kernel) -> Checked<'_> {
    Checked(k)
}

/// Checks every invariant documented in [`super::ir`].
pub fn check(k: &Kernel) -> Result<Checked<'_>, CheckError> {
    check_all(k)?;
    Ok(Checked(k))
}

fn check_all(k: &Kernel) -> Result<(), CheckError> {
    launch(k)?;
    let mut w = Walk {
        k,
        seen: vec![false; k.ops.len()],
        defined: vec![false; k.values.len()],
        visible: vec![false; k.values.len()],
    };
    w.owners(&k.body)?;
    if let Some(i) = w.seen.iter().position(|s| !s) {
        return Err(op_err(k, OpId(i as u32), "the op is in no region"));
    }
    for v in k
        .params
        .iter()
        .map(|p| p.value)
        .chain(k.shared.iter().map(|s| s.value))
    {
        w.define(None, v)?;
    }
    for p in &k.params {
        if matches!(k.ty(p.value), Some(Type::Shared(_))) {
            return Err(kernel_err(
                k,
                format!("parameter '{}' %{} is a shared buffer", p.name, p.value.0),
            ));
        }
        if let Some(Type::TensorMap(m)) = k.ty(p.value) {
            if let Err(why) = tensor_map(m) {
                return Err(kernel_err(
                    k,
                    format!("parameter '{}' %{}: {why}", p.name, p.value.0),
                ));
            }
        }
    }
    names(k)?;
    w.region(&k.body, None)?;
    if let Some(v) = w.defined.iter().position(|d| !d) {
        return Err(kernel_err(k, format!("value %{v} is never defined")));
    }
    let prov = flow::provenance(k);
    flow::memory(k, &prov)
}

/// The box and swizzle of a tensor map as the driver takes them: 1 to 5 dimensions of 1 to
/// 256 elements, the innermost a multiple of 16 bytes and no wider than the swizzle.
fn tensor_map(m: &TensorMapTy) -> Result<(), String> {
    let rank = m.box_dims.len();
    if !(1..=5).contains(&rank) {
        return Err(format!(
            "a tensor map's box has 1 to 5 dimensions, not {rank}"
        ));
    }
    if let Some(d) = m.box_dims.iter().find(|&&d| d == 0 || d > 256) {
        return Err(format!("a box dimension is 1 to 256 elements, not {d}"));
    }
    if !matches!(m.swizzle, 0 | 32 | 64 | 128) {
        return Err(format!(
            "the swizzle is 0, 32, 64 or 128 bytes, not {}",
            m.swizzle
        ));
    }
    let inner = u64::from(m.box_dims[rank - 1]) * m.dtype.size_bytes() as u64;
    if !inner.is_multiple_of(16) {
        return Err(format!(
            "the box's innermost dimension is {inner} bytes, not a multiple of 16"
        ));
    }
    if m.swizzle != 0 && inner > u64::from(m.swizzle) {
        return Err(format!(
            "the box's innermost dimension is {inner} bytes, wider than its {}-byte swizzle",
            m.swizzle
        ));
    }
    Ok(())
}

/// Parameter and shared-buffer names: distinct from each other and from the kernel's name
/// as PTX names ([`crate::scalar::ptx_name`]: the lowering's `.param` and `.shared` names).
fn names(k: &Kernel) -> Result<(), CheckError> {
    use crate::scalar::ptx_name;
    let mut seen: std::collections::HashMap<String, (&str, &str, u32)> = Default::default();
    seen.insert(
        ptx_name(&k.name).into_owned(),
        ("kernel", &k.name, u32::MAX),
    );
    let all = k
        .params
        .iter()
        .map(|p| ("parameter", p.name.as_str(), p.value.0))
        .chain(
            k.shared
                .iter()
                .map(|s| ("shared", s.name.as_str(), s.value.0)),
        );
    for (what, name, v) in all {
        if let Some((w2, n2, v2)) = seen.insert(ptx_name(name).into_owned(), (what, name, v)) {
            let other = if v2 == u32::MAX {
                format!("the kernel's name '{n2}'")
            } else {
                format!("{w2} '{n2}' %{v2}")
            };
            let same = if n2 == name { "" } else { " as a PTX name" };
            return Err(kernel_err(
                k,
                format!("{what} '{name}' %{v} has the same name{same} as {other}"),
            ));
        }
    }
    Ok(())
}

/// The launch shape and the shared-memory total.
fn launch(k: &Kernel) -> Result<(), CheckError> {
    let t = k.threads();
    if t == 0 || t > 1024 || !t.is_multiple_of(32) {
        let [x, y, z] = k.block;
        return Err(CheckError {
            over_limit: t > 1024,
            ..kernel_err(
                k,
                format!(
                    "block {x}×{y}×{z} has {t} threads; a block has 1 to 1024 threads in whole warps of 32"
                ),
            )
        });
    }
    if k.grid.contains(&0) {
        let [x, y, z] = k.grid;
        return Err(kernel_err(k, format!("grid {x}×{y}×{z} is empty")));
    }
    let mut total: u64 = 0;
    for s in &k.shared {
        let Some(Type::Shared(b)) = k.ty(s.value) else {
            return Err(kernel_err(
                k,
                format!("shared '{}' %{} is not a shared buffer", s.name, s.value.0),
            ));
        };
        if b.align == 0 || !b.align.is_power_of_two() {
            return Err(kernel_err(
                k,
                format!(
                    "shared '{}' %{} has alignment {}, not a power of two",
                    s.name, s.value.0, b.align
                ),
            ));
        }
        let a = u64::from(b.align);
        total = total.div_ceil(a) * a + b.bytes();
    }
    if total > MAX_SHARED_BYTES {
        return Err(CheckError {
            over_limit: true,
            ..kernel_err(
                k,
                format!("shared buffers take {total} bytes, more than {MAX_SHARED_BYTES}"),
            )
        });
    }
    Ok(())
}

/// An error about the kernel as a whole.
fn kernel_err(k: &Kernel, msg: impl fmt::Display) -> CheckError {
    CheckError {
        op: None,
        span: k.span,
        message: format!("kernel '{}': {msg}", k.name),
        over_limit: false,
    }
}

/// An error about op `id`: "kernel 'k': tile.add %12: msg" (`#id` for an op without results).
fn op_err(k: &Kernel, id: OpId, msg: impl fmt::Display) -> CheckError {
    let (name, span) = match k.op(id) {
        Some(d) => (format!("{} {}", op_name(&d.kind), op_ref(d, id)), d.span),
        None => (format!("op #{}", id.0), k.span),
    };
    CheckError {
        op: Some(id),
        span,
        message: format!("kernel '{}': {name}: {msg}", k.name),
        over_limit: false,
    }
}

/// How messages refer to an op: its first result, else its id.
fn op_ref(d: &OpData, id: OpId) -> String {
    match d.results.first() {
        Some(v) => format!("%{}", v.0),
        None => format!("#{}", id.0),
    }
}

/// The printed name of a type (`u32`, `frag<A, M16n8k16Bf16>`, `global<fp32>`, `shared<…>`).
fn type_name(t: &Type) -> String {
    match t {
        Type::Scalar(ty) => ty.name().to_string(),
        Type::Frag(f) => format!("frag<{:?}, {:?}>", f.role, f.kind),
        Type::Global(d) => format!("global<{}>", d.name()),
        Type::TensorMap(m) => format!("tensormap<{}, {:?}>", m.dtype.name(), m.box_dims),
        Type::Shared(b) => format!("shared<{:?} × {}B>", b.shape, b.elem_bytes),
    }
}

/// The op's name in messages (`tile.add`, `tile.load_shared`, …).
pub fn op_name(kind: &OpKind) -> String {
    match kind {
        OpKind::Unary { op, .. } => format!("tile.{}", unop_name(*op)),
        OpKind::Binary { op, .. } => format!("tile.{}", binop_name(*op)),
        _ => {
            // the variant's name in snake case: `LoadShared` is `tile.load_shared`
            let mut s = "tile.".to_string();
            for (i, ch) in kind.row().variant.chars().enumerate() {
                if ch.is_ascii_uppercase() && i > 0 {
                    s.push('_');
                }
                s.push(ch.to_ascii_lowercase());
            }
            s
        }
    }
}

fn unop_name(op: UnOp) -> &'static str {
    match op {
        UnOp::Neg => "neg",
        UnOp::Abs => "abs",
        UnOp::Not => "not",
        UnOp::Rcp => "rcp",
        UnOp::RcpApprox => "rcp_approx",
        UnOp::Sqrt => "sqrt",
        UnOp::SqrtApprox => "sqrt_approx",
        UnOp::RsqrtApprox => "rsqrt_approx",
        UnOp::Ex2Approx => "ex2_approx",
        UnOp::Lg2Approx => "lg2_approx",
        UnOp::TanhApprox => "tanh_approx",
    }
}

fn binop_name(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "add",
        BinOp::Sub => "sub",
        BinOp::Mul => "mul",
        BinOp::MulHi => "mul_hi",
        BinOp::Min => "min",
        BinOp::Max => "max",
        BinOp::Div => "div",
        BinOp::DivApprox => "div_approx",
        BinOp::Rem => "rem",
        BinOp::And => "and",
        BinOp::Or => "or",
        BinOp::Xor => "xor",
        BinOp::Shl => "shl",
        BinOp::Shr => "shr",
    }
}

/// The register type of a `ld`/`st` value: `u8` moves through a `u32` register.
fn widened(ty: Ty) -> Ty {
    if ty == Ty::U8 {
        Ty::U32
    } else {
        ty
    }
}

/// The ownership and definition walk.
struct Walk<'a> {
    k: &'a Kernel,
    /// Ops already found in a region.
    seen: Vec<bool>,
    /// Values defined so far.
    defined: Vec<bool>,
    /// Values defined and in scope at the current point of the walk.
    visible: Vec<bool>,
}

impl Walk<'_> {
    /// Marks the ops of `r` and of its nested regions as owned; an op met twice is an error.
    fn owners(&mut self, r: &Region) -> Result<(), CheckError> {
        for &id in &r.ops {
            let k = self.k;
            let Some(d) = k.op(id) else {
                return Err(kernel_err(
                    k,
                    format!("op #{} is out of range ({} ops)", id.0, k.ops.len()),
                ));
            };
            if std::mem::replace(&mut self.seen[id.0 as usize], true) {
                return Err(op_err(k, id, "the op appears in more than one region"));
            }
            for r in &d.regions {
                self.owners(r)?;
            }
        }
        Ok(())
    }

    /// Defines `v` (by op `by`, or by the kernel).
    fn define(&mut self, by: Option<OpId>, v: Value) -> Result<(), CheckError> {
        let err = |m: String| match by {
            Some(id) => op_err(self.k, id, m),
            None => kernel_err(self.k, m),
        };
        let i = v.0 as usize;
        if i >= self.k.values.len() {
            return Err(err(format!(
                "value %{} is out of range ({} values)",
                v.0,
                self.k.values.len()
            )));
        }
        if std::mem::replace(&mut self.defined[i], true) {
            return Err(err(format!("value %{} is defined twice", v.0)));
        }
        self.visible[i] = true;
        Ok(())
    }

    /// Walks region `r`, owned by op `owner` (`None`: the kernel body).
    fn region(&mut self, r: &Region, owner: Option<OpId>) -> Result<(), CheckError> {
        let k = self.k;
        for &a in &r.args {
            self.define(owner, a)?;
        }
        for (i, &id) in r.ops.iter().enumerate() {
            let d = &k.ops[id.0 as usize];
            if d.span == Span::default() {
                return Err(op_err(k, id, "the op has no span"));
            }
            for (j, o) in d.operands.iter().enumerate() {
                if let Operand::Value(v) = *o {
                    self.use_(id, j, v)?;
                }
            }
            if d.kind == OpKind::Yield && (owner.is_none() || i + 1 != r.ops.len()) {
                return Err(op_err(
                    k,
                    id,
                    "tile.yield is only the last op of a tile.for or tile.if region",
                ));
            }
            for (ri, sub) in d.regions.iter().enumerate() {
                self.region(sub, Some(id))?;
                let last = sub.ops.last().and_then(|&y| k.op(y));
                if !matches!(
                    last,
                    Some(OpData {
                        kind: OpKind::Yield,
                        ..
                    })
                ) {
                    return Err(op_err(
                        k,
                        id,
                        format!("region {ri} does not end in tile.yield"),
                    ));
                }
            }
            types::op(k, id)?;
            for &v in &d.results {
                self.define(Some(id), v)?;
            }
        }
        for &a in &r.args {
            self.visible[a.0 as usize] = false;
        }
        for &id in &r.ops {
            for &v in &k.ops[id.0 as usize].results {
                self.visible[v.0 as usize] = false;
            }
        }
        Ok(())
    }

    /// Operand `j` of op `id` reads `v`: in range, defined, in scope.
    fn use_(&self, id: OpId, j: usize, v: Value) -> Result<(), CheckError> {
        let i = v.0 as usize;
        let msg = if i >= self.k.values.len() {
            "is out of range"
        } else if self.visible[i] {
            return Ok(());
        } else if self.defined[i] {
            "is used outside the region that defines it"
        } else {
            "is used before its definition"
        };
        Err(op_err(self.k, id, format!("operand {j} %{} {msg}", v.0)))
    }
}
