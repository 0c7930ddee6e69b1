//! The CUDA device: runs printed PTX on an NVIDIA GPU through the driver API (cudarc, loaded at
//! run time, so the binary builds and runs on machines without CUDA).
//!
//! # Model
//! - [`Device::open`] loads `libcuda` (`dlopen`; a missing library or symbol is an `Err` with the
//!   reason, never a panic), initialises the driver, retains the device's primary context and
//!   creates one stream. Kernels below `sm_80` are refused (our PTX targets `sm_80` and later).
//! - Modules: the PTX text of a kernel is JIT-compiled by the driver for the GPU present
//!   (`cuModuleLoadDataEx`, the JIT's error log kept for the message) and cached per device by
//!   the text's hash ([`Device::cached_modules`]). A launch that needs more than 48 KiB of dynamic
//!   shared memory raises the function's `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` first.
//! - Buffers are byte vectors, as in the emulator ([`crate::emu`]): a launch uploads every
//!   buffer, runs the kernel with the pointers and the trailing `u32` scalars, waits for it (a
//!   deadline: [`Device::timeout`]) and downloads the buffers named as outputs. Device memory
//!   lives for one launch only: every tensor of a session stays on the host, so a fault loses
//!   nothing but the launch.
//! - Faults: an error that leaves the context unusable (illegal address, trap, misaligned
//!   access, illegal instruction, launch timeout, ...) is [`CudaError::fault`]; the caller then
//!   calls [`Device::rebuild`] (modules dropped, primary context reset, stream recreated).
//! - Timing: [`Device::time`] records CUDA events around each launch (after warm-up launches)
//!   and returns each launch's time.
//!
//! Environment: `TESSERA_CUDA=off` makes the driver count as absent (no GPU is opened: the
//! golden tests run as on a machine without one); `TESSERA_CUDA_TIMEOUT` (seconds, default 60)
//! bounds a launch;
//! `TESSERA_CUDA_POISON=1` fills output buffers with `0xFF` bytes (NaN for floats) before each
//! launch instead of zeros, so an element a kernel never writes shows up in a check.

use cudarc::driver::sys;
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::fmt;
use std::time::{Duration, Instant};

/// Grid, block and dynamic shared memory of one launch.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Dynamic shared memory per block, bytes (0: the kernel's shared memory is static).
    pub dynamic_shared: u32,
}

/// A kernel to run: its entry name, PTX text, and a hash of that text (the module cache key).
#[derive(Clone, Debug)]
pub struct KernelImage<'a> {
    pub name: &'a str,
    pub ptx: &'a str,
    pub hash: u64,
}

/// The buffers a launch writes: its outputs (read back after it) and among them the status
/// word, when the kernel has one (zeroed before the launch, never poisoned).
#[derive(Clone, Copy, Debug)]
pub struct Written<'a> {
    pub outputs: &'a [usize],
    pub status: Option<usize>,
}

/// How often [`Device::time`] launches: `warmup` untimed launches, then `reps` timed ones.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Runs {
    pub warmup: u32,
    pub reps: u32,
}

/// What the driver reported.
#[derive(Clone, Debug, PartialEq)]
pub struct CudaError {
    /// What was being done (`launching kernel 'k'`, `loading the module of 'k'`, ...).
    pub what: String,
    /// The driver's error name (`CUDA_ERROR_ILLEGAL_ADDRESS`) or `timeout`.
    pub name: String,
    /// The driver's description, the JIT log, or the timeout.
    pub detail: String,
    /// The context is unusable: the device must be rebuilt before the next launch.
    pub fault: bool,
}

/// Why a GPU cannot be opened (facts; [`fmt::Display`] words them).
#[derive(Clone, Debug, PartialEq)]
pub enum OpenError {
    /// `TESSERA_CUDA=off`.
    Off,
    /// `libcuda.so` cannot be loaded.
    NoLibrary,
    /// The driver library lacks an entry point this module calls (a driver before CUDA 12).
    MissingSymbol(&'static str),
    /// The driver sees no GPU.
    NoGpu,
    /// `ordinal` is not below the number of GPUs.
    NoSuchDevice { ordinal: usize, count: usize },
    /// A GPU before sm_80.
    TooOld {
        name: String,
        capability: (i32, i32),
    },
    /// A driver call failed.
    Driver(CudaError),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::Off => f.write_str("CUDA is turned off (TESSERA_CUDA=off)"),
            OpenError::NoLibrary => f.write_str(
                "the CUDA driver library (libcuda.so) is not installed or cannot be loaded",
            ),
            OpenError::MissingSymbol(s) => write!(
                f,
                "the CUDA driver library lacks {s}: the driver is too old (CUDA 12 or later is needed)"
            ),
            OpenError::NoGpu => f.write_str("the CUDA driver is installed but sees no GPU"),
            OpenError::NoSuchDevice { ordinal, count } => write!(
                f,
                "there is no CUDA device {ordinal} ({count} device(s) present)"
            ),
            OpenError::TooOld { name, capability } => write!(
                f,
                "{name} has compute capability {}.{}; kernels need sm_80 or later",
                capability.0, capability.1
            ),
            OpenError::Driver(e) => e.fmt(f),
        }
    }
}

impl fmt::Display for CudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.what, self.name)?;
        if !self.detail.is_empty() {
            write!(f, " ({})", self.detail)?;
        }
        Ok(())
    }
}

impl std::error::Error for CudaError {}

/// Errors after which the context cannot be used again (the CUDA driver API's "sticky" errors:
/// the process must destroy the context and create a new one).
pub fn is_fault(name: &str) -> bool {
    matches!(
        name,
        "CUDA_ERROR_ILLEGAL_ADDRESS"
            | "CUDA_ERROR_LAUNCH_FAILED"
            | "CUDA_ERROR_ASSERT"
            | "CUDA_ERROR_LAUNCH_TIMEOUT"
            | "CUDA_ERROR_HARDWARE_STACK_ERROR"
            | "CUDA_ERROR_ILLEGAL_INSTRUCTION"
            | "CUDA_ERROR_MISALIGNED_ADDRESS"
            | "CUDA_ERROR_INVALID_ADDRESS_SPACE"
            | "CUDA_ERROR_INVALID_PC"
            | "CUDA_ERROR_ECC_UNCORRECTABLE"
            | "CUDA_ERROR_CONTEXT_IS_DESTROYED"
            | "timeout"
    )
}

fn driver_error(what: impl Into<String>, r: sys::CUresult) -> CudaError {
    let e = cudarc::driver::result::DriverError(r);
    let name = e
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{r:?}"));
    let detail = e
        .error_string()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let fault = is_fault(&name);
    CudaError {
        what: what.into(),
        name,
        detail,
        fault,
    }
}

fn check(r: sys::CUresult, what: impl FnOnce() -> String) -> Result<(), CudaError> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(driver_error(what(), r))
    }
}

/// The driver entry points this module calls. Each is looked up before the first call, so an
/// old driver that lacks one is an `Err` from [`Device::open`] rather than a panic later.
const SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetAttribute",
    "cuDeviceTotalMem_v2",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuDevicePrimaryCtxReset_v2",
    "cuCtxSetCurrent",
    "cuCtxSynchronize",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemcpyHtoD_v2",
    "cuMemcpyDtoH_v2",
    "cuMemsetD8_v2",
    "cuModuleLoadDataEx",
    "cuModuleGetFunction",
    "cuModuleUnload",
    "cuFuncSetAttribute",
    "cuLaunchKernel",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventQuery",
    "cuEventSynchronize",
    "cuEventElapsedTime",
    "cuEventDestroy_v2",
    "cuGetErrorName",
    "cuGetErrorString",
];

/// Whether the CUDA driver library can be loaded and has every entry point this module calls;
/// `Err` names what is missing.
pub fn probe_driver() -> Result<(), OpenError> {
    if std::env::var("TESSERA_CUDA").is_ok_and(|v| v == "off") {
        return Err(OpenError::Off);
    }
    // SAFETY: dlopen of the driver library by its usual names; nothing else runs.
    if !unsafe { sys::is_culib_present() } {
        return Err(OpenError::NoLibrary);
    }
    // SAFETY: the library is present (checked above), so `culib` does not fail; `get` only
    // looks the symbol up.
    let lib = unsafe { sys::culib() };
    for s in SYMBOLS {
        let found = unsafe { lib.get::<*const c_void>(s.as_bytes()) }.is_ok();
        if !found {
            return Err(OpenError::MissingSymbol(s));
        }
    }
    Ok(())
}

/// What the device is.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceInfo {
    pub ordinal: usize,
    pub name: String,
    /// Compute capability (major, minor).
    pub capability: (i32, i32),
    pub sm_count: i32,
    /// Shared memory per block with the opt-in attribute, bytes.
    pub max_shared_optin: i32,
    pub total_mem: usize,
    /// The driver's CUDA version (major, minor).
    pub driver_version: (i32, i32),
}

impl DeviceInfo {
    /// The compilation target for this GPU: `sm_80` for 8.x, `sm_90` for 9.x, `sm_100` for 10.x
    /// and later (PTX JIT-compiles forward).
    pub fn target_name(&self) -> &'static str {
        match self.capability.0 {
            8 => "sm_80",
            9 => "sm_90",
            _ => "sm_100",
        }
    }
}

struct Module {
    module: sys::CUmodule,
    func: sys::CUfunction,
    /// The dynamic shared-memory limit set on the function (0: the default 48 KiB).
    shared_limit: u32,
}

/// A device allocation, freed on drop.
struct Buffer {
    ptr: sys::CUdeviceptr,
}

impl Buffer {
    fn new(bytes: usize, what: &dyn Fn() -> String) -> Result<Buffer, CudaError> {
        let mut ptr: sys::CUdeviceptr = 0;
        // SAFETY: cuMemAlloc writes one pointer; the context is current (Device::bind).
        let r = unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes.max(1)) };
        check(r, || format!("allocating {bytes} bytes for {}", what()))?;
        Ok(Buffer { ptr })
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: allocated by cuMemAlloc and freed once; errors (a context in a fault
        // state) are ignored: the context is reset afterwards.
        let _ = unsafe { sys::cuMemFree_v2(self.ptr) };
    }
}

/// An event, destroyed on drop.
struct Event(sys::CUevent);

impl Event {
    fn new() -> Result<Event, CudaError> {
        let mut e: sys::CUevent = std::ptr::null_mut();
        // SAFETY: writes one handle.
        let r = unsafe { sys::cuEventCreate(&mut e, sys::CUevent_flags::CU_EVENT_DEFAULT as u32) };
        check(r, || "creating an event".to_string())?;
        Ok(Event(e))
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: created by cuEventCreate, destroyed once.
        let _ = unsafe { sys::cuEventDestroy_v2(self.0) };
    }
}

/// An open CUDA device: its primary context, one stream and the module cache.
pub struct Device {
    info: DeviceInfo,
    dev: sys::CUdevice,
    ctx: sys::CUcontext,
    stream: sys::CUstream,
    modules: HashMap<u64, Module>,
    /// How long a launch may run before it is reported as a fault.
    pub timeout: Duration,
    /// Fill outputs with 0xFF bytes before a launch (`TESSERA_CUDA_POISON=1`).
    pub poison: bool,
    /// Times the context was rebuilt after a fault.
    pub rebuilds: u32,
}

fn env_timeout() -> Duration {
    std::env::var("TESSERA_CUDA_TIMEOUT")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(Duration::from_secs(60), Duration::from_secs_f64)
}

impl Device {
    /// Opens GPU `ordinal`. `Err` says why not: no driver library, no GPU, a GPU older than
    /// `sm_80`, or the driver's error.
    pub fn open(ordinal: usize) -> Result<Device, OpenError> {
        probe_driver()?;
        let e = |what: &str, r: sys::CUresult| OpenError::Driver(driver_error(what, r));
        // SAFETY: every call below writes plain values through valid pointers; the symbols
        // exist (probe_driver).
        unsafe {
            let r = sys::cuInit(0);
            if r != sys::CUresult::CUDA_SUCCESS {
                return Err(e("initialising the CUDA driver", r));
            }
            let mut version = 0;
            let _ = sys::cuDriverGetVersion(&mut version);
            let mut count = 0;
            let r = sys::cuDeviceGetCount(&mut count);
            if r != sys::CUresult::CUDA_SUCCESS {
                return Err(e("counting CUDA devices", r));
            }
            if count <= 0 {
                return Err(OpenError::NoGpu);
            }
            if ordinal >= count as usize {
                return Err(OpenError::NoSuchDevice {
                    ordinal,
                    count: count as usize,
                });
            }
            let mut dev: sys::CUdevice = 0;
            let r = sys::cuDeviceGet(&mut dev, ordinal as i32);
            if r != sys::CUresult::CUDA_SUCCESS {
                return Err(e("opening the CUDA device", r));
            }
            let attr = |a: sys::CUdevice_attribute| {
                let mut v = 0;
                let _ = sys::cuDeviceGetAttribute(&mut v, a, dev);
                v
            };
            use sys::CUdevice_attribute::*;
            let capability = (
                attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
            );
            let mut name_buf = [0 as std::ffi::c_char; 256];
            let _ = sys::cuDeviceGetName(name_buf.as_mut_ptr(), 256, dev);
            let name = std::ffi::CStr::from_ptr(name_buf.as_ptr())
                .to_string_lossy()
                .into_owned();
            let mut total_mem = 0usize;
            let _ = sys::cuDeviceTotalMem_v2(&mut total_mem, dev);
            let info = DeviceInfo {
                ordinal,
                name,
                capability,
                sm_count: attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
                max_shared_optin: attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
                total_mem,
                driver_version: (version / 1000, (version % 1000) / 10),
            };
            if capability.0 < 8 {
                return Err(OpenError::TooOld {
                    name: info.name,
                    capability,
                });
            }
            let mut d = Device {
                info,
                dev,
                ctx: std::ptr::null_mut(),
                stream: std::ptr::null_mut(),
                modules: HashMap::new(),
                timeout: env_timeout(),
                poison: std::env::var("TESSERA_CUDA_POISON").is_ok_and(|v| v == "1"),
                rebuilds: 0,
            };
            d.start().map_err(OpenError::Driver)?;
            Ok(d)
        }
    }

    /// Retains the primary context, makes it current and creates the stream.
    fn start(&mut self) -> Result<(), CudaError> {
        // SAFETY: plain driver calls on the device handle from cuDeviceGet.
        unsafe {
            let mut ctx: sys::CUcontext = std::ptr::null_mut();
            check(sys::cuDevicePrimaryCtxRetain(&mut ctx, self.dev), || {
                "creating the CUDA context".to_string()
            })?;
            self.ctx = ctx;
            check(sys::cuCtxSetCurrent(ctx), || {
                "making the CUDA context current".to_string()
            })?;
            // A blocking stream: it orders after the (synchronous) copies and memsets that the
            // driver runs on the legacy default stream, so a kernel never reads a buffer whose
            // upload is still in flight.
            let mut stream: sys::CUstream = std::ptr::null_mut();
            check(
                sys::cuStreamCreate(&mut stream, sys::CUstream_flags::CU_STREAM_DEFAULT as u32),
                || "creating a CUDA stream".to_string(),
            )?;
            self.stream = stream;
        }
        Ok(())
    }

    /// Releases the modules, the stream and the context (errors ignored: after a fault the
    /// driver reports the fault again on every call).
    fn stop(&mut self) {
        // SAFETY: each handle was created by this device and is released once; null handles
        // are skipped.
        unsafe {
            if !self.ctx.is_null() {
                let _ = sys::cuCtxSetCurrent(self.ctx);
            }
            for (_, m) in self.modules.drain() {
                let _ = sys::cuModuleUnload(m.module);
            }
            if !self.stream.is_null() {
                let _ = sys::cuStreamDestroy_v2(self.stream);
                self.stream = std::ptr::null_mut();
            }
            if !self.ctx.is_null() {
                let _ = sys::cuDevicePrimaryCtxRelease_v2(self.dev);
                self.ctx = std::ptr::null_mut();
            }
        }
    }

    /// After a fault: drops every module, resets the primary context (a context that faulted
    /// cannot be used again) and starts afresh.
    pub fn rebuild(&mut self) -> Result<(), CudaError> {
        self.stop();
        // SAFETY: resets the device's primary context; no handle of the old one is kept.
        let r = unsafe { sys::cuDevicePrimaryCtxReset_v2(self.dev) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(driver_error("resetting the CUDA context", r));
        }
        self.rebuilds += 1;
        self.start()
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Modules in the cache.
    pub fn cached_modules(&self) -> usize {
        self.modules.len()
    }

    fn bind(&self) -> Result<(), CudaError> {
        // SAFETY: the context is live while the device is.
        check(unsafe { sys::cuCtxSetCurrent(self.ctx) }, || {
            "making the CUDA context current".to_string()
        })
    }

    /// The function of `k`, JIT-compiled on first use and cached by `k.hash`, with its dynamic
    /// shared-memory limit raised to `shared` bytes when that is over 48 KiB.
    fn function(&mut self, k: &KernelImage, shared: u32) -> Result<sys::CUfunction, CudaError> {
        if !self.modules.contains_key(&k.hash) {
            let m = self.load(k)?;
            self.modules.insert(k.hash, m);
        }
        let Some(m) = self.modules.get_mut(&k.hash) else {
            return Err(CudaError {
                what: format!("loading the module of '{}'", k.name),
                name: "module cache".into(),
                detail: "the module vanished from the cache".into(),
                fault: false,
            });
        };
        if shared > 48 * 1024 && shared > m.shared_limit {
            // SAFETY: a live function handle of a loaded module.
            let r = unsafe {
                sys::cuFuncSetAttribute(
                    m.func,
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    shared as i32,
                )
            };
            check(r, || {
                format!(
                    "allowing {shared} bytes of dynamic shared memory for '{}' (the GPU allows {})",
                    k.name, self.info.max_shared_optin
                )
            })?;
            m.shared_limit = shared;
        }
        Ok(m.func)
    }

    /// JIT-compiles the PTX of `k` for this GPU.
    fn load(&self, k: &KernelImage) -> Result<Module, CudaError> {
        self.bind()?;
        let what = || format!("compiling the PTX of '{}' for {}", k.name, self.info.name);
        let src = CString::new(k.ptx).map_err(|_| CudaError {
            what: what(),
            name: "bad PTX".into(),
            detail: "the PTX text holds a NUL byte".into(),
            fault: false,
        })?;
        let mut log = vec![0u8; 16 * 1024];
        let mut options = [
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        let mut values: [*mut c_void; 2] = [log.as_mut_ptr().cast(), log.len() as *mut c_void];
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: `src` is NUL-terminated PTX; the option arrays have the same length; the
        // log buffer outlives the call.
        let r = unsafe {
            sys::cuModuleLoadDataEx(
                &mut module,
                src.as_ptr().cast(),
                options.len() as u32,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        if r != sys::CUresult::CUDA_SUCCESS {
            let mut e = driver_error(what(), r);
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let text = String::from_utf8_lossy(&log[..end]).trim().to_string();
            if !text.is_empty() {
                e.detail = format!("{}; JIT log: {text}", e.detail);
            }
            return Err(e);
        }
        let name = CString::new(k.name).map_err(|_| CudaError {
            what: what(),
            name: "bad kernel name".into(),
            detail: String::new(),
            fault: false,
        })?;
        let mut func: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: a module just loaded; a NUL-terminated name.
        let r = unsafe { sys::cuModuleGetFunction(&mut func, module, name.as_ptr()) };
        if r != sys::CUresult::CUDA_SUCCESS {
            // SAFETY: unloads the module loaded above.
            let _ = unsafe { sys::cuModuleUnload(module) };
            return Err(driver_error(
                format!("finding the entry '{}' in its module", k.name),
                r,
            ));
        }
        Ok(Module {
            module,
            func,
            shared_limit: 0,
        })
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        self.stop();
    }
}

mod launch;
#[cfg(test)]
mod tests;
