//! How a compiled kernel runs on each device: the `emu` emulator (with its counters for the
//! profiler), `cuda` (with fault replay and event timing) and the cross-check of a device
//! against the cpu.

use super::*;

impl KernelObj {
    /// Runs the graph with every kernel that reached Target IR in the emulator; the others
    /// run on the CPU, each reported once per session (the interpreter's error sink). While
    /// profiling, the launch is recorded with the emulator's counters.
    pub(super) fn run_emu(
        &self,
        it: &mut Interp,
        c: &Compiled,
        inputs: &[Tensor],
    ) -> Result<Vec<Tensor>, Diagnostic> {
        let l = &c.lowered;
        let session = &self.session;
        let mut warnings = Vec::new();
        let mut counted: HashMap<ValueId, tessera_runtime::emu::Counters> = HashMap::new();
        let mut hook = |id: ValueId, operands: &[Tensor]| {
            let (k, ck) = l.kernel_at(id)?;
            if let Some(t) = &ck.target {
                if operands.iter().all(|o| !o.is_abstract()) {
                    // A status error (None): the cpu evaluates the op and reports it.
                    let r = crate::device::run_counted(t, &k.name, operands, &k.ty);
                    return match r {
                        Ok((out, stats)) => {
                            counted.entry(k.root).or_default().add(&stats.counters);
                            out.map(Ok)
                        }
                        Err(d) => Some(Err(d)),
                    };
                }
            }
            warnings.extend(cpu_fallback_warning(session, k, ck));
            None
        };
        let r = crate::exec::run_with(&c.graph, inputs, &c.captures, &mut hook);
        for w in warnings {
            it.write_err(&w);
        }
        if session.profile.borrow().active {
            crate::profile::record_emu(session, c, &counted, &it.sources);
        }
        r
    }

    /// Runs the graph with every kernel that reached Target IR on the GPU; the others run on
    /// the CPU (reported once per session). A failed launch is E0800 at the kernel: an error
    /// when `cuda` was asked for by name, else a warning and that launch runs on the cpu
    /// ([`crate::cuda`]). While profiling, each GPU launch is also timed with CUDA events.
    pub(super) fn run_cuda(
        &self,
        it: &mut Interp,
        c: &Compiled,
        inputs: &[Tensor],
    ) -> Result<Vec<Tensor>, Diagnostic> {
        let l = &c.lowered;
        let session = &self.session;
        let (profiling, reps) = {
            let p = session.profile.borrow();
            (p.active, p.repeats.max(3) as u32)
        };
        let explicit = session.cuda_explicit.get();
        let mut warnings: Vec<String> = Vec::new();
        let mut times: HashMap<ValueId, f64> = HashMap::new();
        let sources = &it.sources;
        let mut hook = |id: ValueId, operands: &[Tensor]| {
            let (k, ck) = l.kernel_at(id)?;
            let t = match &ck.target {
                Some(t) if operands.iter().all(|o| !o.is_abstract()) => t,
                _ => {
                    warnings.extend(cpu_fallback_warning(session, k, ck));
                    return None;
                }
            };
            let ptx = match c.ptx_image(k.root, t, sources) {
                Ok(p) => p,
                Err(d) => return Some(Err(d.or_at(k.span))),
            };
            let mut slot = session.cuda.borrow_mut();
            let dev = slot.as_mut()?;
            let r = crate::device::run_cuda(dev, t, &ptx, operands, &k.ty);
            let e = match r {
                // A status error: the cpu evaluates the op and reports it.
                Ok(None) => return None,
                Ok(Some(out)) => {
                    if profiling {
                        if let Ok(us) =
                            crate::device::time_cuda(dev, t, &ptx, operands, &k.ty, reps)
                        {
                            times.insert(k.root, us);
                        }
                    }
                    return Some(Ok(out));
                }
                Err(crate::device::CudaFailure::Marshal(d)) => return Some(Err(d.or_at(k.span))),
                Err(crate::device::CudaFailure::Driver(e)) => e,
            };
            let mut d = crate::device::failure_diagnostic(k, t, operands, &e);
            if e.fault {
                match dev.rebuild() {
                    Ok(()) => {
                        d = d.with_note(
                            "the CUDA context was rebuilt; the session's values are intact (tensors live on the host)",
                        )
                    }
                    Err(why) => {
                        d = d.with_note(format!(
                            "the CUDA context could not be rebuilt ({why}); kernels run on the cpu from now on"
                        ));
                        *slot = None;
                        session.device.set(super::DeviceKind::Cpu);
                        session.tune.borrow_mut().timer = None;
                    }
                }
            }
            if explicit {
                return Some(Err(d));
            }
            let mut w = format!(
                "warning[E0800]: {}; it ran on the cpu (at {})\n",
                d.message,
                sources.describe(k.span)
            );
            for n in &d.notes {
                w.push_str(&format!("  = note: {n}\n"));
            }
            warnings.push(w);
            None
        };
        let r = crate::exec::run_with(&c.graph, inputs, &c.captures, &mut hook);
        for w in warnings {
            it.write_err(&w);
        }
        if profiling {
            crate::profile::record(session, c, &times, Some("cuda"), &it.sources);
        }
        r
    }

    /// Runs every kernel of the graph on the CPU and in the emulator, comparing the two
    /// results ([`crate::crosscheck`]). The results of the `emu` device when `emu` is set (they
    /// also feed the kernels after them), else those of the CPU.
    pub(super) fn run_crosscheck(
        &self,
        c: &Compiled,
        inputs: &[Tensor],
        checked: crate::crosscheck::Checked,
        emu_results: bool,
        sources: &tessera_lang::SourceMap,
    ) -> Result<Vec<Tensor>, Diagnostic> {
        use crate::crosscheck::Checked;
        let l = &c.lowered;
        let g = &l.program.graph;
        let session = &self.session;
        let mut counted: HashMap<ValueId, tessera_runtime::emu::Counters> = HashMap::new();
        let mut observe = |id: ValueId, operands: &[Tensor], cpu: &Tensor| {
            let Some((k, ck)) = l.kernel_at(id) else {
                return Ok(None);
            };
            if cpu.is_abstract() || operands.iter().any(|o| o.is_abstract()) || cpu.numel() == 0 {
                // Shapes only, or an empty result: nothing would be launched.
                return Ok(None);
            }
            let Some(t) = &ck.target else {
                return Err(crate::crosscheck::not_lowered_on(
                    k,
                    ck.not_lowered.as_deref().unwrap_or("no reason given"),
                    checked,
                ));
            };
            let (emu, a) = match checked {
                Checked::Emu => {
                    let (emu, stats) = crate::device::run_counted(t, &k.name, operands, &k.ty)
                        .map_err(|d| d.or_at(k.span))?;
                    counted.entry(k.root).or_default().add(&stats.counters);
                    let emu = emu.ok_or_else(|| crate::crosscheck::status_error(k))?;
                    let a = crate::crosscheck::compare(g, k, cpu, &emu)?;
                    (emu, a)
                }
                Checked::Cuda => {
                    let ptx = c
                        .ptx_image(k.root, t, sources)
                        .map_err(|d| d.or_at(k.span))?;
                    let mut slot = session.cuda.borrow_mut();
                    let Some(dev) = slot.as_mut() else {
                        return Err(crate::cuda::unavailable(
                            "TESSERA_CROSSCHECK=cuda",
                            &"the session has no GPU open",
                        )
                        .at(k.span));
                    };
                    let out = match crate::device::run_cuda(dev, t, &ptx, operands, &k.ty) {
                        Ok(Some(out)) => out,
                        Ok(None) => return Err(crate::crosscheck::status_error(k)),
                        Err(crate::device::CudaFailure::Driver(e)) => {
                            let mut d = crate::device::failure_diagnostic(k, t, operands, &e);
                            d.message = format!("cross-check: {}", d.message);
                            if e.fault {
                                if let Err(why) = dev.rebuild() {
                                    d = d.with_note(format!(
                                        "the CUDA context could not be rebuilt: {why}"
                                    ));
                                    *slot = None;
                                }
                            }
                            return Err(d);
                        }
                        Err(crate::device::CudaFailure::Marshal(d)) => return Err(d.or_at(k.span)),
                    };
                    let a = crate::crosscheck::compare_device(k, cpu, &out)?;
                    (out, a)
                }
            };
            crate::crosscheck::log(k, cpu.numel(), &a);
            Ok(emu_results.then_some(emu))
        };
        let r = crate::exec::run_observed(
            &c.graph,
            inputs,
            &c.captures,
            &mut |_, _| None,
            &mut observe,
        );
        // on the emu device, the profile shows the emulator's counters as without the check
        if emu_results && session.profile.borrow().active {
            crate::profile::record_emu(session, c, &counted, sources);
        }
        r
    }
}
