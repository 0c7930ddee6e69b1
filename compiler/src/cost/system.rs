//! Multi-GPU systems for the mesh cost model: how many GPUs share one NVLink domain, the
//! bandwidth inside a domain and between domains, and each GPU's memory and rates.
//!
//! A mesh's devices are numbered row-major over its axes (the last axis varies fastest) and
//! device `r` sits in domain `r / domain`: an axis stays inside an NVLink domain when every
//! group of devices along it does ([`System::axis_in_domain`]); a collective over an axis that
//! leaves its domain runs at the scale-out network's bandwidth ([`System::link`]).

use crate::arch::Spec;
use crate::arch::Target;

/// A system of GPUs.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct System {
    /// The name `target.set_system` takes.
    pub name: &'static str,
    /// The GPUs' compilation target.
    pub target: Target,
    /// GPUs per NVLink domain.
    pub domain: usize,
    /// Per-GPU NVLink bandwidth, GB/s, both directions together.
    pub nvlink_gbps: f64,
    /// Per-GPU bandwidth out of the domain (its share of the scale-out NICs), GB/s, both
    /// directions together.
    pub scaleout_gbps: f64,
    /// Memory per GPU, bytes.
    pub hbm_bytes: u64,
    /// Each GPU's rates.
    pub spec: Spec,
}

const GB: u64 = 1_000_000_000;

/// The systems the cost model knows.
pub fn systems() -> [System; 4] {
    let a100 = Target::Sm80.spec();
    let h100 = Target::Sm90.spec();
    let b200 = Target::Sm100.spec();
    [
        // DGX A100 datasheet: 8 A100 80 GB, NVLink 600 GB/s per GPU, 8 single-port
        // ConnectX-6 200 Gb/s HDR InfiniBand (one per GPU: 25 GB/s each way).
        System {
            name: "dgx-a100",
            target: Target::Sm80,
            domain: 8,
            nvlink_gbps: a100.nvlink_gbps,
            scaleout_gbps: 50.0,
            hbm_bytes: 80 * GB,
            spec: a100,
        },
        // DGX H100 datasheet: 8 H100 80 GB, NVLink 900 GB/s per GPU, 8 ConnectX-7 400 Gb/s
        // NDR InfiniBand ports for the compute fabric (50 GB/s each way per GPU).
        System {
            name: "dgx-h100",
            target: Target::Sm90,
            domain: 8,
            nvlink_gbps: h100.nvlink_gbps,
            scaleout_gbps: 100.0,
            hbm_bytes: 80 * GB,
            spec: h100,
        },
        // HGX B200 specifications: 8 B200 180 GB, NVLink 1.8 TB/s per GPU; one 400 Gb/s
        // ConnectX-7 per GPU for the compute fabric.
        System {
            name: "hgx-b200",
            target: Target::Sm100,
            domain: 8,
            nvlink_gbps: b200.nvlink_gbps,
            scaleout_gbps: 100.0,
            hbm_bytes: 180 * GB,
            spec: b200,
        },
        // GB200 NVL72 specifications (one rack, tensor figures with 2:4 sparsity): 72
        // Blackwell GPUs in one NVLink domain, 130 TB/s of NVLink (1.8 TB/s per GPU), up to
        // 13.4 TB of HBM3e at 576 TB/s (186 GB and 8 TB/s per GPU), FP64 3,240 TF, TF32 180
        // PF, FP16/BF16 360 PF, FP8 720 PF; per GPU and dense (sparse / 2 / 72): FP64 45,
        // TF32 1250, BF16 2500, FP8 5000 TFLOPS (FP32 is not stated; the B200's 75 is kept).
        // Scale-out: one 400 Gb/s ConnectX-7 per GPU.
        System {
            name: "gb200-nvl72",
            target: Target::Sm100,
            domain: 72,
            nvlink_gbps: 1800.0,
            scaleout_gbps: 100.0,
            hbm_bytes: 186 * GB,
            spec: Spec {
                gpu: "GB200 (NVL72)",
                peak_tflops: crate::arch::Peaks {
                    fp64: 45.0,
                    fp32: b200.peak_tflops.fp32,
                    tf32: 1250.0,
                    bf16: 2500.0,
                    fp8: Some(5000.0),
                },
                hbm_gbps: 8000.0,
                nvlink_gbps: 1800.0,
                ..b200
            },
        },
    ]
}

impl System {
    /// The system `name` (`dgx-a100`, `dgx-h100`, `hgx-b200`, `gb200-nvl72`).
    pub fn parse(name: &str) -> Option<System> {
        systems().into_iter().find(|s| s.name == name)
    }

    /// The system a target's GPUs come in when none is named: eight per NVLink domain.
    pub fn of_target(t: Target) -> System {
        let i = match t {
            Target::Sm80 | Target::Spirv => 0,
            Target::Sm90 | Target::Sm90a => 1,
            Target::Sm100 => 2,
        };
        let mut s = systems()[i];
        s.target = t;
        s.spec = t.spec();
        s
    }

    /// Whether every group of devices along `axis` of a mesh of `shape` (row-major device
    /// numbering) sits inside one NVLink domain.
    pub fn axis_in_domain(&self, shape: &[usize], axis: usize) -> bool {
        let total: usize = shape.iter().product();
        if total <= self.domain {
            return true;
        }
        let Some(&n) = shape.get(axis) else {
            return true;
        };
        let stride: usize = shape[axis + 1..].iter().product();
        let span = (n - 1) * stride;
        let d = self.domain.max(1);
        // the first device of each group: coordinate 0 along `axis`
        (0..total)
            .filter(|r| (r / stride).is_multiple_of(n))
            .all(|b| b / d == (b + span) / d)
    }

    /// The per-GPU link bandwidth (GB/s, both directions) a collective along `axis` runs at,
    /// and its name.
    pub fn link(&self, shape: &[usize], axis: usize) -> (f64, &'static str) {
        if self.axis_in_domain(shape, axis) {
            (self.nvlink_gbps, "nvlink")
        } else {
            (self.scaleout_gbps, "scale-out")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_inside_a_domain() {
        let h = System::parse("dgx-h100").unwrap();
        // 72 devices as (6, 4, 3): dp (3) and pp x dp (12) -- only groups inside 8 stay
        assert!(!h.axis_in_domain(&[6, 4, 3], 0));
        assert!(!h.axis_in_domain(&[6, 4, 3], 1));
        // dp groups {0,1,2}, {3,4,5}, {6,7,8}: the third crosses devices 7 | 8
        assert!(!h.axis_in_domain(&[6, 4, 3], 2));
        // (9, 8): the inner axis is exactly one node
        assert!(h.axis_in_domain(&[9, 8], 1));
        assert!(!h.axis_in_domain(&[9, 8], 0));
        assert!(h.axis_in_domain(&[18, 2, 2], 2) && h.axis_in_domain(&[18, 2, 2], 1));
        let n = System::parse("gb200-nvl72").unwrap();
        for a in 0..3 {
            assert!(n.axis_in_domain(&[6, 4, 3], a));
        }
        assert_eq!(n.link(&[6, 4, 3], 0).1, "nvlink");
        assert_eq!(h.link(&[9, 8], 0), (100.0, "scale-out"));
        assert!(!n.axis_in_domain(&[2, 72], 0));
        assert_eq!(System::of_target(Target::Sm90a).spec, Target::Sm90a.spec());
    }
}
