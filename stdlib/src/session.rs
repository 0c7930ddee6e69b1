//! The session a script's kernels share: its target and device (typed), the open GPU, the
//! dump and PTX options, the compile-cache counters, the profiler and the autotuner.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use tessera_compiler::backend::ptx::Target;
use tessera_lang::diag::{Code, Diagnostic};

pub use tessera_runtime::device::DeviceKind;

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
    /// `target.set_device(...)` / `--device`.
    pub device: Cell<DeviceKind>,
    /// The GPU when one was opened (`cuda`, or `auto` with a usable GPU).
    pub cuda: crate::cuda::Slot,
    /// `cuda` was asked for by name: a failed launch is an error, not a cpu fallback.
    pub cuda_explicit: Cell<bool>,
    /// The sources the autotuner's GPU timer prints PTX with (set before each tuning).
    pub cuda_sources: Rc<RefCell<tessera_lang::SourceMap>>,
    /// `--emit-ptx DIR`.
    pub emit_ptx: Option<std::path::PathBuf>,
    /// `--emit-spirv DIR`.
    pub emit_spirv: RefCell<Option<std::path::PathBuf>>,
    /// The Vulkan device, once opened (`vulkan`).
    pub vulkan: RefCell<Option<tessera_runtime::vulkan::Device>>,
    /// Kernels already reported as falling back to the CPU.
    pub(crate) warned: RefCell<std::collections::HashSet<String>>,
    pub hits: Cell<u64>,
    pub misses: Cell<u64>,
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
    /// A session with a device; `cuda` without a usable GPU falls back to the cpu here (see
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
                DeviceKind::Cpu,
                None,
                emit_ptx,
            ),
        }
    }
    /// A session on `device` (`auto` when `None`): `auto` opens the GPU when there is a usable
    /// one, else runs on the cpu; `cuda` without a usable GPU is E0800 with the reason. With no
    /// `target`, the GPU's own target is used (else [`DEFAULT_TARGET`]); an unknown target or
    /// device is E0101.
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
        let crosscheck_vulkan =
            crate::crosscheck::mode()? == Some(crate::crosscheck::Checked::Vulkan);
        let mut vulkan = None;
        if device.as_deref() == Some("vulkan") || crosscheck_vulkan {
            let how = if crosscheck_vulkan {
                "TESSERA_CROSSCHECK=vulkan"
            } else {
                "--device vulkan"
            };
            match crate::vulkan::open() {
                Ok(d) => vulkan = Some(d),
                Err(why) => return Err(crate::vulkan::unavailable(how, &why)),
            }
            if let Some(t) = target.filter(|t| !t.is_spirv()) {
                return Err(Diagnostic::new(
                    Code::E0101,
                    format!("{how} runs SPIR-V kernels, but the target is {t}"),
                )
                .with_help("leave out --target, or use --target spirv"));
            }
        }
        let (kind, gpu, explicit) = match device.as_deref() {
            Some("vulkan") => (DeviceKind::Vulkan, None, true),
            Some("emu") => (DeviceKind::Emu, None, false),
            Some("cpu") => (DeviceKind::Cpu, None, false),
            Some("cuda") => match crate::cuda::open() {
                Ok(d) => (DeviceKind::Cuda, Some(d), true),
                Err(why) => return Err(crate::cuda::unavailable("--device cuda", &why)),
            },
            None | Some("auto") => match crate::cuda::open() {
                Ok(d) => (DeviceKind::Cuda, Some(d), false),
                Err(_) => (DeviceKind::Cpu, None, false),
            },
            Some(other) => {
                return Err(
                    Diagnostic::new(Code::E0101, format!("unknown device '{other}'"))
                        .with_help("devices are auto, cpu, emu, cuda, vulkan"),
                )
            }
        };
        if kind == DeviceKind::Cuda && explicit && target.is_some_and(|t| t.is_spirv()) {
            return Err(Diagnostic::new(
                Code::E0101,
                "--device cuda runs PTX kernels, but the target is spirv",
            )
            .with_help("use --device vulkan for SPIR-V, or leave out --target"));
        }
        let target = if vulkan.is_some() {
            Some(Target::Spirv)
        } else {
            target
        };
        let gpu_target = gpu
            .as_ref()
            .and_then(|d| Target::parse(d.info().target_name()));
        let target = target.or(gpu_target).unwrap_or(DEFAULT_TARGET);
        let s = Session::build(dump, target, kind, gpu, emit_ptx);
        *s.vulkan.borrow_mut() = vulkan;
        s.cuda_explicit.set(explicit);
        s.install_timer();
        Ok(s)
    }
    fn build(
        dump: Vec<String>,
        target: Target,
        device: DeviceKind,
        gpu: Option<tessera_runtime::cuda::Device>,
        emit_ptx: Option<std::path::PathBuf>,
    ) -> Rc<Session> {
        Rc::new(Session {
            dump,
            target: Cell::new(target),
            device: Cell::new(device),
            cuda: Rc::new(RefCell::new(gpu)),
            cuda_explicit: Cell::new(false),
            cuda_sources: Rc::new(RefCell::new(tessera_lang::SourceMap::default())),
            emit_ptx,
            emit_spirv: RefCell::new(None),
            vulkan: RefCell::new(None),
            warned: RefCell::new(std::collections::HashSet::new()),
            hits: Cell::new(0),
            misses: Cell::new(0),
            profile: RefCell::new(crate::profile::Recorder::default()),
            tune: Rc::new(RefCell::new(crate::autotune::State::default())),
            on_mesh: Cell::new(0),
            mesh_logs: RefCell::new(Vec::new()),
            next_sharded: Cell::new(0),
            system: Cell::new(None),
        })
    }
    /// The autotuner measures on the GPU while the session runs on `cuda`.
    fn install_timer(&self) {
        let on_gpu = self.device.get() == DeviceKind::Cuda && self.cuda.borrow().is_some();
        self.tune.borrow_mut().timer = on_gpu.then(|| {
            Rc::new(crate::cuda::CudaTimer {
                slot: self.cuda.clone(),
                sources: self.cuda_sources.clone(),
            }) as Rc<dyn crate::device::DeviceTimer>
        });
    }
    /// Switches the device (`target.set_device`, `:device`; `None` is `auto`): `cuda` opens
    /// the GPU if it is not open yet (the reason when it cannot); `auto` is `cuda` when that
    /// works, else `cpu`.
    pub fn set_device(&self, want: Option<DeviceKind>) -> Result<(), Diagnostic> {
        if want == Some(DeviceKind::Vulkan) {
            if self.vulkan.borrow().is_none() {
                let d = crate::vulkan::open().map_err(|why| {
                    crate::vulkan::unavailable("target.set_device(\"vulkan\")", &why)
                })?;
                *self.vulkan.borrow_mut() = Some(d);
            }
            // the vulkan device runs SPIR-V: kernels compile for the spirv target from now on
            self.target.set(Target::Spirv);
            self.device.set(DeviceKind::Vulkan);
            self.cuda_explicit.set(false);
            self.install_timer();
            return Ok(());
        }
        let explicit = want == Some(DeviceKind::Cuda);
        if matches!(want, None | Some(DeviceKind::Cuda)) && self.cuda.borrow().is_none() {
            match crate::cuda::open() {
                Ok(d) => *self.cuda.borrow_mut() = Some(d),
                Err(why) if explicit => {
                    return Err(crate::cuda::unavailable(
                        "target.set_device(\"cuda\")",
                        &why,
                    ))
                }
                Err(_) => {}
            }
        }
        let dev = match want {
            Some(d) => d,
            None if self.cuda.borrow().is_some() => DeviceKind::Cuda,
            None => DeviceKind::Cpu,
        };
        self.device.set(dev);
        self.cuda_explicit.set(explicit);
        self.install_timer();
        Ok(())
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
