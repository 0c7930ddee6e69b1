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

/// `$TESSERA_NVDISASM`, then `nvdisasm` from the pip package under the workspace's `.venv`
/// (`scripts/install-nvdisasm`), then on `PATH`.
fn find_nvdisasm() -> Option<std::path::PathBuf> {
    use std::path::PathBuf;
    if let Some(p) = std::env::var_os("TESSERA_NVDISASM").map(PathBuf::from) {
        if p.is_file() {
            return Some(p);
        }
    }
    let lib = tessera_compiler::backend::ptx::ptxas::workspace_root().join(".venv/lib");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&lib)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    dirs.sort();
    for d in dirs {
        let nvidia = d.join("site-packages/nvidia");
        let mut subs: Vec<PathBuf> = std::fs::read_dir(&nvidia)
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        subs.sort();
        if let Some(p) = subs
            .iter()
            .map(|s| s.join("bin/nvdisasm"))
            .find(|p| p.is_file())
        {
            return Some(p);
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("nvdisasm"))
        .find(|p| p.is_file())
}

/// The Hopper samples (hand-written Tile IR: one warpgroup's wgmma m64n64k16 without swizzle
/// and m64n128k16 with the 128-byte swizzle, an mbarrier round trip, TMA loads feeding wgmma
/// and a TMA load and store) assemble for sm_90a with no spills, their SASS holds HGMMA
/// (wgmma), SYNCS (mbarrier), UTMALDG and UTMASTG (TMA) instructions, and they are refused
/// below sm_90a (wgmma) or sm_90 (mbarrier, TMA).
/// Needs ptxas and nvdisasm (`scripts/install-ptxas`, `scripts/install-nvdisasm`).
#[test]
fn hopper_samples_assemble_for_sm90a_to_hgmma_and_syncs() {
    let ptxas = find_ptxas().unwrap_or_else(|| panic!("{}", PtxasError::NotFound));
    let nvdisasm = find_nvdisasm().unwrap_or_else(|| {
        panic!("nvdisasm not found: run scripts/install-nvdisasm (or set TESSERA_NVDISASM)")
    });
    let mut sources = SourceMap::new();
    let dir = std::env::temp_dir().join(format!("tessera-hopper-sass-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // the sample, what its SASS must hold, and the target below its oldest
    for (name, wants, below) in [
        (
            "wgmma_n64",
            &["HGMMA.64x64x16.F32.BF16", "WARPGROUP.ARRIVE"][..],
            Target::Sm90,
        ),
        (
            "wgmma_sw128_n128",
            &["HGMMA.64x128x16.F32.BF16", "WARPGROUP.ARRIVE"],
            Target::Sm90,
        ),
        (
            "mbarrier",
            &["SYNCS.PHASECHK.TRANS64.TRYWAIT", "SYNCS.ARRIVE"],
            Target::Sm80,
        ),
        // TMA loads (UTMALDG) completing on an mbarrier, feeding wgmma
        (
            "tma_wgmma",
            &["UTMALDG.2D", "SYNCS.ARRIVE", "HGMMA.64x64x16.F32.BF16"],
            Target::Sm90,
        ),
        // warpgroup 2 lowers its registers to 40, the others raise theirs to 232
        // (.maxntid 384 and .minnctapersm 1 fix the count at entry; without them ptxas drops
        // setmaxnreg, C7508)
        (
            "setmaxnreg",
            &["USETMAXREG.TRY_ALLOC.CTAPOOL", "USETMAXREG.DEALLOC.CTAPOOL"],
            Target::Sm90,
        ),
        // warpgroup roles: a producer's TMA loads into 2 stages (full/empty mbarriers), a
        // consumer's wgmmas (tests/hostile/run_tile_warpgroup_roles's kernel)
        (
            "warp_roles",
            &[
                "UTMALDG.2D",
                "SYNCS.ARRIVE",
                "HGMMA.64x64x16.F32.BF16",
                "SYNCS.PHASECHK",
            ],
            Target::Sm90,
        ),
        // a TMA load read back by the threads, then a TMA store (UTMASTG)
        (
            "tma_copy",
            &["UTMALDG.2D", "UTMASTG.2D", "SYNCS.PHASECHK.TRANS64.TRYWAIT"],
            Target::Sm80,
        ),
    ] {
        let k = samples::load(name, &mut sources);
        let text = ptx::print(&k, Target::Sm90a, &sources).unwrap();
        let r = run_ptxas(&text, Target::Sm90a)
            .unwrap_or_else(|e| panic!("{name} for sm_90a: {e}\n{text}"));
        assert_eq!(
            (r.spill_stores, r.spill_loads, r.stack_frame),
            (0, 0, 0),
            "{name} spills:\n{}",
            r.log
        );
        let (file, cubin) = (
            dir.join(format!("{name}.ptx")),
            dir.join(format!("{name}.cubin")),
        );
        std::fs::write(&file, &text).unwrap();
        let out = std::process::Command::new(&ptxas)
            .args(["-arch=sm_90a", "-o"])
            .arg(&cubin)
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = std::process::Command::new(&nvdisasm)
            .arg(&cubin)
            .output()
            .unwrap();
        let sass = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{name}: nvdisasm failed");
        for want in wants {
            assert!(sass.contains(want), "{name}: no {want} in\n{sass}");
        }
        assert!(!sass.contains("HMMA"), "{name}: mma.sync's HMMA in\n{sass}");
        let e = ptx::print(&k, below, &sources).unwrap_err().to_string();
        assert!(e.contains("not supported on"), "{name} on {below}: {e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
