//! `TESSERA_CPU_ISA`: every instruction set this CPU runs gives the same bits end to end (a
//! script of matmuls in each dtype, a convolution, softmax, the norms, elementwise chains and
//! reductions, printed exactly), and one it cannot run is E0101 before anything runs.

mod common;

use std::path::Path;
use tessera_runtime::isa::Isa;

/// Matmuls in each dtype, a convolution, softmax, the norms, elementwise chains and reductions,
/// printed exactly (`tolist` prints each value's shortest round-trip form).
const SCRIPT: &str = include_str!("isa/bits.tsr");

#[test]
fn every_isa_prints_the_same_bits_and_an_unrunnable_one_is_e0101() {
    let dir = common::fresh_dir("cpu-isa");
    let path = dir.join("bits.tsr");
    std::fs::write(&path, SCRIPT).unwrap();
    let run = |isa: Isa| {
        common::tessera(
            &[Path::new("run"), &path],
            &[("TESSERA_CPU_ISA", isa.name())],
        )
    };
    let scalar = run(Isa::Scalar);
    assert_eq!(scalar.code, 0, "{}", scalar.stderr);
    assert!(scalar.stdout.lines().count() >= 10, "{}", scalar.stdout);
    let mut compared = Vec::new();
    for isa in Isa::ALL {
        let r = run(isa);
        if isa.supported() {
            assert_eq!(r.code, 0, "{isa}: {}", r.stderr);
            assert!(
                r.stdout == scalar.stdout,
                "{isa} prints other values than scalar"
            );
            compared.push(isa.name());
        } else {
            assert_eq!(r.code, 2, "{isa}: {}", r.stderr);
            assert!(
                r.stderr.contains("E0101") && r.stderr.contains("TESSERA_CPU_ISA"),
                "{isa}: {}",
                r.stderr
            );
            assert!(r.stdout.is_empty(), "{isa}: {}", r.stdout);
        }
    }
    // At least one vector path next to scalar on the machines CI runs on (x86-64 with AVX2,
    // aarch64 with NEON); the list is in the failure message of a run without one.
    assert!(compared.len() >= 2, "only {compared:?} ran here");
}
