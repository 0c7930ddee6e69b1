//! Cross-check mode (`TESSERA_CROSSCHECK=emu`): every kernel launch on the cpu device also
//! runs the kernel's Target IR in the emulator, and the two results must agree within the
//! dtype's tolerance ([`tolerance`]). The cpu result is what the script sees, so its output is
//! the same as without the mode; a disagreement, or a kernel that has no Target IR, is an
//! E0800 error naming the kernel.
//!
//! `TESSERA_CROSSCHECK_LOG=FILE` appends one line per checked launch to `FILE`:
//! `checked<TAB>kernel<TAB>kind<TAB>elements<TAB>worst |diff| / tolerance`.

use tessera_compiler::graph::{DType, Graph, Op, ValueId};
use tessera_compiler::schedule::Kernel;
use tessera_lang::diag::{Code, Diagnostic};
use tessera_runtime::device::registry::{self, Check, Code as DeviceCode, Entry};
use tessera_runtime::Tensor;

/// The variable that turns the mode on.
pub const VAR: &str = "TESSERA_CROSSCHECK";
/// Where checked launches are logged.
pub const LOG_VAR: &str = "TESSERA_CROSSCHECK_LOG";

/// The device a cross-check compares with the cpu: a device of the registry that says how
/// ([`Entry::check`]): `emu` elementwise within a few units in the last place, a GPU by the
/// norm-wise relative error of each launch ([`compare_device`]).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Checked(&'static Entry);

impl Checked {
    /// The emulator, the check the cpu runs without `TESSERA_CROSSCHECK` naming a device.
    pub fn emu() -> Checked {
        Checked(registry::find("emu").unwrap_or(registry::cpu()))
    }
    /// The device it is.
    pub fn entry(self) -> &'static Entry {
        self.0
    }
    pub fn name(self) -> &'static str {
        self.0.name
    }
    /// How its results are compared with the cpu's.
    pub fn rule(self) -> Check {
        self.0.check.unwrap_or(Check::Ulps)
    }
}

/// The devices a cross-check takes: "`emu`, `cuda` and `vulkan`".
fn devices() -> String {
    let names: Vec<String> = registry::DEVICES
        .iter()
        .filter(|e| e.check.is_some())
        .map(|e| format!("`{}`", e.name))
        .collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// Whether the mode is on: `TESSERA_CROSSCHECK=emu`. Unset or empty is off; a device the
/// registry gives a check ([`mode`]) is on; any other value is E0101 (a typo must not
/// silently turn the check off).
pub fn enabled() -> Result<bool, Diagnostic> {
    mode().map(|m| m.is_some())
}

/// The device the mode compares with, `None` when it is off.
pub fn mode() -> Result<Option<Checked>, Diagnostic> {
    match std::env::var(VAR) {
        Err(std::env::VarError::NotPresent) => Ok(None),
        Ok(v) if v.is_empty() => Ok(None),
        Ok(v) => match registry::find(&v).filter(|e| e.check.is_some()) {
            Some(e) => Ok(Some(Checked(e))),
            None => Err(Diagnostic::new(
                Code::E0101,
                format!("{VAR}={v:?}: the cross-check devices are {}", devices()),
            )
            .with_help(format!("set {VAR}=emu, or unset it"))),
        },
        Err(std::env::VarError::NotUnicode(_)) => Err(Diagnostic::new(
            Code::E0101,
            format!(
                "{VAR} is not valid unicode; the cross-check devices are {}",
                devices()
            ),
        )),
    }
}

/// The bound on `‖gpu − cpu‖ / ‖cpu‖` (2-norms over a launch's result) for a result of dtype
/// `d`, after the device tool's method: fp32 arithmetic lands far under 1e-3 (a tf32 tensor
/// core product near 3e-4), fp16/bf16 operands between 1e-3 and 1e-2; integers must be equal.
pub fn device_bound(d: DType) -> f64 {
    match d {
        DType::F64 | DType::C128 => 1e-10,
        DType::F32 | DType::TF32 | DType::C64 => 1e-3,
        DType::F16 => 5e-3,
        DType::BF16 => 1e-2,
        DType::F8E4M3 | DType::F8E5M2 => 1e-1,
        DType::I64 | DType::I32 | DType::I8 | DType::Bool => 0.0,
    }
}

/// Compares the cpu and GPU results of kernel `k` norm-wise: `‖gpu − cpu‖ / ‖cpu‖` within
/// [`device_bound`], and no element NaN on one side only (an output the kernel never wrote is
/// NaN when outputs are poisoned, `TESSERA_CUDA_POISON=1`).
pub fn compare_device(k: &Kernel, cpu: &Tensor, gpu: &Tensor) -> Result<Agreement, Diagnostic> {
    compare_on(k, cpu, gpu, "cuda", k.ty.dtype)
}

/// [`compare_device`] for the device named `dev`, with the bound of dtype `work` (the
/// vulkan check uses the kernel's least precise float operand: an fp32 matmul with an fp64
/// epilogue is fp32 arithmetic).
pub fn compare_on(
    k: &Kernel,
    cpu: &Tensor,
    gpu: &Tensor,
    dev: &str,
    work: DType,
) -> Result<Agreement, Diagnostic> {
    let what = format!("cross-check: kernel '{}' ({})", k.name, k.kind.name());
    if cpu.shape() != gpu.shape() {
        return Err(Diagnostic::new(
            Code::E0800,
            format!(
                "{what}: cpu result has shape {:?}, {dev} result {:?}",
                cpu.shape(),
                gpu.shape()
            ),
        )
        .at(k.span));
    }
    let a = values(cpu)?;
    let b = values(gpu)?;
    // the norms are taken of values scaled by the largest finite magnitude, so that squares
    // of values near the fp64 range (1e308) do not overflow
    let scale = a
        .iter()
        .chain(&b)
        .filter(|v| v.is_finite())
        .fold(0.0f64, |m, v| m.max(v.abs()));
    let scale = if scale > 0.0 { scale } else { 1.0 };
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        if x.is_nan() != y.is_nan() || (x.is_infinite() && x != y) {
            let idx = element_of(cpu, i);
            return Err(Diagnostic::new(
                Code::E0800,
                format!(
                    "{what}: the cpu and {dev} disagree at {idx:?}: cpu {}, {dev} {} (an element the kernel did not write, or a NaN/inf on one side)",
                    show(*x),
                    show(*y)
                ),
            )
            .at(k.span));
        }
        if x.is_finite() && y.is_finite() {
            let (xs, ys) = (x / scale, y / scale);
            num += (xs - ys) * (xs - ys);
            den += xs * xs;
        }
    }
    let bound = device_bound(work);
    let rel = if den > 0.0 {
        (num / den).sqrt()
    } else {
        num.sqrt() * scale
    };
    let ok = if bound == 0.0 {
        num == 0.0
    } else {
        rel <= bound
    };
    if !ok {
        return Err(Diagnostic::new(
            Code::E0800,
            format!(
                "{what}: the cpu and {dev} disagree: ‖{dev} − cpu‖ / ‖cpu‖ = {rel:.3e}, over the {} bound {bound:.0e}",
                work
            ),
        )
        .at(k.span));
    }
    Ok(Agreement {
        worst_ratio: if bound > 0.0 { rel / bound } else { 0.0 },
    })
}

/// The unit roundoff (2^-p, p the significand precision) of a float dtype; 0 for exact types.
fn unit_roundoff(d: DType) -> f64 {
    // a complex dtype's parts are fp32 / fp64
    d.real_part()
        .precision()
        .map_or(0.0, |p| 2f64.powi(-(p as i32)))
}

/// How many terms are summed into one output element of the kernel rooted at `root` (1 for
/// elementwise and copy kernels).
pub fn reduction_length(g: &Graph, root: ValueId) -> u64 {
    let shape = |v: ValueId| g.ty(v).map(|t| t.shape.clone()).unwrap_or_default();
    let last = |v: ValueId| shape(v).last().map(|&d| d as u64).unwrap_or(1);
    let op = g.op(root);
    if let Some((op, d)) = op.and_then(|op| Some((op, tessera_compiler::graph::op_def(op)?))) {
        return d.reduced_len(g, op).max(1);
    }
    match op {
        Some(Op::FlashAttention { q, k, .. }) => {
            let sk = shape(*k);
            let sk = sk.get(sk.len().saturating_sub(2)).copied().unwrap_or(1) as u64;
            sk + last(*q)
        }
        Some(Op::AttentionLse { q, k, .. }) => {
            let sk = shape(*k);
            let sk = sk.get(sk.len().saturating_sub(2)).copied().unwrap_or(1) as u64;
            sk + last(*q)
        }
        // a gradient sums over the other side's rows, each term a product of two dot products
        Some(Op::AttentionGrad { q, k, v, .. }) => {
            let len = |x: ValueId| {
                let s = shape(x);
                s.get(s.len().saturating_sub(2)).copied().unwrap_or(1) as u64
            };
            len(*q) + len(*k) + last(*q) + last(*v)
        }
        // an FFT line sums its n inputs; the product its group's channels
        Some(Op::Fft { n, .. }) => *n as u64,
        Some(Op::SpectralMul { w, .. }) => shape(*w).get(1).map_or(1, |&c| c as u64),
        _ => 1,
    }
    .max(1)
}

/// The values of `t` as f64, a complex one's as (re, im) pairs.
fn values(t: &Tensor) -> Result<Vec<f64>, Diagnostic> {
    if t.dtype().is_complex() {
        Ok(t.to_c128_vec()
            .map_err(Diagnostic::from)?
            .into_iter()
            .flat_map(|c| [c.re, c.im])
            .collect())
    } else {
        t.to_f64_vec().map_err(Diagnostic::from)
    }
}

/// The index of the element whose value (or part, for complex) is number `i` of [`values`].
fn element_of(t: &Tensor, i: usize) -> Vec<usize> {
    index_of(t.shape(), if t.dtype().is_complex() { i / 2 } else { i })
}

/// `(rtol, atol)` for a result of dtype `d` whose elements sum `k` terms, given the largest
/// finite magnitude `max_abs` of the cpu result: `rtol = max(4·u, 1e-5·√k)` with `u` the
/// dtype's unit roundoff (two units in the last place: the cpu rounds an fp32/fp64 value once,
/// the emulator an fp32 value computed in another order, so the two may straddle a rounding
/// boundary, also at a rounded intermediate); `atol = rtol · max_abs` (a sum that cancels is
/// only as accurate as its terms). Integer and bool results must be equal.
pub fn tolerance(d: DType, k: u64, max_abs: f64) -> (f64, f64) {
    let u = unit_roundoff(d);
    if u == 0.0 {
        return (0.0, 0.0);
    }
    let rtol = (4.0 * u).max(1e-5 * (k.max(1) as f64).sqrt());
    (rtol, rtol * max_abs)
}

/// The result of comparing one launch.
#[derive(Debug)]
pub struct Agreement {
    /// The largest `|diff| / (atol + rtol·|cpu|)` over the elements (0 when all equal).
    pub worst_ratio: f64,
}

fn index_of(shape: &[usize], mut flat: usize) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for (i, &d) in shape.iter().enumerate().rev() {
        if d > 0 {
            idx[i] = flat % d;
            flat /= d;
        }
    }
    idx
}

fn show(x: f64) -> String {
    tessera_lang::eval::Value::Float(x).repr()
}

/// Compares the cpu and emulator results of kernel `k` (rooted in `g`).
pub fn compare(g: &Graph, k: &Kernel, cpu: &Tensor, emu: &Tensor) -> Result<Agreement, Diagnostic> {
    let what = format!("cross-check: kernel '{}' ({})", k.name, k.kind.name());
    if cpu.shape() != emu.shape() {
        return Err(Diagnostic::new(
            Code::E0800,
            format!(
                "{what}: the cpu result has shape {:?}, the emu result {:?}",
                cpu.shape(),
                emu.shape()
            ),
        )
        .at(k.span));
    }
    let a = values(cpu)?;
    let b = values(emu)?;
    let kl = reduction_length(g, k.root);
    let max_abs = a
        .iter()
        .filter(|x| x.is_finite())
        .fold(0f64, |m, x| m.max(x.abs()));
    let (rtol, atol) = tolerance(k.ty.dtype, kl, max_abs);
    let mut worst = (0f64, None::<usize>);
    for (i, (&x, &y)) in a.iter().zip(&b).enumerate() {
        let ratio = if x.is_nan() && y.is_nan() || x == y {
            0.0
        } else if !x.is_finite() || !y.is_finite() {
            f64::INFINITY
        } else {
            let tol = atol + rtol * x.abs();
            let d = (x - y).abs();
            if tol > 0.0 {
                d / tol
            } else {
                f64::INFINITY
            }
        };
        if ratio > worst.0 {
            worst = (ratio, Some(i));
        }
    }
    if let (r, Some(i)) = worst {
        if r > 1.0 {
            let idx = element_of(cpu, i);
            let (x, y) = (a[i], b[i]);
            return Err(Diagnostic::new(
                Code::E0800,
                format!(
                    "{what}: the cpu and emu results differ at index {idx:?}: cpu {}, emu {} (|diff| {} > tolerance {} for {} over {kl} terms)",
                    show(x),
                    show(y),
                    show((x - y).abs()),
                    show(atol + rtol * x.abs()),
                    k.ty.dtype
                ),
            )
            .at(k.span)
            .with_label("this kernel")
            .with_help(format!(
                "tolerance = atol + rtol·|cpu| with rtol {} and atol {} (docs/decisions.md, cross-check)",
                show(rtol),
                show(atol)
            )));
        }
    }
    Ok(Agreement {
        worst_ratio: worst.0,
    })
}

/// The error for a kernel whose emulated run reported an error (its status word) on inputs
/// the cpu computed without one.
pub fn status_error(k: &Kernel) -> Diagnostic {
    status_error_on(k, Checked::emu())
}

/// [`status_error`] for the cross-check of `dev`.
pub fn status_error_on(k: &Kernel, dev: Checked) -> Diagnostic {
    let on = dev.entry().place;
    Diagnostic::new(
        Code::E0800,
        format!(
            "cross-check: kernel '{}' ({}) reported an error {on} (integer division by zero or an invalid float to int cast) where the cpu found none",
            k.name,
            k.kind.name()
        ),
    )
    .at(k.span)
    .with_label("this kernel")
}

/// The error for a kernel with no Target IR while cross-checking.
pub fn not_lowered(k: &Kernel, reason: &str) -> Diagnostic {
    not_lowered_on(k, reason, Checked::emu())
}

/// [`not_lowered`] for the cross-check of `dev`.
pub fn not_lowered_on(k: &Kernel, reason: &str, dev: Checked) -> Diagnostic {
    let d = dev.name();
    Diagnostic::new(
        Code::E0800,
        format!(
            "cross-check: kernel '{}' ({}) is not lowered to {} ({reason}), so it cannot run on {d}",
            k.name,
            k.kind.name(),
            match dev.entry().code {
                DeviceCode::Spirv => DeviceCode::Spirv.name(),
                _ => DeviceCode::TargetIr.name(),
            }
        ),
    )
    .at(k.span)
    .with_label("this kernel")
    .with_help(format!("{VAR}={d} runs every kernel on both cpu and {d}; unset it to run on the cpu alone"))
}

/// Appends a checked launch to `$TESSERA_CROSSCHECK_LOG` (when set).
pub fn log(k: &Kernel, elements: usize, a: &Agreement) {
    let Some(path) = std::env::var_os(LOG_VAR).filter(|p| !p.is_empty()) else {
        return;
    };
    use std::io::Write as _;
    let line = format!(
        "checked\t{}\t{}\t{elements}\t{:.3}\n",
        k.name,
        k.kind.name(),
        a.worst_ratio
    );
    let r = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = r {
        eprintln!(
            "warning: {LOG_VAR}: cannot write {}: {e}",
            std::path::Path::new(&path).display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_compiler::graph::TensorType;
    use tessera_compiler::schedule::{Kind, Schedule};
    use tessera_lang::{SourceMap, Span};
    use tessera_runtime::DType as RDType;

    /// Kernel `t` run in the emulator on one input.
    fn emu_run(
        t: &tessera_compiler::backend::ptx::Lowered,
        input: &Tensor,
        out: &TensorType,
    ) -> Tensor {
        use tessera_runtime::device::{Device, Emu, Executable};
        let x = Executable {
            lowered: t,
            ptx: None,
            spirv: None,
            op: None,
        };
        Emu.launch(&x, std::slice::from_ref(input), std::slice::from_ref(out))
            .unwrap()
            .unwrap()
            .outs
            .remove(0)
    }

    fn kernel(g: &Graph, root: ValueId, ty: TensorType) -> Kernel {
        Kernel {
            name: "f_copy_0".into(),
            kind: Kind::Copy,
            root,
            inputs: vec![],
            ty,
            span: g.span(root),
            schedule: Schedule {
                tile: [256, 1, 1],
                warp: [1, 1],
                stages: 1,
                vector: 1,
                tensor_cores: false,
                async_copy: false,
                threads: 256,
                elem_bytes: 4,
            },
        }
    }

    fn span() -> Span {
        let mut sm = SourceMap::new();
        let f = sm.add("t.tsr", "x = f(y)\n");
        Span::new(f, 0, 8)
    }

    #[test]
    fn tolerance_follows_the_dtype_and_the_reduction_length() {
        assert_eq!(tolerance(DType::F32, 1, 2.0), (1e-5, 2e-5));
        let (r, _) = tolerance(DType::F32, 10_000, 1.0);
        assert!((r - 1e-3).abs() < 1e-12);
        assert_eq!(tolerance(DType::BF16, 1, 1.0).0, 4.0 / 256.0);
        assert_eq!(tolerance(DType::F16, 1, 1.0).0, 4.0 / 2048.0);
        assert_eq!(tolerance(DType::I32, 100, 5.0), (0.0, 0.0));
    }

    #[test]
    fn a_difference_beyond_the_tolerance_names_the_element_and_both_values() {
        let mut g = Graph::new("f");
        let ty = TensorType::new(vec![2, 3], DType::F32);
        let x = g.add_param(ty.clone(), span());
        let k = kernel(&g, x, ty);
        let cpu =
            Tensor::from_f32(&[2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], RDType::F32).unwrap();
        // Within rtol·|x| + rtol·max: 6e-5 + 1e-5·|x|.
        let near =
            Tensor::from_f32(&[2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.00009], RDType::F32).unwrap();
        let a = compare(&g, &k, &cpu, &near).unwrap();
        assert!(
            a.worst_ratio > 0.5 && a.worst_ratio <= 1.0,
            "{}",
            a.worst_ratio
        );
        let far =
            Tensor::from_f32(&[2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.01, 6.0], RDType::F32).unwrap();
        let e = compare(&g, &k, &cpu, &far).unwrap_err();
        assert_eq!(e.code, Code::E0800);
        assert!(
            e.message.contains("kernel 'f_copy_0' (copy)"),
            "{}",
            e.message
        );
        assert!(e.message.contains("at index [1, 1]"), "{}", e.message);
        assert!(e.message.contains("cpu 5.0, emu 5.01"), "{}", e.message);
    }

    #[test]
    fn nans_agree_with_nans_and_infinities_only_with_themselves() {
        let mut g = Graph::new("f");
        let ty = TensorType::new(vec![2], DType::F32);
        let x = g.add_param(ty.clone(), span());
        let k = kernel(&g, x, ty);
        let t = |v: Vec<f32>| Tensor::from_f32(&[2], v, RDType::F32).unwrap();
        assert!(compare(&g, &k, &t(vec![f32::NAN, 1.0]), &t(vec![f32::NAN, 1.0])).is_ok());
        assert!(compare(&g, &k, &t(vec![f32::NAN, 1.0]), &t(vec![0.0, 1.0])).is_err());
        assert!(compare(&g, &k, &t(vec![f32::INFINITY, 1.0]), &t(vec![1e30, 1.0])).is_err());
    }

    /// Broadcasts have no `.tsr` spelling of their own yet; the copy generator still lowers
    /// them, and the emulator agrees with the cpu executor.
    #[test]
    fn a_broadcast_kernel_runs_on_emu_and_agrees() {
        use tessera_compiler::backend::ptx::Target;
        use tessera_compiler::graph::Op;
        use tessera_compiler::pipeline::lower;
        use tessera_compiler::schedule::Directives;
        let mut g = Graph::new("f");
        let x = g.add_param(TensorType::new(vec![3, 1, 5], DType::BF16), span());
        let out_ty = TensorType::new(vec![2, 3, 70, 5], DType::BF16);
        let y = g.push(Op::Broadcast { x }, out_ty, span());
        g.outputs = vec![y];
        let l = lower(&g, &Directives::default(), Target::Sm90).unwrap();
        let c = &l.kernels[0];
        assert!(c.not_lowered.is_none(), "{:?}", c.not_lowered);
        let t = c.target.as_ref().unwrap();
        let input = Tensor::randn(&[3, 1, 5], RDType::BF16, 7).unwrap();
        let cpu = tessera_runtime::interp::run(&g, std::slice::from_ref(&input), &[]).unwrap();
        let k = &l.program.kernels[0];
        let emu = emu_run(t, &input, &k.ty);
        assert_eq!(cpu[0].to_f64_vec().unwrap(), emu.to_f64_vec().unwrap());
        // And it is a real broadcast: element [1, 2, 69, 4] is input [2, 0, 4].
        let v = emu.to_f64_vec().unwrap();
        let i = input.to_f64_vec().unwrap();
        assert_eq!(v[((3 + 2) * 70 + 69) * 5 + 4], i[2 * 5 + 4]);
    }

    #[test]
    fn logical_not_of_a_bool_tensor_runs_on_emu_like_the_cpu() {
        use tessera_compiler::backend::ptx::{Op as TOp, Target, Ty};
        use tessera_compiler::graph::UnaryOp;
        use tessera_compiler::pipeline::lower;
        use tessera_compiler::schedule::Directives;
        let mut g = Graph::new("f");
        let ty = TensorType::new(vec![37], DType::Bool);
        let x = g.add_param(ty.clone(), span());
        let y = g.push(
            Op::Unary {
                op: UnaryOp::Not,
                x,
            },
            ty,
            span(),
        );
        g.outputs = vec![y];
        let l = lower(&g, &Directives::default(), Target::Sm90).unwrap();
        let c = &l.kernels[0];
        assert!(c.not_lowered.is_none(), "{:?}", c.not_lowered);
        let t = c.target.as_ref().unwrap();
        // Bytes in and out: ld.global.u8 / st.global.u8.
        let u8_moves = t
            .kernel
            .blocks
            .iter()
            .flat_map(|b| &b.insts)
            .filter(|i| {
                matches!(
                    i.op,
                    TOp::Ld { ty: Ty::U8, .. } | TOp::St { ty: Ty::U8, .. }
                )
            })
            .count();
        assert!(u8_moves >= 2, "{u8_moves}");
        let input = Tensor::from_bool(&[37], (0..37).map(|i| i % 3 == 0).collect()).unwrap();
        let cpu = tessera_runtime::interp::run(&g, std::slice::from_ref(&input), &[]).unwrap();
        let k = &l.program.kernels[0];
        let emu = emu_run(t, &input, &k.ty);
        let want: Vec<bool> = (0..37).map(|i| i % 3 != 0).collect();
        assert_eq!(emu.to_bool_vec().unwrap(), want);
        assert_eq!(cpu[0].to_bool_vec().unwrap(), want);
    }
}
