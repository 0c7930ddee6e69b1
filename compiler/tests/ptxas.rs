//! Every sample kernel (Tile IR text in `tests/data/`) must be accepted by ptxas for sm_80 and
//! sm_90 with no spills.
//! Needs ptxas: `scripts/install-ptxas` (this test fails, never skips, when it is missing).

use tessera_compiler::backend::ptx::ptxas::{find_ptxas, run_ptxas, PtxasError};
use tessera_compiler::backend::ptx::{print as ptx, Kernel, MmaKind, Target};
use tessera_lang::SourceMap;

#[path = "common/samples.rs"]
mod samples;

fn kernels(sources: &mut SourceMap) -> Vec<Kernel> {
    [
        "gelu_affine",
        "softmax_rows",
        "matmul_f32",
        "matmul_bf16",
        samples::mma_tile(MmaKind::M16n8k16Bf16),
        samples::mma_tile(MmaKind::M16n8k16F16),
        samples::mma_tile(MmaKind::M16n8k8Tf32),
    ]
    .iter()
    .map(|name| samples::load(name, sources))
    .collect()
}

#[test]
fn ptxas_accepts_every_sample_without_spills() {
    if find_ptxas().is_none() {
        panic!("{}", PtxasError::NotFound);
    }
    let mut sources = SourceMap::new();
    let ks = kernels(&mut sources);
    let mut table = String::new();
    for target in Target::PTX {
        for k in &ks {
            let text = ptx::print(k, target, &sources).unwrap();
            let r = match run_ptxas(&text, target) {
                Ok(r) => r,
                Err(e) => panic!("{} for {target}: {e}\n{text}", k.name),
            };
            table.push_str(&format!(
                "{:<16} {:<7} {:>3} registers, {:>5} bytes smem, spill stores {}, spill loads {}, stack {}\n",
                k.name, target.name(), r.registers, r.shared_bytes, r.spill_stores, r.spill_loads, r.stack_frame
            ));
            assert_eq!(
                (r.spill_stores, r.spill_loads, r.stack_frame),
                (0, 0, 0),
                "{} spills on {target}:\n{}",
                k.name,
                r.log
            );
            assert!(r.registers <= target.limits().max_registers_per_thread);
        }
    }
    println!("{table}");
}

#[test]
fn ptxas_reports_rejected_ptx() {
    if find_ptxas().is_none() {
        panic!("{}", PtxasError::NotFound);
    }
    let e = run_ptxas(
        ".version 8.0\n.target sm_90\n.address_size 64\nnot ptx\n",
        Target::Sm90,
    )
    .unwrap_err();
    assert!(matches!(e, PtxasError::Rejected { .. }), "{e}");
}
