//! The autotuner (SPEC §6): `@op.autotune`, `schedule.search_space`, `schedule.autotune` and
//! the `autotune` module.
//!
//! The first call of an autotuned kernel for a signature looks its key up (op, shapes, dtypes,
//! arch, compiler version, source hash) in the cache file `$TESSERA_CACHE_DIR/NAME.json` (NAME
//! from `@op.autotune(cache=NAME)`, default `autotune`). On a hit the cached config is applied:
//! no candidate is ranked or measured. On a miss the candidates of the search space (the
//! body's `schedule.search_space`, else a default one per kernel kind) are lowered, pruned by
//! the target's limits and ranked by the cost model; with a [`DeviceTimer`] (a GPU) the best
//! `max_trials` are measured and the fastest kept (`source: measured`), else the model's best
//! is kept (`source: model`) and re-tuned by measurement the first time a GPU of that arch is
//! there. The result is merged into the cache file (see `tessera_compiler::tune::cache`).
//!
//! `TESSERA_AUTOTUNE=off` skips all of it: the model's pick is used, nothing is read from or
//! written to the cache, nothing is measured. `autotune.enable(False)` turns tuning off for
//! the session (kernels keep their body's schedule).

mod module;

pub use module::{module, report};

use crate::device::DeviceTimer;

use std::cell::RefCell;
use std::collections::HashSet;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};
use tessera_compiler::backend::ptx::Target;
use tessera_compiler::graph::Graph;
use tessera_compiler::pipeline::{lower, Lowered};
use tessera_compiler::schedule::Directives;
use tessera_compiler::tune::cache::{self, CacheError, Entry, Key};
use tessera_compiler::tune::{self, Config, Space};
use tessera_lang::diag::{Code, Diagnostic};

use tessera_lang::Span;

/// How a kernel got its config this session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Searched now.
    Tuned,
    /// Taken from the cache.
    Cache,
    /// `TESSERA_AUTOTUNE=off`: the model's pick, no cache.
    Off,
    /// The config of a tuned entry of nearby shapes (these, as the report prints them).
    Interpolated(String),
}

/// One kernel signature's tuning in this session.
#[derive(Clone, Debug)]
pub struct Event {
    pub entry: Entry,
    pub origin: Origin,
    /// Candidates ranked by the model now (0 from the cache).
    pub ranked: u32,
    pub pruned: u32,
    /// Candidates measured now.
    pub trials: u32,
    pub elapsed: Duration,
}

/// A candidate measured on the device: its config, the model's and the measured time (µs).
#[derive(Clone, Debug)]
pub struct Measured {
    pub op: String,
    pub config: Config,
    pub predicted_us: f64,
    pub measured_us: f64,
}

/// A candidate the tuner ranked this session: the model's time and, when a GPU timed it,
/// the measured time (µs). `rank` is 1 for the model's best; `chosen` marks the config kept.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub op: String,
    pub shapes: String,
    pub config: Config,
    pub rank: u32,
    pub predicted_us: f64,
    pub measured_us: Option<f64>,
    pub chosen: bool,
}

/// The session's autotuner.
pub struct State {
    pub enabled: bool,
    /// A shape near a tuned one reuses its config (`autotune.enable(True, interpolate=False)`
    /// turns it off).
    pub interpolate: bool,
    /// Entries known this session (loaded from cache files, tuned, `load_cache`).
    pub entries: Vec<Entry>,
    loaded: HashSet<PathBuf>,
    /// Cache files that are corrupt (warned once, never written).
    unusable: HashSet<PathBuf>,
    pub events: Vec<Event>,
    pub measured: Vec<Measured>,
    /// Every candidate ranked this session, in order (`autotune.candidates()`).
    pub candidates: Vec<Candidate>,
    /// Times candidates on a GPU; `None` without one.
    pub timer: Option<Rc<dyn DeviceTimer>>,
}

impl Default for State {
    fn default() -> State {
        State {
            enabled: true,
            interpolate: true,
            entries: Vec::new(),
            loaded: HashSet::new(),
            unusable: HashSet::new(),
            events: Vec::new(),
            measured: Vec::new(),
            candidates: Vec::new(),
            timer: None,
        }
    }
}

thread_local! {
    /// Warnings raised where no interpreter is at hand, until [`flush_warnings`] writes them.
    static WARNINGS: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Queues a warning; [`flush_warnings`] writes it to the session's stderr (so the REPL and
/// Jupyter show it too, not only `tessera run`).
fn warn(msg: &str) {
    WARNINGS.with(|w| w.borrow_mut().push(format!("warning: {msg}\n")));
}

/// Writes the queued warnings through the interpreter's error output.
pub fn flush_warnings(it: &mut tessera_lang::eval::Interp) {
    for w in WARNINGS.with(|w| std::mem::take(&mut *w.borrow_mut())) {
        it.write_err(&w);
    }
}

/// Whether `TESSERA_AUTOTUNE` turns tuning off.
pub fn env_off() -> bool {
    std::env::var("TESSERA_AUTOTUNE")
        .map(|v| {
            matches!(
                v.to_ascii_lowercase().as_str(),
                "off" | "0" | "false" | "no"
            )
        })
        .unwrap_or(false)
}

impl State {
    fn upsert(&mut self, e: Entry) {
        match self.entries.iter_mut().find(|x| x.key == e.key) {
            Some(x) => *x = e,
            None => self.entries.push(e),
        }
    }

    /// Reads `path` into the session once; a corrupt file is a warning.
    fn ensure_loaded(&mut self, path: &Path) {
        if !self.loaded.insert(path.to_path_buf()) {
            return;
        }
        match cache::load(path) {
            Ok(es) => {
                for e in es {
                    if !self.entries.iter().any(|x| x.key == e.key) {
                        self.entries.push(e);
                    }
                }
            }
            Err(e) => {
                self.unusable.insert(path.to_path_buf());
                warn(&format!(
                    "autotune cache {}: {e}; it is ignored and left as it is",
                    path.display()
                ));
            }
        }
    }

    /// Merges `e` into the file at `path` (not when the file is unusable).
    fn persist(&mut self, path: &Path, e: &Entry) {
        if self.unusable.contains(path) {
            return;
        }
        if let Err(err) = cache::save_merged(path, std::slice::from_ref(e)) {
            if matches!(err, CacheError::Corrupt(_)) {
                self.unusable.insert(path.to_path_buf());
                warn(&format!(
                    "autotune cache {}: {err}; it is ignored and left as it is",
                    path.display()
                ));
            } else {
                warn(&format!(
                    "autotune cache {}: {err}; the result is kept for this session only",
                    path.display()
                ));
            }
        }
    }
}

/// The cache file of a cache name (`NAME.json` in the cache directory).
pub fn cache_path(name: Option<&str>) -> PathBuf {
    cache::cache_dir().join(format!("{}.json", name.unwrap_or("autotune")))
}

/// Whether a cache name is a plain file name (letters, digits, `_ - .`, not starting with `.`).
pub fn valid_cache_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// A kernel's code as the tuner reads it: its graph, its traced directives and its lowering.
pub struct Tunable<'a> {
    pub graph: &'a Graph,
    pub directives: &'a Directives,
    pub lowered: &'a Lowered,
}

/// The search space of a kernel: its `schedule.search_space`, else the default one.
fn space_of(c: &Tunable, target: Target) -> Space {
    match &c.directives.search_space {
        Some(s) => s.clone(),
        None => {
            let kinds: Vec<_> = c.lowered.program.kernels.iter().map(|k| k.kind).collect();
            tune::default_space(c.graph, target, &kinds)
        }
    }
}

/// What identifies a tuned kernel signature.
pub struct Sig {
    pub op: String,
    pub shapes: Vec<Vec<usize>>,
    pub dtypes: Vec<String>,
    pub source: String,
}

/// Tunes `c` for `target` (see the module docs): the chosen config's lowering, to replace
/// `c`'s (`None`: tuning is off, `c` keeps its lowering). `state` is the session's autotuner.
pub fn tune(
    state: &RefCell<State>,
    target: Target,
    sig: Sig,
    cache_name: Option<&str>,
    base: &Directives,
    c: Tunable,
    span: Span,
) -> Result<Option<Lowered>, Diagnostic> {
    if !state.borrow().enabled {
        return Ok(None);
    }
    let started = Instant::now();
    let key = Key {
        op: sig.op,
        shapes: sig.shapes,
        dtypes: sig.dtypes,
        arch: target.name().to_string(),
        compiler: cache::COMPILER_VERSION.to_string(),
        source: sig.source,
    };
    let off = env_off();
    let path = cache_path(cache_name);
    let timer = state.borrow().timer.clone();
    if !off {
        let mut st = state.borrow_mut();
        st.ensure_loaded(&path);
        let hit = st.entries.iter().find(|e| e.key == key).cloned();
        if let Some(e) = hit {
            let retune = e.source == "model" && timer.is_some();
            if !retune {
                match lower(c.graph, &e.config.apply(base), target) {
                    Ok(l) => {
                        st.events.push(Event {
                            entry: e,
                            origin: Origin::Cache,
                            ranked: 0,
                            pruned: 0,
                            trials: 0,
                            elapsed: started.elapsed(),
                        });
                        return Ok(Some(l));
                    }
                    Err(d) => warn(&format!(
                        "autotune cache {}: the cached config {} of '{}' is invalid ({}); tuning again",
                        path.display(),
                        e.config.describe(),
                        key.op,
                        d.message
                    )),
                }
            }
        }
    }
    if !off && state.borrow().interpolate {
        if let Some(l) = interpolate(state, target, &key, &path, base, &c, started) {
            return Ok(Some(l));
        }
    }
    let opts = c.directives.autotune.clone();
    let max_trials = opts.as_ref().map_or(50, |o| o.max_trials).max(1) as usize;
    let budget = opts
        .as_ref()
        .and_then(|o| o.budget_ms)
        .map(|ms| Duration::from_millis(u64::from(ms)));
    let candidates = space_of(&c, target).candidates();
    let bar = progress(candidates.len() as u64, &key.op);
    let ranking = tune::rank(c.graph, base, target, &candidates, budget, &mut || {
        if let Some(b) = &bar {
            b.inc(1);
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let Some(best) = ranking.ranked.first() else {
        let why = ranking
            .pruned
            .first()
            .map(|(c, m)| format!(": {} — {m}", c.describe()))
            .unwrap_or_default();
        return Err(Diagnostic::new(
            Code::E0300,
            format!(
                "no candidate of the search space of '{}' is valid for {}{why}",
                key.op,
                target.name()
            ),
        )
        .at(span)
        .with_help("widen schedule.search_space, or pick values the target can run"));
    };
    let mut chosen = best.clone();
    let mut chosen_at = 0;
    let mut measured_us = None;
    let mut trials = 0u32;
    let first = {
        let mut st = state.borrow_mut();
        let first = st.candidates.len();
        let shapes = shapes_text(&key);
        for (i, r) in ranking.ranked.iter().enumerate() {
            st.candidates.push(Candidate {
                op: key.op.clone(),
                shapes: shapes.clone(),
                config: r.config.clone(),
                rank: i as u32 + 1,
                predicted_us: r.predicted_us,
                measured_us: None,
                chosen: false,
            });
        }
        first
    };
    if let (false, Some(t)) = (off, &timer) {
        let mut fastest: Option<(f64, usize)> = None;
        for (i, r) in ranking.ranked.iter().take(max_trials).enumerate() {
            if budget.is_some_and(|b| started.elapsed() > b) {
                break;
            }
            let mut total = 0.0;
            let mut ok = true;
            for k in 0..r.lowered.program.kernels.len() {
                match t.time_us(&r.lowered, k) {
                    Ok(us) => total += us,
                    Err(_) => ok = false,
                }
            }
            if !ok {
                continue;
            }
            trials += 1;
            let mut st = state.borrow_mut();
            st.measured.push(Measured {
                op: key.op.clone(),
                config: r.config.clone(),
                predicted_us: r.predicted_us,
                measured_us: total,
            });
            if let Some(c) = st.candidates.get_mut(first + i) {
                c.measured_us = Some(total);
            }
            if fastest.is_none_or(|(f, _)| total < f) {
                fastest = Some((total, i));
            }
        }
        if let Some((us, i)) = fastest {
            if let Some(r) = ranking.ranked.get(i) {
                chosen = r.clone();
                chosen_at = i;
            }
            measured_us = Some(us);
        }
    }
    let entry = Entry {
        key,
        config: chosen.config.clone(),
        predicted_us: chosen.predicted_us,
        measured_us,
        source: if measured_us.is_some() {
            "measured"
        } else {
            "model"
        }
        .to_string(),
        candidates: ranking.ranked.len() as u32,
        trials,
        interpolated_from: None,
    };
    let mut st = state.borrow_mut();
    if let Some(c) = st.candidates.get_mut(first + chosen_at) {
        c.chosen = true;
    }
    if !off {
        st.upsert(entry.clone());
        st.persist(&path, &entry);
    }
    st.events.push(Event {
        entry,
        origin: if off { Origin::Off } else { Origin::Tuned },
        ranked: ranking.ranked.len() as u32,
        pruned: ranking.pruned.len() as u32,
        trials,
        elapsed: started.elapsed(),
    });
    Ok(Some(chosen.lowered))
}

/// A shape near a tuned one (SPEC §6; [`cache::near`]): the config of the nearest searched
/// entry, lowered for these shapes with no search, measured once where a GPU timer exists, and
/// stored marked `interpolated_from`. `None`: no such entry, or its config does not lower here.
fn interpolate(
    state: &RefCell<State>,
    target: Target,
    key: &Key,
    path: &Path,
    base: &Directives,
    c: &Tunable,
    started: Instant,
) -> Option<Lowered> {
    let from = {
        let st = state.borrow();
        st.entries
            .iter()
            .filter(|e| e.interpolated_from.is_none())
            .filter_map(|e| cache::near(key, &e.key).map(|d| (d, e)))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, e)| e.clone())?
    };
    let ranking = tune::rank(
        c.graph,
        base,
        target,
        std::slice::from_ref(&from.config),
        None,
        &mut || {},
    );
    let r = ranking.ranked.into_iter().next()?;
    let timer = state.borrow().timer.clone();
    let measured_us = timer.and_then(|t| {
        (0..r.lowered.program.kernels.len())
            .map(|k| t.time_us(&r.lowered, k).ok())
            .sum::<Option<f64>>()
    });
    let entry = Entry {
        key: key.clone(),
        config: r.config.clone(),
        predicted_us: r.predicted_us,
        measured_us,
        source: if measured_us.is_some() {
            "measured"
        } else {
            "model"
        }
        .to_string(),
        candidates: 0,
        trials: u32::from(measured_us.is_some()),
        interpolated_from: Some(from.key.shapes.clone()),
    };
    let mut st = state.borrow_mut();
    st.upsert(entry.clone());
    st.persist(path, &entry);
    st.events.push(Event {
        entry,
        origin: Origin::Interpolated(shapes_text(&from.key)),
        ranked: 0,
        pruned: 0,
        trials: u32::from(measured_us.is_some()),
        elapsed: started.elapsed(),
    });
    Some(r.lowered)
}

/// A progress bar on stderr when it is a terminal and the search is long enough to watch.
fn progress(n: u64, op: &str) -> Option<indicatif::ProgressBar> {
    if n < 8 || !std::io::stderr().is_terminal() {
        return None;
    }
    let b =
        indicatif::ProgressBar::with_draw_target(Some(n), indicatif::ProgressDrawTarget::stderr());
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("autotune {msg} [{bar:30}] {pos}/{len}")
    {
        b.set_style(style.progress_chars("=> "));
    }
    b.set_message(op.to_string());
    Some(b)
}

fn shapes_text(k: &Key) -> String {
    k.shapes
        .iter()
        .zip(&k.dtypes)
        .map(|(s, d)| {
            let dims: Vec<String> = s.iter().map(|x| x.to_string()).collect();
            format!("{}[{}]", d, dims.join(","))
        })
        .collect::<Vec<_>>()
        .join(" ")
}
