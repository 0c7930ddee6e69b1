//! The devices a session can run kernels on, one line each ([`DEVICES`]). The command line's
//! `--device` choices, the REPL's and Jupyter's `:device` completion, `target.set_device`'s
//! check and help text, and `TESSERA_CROSSCHECK`'s devices are all read from this list:
//! adding a device is its own file under `device/` and one line here.

use super::{cpu, cuda, emu, vulkan, Device};
use tessera_lang::diag::{Code as ErrCode, Diagnostic};

/// What code a device takes from a lowered kernel.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Code {
    /// None: the interpreter evaluates the kernel's Graph IR op with the runtime's ops (the cpu).
    None,
    /// The kernel's Target IR as it is, no printed code (the emulator).
    TargetIr,
    /// The kernel's printed PTX, for a PTX target (sm_80 ...).
    Ptx,
    /// The kernel's SPIR-V module, for the spirv target.
    Spirv,
}

impl Code {
    /// How a message names it ("PTX", "SPIR-V", "Target IR").
    pub fn name(self) -> &'static str {
        match self {
            Code::None => "Graph IR",
            Code::TargetIr => "Target IR",
            Code::Ptx => "PTX",
            Code::Spirv => "SPIR-V",
        }
    }
}

/// How `TESSERA_CROSSCHECK=NAME` compares the device's results with the cpu's.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// Elementwise within a few units in the last place (the emulator).
    Ulps,
    /// The norm-wise relative error of each launch, with the bound of the result's dtype.
    Norm,
    /// [`Check::Norm`] with the bound of the kernel's least precise float operand.
    NormWorking,
}

/// A device that may not be present: how its E0800 names it and what to do.
#[derive(Copy, Clone, Debug)]
pub struct Hardware {
    /// "CUDA", "Vulkan": the E0800 says "no usable CUDA device".
    pub what: &'static str,
    /// The help of that E0800.
    pub help: &'static str,
}

/// One device of the registry.
pub struct Entry {
    /// The name `--device`, `target.set_device`, `:device` and `TESSERA_CROSSCHECK` take.
    pub name: &'static str,
    /// What the help text says of it after its name ("" for nothing).
    pub about: &'static str,
    /// The code it takes.
    pub code: Code,
    /// The device `auto` picks when it opens (the first such; else the cpu).
    pub auto: bool,
    /// The autotuner times kernels on it while the session runs there.
    pub tunes: bool,
    /// Its launches report what they did ([`super::Launched::counters`]): the profiler
    /// records the counts rather than times.
    pub counts: bool,
    /// Where a message says a kernel ran: "in the emulator", "on cuda".
    pub place: &'static str,
    /// `None`: it always opens.
    pub hardware: Option<Hardware>,
    /// How `TESSERA_CROSSCHECK` compares it with the cpu (`None`: it is the reference).
    pub check: Option<Check>,
    /// Opens it, or says why it cannot be used here.
    pub open: fn() -> Result<Box<dyn Device>, String>,
}

/// Every device, in the order the help text lists them.
pub static DEVICES: [&Entry; 4] = [&cpu::ENTRY, &emu::ENTRY, &cuda::ENTRY, &vulkan::ENTRY];

/// The name that picks a device by availability ([`Entry::auto`]).
pub const AUTO: &str = "auto";

impl Entry {
    /// Whether it can be used here: `Err` says why not. Opens it (and closes it again).
    pub fn available(&self) -> Result<(), String> {
        (self.open)().map(drop)
    }

    /// E0800 for this device asked for by `how` where it cannot be used (`why`).
    pub fn unavailable(&self, how: &str, why: &dyn std::fmt::Display) -> Diagnostic {
        let (what, help) = self.hardware.map_or((self.name, ""), |h| (h.what, h.help));
        let d = Diagnostic::new(
            ErrCode::E0800,
            format!("{how}: no usable {what} device: {why}"),
        );
        if help.is_empty() {
            d
        } else {
            d.with_help(help)
        }
    }

    /// Its position in [`DEVICES`].
    pub fn index(&self) -> usize {
        DEVICES
            .iter()
            .position(|e| std::ptr::eq(*e, self))
            .unwrap_or(0)
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl std::fmt::Display for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        std::ptr::eq(self, other)
    }
}

/// The device named `name`.
pub fn find(name: &str) -> Option<&'static Entry> {
    DEVICES.iter().copied().find(|e| e.name == name)
}

/// The cpu: the reference every device is compared with, and where kernels run when no other
/// device can.
pub fn cpu() -> &'static Entry {
    &cpu::ENTRY
}

/// The names `--device` and `:device` take: `auto`, then every device.
pub fn choices() -> Vec<&'static str> {
    std::iter::once(AUTO)
        .chain(DEVICES.iter().map(|e| e.name))
        .collect()
}

/// The choices as a sentence's list: "auto, cpu, emu, cuda, vulkan".
pub fn choices_text() -> String {
    choices().join(", ")
}

/// `"a", "b" or "c"` (each name quoted, `about` after it when `with_about`).
fn quoted(entries: &[&Entry], with_about: bool) -> String {
    let items: Vec<String> = entries
        .iter()
        .map(|e| match e.about {
            a if with_about && !a.is_empty() => format!("\"{}\" ({a})", e.name),
            _ => format!("\"{}\"", e.name),
        })
        .collect();
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}

/// The help text of `target.device`.
pub fn device_help() -> String {
    format!(
        "The name of the device kernels run on: {}.",
        quoted(&DEVICES, false)
    )
}

/// The help text of `target.set_device`.
pub fn set_device_help() -> String {
    let hardware: Vec<&Entry> = DEVICES
        .iter()
        .copied()
        .filter(|e| e.hardware.is_some())
        .collect();
    format!(
        "Chooses the device kernels run on. \"{AUTO}\" (the GPU when a usable one is present, else \
         cpu), {}; {} without a usable device is E0800 and the device stays, another name is E0101.",
        quoted(&DEVICES, true),
        quoted(&hardware, false)
    )
}

/// The E0101 of a device name not in the registry.
pub fn unknown(name: &str) -> Diagnostic {
    Diagnostic::new(ErrCode::E0101, format!("unknown device '{name}'"))
        .with_help(format!("devices are {}", choices_text()))
}

/// The device `auto` picks: the first [`Entry::auto`] device that opens, else the cpu.
pub fn open_auto() -> (&'static Entry, Box<dyn Device>) {
    for e in DEVICES.iter().filter(|e| e.auto) {
        if let Ok(d) = (e.open)() {
            return (e, d);
        }
    }
    (&cpu::ENTRY, Box::new(cpu::Cpu))
}
