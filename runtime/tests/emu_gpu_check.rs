//! Emulator vs a real GPU: prints each sample kernel's PTX for the device, runs it through the
//! CUDA driver (loaded with dlopen, no build-time CUDA) and compares with the emulator and the
//! fp64 reference. Ignored by default: run on a machine with an NVIDIA GPU with
//! `cargo test -p tessera-runtime --test emu_gpu_check -- --ignored --nocapture`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use half::bf16;
use std::ffi::{c_void, CString};
use tessera_compiler::backend::ptx::{print as ptx, Kernel, MmaKind, Target};
use tessera_lang::SourceMap;
use tessera_runtime::emu::{run, Arg, Launch};

#[path = "../../compiler/tests/common/samples.rs"]
mod samples;

type CuFn = unsafe extern "C" fn() -> i32;

struct Cuda {
    lib: *mut c_void,
    ctx: *mut c_void,
}

impl Cuda {
    fn sym(&self, name: &str) -> *mut c_void {
        let c = CString::new(name).unwrap();
        let p = unsafe { libc::dlsym(self.lib, c.as_ptr()) };
        assert!(!p.is_null(), "no symbol {name}");
        p
    }
    fn check(r: i32, what: &str) {
        assert_eq!(r, 0, "{what} failed with CUresult {r}");
    }
    fn open() -> Cuda {
        let name = CString::new("libcuda.so.1").unwrap();
        let lib = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW) };
        assert!(
            !lib.is_null(),
            "libcuda.so.1 not found: this test needs an NVIDIA GPU"
        );
        let mut cu = Cuda {
            lib,
            ctx: std::ptr::null_mut(),
        };
        unsafe {
            let init: unsafe extern "C" fn(u32) -> i32 = std::mem::transmute(cu.sym("cuInit"));
            Self::check(init(0), "cuInit");
            let dev_get: unsafe extern "C" fn(*mut i32, i32) -> i32 =
                std::mem::transmute(cu.sym("cuDeviceGet"));
            let mut dev = 0;
            Self::check(dev_get(&mut dev, 0), "cuDeviceGet");
            let create: unsafe extern "C" fn(*mut *mut c_void, u32, i32) -> i32 =
                std::mem::transmute(cu.sym("cuCtxCreate_v2"));
            let mut ctx = std::ptr::null_mut();
            Self::check(create(&mut ctx, 0, dev), "cuCtxCreate");
            cu.ctx = ctx;
        }
        cu
    }
    /// Runs a kernel; `bufs` are copied in and out.
    fn launch(&self, ptx_text: &str, name: &str, l: Launch, args: &[Arg], bufs: &mut [Vec<u8>]) {
        unsafe {
            let load: unsafe extern "C" fn(*mut *mut c_void, *const c_void) -> i32 =
                std::mem::transmute(self.sym("cuModuleLoadData"));
            let getf: unsafe extern "C" fn(
                *mut *mut c_void,
                *mut c_void,
                *const libc::c_char,
            ) -> i32 = std::mem::transmute(self.sym("cuModuleGetFunction"));
            let alloc: unsafe extern "C" fn(*mut u64, usize) -> i32 =
                std::mem::transmute(self.sym("cuMemAlloc_v2"));
            let htod: unsafe extern "C" fn(u64, *const c_void, usize) -> i32 =
                std::mem::transmute(self.sym("cuMemcpyHtoD_v2"));
            let dtoh: unsafe extern "C" fn(*mut c_void, u64, usize) -> i32 =
                std::mem::transmute(self.sym("cuMemcpyDtoH_v2"));
            let free: unsafe extern "C" fn(u64) -> i32 =
                std::mem::transmute(self.sym("cuMemFree_v2"));
            let sync: CuFn = std::mem::transmute(self.sym("cuCtxSynchronize"));
            #[allow(clippy::type_complexity)]
            let launch: unsafe extern "C" fn(
                *mut c_void,
                u32,
                u32,
                u32,
                u32,
                u32,
                u32,
                u32,
                *mut c_void,
                *mut *mut c_void,
                *mut *mut c_void,
            ) -> i32 = std::mem::transmute(self.sym("cuLaunchKernel"));
            let text = CString::new(ptx_text).unwrap();
            let mut module = std::ptr::null_mut();
            Self::check(
                load(&mut module, text.as_ptr() as *const c_void),
                "cuModuleLoadData",
            );
            let cname = CString::new(name).unwrap();
            let mut f = std::ptr::null_mut();
            Self::check(getf(&mut f, module, cname.as_ptr()), "cuModuleGetFunction");
            let mut dptrs = vec![];
            for b in bufs.iter() {
                let mut d = 0u64;
                Self::check(alloc(&mut d, b.len().max(16)), "cuMemAlloc");
                Self::check(
                    htod(d, b.as_ptr() as *const c_void, b.len()),
                    "cuMemcpyHtoD",
                );
                dptrs.push(d);
            }
            let mut vals: Vec<[u8; 8]> = args
                .iter()
                .map(|a| match a {
                    Arg::Ptr { buffer, offset } => (dptrs[*buffer] + offset).to_le_bytes(),
                    Arg::U64(v) => v.to_le_bytes(),
                    Arg::U32(v) => u64::from(*v).to_le_bytes(),
                    Arg::F32(v) => u64::from(v.to_bits()).to_le_bytes(),
                    Arg::TensorMap(_) => panic!("tensor maps are not passed by this check"),
                })
                .collect();
            let mut ptrs: Vec<*mut c_void> = vals
                .iter_mut()
                .map(|v| v.as_mut_ptr() as *mut c_void)
                .collect();
            Self::check(
                launch(
                    f,
                    l.grid[0],
                    l.grid[1],
                    l.grid[2],
                    l.block[0],
                    l.block[1],
                    l.block[2],
                    0,
                    std::ptr::null_mut(),
                    ptrs.as_mut_ptr(),
                    std::ptr::null_mut(),
                ),
                "cuLaunchKernel",
            );
            Self::check(sync(), "cuCtxSynchronize");
            for (b, d) in bufs.iter_mut().zip(&dptrs) {
                Self::check(
                    dtoh(b.as_mut_ptr() as *mut c_void, *d, b.len()),
                    "cuMemcpyDtoH",
                );
                free(*d);
            }
        }
    }
}

fn floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

struct Rng(u64);
impl Rng {
    fn f32(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    fn vec(&mut self, n: usize, s: f32) -> Vec<f32> {
        (0..n).map(|_| self.f32() * s).collect()
    }
}

/// Runs on the GPU and in the emulator; returns (max |gpu - emu|, max |emu|, bitwise equal).
fn both(
    cu: &Cuda,
    sources: &SourceMap,
    k: &Kernel,
    l: Launch,
    args: &[Arg],
    bufs: Vec<Vec<u8>>,
    out: usize,
) -> (f64, f64, bool) {
    let text = ptx::print(k, Target::Sm90, sources).unwrap();
    let mut gpu = bufs.clone();
    cu.launch(&text, &k.name, l, args, &mut gpu);
    let mut emu = bufs;
    run(k, l, args, &mut emu).unwrap();
    let (g, e) = (floats(&gpu[out]), floats(&emu[out]));
    let diff = g
        .iter()
        .zip(&e)
        .map(|(a, b)| f64::from((a - b).abs()))
        .fold(0.0, f64::max);
    let mag = e.iter().map(|v| f64::from(v.abs())).fold(0.0, f64::max);
    (diff, mag, gpu[out] == emu[out])
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn emulator_matches_gpu() {
    let cu = Cuda::open();
    let mut sources = SourceMap::new();
    let mut rng = Rng(7);
    let ptr = |b: usize| Arg::Ptr {
        buffer: b,
        offset: 0,
    };

    let k = samples::load("gelu_affine", &mut sources);
    let n = 1027usize;
    let x = rng.vec(n, 4.0);
    let args = [
        ptr(0),
        ptr(1),
        Arg::U32(1.5f32.to_bits()),
        Arg::U32((-0.25f32).to_bits()),
        Arg::U32(n as u32),
    ];
    let r = both(
        &cu,
        &sources,
        &k,
        Launch::linear(2, 256),
        &args,
        vec![bytes(&x), vec![0; 4 * n]],
        1,
    );
    println!(
        "gelu_affine   max|gpu-emu| {:.3e} (max |y| {:.3}) bitwise {}",
        r.0, r.1, r.2
    );
    assert!(r.0 <= 2e-3 * (1.0 + r.1));

    let k = samples::load("softmax_rows", &mut sources);
    let (rows, cols) = (9usize, 100usize);
    let x = rng.vec(rows * cols, 5.0);
    let args = [ptr(0), ptr(1), Arg::U32(rows as u32), Arg::U32(cols as u32)];
    let r = both(
        &cu,
        &sources,
        &k,
        Launch::linear(3, 128),
        &args,
        vec![bytes(&x), vec![0; 4 * rows * cols]],
        1,
    );
    println!(
        "softmax_rows  max|gpu-emu| {:.3e} (max |y| {:.3}) bitwise {}",
        r.0, r.1, r.2
    );
    assert!(r.0 <= 1e-5);

    let k = samples::load("matmul_f32", &mut sources);
    let (m, n, kk) = (130usize, 67usize, 37usize);
    let a = rng.vec(m * kk, 1.0);
    let b = rng.vec(kk * n, 1.0);
    let l = Launch {
        grid: [2, 3, 1],
        block: [256, 1, 1],
    };
    let args = [
        ptr(0),
        ptr(1),
        ptr(2),
        Arg::U32(m as u32),
        Arg::U32(n as u32),
        Arg::U32(kk as u32),
    ];
    let r = both(
        &cu,
        &sources,
        &k,
        l,
        &args,
        vec![bytes(&a), bytes(&b), vec![0; 4 * m * n]],
        2,
    );
    println!(
        "matmul_f32    max|gpu-emu| {:.3e} (max |c| {:.3}) bitwise {}",
        r.0, r.1, r.2
    );
    assert!(r.2, "fp32 fma chains must match bit for bit");

    let k = samples::load("matmul_bf16", &mut sources);
    let (m, n, kk) = (65usize, 129usize, 45usize);
    let ab: Vec<u8> = rng
        .vec(m * kk, 2.0)
        .into_iter()
        .flat_map(|v| bf16::from_f32(v).to_bits().to_le_bytes())
        .collect();
    let bb: Vec<u8> = rng
        .vec(kk * n, 2.0)
        .into_iter()
        .flat_map(|v| bf16::from_f32(v).to_bits().to_le_bytes())
        .collect();
    let l = Launch {
        grid: [3, 2, 1],
        block: [128, 1, 1],
    };
    let args = [
        ptr(0),
        ptr(1),
        ptr(2),
        Arg::U32(m as u32),
        Arg::U32(n as u32),
        Arg::U32(kk as u32),
    ];
    let r = both(
        &cu,
        &sources,
        &k,
        l,
        &args,
        vec![ab, bb, vec![0; 4 * m * n]],
        2,
    );
    println!(
        "matmul_bf16   max|gpu-emu| {:.3e} (max |c| {:.3}) bitwise {}",
        r.0, r.1, r.2
    );
    assert!(r.0 <= 1e-4 * (1.0 + r.1));

    for kind in [
        MmaKind::M16n8k16Bf16,
        MmaKind::M16n8k16F16,
        MmaKind::M16n8k8Tf32,
    ] {
        let k = samples::load(samples::mma_tile(kind), &mut sources);
        let kd = if kind == MmaKind::M16n8k8Tf32 { 8 } else { 16 };
        let a = rng.vec(16 * kd, 3.0);
        let b = rng.vec(kd * 8, 3.0);
        let r = both(
            &cu,
            &sources,
            &k,
            Launch::linear(1, 32),
            &[ptr(0), ptr(1), ptr(2)],
            vec![bytes(&a), bytes(&b), vec![0; 512]],
            2,
        );
        println!(
            "{:<13} max|gpu-emu| {:.3e} (max |d| {:.3}) bitwise {}",
            k.name, r.0, r.1, r.2
        );
        assert!(r.0 <= 1e-4 * (1.0 + r.1));
    }
}
