//! How a compiled kernel runs on the session's device ([`tessera_runtime::device::Device`]):
//! the Graph IR interpreter runs the call, and at each kernel that reached Target IR the
//! device launches it. The cross-check is a device too ([`CrossCheck`]): it wraps the cpu and
//! a second device, launches every kernel on both and compares the two.

use super::*;
use crate::crosscheck::Checked;
use tessera_compiler::backend::ptx::Lowered as TargetKernel;
use tessera_compiler::schedule::Kernel;
use tessera_runtime::device::registry::{Check, Code as DeviceCode, Entry};
use tessera_runtime::device::{
    self as dev, CrossCheck, Device, DeviceError, Executable, GraphOp, Keep, Launched,
};

/// How a failed launch is handled, after its diagnostic is made.
enum Failed {
    /// Report the diagnostic as the call's error.
    Error(Diagnostic),
    /// The device cannot go on (its context could not be rebuilt): report, then close it.
    Lost(Diagnostic),
}

/// The diagnostic of a launch of kernel `k` (lowered to `t`) on `d` that gave `e`; a GPU
/// fault rebuilds the device's context first.
fn launch_failure(
    d: &mut dyn Device,
    k: &Kernel,
    t: &TargetKernel,
    operands: &[Tensor],
    types: &[TensorType],
    e: DeviceError,
) -> Failed {
    match e {
        DeviceError::Marshal(e) => Failed::Error(Diagnostic::from(e).or_at(k.span)),
        DeviceError::Emu(e) => Failed::Error(
            Diagnostic::new(
                Code::E0800,
                format!("kernel '{}' failed in the emulator: {e}", k.name),
            )
            .or_at(k.span),
        ),
        DeviceError::Op(e) => Failed::Error(Diagnostic::from(e)),
        DeviceError::Mismatch(d) => Failed::Error(*d),
        DeviceError::NoPtx => Failed::Error(
            Diagnostic::new(
                Code::E0500,
                format!("internal compiler error: kernel '{}' has no PTX", k.name),
            )
            .at(k.span),
        ),
        DeviceError::NoSpirv => Failed::Error(
            Diagnostic::new(
                Code::E0800,
                format!("kernel '{}' cannot run on the vulkan device: {e}", k.name),
            )
            .at(k.span)
            .with_help("the vulkan device runs kernels compiled for the spirv target: target.set(\"spirv\")"),
        ),
        DeviceError::Vulkan(ref v) => {
            let diag = Diagnostic::new(
                Code::E0800,
                format!("kernel '{}' failed on the Vulkan device: {v}", k.name),
            )
            .or_at(k.span);
            if v.fault {
                Failed::Lost(diag.with_note(
                    "the Vulkan device was lost; kernels run on the cpu from now on (tensors live on the host: the session's values are intact)",
                ))
            } else {
                Failed::Error(diag)
            }
        }
        DeviceError::Cuda(e) => {
            let diag = crate::device::failure_diagnostic(k, t, operands, types, &e);
            if !e.fault {
                return Failed::Error(diag);
            }
            match d.reset() {
                Ok(()) => Failed::Error(diag.with_note(
                    "the CUDA context was rebuilt; the session's values are intact (tensors live on the host)",
                )),
                Err(why) => Failed::Lost(diag.with_note(format!(
                    "the CUDA context could not be rebuilt ({why}); kernels run on the cpu from now on"
                ))),
            }
        }
    }
}

/// The executable of kernel `k` (lowered to `t`) for device `d`: with its PTX when `d`
/// loads PTX (printed once per compiled kernel).
fn executable(
    c: &Compiled,
    d: &dyn Device,
    k: &Kernel,
    t: &TargetKernel,
    sources: &tessera_lang::SourceMap,
) -> Result<Option<Rc<tessera_runtime::device::PtxImage>>, Diagnostic> {
    if d.code() == DeviceCode::Ptx {
        c.ptx_image(k.root, t, sources)
            .map(Some)
            .map_err(|e| e.or_at(k.span))
    } else {
        Ok(None)
    }
}

/// Runs the graph with every kernel that reached Target IR launched on a device: the
/// session's (the emulator or the GPU), or for a cross-check ([`Run::Check`]) the
/// [`CrossCheck`] device that launches each kernel on the cpu and on the checked device and
/// compares the two ([`crate::crosscheck`]). Kernels that did not reach Target IR run on the
/// CPU, each reported once per session; under a cross-check they are an error.
///
/// A failed launch is E0800 at the kernel: on the GPU an error when `cuda` was asked for by
/// name, else a warning and that launch runs on the cpu
/// ([`tessera_runtime::device::Engine::auto_chosen`]). While profiling, the emulator's counters
/// or the GPU's event times are recorded.
pub(super) fn run_device(
    session: &Session,
    it: &mut Interp,
    c: &Compiled,
    inputs: &[Tensor],
    run: Run,
) -> Result<Vec<Tensor>, Diagnostic> {
    let l = &c.lowered;
    let (entry, check): (&'static Entry, _) = match run {
        Run::Device => (session.engine.current(), None),
        Run::Check { checked, keep } => (checked.entry(), Some((checked, keep))),
    };
    let (profiling, reps) = {
        let p = session.profile.borrow();
        (p.active, p.repeats.max(3) as u32)
    };
    // a failed launch on a device the user did not name falls back to the cpu
    let fallback = check.is_none() && session.engine.auto_chosen();
    let mut warnings: Vec<String> = Vec::new();
    let mut counted: HashMap<ValueId, tessera_runtime::emu::Counters> = HashMap::new();
    let mut times: HashMap<ValueId, f64> = HashMap::new();
    let mut lost = false;
    let sources = &it.sources;
    let mut cpu = dev::Cpu;
    let mut compare = |x: &Executable, reference: &[Tensor], got: Option<&Launched>| {
        let checked = check.map_or_else(Checked::emu, |(c, _)| c);
        let Some((k, _)) = x.op.and_then(|o| l.kernel_at(o.root)) else {
            return Ok(());
        };
        let Some(got) = got else {
            return Err(DeviceError::Mismatch(Box::new(
                crate::crosscheck::status_error_on(k, checked),
            )));
        };
        // each result of a multi-output kernel, against its own dtype's tolerance
        for (i, (r, o)) in reference.iter().zip(&got.outs).enumerate() {
            let mut ki = k.clone();
            if i > 0 {
                ki.ty = TensorType::new(r.shape().to_vec(), r.dtype());
                ki.name = format!("{}#{i}", k.name);
            }
            let a = match checked.rule() {
                Check::Ulps => crate::crosscheck::compare(&l.program.graph, &ki, r, o),
                Check::Norm => {
                    crate::crosscheck::compare_on(&ki, r, o, checked.name(), ki.ty.dtype)
                }
                Check::NormWorking => {
                    let work = working_dtype(&l.program.graph, &ki);
                    crate::crosscheck::compare_on(&ki, r, o, checked.name(), work)
                }
            }
            .map_err(|d| DeviceError::Mismatch(Box::new(d)))?;
            crate::crosscheck::log(&ki, r.numel(), &a);
        }
        Ok(())
    };
    let mut hook = |device: Option<&mut dyn Device>, id: ValueId, operands: &[Tensor]| {
        let (k, ck) = l.kernel_at(id)?;
        if operands.iter().any(|o| o.is_abstract()) {
            // Shapes only: nothing is launched.
            return None;
        }
        if result_types_empty(&c.graph, id) {
            // An empty result: nothing to compute or compare; the cpu makes it.
            return None;
        }
        let Some(t) = &ck.target else {
            let why = ck.not_lowered.as_deref().unwrap_or("no reason given");
            return match check {
                Some((checked, _)) => Some(Err(crate::crosscheck::not_lowered_on(k, why, checked))),
                None => {
                    warnings.extend(cpu_fallback_warning(session, k, ck));
                    None
                }
            };
        };
        if entry.code == DeviceCode::Spirv && ck.spirv.is_none() {
            // compiled for a PTX target (target.set("sm_80") after the device was chosen)
            let why = format!("compiled for the {} target, not spirv", l.program.target);
            return Some(Err(match check {
                Some((checked, _)) => crate::crosscheck::not_lowered_on(k, &why, checked),
                None => Diagnostic::new(
                    Code::E0800,
                    format!("kernel '{}' cannot run on the {entry} device: {why}", k.name),
                )
                .at(k.span)
                .with_help(format!("the {entry} device runs kernels compiled for the spirv target: target.set(\"spirv\")")),
            }));
        }
        let Some(d) = device.filter(|_| !lost) else {
            return check.map(|(c, _)| {
                let how = format!("{}={}", crate::crosscheck::VAR, c.name());
                Err(entry
                    .unavailable(&how, &"the device is not open")
                    .at(k.span))
            });
        };
        let mut cross;
        let d: &mut dyn Device = match check {
            Some((_, keep)) => {
                cross = CrossCheck {
                    reference: &mut cpu,
                    checked: d,
                    compare: &mut compare,
                    keep,
                };
                &mut cross
            }
            None => d,
        };
        let ptx = match executable(c, d, k, t, sources) {
            Ok(p) => p,
            Err(e) => return Some(Err(e)),
        };
        let x = Executable {
            lowered: t,
            ptx: ptx.as_deref(),
            spirv: ck.spirv.as_ref().filter(|_| d.code() == DeviceCode::Spirv),
            op: Some(GraphOp {
                graph: &c.graph,
                root: id,
                captures: &c.captures,
            }),
        };
        let types = c.graph.result_types(id);
        let e = match d.launch(&x, operands, &types) {
            // A status error: the cpu evaluates the op and reports it.
            Ok(None) => return None,
            Ok(Some(Launched { outs, counters })) => {
                if let Some(n) = counters {
                    counted.entry(k.root).or_default().add(&n);
                } else if profiling && check.is_none() {
                    if let Ok(Some(us)) = d.time(&x, operands, &types, reps) {
                        times.insert(k.root, us);
                    }
                }
                return Some(Ok(outs));
            }
            Err(e) => e,
        };
        let driver = matches!(e, DeviceError::Cuda(_));
        let mut diag = match launch_failure(d, k, t, operands, &types, e) {
            Failed::Error(diag) => diag,
            Failed::Lost(diag) => {
                lost = true;
                diag
            }
        };
        if !fallback {
            if check.is_some() && driver && !diag.message.starts_with("cross-check") {
                diag.message = format!("cross-check: {}", diag.message);
            }
            return Some(Err(diag));
        }
        warnings.push(ran_on_cpu_warning(&diag, k, sources));
        None
    };
    if entry.hardware.is_none() {
        // a device that always opens (the emulator) opens on first use: a session made
        // without it, then cross-checked against it
        let _ = session.engine.open(entry);
    }
    let r = session
        .engine
        .run_on(entry, &c.graph, inputs, &c.captures, &mut hook);
    if lost {
        session.engine.close(entry);
        if check.is_none() {
            session.engine.fall_back();
            session.install_timer();
        }
    }
    for w in warnings {
        it.write_err(&w);
    }
    if profiling {
        match (entry.counts, check) {
            (true, None | Some((_, Keep::Checked))) => crate::profile::record_emu(
                &session.profile_sink(),
                &c.lowered,
                &counted,
                &it.sources,
            ),
            (_, None) => {
                let sink = session.profile_sink();
                crate::profile::record(&sink, &c.lowered, &times, Some(entry.name), &it.sources)
            }
            // the caller profiles a cross-checked run that kept the cpu's results
            _ => {}
        }
    }
    r
}

/// The dtype a cross-checked vulkan kernel computes in: the least precise float among its
/// operands and result (the result's dtype for an integer result).
fn working_dtype(
    g: &Graph,
    k: &tessera_compiler::schedule::Kernel,
) -> tessera_compiler::graph::DType {
    if !k.ty.dtype.is_float() {
        return k.ty.dtype;
    }
    k.inputs
        .iter()
        .filter_map(|&v| g.ty(v).map(|t| t.dtype))
        .chain([k.ty.dtype])
        .filter(|d| d.is_float() && d.precision().is_some())
        .min_by_key(|d| d.precision())
        .unwrap_or(k.ty.dtype)
}

/// The warning of a kernel whose failed launch fell back to the cpu.
fn ran_on_cpu_warning(
    diag: &Diagnostic,
    k: &tessera_compiler::schedule::Kernel,
    sources: &tessera_lang::SourceMap,
) -> String {
    let mut w = format!(
        "warning[E0800]: {}; it ran on the cpu (at {})\n",
        diag.message,
        sources.describe(k.span)
    );
    for n in &diag.notes {
        w.push_str(&format!("  = note: {n}\n"));
    }
    w
}

/// Whether every result of the op at `id` is empty (a kernel with nothing to compute).
fn result_types_empty(g: &Graph, id: ValueId) -> bool {
    g.result_types(id)
        .iter()
        .all(|t| t.shape.iter().product::<usize>() == 0)
}

/// How [`run_device`] runs a call's kernels.
#[derive(Copy, Clone)]
pub(super) enum Run {
    /// On the session's device.
    Device,
    /// On the cpu and on `checked`, compared; the results of the side `keep` names.
    Check { checked: Checked, keep: Keep },
}
