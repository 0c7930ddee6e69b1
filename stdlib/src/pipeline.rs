//! Pipeline parallelism (SPEC §7): `dist.pipeline(stages, mesh=, mesh_axis="pp",
//! microbatches=8, schedule="1f1b")`.
//!
//! Stage `i` sits on index `i` of the mesh axis. A call splits its input along the first
//! dimension into micro-batches (as `torch.chunk` cuts it), compiles each stage once per
//! micro-batch shape (a stage is an `@op.kernel` or a function traced as one), and runs the
//! stages at once, one worker thread per stage: stage `i` takes micro-batch `j` when stage
//! `i - 1` has passed it on, so micro-batch `j + 1` computes on stage `i` while `j` computes on
//! stage `i + 1`. The result is the micro-batches' outputs concatenated: the sequential
//! composition of the stages.
//!
//! The call is a forward pass, so both schedules run the same order; they differ in what they
//! keep in flight: `gpipe` lets stage 0 run ahead through every micro-batch (`m` in flight),
//! `1f1b` lets it start micro-batch `j` only once the last stage has finished `j - p` (at most
//! `p` in flight, the activation memory of one-forward-one-backward).
//!
//! Measured: each stage's busy time per micro-batch, and the bubble, the share of the stages'
//! time (from the first start to the last finish) they spent without a micro-batch. The
//! model's figures for the session's target: each stage's kernels at the cost model's
//! latency, the step `(m + p - 1) × slowest stage`, and the bubble `(p - 1) / (m + p - 1)` of
//! balanced stages.

use crate::dist::mesh_arg;
use crate::kernel::{Compiled, KernelObj};
use crate::session::Session;
use crate::tensor::sharded::*;
use crate::tensor::*;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Instant;
use tessera_lang::diag::{Code, Diagnostic};
use tessera_lang::eval::args::given as arg;
use tessera_lang::eval::{AttrResult, CallArgs, HostObject, HostResult, Interp, Value};
use tessera_runtime::mesh::Mesh;
use tessera_runtime::{self as rtm, Tensor};

/// `1f1b` or `gpipe`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum PipeSchedule {
    OneFOneB,
    GPipe,
}

impl PipeSchedule {
    fn name(self) -> &'static str {
        match self {
            PipeSchedule::OneFOneB => "1f1b",
            PipeSchedule::GPipe => "gpipe",
        }
    }
}

/// What the last call measured.
#[derive(Clone, Debug, Default)]
pub struct PipeStats {
    /// Per stage: busy time per micro-batch (µs).
    pub busy_us: Vec<Vec<f64>>,
    /// From the first stage's start to the last stage's finish (µs).
    pub step_us: f64,
    /// Measured bubble fraction.
    pub bubble: f64,
    /// The most micro-batches between stage 0's start and the last stage's finish at once.
    pub in_flight: usize,
    /// The model's time of each stage per micro-batch (µs), for the session's target.
    pub model_stage_us: Vec<f64>,
}

/// `dist.pipeline(...)`: a callable.
pub struct PipelineObj {
    /// The stages as kernels (functions wrapped).
    stages: Vec<Value>,
    names: Vec<String>,
    mesh: Arc<Mesh>,
    axis: usize,
    microbatches: usize,
    schedule: PipeSchedule,
    session: Rc<Session>,
    last: RefCell<Option<PipeStats>>,
}

/// The bubble of `p` balanced stages over `m` micro-batches: `(p - 1) / (m + p - 1)`.
pub fn formula_bubble(p: usize, m: usize) -> f64 {
    (p as f64 - 1.0) / (m as f64 + p as f64 - 1.0)
}

/// The native function `dist.pipeline` of a session (its signature is in
/// [`crate::dist::FUNCTIONS`] with the `dist` module's others).
pub fn function(session: Rc<Session>) -> Value {
    let sig = crate::dist::FUNCTIONS
        .iter()
        .find(|(n, _)| *n == "pipeline")
        .map_or("pipeline", |(_, s)| s);
    Value::native("pipeline", sig, move |_, args| {
        make_pipeline(&session, &args)
    })
}

/// `dist.pipeline(stages, mesh=None, mesh_axis="pp", microbatches=8, schedule="1f1b")`.
pub fn make_pipeline(session: &Rc<Session>, args: &CallArgs) -> R {
    let a = args.bind(
        "pipeline",
        &["stages"],
        &["mesh", "mesh_axis", "microbatches", "schedule"],
    )?;
    let st = need(&a, 0, args.span)?;
    let items = st.value.items().ok_or_else(|| {
        Diagnostic::new(
            Code::E0101,
            format!(
                "stages must be a list of functions, not {}",
                st.value.type_name()
            ),
        )
        .at(st.span)
    })?;
    if items.is_empty() {
        return Err(
            Diagnostic::new(Code::E0101, "a pipeline needs at least one stage").at(st.span),
        );
    }
    let mut stages = Vec::new();
    let mut names = Vec::new();
    for v in items {
        if let Some(k) = v.downcast::<KernelObj>() {
            if k.grad.is_some() {
                return Err(Diagnostic::new(
                    Code::E0101,
                    "a pipeline stage is a forward function, not a gradient",
                )
                .at(st.span));
            }
            names.push(k.name.clone());
            stages.push(v.clone());
        } else if matches!(v, Value::Function(_)) {
            let k = KernelObj::new(v.clone(), session.clone());
            names.push(k.name.clone());
            stages.push(Value::host(k));
        } else {
            return Err(Diagnostic::new(
                Code::E0101,
                format!("a pipeline stage must be a function, not {}", v.type_name()),
            )
            .at(st.span));
        }
    }
    let axis_name = match arg(&a, 2) {
        Some(x) => match &x.value {
            Value::Str(s) => s.to_string(),
            other => {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!("mesh_axis must be a str, not {}", other.type_name()),
                )
                .at(x.span))
            }
        },
        None => "pp".to_string(),
    };
    let mesh = match arg(&a, 1) {
        Some(m) if !matches!(m.value, Value::None) => mesh_arg(&m.value, m.span)?,
        _ => Arc::new(
            Mesh::new(vec![axis_name.clone()], vec![stages.len()], None)
                .map_err(|e| rt_at(e, args.span))?,
        ),
    };
    let axis = mesh.axis(&axis_name).map_err(|e| rt_at(e, args.span))?;
    let size = mesh.shape.shape[axis];
    if size != stages.len() {
        return Err(e400(format!(
            "a pipeline of {} stage(s) on mesh axis '{axis_name}' of size {size}: one stage per index of the axis",
            stages.len()
        ))
        .at(args.span));
    }
    let microbatches = match int_arg(&a, 3, "microbatches")? {
        None => 8,
        Some(m) if m >= 1 => m as usize,
        Some(m) => {
            return Err(Diagnostic::new(
                Code::E0101,
                format!("microbatches must be at least 1, not {m}"),
            )
            .at(arg(&a, 3).map_or(args.span, |x| x.span)))
        }
    };
    let schedule = match arg(&a, 4) {
        None => PipeSchedule::OneFOneB,
        Some(x) => match &x.value {
            Value::Str(s) if &**s == "1f1b" => PipeSchedule::OneFOneB,
            Value::Str(s) if &**s == "gpipe" => PipeSchedule::GPipe,
            other => {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!("unknown pipeline schedule {}", other.repr()),
                )
                .at(x.span)
                .with_help("schedule is '1f1b' or 'gpipe'"))
            }
        },
    };
    Ok(Value::host(PipelineObj {
        stages,
        names,
        mesh,
        axis,
        microbatches,
        schedule,
        session: session.clone(),
        last: RefCell::new(None),
    }))
}

type R = Result<Value, Diagnostic>;

/// A stage's compiled kernel for one micro-batch shape: its graph and captures.
struct StageRun<'a> {
    graph: &'a tessera_compiler::graph::Graph,
    captures: &'a [Tensor],
}

impl PipelineObj {
    fn invoke(&self, it: &mut Interp, args: CallArgs) -> R {
        let span = args.span;
        if args.positional.len() != 1 || !args.keywords.is_empty() {
            return Err(Diagnostic::new(
                Code::E0101,
                format!(
                    "a pipeline takes one tensor (its micro-batches are cut from the first dimension), got {} argument(s)",
                    args.positional.len() + args.keywords.len()
                ),
            )
            .at(span));
        }
        let (xv, xs) = &args.positional[0];
        if crate::tensor::trace::as_sym(xv).is_some() {
            return Err(Diagnostic::new(
                Code::E0201,
                "a pipeline cannot be called inside a kernel or a pipeline stage",
            )
            .at(span)
            .with_label("called on a traced tensor")
            .with_help("a pipeline runs its stages itself: list the inner pipeline's stages among the outer one's instead of calling it from a stage"));
        }
        let x = match as_sharded(xv) {
            Some(o) => gather_full(o, *xs)?,
            None => tensor_arg(xv, *xs)?,
        };
        let (p, m) = (self.stages.len(), self.microbatches);
        let rows = x.shape().first().copied().unwrap_or(0);
        if x.ndim() == 0 {
            return Err(e400(format!(
                "cannot cut {m} micro-batches from a 0-d tensor: a pipeline's input needs a first (batch) dimension"
            ))
            .at(*xs)
            .with_label("a 0-d tensor")
            .with_help("pass a tensor of at least one dimension, its micro-batches cut from the first"));
        }
        if rows < m {
            return Err(e400(format!(
                "cannot cut {m} micro-batches from a first dimension of {rows}"
            ))
            .at(*xs)
            .with_help("pass fewer microbatches= or a larger batch"));
        }
        let mbs: Vec<Tensor> = (0..m)
            .map(|j| {
                let (start, len) = rtm::mesh::shard_range(rows, m, j);
                rtm::mesh::narrow(&x, 0, start, len)
            })
            .collect::<rtm::Result<_>>()
            .map_err(|e| rt_at(e, *xs))?;
        // Compile every stage for every distinct micro-batch shape (the last micro-batches
        // may be smaller), following the shapes from stage to stage.
        let mut shapes: Vec<Vec<usize>> = Vec::new();
        let shape_of: Vec<usize> = mbs
            .iter()
            .map(|t| match shapes.iter().position(|s| s == t.shape()) {
                Some(i) => i,
                None => {
                    shapes.push(t.shape().to_vec());
                    shapes.len() - 1
                }
            })
            .collect();
        let mut compiled: Vec<Vec<Rc<Compiled>>> = vec![Vec::new(); p];
        for s in &shapes {
            let mut ins = vec![Tensor::abstract_tensor(s, x.dtype()).map_err(rt)?];
            for (i, st) in self.stages.iter().enumerate() {
                let k = st
                    .downcast::<KernelObj>()
                    .ok_or_else(|| e400("a pipeline stage is not a kernel"))?;
                let mut ca = CallArgs::new(span);
                for t in &ins {
                    ca.positional.push((tensor_value(t.clone()), span));
                }
                let c = k.compiled(it, &ca).map_err(|d| {
                    d.or_at(span)
                        .with_note(format!("in pipeline stage {i} ({})", self.names[i]))
                })?;
                ins = c
                    .graph
                    .outputs
                    .iter()
                    .map(|o| {
                        let ty = c.graph.ty(*o).cloned().unwrap_or_else(|| {
                            tessera_compiler::graph::TensorType::new(vec![], x.dtype())
                        });
                        Tensor::abstract_tensor(&ty.shape, ty.dtype)
                    })
                    .collect::<rtm::Result<_>>()
                    .map_err(rt)?;
                compiled[i].push(c);
            }
        }
        let runs: Vec<Vec<StageRun>> = compiled
            .iter()
            .map(|cs| {
                cs.iter()
                    .map(|c| StageRun {
                        graph: &c.graph,
                        captures: &c.captures,
                    })
                    .collect()
            })
            .collect();
        let window = match self.schedule {
            PipeSchedule::OneFOneB => p,
            PipeSchedule::GPipe => m,
        };
        let (outs, stats) =
            run_stages(&runs, &shape_of, mbs, window).map_err(|e| rt_at(e, span))?;
        let target = self.session.target.get();
        let model_stage_us: Vec<f64> = compiled
            .iter()
            .map(|cs| tessera_compiler::cost::total_latency_us(&cs[0].lowered, target))
            .collect();
        let stats = PipeStats {
            model_stage_us,
            ..stats
        };
        if self.session.profile.borrow().active {
            self.record(&stats, &shapes);
        }
        *self.last.borrow_mut() = Some(stats);
        // the outputs of each position, concatenated over the micro-batches
        let n_out = outs.first().map_or(0, Vec::len);
        let mut vals = Vec::with_capacity(n_out);
        for o in 0..n_out {
            let parts: Vec<Tensor> = outs.iter().map(|v| v[o].clone()).collect();
            if parts[0].ndim() == 0 {
                return Err(e400(
                    "the last stage returns a 0-d tensor: its micro-batches cannot be joined along the first dimension",
                )
                .at(span));
            }
            let t = rtm::concat(&parts, 0).map_err(|e| rt_at(e, span))?;
            vals.push(tensor_value(t));
        }
        Ok(match vals.len() {
            1 => vals.pop().unwrap_or(Value::None),
            _ => Value::tuple(vals),
        })
    }

    /// The profile's rows (one per stage) and its note.
    fn record(&self, s: &PipeStats, shapes: &[Vec<usize>]) {
        let (p, m) = (self.stages.len(), self.microbatches);
        let target = self.session.target.get();
        let ax = &self.mesh.shape.axes[self.axis];
        for (i, busy) in s.busy_us.iter().enumerate() {
            crate::profile::record_pipeline_stage(
                &self.session.profile_sink(),
                &format!("stage {i} {} [{ax}={i}]", self.names[i]),
                &format!("{m} micro-batches of {:?}", shapes[0]),
                busy,
                s.model_stage_us[i],
            );
        }
        let slowest = s.model_stage_us.iter().cloned().fold(0.0, f64::max);
        let model_step = (m + p - 1) as f64 * slowest;
        let model_busy: f64 = s.model_stage_us.iter().map(|u| u * m as f64).sum();
        let model_bubble = if model_step > 0.0 {
            1.0 - model_busy / (p as f64 * model_step)
        } else {
            formula_bubble(p, m)
        };
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let share = if cores < p {
            format!(" (the {p} stage threads shared {cores} cores)")
        } else {
            String::new()
        };
        self.session.profile.borrow_mut().notes.push(format!(
            "pipeline: {p} stages × {m} micro-batches ({}) on mesh axis '{ax}': step {} measured, bubble {:.1}% measured (the stages' idle share){share}, {:.1}% by (p-1)/(m+p-1); at most {} micro-batch(es) in flight; model for {}: step {}, bubble {:.1}%",
            self.schedule.name(),
            crate::profile::fmt_time(s.step_us).trim(),
            100.0 * s.bubble,
            100.0 * formula_bubble(p, m),
            s.in_flight,
            target.name(),
            crate::profile::fmt_time(model_step).trim(),
            100.0 * model_bubble,
        ));
    }
}

type Outs = Vec<Vec<Tensor>>;

/// Runs the stages on their own threads over the micro-batches; stage 0 starts micro-batch
/// `j` only when the last stage has finished `j - window`. Returns each micro-batch's
/// outputs and the measured figures.
fn run_stages(
    runs: &[Vec<StageRun>],
    shape_of: &[usize],
    mbs: Vec<Tensor>,
    window: usize,
) -> rtm::Result<(Outs, PipeStats)> {
    let p = runs.len();
    let m = mbs.len();
    let t0 = Instant::now();
    let since = |t: Instant| t.duration_since(t0).as_secs_f64() * 1e6;
    // channel i carries stage i's results to stage i + 1; the last one to the caller
    let mut txs = Vec::new();
    let mut rxs = Vec::new();
    for _ in 0..=p {
        let (tx, rx) = mpsc::channel::<(usize, Vec<Tensor>)>();
        txs.push(Some(tx));
        rxs.push(Some(rx));
    }
    let (credit_tx, credit_rx) = mpsc::channel::<()>();
    for _ in 0..window.min(m) {
        let _ = credit_tx.send(());
    }
    let mut credit_rx = Some(credit_rx);
    let mut credit_tx = Some(credit_tx);
    let feed = txs[0].take();
    let results = std::thread::scope(|sc| {
        let mut handles = Vec::new();
        for (i, stage) in runs.iter().enumerate() {
            let rx = rxs[i].take();
            let tx = txs[i + 1].take();
            let credits = if i == 0 { credit_rx.take() } else { None };
            let give_back = if i + 1 == p { credit_tx.take() } else { None };
            let h = std::thread::Builder::new()
                .name(format!("tessera-stage-{i}"))
                .spawn_scoped(sc, move || -> rtm::Result<Vec<(f64, f64)>> {
                    let (rx, tx) = match (rx, tx) {
                        (Some(r), Some(t)) => (r, t),
                        _ => return Err(rtm::RuntimeError::runtime("pipeline channels")),
                    };
                    let mut times = Vec::with_capacity(m);
                    while let Ok((j, ins)) = rx.recv() {
                        if let Some(c) = &credits {
                            if c.recv().is_err() {
                                break;
                            }
                        }
                        let a = Instant::now();
                        let s = &stage[shape_of[j]];
                        let out = tessera_runtime::interp::run(s.graph, &ins, s.captures)?;
                        let b = Instant::now();
                        times.push((since(a), since(b)));
                        if let Some(g) = &give_back {
                            let _ = g.send(());
                        }
                        if tx.send((j, out)).is_err() {
                            break;
                        }
                    }
                    Ok(times)
                })
                .map_err(|e| {
                    rtm::RuntimeError::runtime(format!("cannot start a stage thread: {e}"))
                });
            handles.push(h);
        }
        if let Some(f) = &feed {
            for (j, t) in mbs.into_iter().enumerate() {
                let _ = f.send((j, vec![t]));
            }
        }
        drop(feed);
        let mut outs: Vec<Option<Vec<Tensor>>> = vec![None; m];
        if let Some(rx) = rxs[p].take() {
            while let Ok((j, o)) = rx.recv() {
                outs[j] = Some(o);
            }
        }
        let times: Vec<rtm::Result<Vec<(f64, f64)>>> = handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h
                    .join()
                    .unwrap_or_else(|_| Err(rtm::RuntimeError::runtime("a stage thread failed"))),
                Err(e) => Err(e),
            })
            .collect();
        (outs, times)
    });
    let (outs, times) = results;
    let times = times.into_iter().collect::<rtm::Result<Vec<_>>>()?;
    let outs = outs
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| {
            rtm::RuntimeError::runtime("a micro-batch did not come out of the pipeline")
        })?;
    let first = times
        .iter()
        .flatten()
        .map(|t| t.0)
        .fold(f64::INFINITY, f64::min);
    let last = times.iter().flatten().map(|t| t.1).fold(0.0, f64::max);
    let step = (last - first).max(1e-3);
    let busy: f64 = times.iter().flatten().map(|t| t.1 - t.0).sum();
    // micro-batches in flight: started on stage 0, not finished on the last stage
    let mut in_flight = 0;
    if let (Some(s0), Some(sl)) = (times.first(), times.last()) {
        for (j, st) in s0.iter().enumerate() {
            let n = (0..=j)
                .filter(|&k| sl.get(k).is_some_and(|e| e.1 > st.0))
                .count();
            in_flight = in_flight.max(n);
        }
    }
    Ok((
        outs,
        PipeStats {
            busy_us: times
                .iter()
                .map(|ts| ts.iter().map(|t| t.1 - t.0).collect())
                .collect(),
            step_us: step,
            bubble: (1.0 - busy / (p as f64 * step)).max(0.0),
            in_flight,
            model_stage_us: Vec::new(),
        },
    ))
}

impl HostObject for PipelineObj {
    fn type_name(&self) -> &'static str {
        "pipeline"
    }
    fn repr(&self) -> String {
        format!(
            "pipeline({} stages [{}] on mesh axis '{}', microbatches={}, schedule='{}')",
            self.stages.len(),
            self.names.join(", "),
            self.mesh.shape.axes[self.axis],
            self.microbatches,
            self.schedule.name()
        )
    }
    fn call(&self, _this: &Value, it: &mut Interp, args: CallArgs) -> HostResult {
        Some(self.invoke(it, args))
    }
    fn get_attr(&self, _: &Value, name: &str, _: &mut Interp) -> AttrResult {
        let last = self.last.borrow();
        let p = self.stages.len();
        Ok(Some(match name {
            "stages" => Value::Int(p as i64),
            "microbatches" => Value::Int(self.microbatches as i64),
            "schedule" => Value::str(self.schedule.name()),
            "mesh" => Value::host(MeshObj(self.mesh.clone())),
            "model_bubble" => Value::Float(formula_bubble(p, self.microbatches)),
            "bubble" | "stage_times" | "step_time" | "in_flight" => {
                let Some(s) = last.as_ref() else {
                    return Ok(Some(Value::None));
                };
                match name {
                    "bubble" => Value::Float(s.bubble),
                    "step_time" => Value::Float(s.step_us * 1e-6),
                    "in_flight" => Value::Int(s.in_flight as i64),
                    _ => Value::list(
                        s.busy_us
                            .iter()
                            .map(|b| Value::Float(b.iter().sum::<f64>() * 1e-6))
                            .collect(),
                    ),
                }
            }
            _ => return Ok(None),
        }))
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec![
            "stages",
            "microbatches",
            "schedule",
            "mesh",
            "bubble",
            "model_bubble",
            "stage_times",
            "step_time",
            "in_flight",
        ]
    }
}
