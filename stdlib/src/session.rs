//! The session a script's kernels share: its target, the execution engine (the devices and
//! the current one, [`Engine`]), the dump and PTX options, the profiler and the autotuner.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use tessera_compiler::backend::ptx::Target;
use tessera_lang::diag::{Code, Diagnostic};
use tessera_runtime::device::registry::{Code as DeviceCode, Entry};

/// The devices (the REPL's `:device` completion reads it).
pub use tessera_runtime::device::registry;
pub use tessera_runtime::device::Engine;

/// The target a session starts with when neither `--target` nor an open GPU names one.
pub const DEFAULT_TARGET: Target = Target::Sm90;

/// The target `name`, or E0101 naming the known ones.
pub fn parse_target(name: &str) -> Result<Target, Diagnostic> {
    Target::parse(name).ok_or_else(|| {
        let known: Vec<&str> = Target::ALL.iter().map(|t| t.name()).collect();
        Diagnostic::new(Code::E0101, format!("unknown target '{name}'"))
            .with_help(format!("targets are {}", known.join(", ")))
    })
}

/// Per-session state shared by `op.kernel`, `schedule` and `graph`.
pub struct Session {
    /// `--dump` levels.
    pub dump: Vec<String>,
    /// `target.set(...)` / `--target`.
    pub target: Cell<Target>,
    /// The devices and the one kernels run on (`target.set_device(...)` / `--device`), and
    /// the compile cache's counters.
    pub engine: Rc<Engine>,
    /// The sources the autotuner's device timer prints code with (set before each tuning).
    pub tune_sources: Rc<RefCell<tessera_lang::SourceMap>>,
    /// `--emit-ptx DIR`.
    pub emit_ptx: Option<std::path::PathBuf>,
    /// `--emit-spirv DIR`.
    pub emit_spirv: RefCell<Option<std::path::PathBuf>>,
    /// Kernels already reported as falling back to the CPU.
    pub(crate) warned: RefCell<std::collections::HashSet<String>>,
    /// The profiler (`graph.profile`, `--profile`).
    pub profile: RefCell<crate::profile::Recorder>,
    /// The autotuner (`@op.autotune`, the `autotune` module).
    pub tune: Rc<RefCell<crate::autotune::State>>,
    /// Kernel bodies running on a mesh (sharded arguments), innermost count: their schedule
    /// directives are checked but the body runs op by op.
    pub on_mesh: Cell<u32>,
    /// Open logs of mesh steps (innermost last), made into the mesh Schedule IR of a call.
    pub mesh_logs: RefCell<Vec<tessera_runtime::mesh::Program>>,
    /// The next value number of a sharded tensor (the mesh Schedule IR names values by it).
    pub next_sharded: Cell<usize>,
    /// `target.set_system(...)`: the multi-GPU system the mesh cost model describes (none:
    /// the target's GPUs eight to an NVLink domain).
    pub system: Cell<Option<tessera_compiler::cost::system::System>>,
}

impl Session {
    /// The system the mesh cost model describes.
    pub fn system(&self) -> tessera_compiler::cost::system::System {
        self.profile_sink().system()
    }

    /// Where this session's launches are recorded.
    pub fn profile_sink(&self) -> crate::profile::Sink<'_> {
        crate::profile::Sink {
            rec: &self.profile,
            target: self.target.get(),
            system: self.system.get(),
        }
    }

    pub fn new(dump: Vec<String>, target: Option<Target>) -> Rc<Session> {
        Session::with_device(dump, target, None, None)
    }
    /// A session with a device; a device that cannot be used falls back to the cpu here (see
    /// [`Session::open`] for the checked form).
    pub fn with_device(
        dump: Vec<String>,
        target: Option<Target>,
        device: Option<String>,
        emit_ptx: Option<std::path::PathBuf>,
    ) -> Rc<Session> {
        let names = target.map(|t| t.name().to_string());
        match Session::open(dump.clone(), names, device, emit_ptx.clone()) {
            Ok(s) => s,
            Err(_) => Session::build(
                dump,
                target.unwrap_or(DEFAULT_TARGET),
                Engine::new(),
                emit_ptx,
            ),
        }
    }
    /// A session on `device` (`auto` when `None`): `auto` opens the first device the registry
    /// marks for it (the GPU) when it opens, else runs on the cpu; a device named that cannot
    /// be used is E0800 with the reason. The cross-check's device (`TESSERA_CROSSCHECK`) opens
    /// first. With no `target`, the device's own target is used (else [`DEFAULT_TARGET`]); a
    /// device that runs SPIR-V makes it `spirv`. An unknown target or device is E0101.
    pub fn open(
        dump: Vec<String>,
        target: Option<String>,
        device: Option<String>,
        emit_ptx: Option<std::path::PathBuf>,
    ) -> Result<Rc<Session>, Diagnostic> {
        crate::env::check()?;
        let target = target.as_deref().map(parse_target).transpose()?;
        if let Some(dir) = &emit_ptx {
            writable_dir(dir, "--emit-ptx")?;
        }
        let engine = Engine::new();
        let mut forced = None;
        if let Some(c) = crate::crosscheck::mode()? {
            let how = format!("{}={}", crate::crosscheck::VAR, c.name());
            engine
                .open(c.entry())
                .map_err(|u| u.device.unavailable(&how, &u.why))?;
            forced = code_target(&how, c.entry(), target)?;
        }
        match device.as_deref() {
            None | Some(registry::AUTO) => {
                let _ = engine.select(None);
            }
            Some(name) => {
                let e = registry::find(name).ok_or_else(|| registry::unknown(name))?;
                let how = format!("--device {name}");
                engine
                    .select(Some(e))
                    .map_err(|u| u.device.unavailable(&how, &u.why))?;
                forced = forced.or(code_target(&how, e, target)?);
            }
        }
        let native = engine
            .borrow(engine.current())
            .and_then(|d| d.native_target())
            .and_then(Target::parse);
        let target = forced.or(target).or(native).unwrap_or(DEFAULT_TARGET);
        let s = Session::build(dump, target, engine, emit_ptx);
        s.install_timer();
        Ok(s)
    }
    fn build(
        dump: Vec<String>,
        target: Target,
        engine: Engine,
        emit_ptx: Option<std::path::PathBuf>,
    ) -> Rc<Session> {
        let engine = Rc::new(engine);
        attach(&engine);
        Rc::new(Session {
            dump,
            target: Cell::new(target),
            engine,
            tune_sources: Rc::new(RefCell::new(tessera_lang::SourceMap::default())),
            emit_ptx,
            emit_spirv: RefCell::new(None),
            warned: RefCell::new(std::collections::HashSet::new()),
            profile: RefCell::new(crate::profile::Recorder::default()),
            tune: Rc::new(RefCell::new(crate::autotune::State::default())),
            on_mesh: Cell::new(0),
            mesh_logs: RefCell::new(Vec::new()),
            next_sharded: Cell::new(0),
            system: Cell::new(None),
        })
    }
    /// The device kernels run on now.
    pub fn device(&self) -> &'static Entry {
        self.engine.current()
    }
    /// The autotuner measures on the current device while it is one the registry marks for
    /// tuning ([`Entry::tunes`]).
    pub fn install_timer(&self) {
        let e = self.engine.current();
        let tunes = e.tunes && self.engine.is_open(e);
        self.tune.borrow_mut().timer = tunes.then(|| {
            Rc::new(crate::device::EngineTimer {
                engine: self.engine.clone(),
                sources: self.tune_sources.clone(),
            }) as Rc<dyn crate::device::DeviceTimer>
        });
    }
    /// Switches the device (`target.set_device`, `:device`; `None` is `auto`), opening it if
    /// it is not open yet (E0800 with the reason when it cannot be used; the device stays). A
    /// device that runs SPIR-V makes `spirv` the target.
    pub fn set_device(&self, want: Option<&'static Entry>) -> Result<(), Diagnostic> {
        self.engine.select(want).map_err(|u| {
            let how = format!("target.set_device(\"{}\")", u.device.name);
            u.device.unavailable(&how, &u.why)
        })?;
        if self.engine.current().code == DeviceCode::Spirv {
            self.target.set(Target::Spirv);
        }
        self.install_timer();
        Ok(())
    }
}

/// The target device `e` (asked for by `how`) forces: `spirv` for a device that runs SPIR-V;
/// E0101 when the target asked for is code `e` does not take.
fn code_target(how: &str, e: &Entry, target: Option<Target>) -> Result<Option<Target>, Diagnostic> {
    match e.code {
        DeviceCode::Spirv => match target.filter(|t| !t.is_spirv()) {
            Some(t) => Err(Diagnostic::new(
                Code::E0101,
                format!("{how} runs SPIR-V kernels, but the target is {t}"),
            )
            .with_help("leave out --target, or use --target spirv")),
            None => Ok(Some(Target::Spirv)),
        },
        DeviceCode::Ptx if target.is_some_and(|t| t.is_spirv()) => {
            let spirv = registry::DEVICES
                .iter()
                .find(|d| d.code == DeviceCode::Spirv)
                .map_or("", |d| d.name);
            Err(Diagnostic::new(
                Code::E0101,
                format!("{how} runs PTX kernels, but the target is spirv"),
            )
            .with_help(format!(
                "use --device {spirv} for SPIR-V, or leave out --target"
            )))
        }
        _ => Ok(None),
    }
}

/// Creates `dir` (for `--emit-ptx`, `--emit-spirv`) and checks that a file can be written in it, so that an
/// unwritable folder is reported before anything runs.
pub fn writable_dir(dir: &std::path::Path, flag: &str) -> Result<(), Diagnostic> {
    let fail = |e: std::io::Error| {
        Diagnostic::new(
            Code::E0101,
            format!("{flag} {}: cannot write there: {e}", dir.display()),
        )
    };
    std::fs::create_dir_all(dir).map_err(fail)?;
    let probe = dir.join(format!(".tessera-probe-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(fail)?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

thread_local! {
    /// The engine of the newest session on this thread: its current device is where new
    /// tensors are made (`tensor::place`).
    static ENGINE: RefCell<std::rc::Weak<Engine>> = const { RefCell::new(std::rc::Weak::new()) };
}

/// New tensors on this thread are made on `engine`'s current device (a session opened).
fn attach(engine: &Rc<Engine>) {
    ENGINE.with(|e| *e.borrow_mut() = Rc::downgrade(engine));
}

/// The engine of the newest session on this thread, while it is open.
pub fn thread_engine() -> Option<Rc<Engine>> {
    ENGINE.with(|e| e.borrow().upgrade())
}
