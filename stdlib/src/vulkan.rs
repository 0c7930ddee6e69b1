//! The `vulkan` device of a session (docs/decisions.md, "The Vulkan device"): kernels compiled
//! for the `spirv` target run as SPIR-V compute shaders through the system's Vulkan driver
//! ([`tessera_runtime::vulkan`]); Mesa's lavapipe on a machine without a GPU.
//!
//! - Choosing it (`--device vulkan`, `target.set_device("vulkan")`, `:device vulkan`) opens the
//!   device and makes `spirv` the session's target; without a Vulkan loader or device it is
//!   E0800 naming the reason ([`unavailable`]).
//! - A kernel the SPIR-V back end does not translate runs on the cpu with a warning, as a
//!   kernel without Target IR does ([`tessera_compiler::backend::spirv::unsupported`] says
//!   why).

use tessera_lang::diag::{Code, Diagnostic};
use tessera_runtime::vulkan::{Device, OpenError};

/// Opens the session's Vulkan device.
pub fn open() -> Result<Device, OpenError> {
    Device::open()
}

/// E0800 for `vulkan` asked for where none can be used.
pub fn unavailable(how: &str, why: &dyn std::fmt::Display) -> Diagnostic {
    Diagnostic::new(Code::E0800, format!("{how}: no usable Vulkan device: {why}")).with_help(
        "install a Vulkan loader and driver (Debian: libvulkan1 mesa-vulkan-drivers), or run on the cpu",
    )
}
