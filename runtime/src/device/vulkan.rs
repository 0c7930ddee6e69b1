//! The `vulkan` device: runs the kernel's SPIR-V as a compute shader through the system's
//! Vulkan driver ([`crate::vulkan`]); Mesa's lavapipe on a machine without a GPU.

use super::registry::{Check, Code, Entry, Hardware};
use super::{Buffers, Device, DeviceError, Executable, Launched};
use crate::vulkan;
use crate::Tensor;
use tessera_compiler::graph::TensorType;

pub(super) static ENTRY: Entry = Entry {
    name: "vulkan",
    about: "the SPIR-V through the system's Vulkan driver; the target becomes \"spirv\"",
    code: Code::Spirv,
    auto: false,
    counts: false,
    place: "on vulkan",
    tunes: false,
    hardware: Some(Hardware {
        what: "Vulkan",
        help: "install a Vulkan loader and driver (Debian: libvulkan1 mesa-vulkan-drivers), or run on the cpu",
    }),
    check: Some(Check::NormWorking),
    open: || {
        vulkan::Device::open()
            .map(|d| Box::new(d) as Box<dyn Device>)
            .map_err(|e| e.message)
    },
};

/// The Vulkan module of an executable for device `d`: a kernel with warp operations runs its
/// subgroup form where `d` has 32-lane subgroups, else its form with the lanes' values in
/// workgroup memory ([`tessera_compiler::backend::spirv::Lanes`]). The pipeline cache's key
/// is a hash of the words.
fn vk_module<'a>(d: &vulkan::Device, k: &'a Executable) -> Result<vulkan::Module<'a>, DeviceError> {
    let s = k.spirv.ok_or(DeviceError::NoSpirv)?;
    let (words, subgroup_size, shared_bytes) = match &s.shared_warps {
        Some(w) if s.subgroup && !d.runs_subgroup(32) => (w, None, s.shared_warps_bytes),
        _ => (&s.words, s.subgroup.then_some(32), s.shared_bytes),
    };
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    words.hash(&mut h);
    Ok(vulkan::Module {
        words,
        entry: tessera_compiler::backend::spirv::ENTRY,
        hash: h.finish(),
        subgroup_size,
        shared_bytes,
    })
}

impl Device for vulkan::Device {
    fn entry(&self) -> &'static Entry {
        &ENTRY
    }
    fn native_target(&self) -> Option<&'static str> {
        Some("spirv")
    }
    fn launch(
        &mut self,
        k: &Executable,
        inputs: &[Tensor],
        outs: &[TensorType],
    ) -> Result<Option<Launched>, DeviceError> {
        let l = k.lowered;
        let m = vk_module(self, k)?;
        let mut b = Buffers::new(l, inputs, outs).map_err(DeviceError::Marshal)?;
        let mut readback = vec![false; b.data.len()];
        for i in b.written() {
            if let Some(r) = readback.get_mut(i) {
                *r = true;
            }
        }
        let launch = vulkan::Launch {
            grid: l.grid,
            push: &l.scalars,
        };
        self.run(&m, &mut b.data, &readback, &launch)
            .map_err(DeviceError::Vulkan)?;
        let r = b.result(outs).map_err(DeviceError::Marshal)?;
        Ok(r.map(|outs| Launched {
            outs,
            counters: None,
        }))
    }
    fn time(
        &mut self,
        k: &Executable,
        inputs: &[Tensor],
        outs: &[TensorType],
        reps: u32,
    ) -> Result<Option<f64>, DeviceError> {
        let l = k.lowered;
        let m = vk_module(self, k)?;
        let b = Buffers::new(l, inputs, outs).map_err(DeviceError::Marshal)?;
        let launch = vulkan::Launch {
            grid: l.grid,
            push: &l.scalars,
        };
        let mut t = vulkan::Device::time(self, &m, &b.data, &launch, 1, reps.max(1))
            .map_err(DeviceError::Vulkan)?;
        t.sort_by(f64::total_cmp);
        Ok(t.get(t.len() / 2).copied())
    }
}
