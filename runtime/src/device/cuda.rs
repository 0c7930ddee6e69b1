//! The `cuda` device: runs the kernel's PTX on an NVIDIA GPU through the driver API
//! ([`crate::cuda`]). GPU `TESSERA_CUDA_DEVICE` (default 0) opens; `TESSERA_CUDA=off` makes
//! the driver count as absent.

use super::registry::{Check, Code, Entry, Hardware};
use super::{Buffers, Device, DeviceError, Executable, Launched};
use crate::cuda::{self, Runs};
use crate::Tensor;
use tessera_compiler::graph::TensorType;

pub(super) static ENTRY: Entry = Entry {
    name: "cuda",
    about: "",
    code: Code::Ptx,
    auto: true,
    counts: false,
    place: "on cuda",
    tunes: true,
    hardware: Some(Hardware {
        what: "CUDA",
        help: "use the device `auto` to run on the GPU when there is one and on the cpu otherwise",
    }),
    check: Some(Check::Norm),
    open: || {
        cuda::Device::open(ordinal())
            .map(|d| Box::new(d) as Box<dyn Device>)
            .map_err(|e| e.to_string())
    },
};

/// The GPU ordinal to open: `TESSERA_CUDA_DEVICE` (default 0).
pub fn ordinal() -> usize {
    std::env::var("TESSERA_CUDA_DEVICE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

impl Device for cuda::Device {
    fn entry(&self) -> &'static Entry {
        &ENTRY
    }
    fn label(&self) -> String {
        format!("cuda:{} ({})", self.info().ordinal, self.info().name)
    }
    fn native_target(&self) -> Option<&'static str> {
        Some(self.info().target_name())
    }
    fn launch(
        &mut self,
        k: &Executable,
        inputs: &[Tensor],
        outs: &[TensorType],
    ) -> Result<Option<Launched>, DeviceError> {
        let l = k.lowered;
        let mut b = Buffers::new(l, inputs, outs).map_err(DeviceError::Marshal)?;
        let written = b.written();
        let status = b.status_index();
        self.run(
            &k.image()?,
            k.geometry(),
            &mut b.data,
            &l.scalars,
            cuda::Written {
                outputs: &written,
                status,
            },
        )
        .map_err(DeviceError::Cuda)?;
        let r = b.result(outs).map_err(DeviceError::Marshal)?;
        Ok(r.map(|outs| Launched {
            outs,
            counters: None,
        }))
    }
    fn reset(&mut self) -> Result<(), DeviceError> {
        self.rebuild().map_err(DeviceError::Cuda)
    }
    fn time(
        &mut self,
        k: &Executable,
        inputs: &[Tensor],
        outs: &[TensorType],
        reps: u32,
    ) -> Result<Option<f64>, DeviceError> {
        let l = k.lowered;
        let b = Buffers::new(l, inputs, outs).map_err(DeviceError::Marshal)?;
        let runs = Runs {
            warmup: 1,
            reps: reps.max(1),
        };
        let mut t = cuda::Device::time(
            self,
            &k.image()?,
            k.geometry(),
            &b.data,
            &l.scalars,
            cuda::Written {
                outputs: &b.written(),
                status: b.status_index(),
            },
            runs,
        )
        .map_err(DeviceError::Cuda)?;
        t.sort_by(f64::total_cmp);
        Ok(t.get(t.len() / 2).copied())
    }
}
