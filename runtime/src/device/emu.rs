//! The `emu` device: executes the kernel's Target IR in the emulator ([`crate::emu`]) and
//! counts what it did.

use super::registry::{Check, Code, Entry};
use super::{emu_launch, Buffers, Device, DeviceError, Executable, Launched};
use crate::Tensor;
use tessera_compiler::graph::TensorType;

pub(super) static ENTRY: Entry = Entry {
    name: "emu",
    about: "the generated PTX run by the CPU emulator",
    code: Code::TargetIr,
    auto: false,
    counts: true,
    place: "in the emulator",
    tunes: false,
    hardware: None,
    check: Some(Check::Ulps),
    open: || Ok(Box::new(Emu)),
};

/// The emulator.
pub struct Emu;

impl Device for Emu {
    fn entry(&self) -> &'static Entry {
        &ENTRY
    }
    fn launch(
        &mut self,
        k: &Executable,
        inputs: &[Tensor],
        outs: &[TensorType],
    ) -> Result<Option<Launched>, DeviceError> {
        let mut b = Buffers::new(k.lowered, inputs, outs).map_err(DeviceError::Marshal)?;
        let stats = emu_launch(k.lowered, &mut b).map_err(DeviceError::Emu)?;
        let r = b.result(outs).map_err(DeviceError::Marshal)?;
        Ok(r.map(|outs| Launched {
            outs,
            counters: Some(stats.counters),
        }))
    }
}
