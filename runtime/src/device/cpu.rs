//! The `cpu` device: evaluates the kernel's Graph IR op with the runtime's reference ops
//! ([`crate::interp::eval_at`]).

use super::registry::{Code, Entry};
use super::{Device, DeviceError, Executable, Launched};
use crate::Tensor;
use tessera_compiler::graph::TensorType;

pub(super) static ENTRY: Entry = Entry {
    name: "cpu",
    about: "",
    code: Code::None,
    auto: false,
    counts: false,
    place: "on the cpu",
    tunes: false,
    hardware: None,
    check: None,
    open: || Ok(Box::new(Cpu)),
};

/// The cpu: an executable without its op is left to the interpreter (`Ok(None)`), which
/// evaluates it the same way.
pub struct Cpu;

impl Device for Cpu {
    fn entry(&self) -> &'static Entry {
        &ENTRY
    }
    fn launch(
        &mut self,
        k: &Executable,
        inputs: &[Tensor],
        _: &[TensorType],
    ) -> Result<Option<Launched>, DeviceError> {
        let Some(op) = k.op else { return Ok(None) };
        let outs = crate::interp::eval_at(op.graph, op.root, inputs, op.captures)
            .map_err(DeviceError::Op)?;
        Ok(Some(Launched {
            outs,
            counters: None,
        }))
    }
}
