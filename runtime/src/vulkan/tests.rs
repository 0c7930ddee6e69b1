//! Tests of the Vulkan device with compute shaders built by rspirv. They need a Vulkan device
//! (lavapipe will do) and `spirv-val` (Debian's spirv-tools); `TESSERA_NO_VULKAN=1` skips them.

use super::{Device, Launch, Module};
use rspirv::binary::Assemble;
use rspirv::dr::{Builder, Operand};
use rspirv::spirv::{
    AddressingModel, BuiltIn, Capability, Decoration, ExecutionMode, ExecutionModel,
    FunctionControl, GroupOperation, MemoryModel, Scope, SelectionControl, StorageClass, Word,
};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};

/// What each invocation `i < n` writes to `out[i]`.
#[derive(Clone, Copy, Debug)]
enum Body {
    /// `in[i] * 2.0 + 1.0`
    Affine,
    /// the sum of `in` over the invocation's subgroup (`OpGroupNonUniformFAdd Reduce`)
    SubgroupSum,
}

/// A SPIR-V 1.6 compute shader, local size (64, 1, 1): binding 0 `in` (f32[], read-only),
/// binding 1 `out` (f32[]), push constants `{ u32 n }`.
fn shader(body: Body) -> Result<Vec<Word>, rspirv::dr::Error> {
    let mut b = Builder::new();
    b.set_version(1, 6);
    b.capability(Capability::Shader);
    if let Body::SubgroupSum = body {
        b.capability(Capability::GroupNonUniform);
        b.capability(Capability::GroupNonUniformArithmetic);
    }
    b.memory_model(AddressingModel::Logical, MemoryModel::GLSL450);
    let void = b.type_void();
    let fn_ty = b.type_function(void, []);
    let u32_ty = b.type_int(32, 0);
    let f32_ty = b.type_float(32, None);
    let bool_ty = b.type_bool();
    let v3 = b.type_vector(u32_ty, 3);
    let arr = b.type_runtime_array(f32_ty);
    b.decorate(arr, Decoration::ArrayStride, [Operand::LiteralBit32(4)]);
    let buf = b.type_struct([arr]);
    b.decorate(buf, Decoration::Block, []);
    b.member_decorate(buf, 0, Decoration::Offset, [Operand::LiteralBit32(0)]);
    let pc = b.type_struct([u32_ty]);
    b.decorate(pc, Decoration::Block, []);
    b.member_decorate(pc, 0, Decoration::Offset, [Operand::LiteralBit32(0)]);
    let p_buf = b.type_pointer(None, StorageClass::StorageBuffer, buf);
    let p_pc = b.type_pointer(None, StorageClass::PushConstant, pc);
    let p_v3 = b.type_pointer(None, StorageClass::Input, v3);
    let p_f32 = b.type_pointer(None, StorageClass::StorageBuffer, f32_ty);
    let p_u32 = b.type_pointer(None, StorageClass::PushConstant, u32_ty);
    let zero = b.constant_bit32(u32_ty, 0);
    let two = b.constant_bit32(f32_ty, 2.0f32.to_bits());
    let one = b.constant_bit32(f32_ty, 1.0f32.to_bits());
    let subgroup = b.constant_bit32(u32_ty, Scope::Subgroup as u32);

    let gid = b.variable(p_v3, None, StorageClass::Input, None);
    b.decorate(
        gid,
        Decoration::BuiltIn,
        [Operand::BuiltIn(BuiltIn::GlobalInvocationId)],
    );
    let input = b.variable(p_buf, None, StorageClass::StorageBuffer, None);
    let output = b.variable(p_buf, None, StorageClass::StorageBuffer, None);
    for (var, binding) in [(input, 0), (output, 1)] {
        b.decorate(var, Decoration::DescriptorSet, [Operand::LiteralBit32(0)]);
        b.decorate(var, Decoration::Binding, [Operand::LiteralBit32(binding)]);
    }
    b.decorate(input, Decoration::NonWritable, []);
    let push = b.variable(p_pc, None, StorageClass::PushConstant, None);

    let main = b.begin_function(void, None, FunctionControl::NONE, fn_ty)?;
    b.begin_block(None)?;
    let g = b.load(v3, None, gid, None, [])?;
    let i = b.composite_extract(u32_ty, None, g, [0])?;
    let pn = b.access_chain(p_u32, None, push, [zero])?;
    let n = b.load(u32_ty, None, pn, None, [])?;
    let inside = b.u_less_than(bool_ty, None, i, n)?;
    let (then, merge) = (b.id(), b.id());
    b.selection_merge(merge, SelectionControl::NONE)?;
    b.branch_conditional(inside, then, merge, [])?;
    b.begin_block(Some(then))?;
    let pi = b.access_chain(p_f32, None, input, [zero, i])?;
    let x = b.load(f32_ty, None, pi, None, [])?;
    let y = match body {
        Body::Affine => {
            let t = b.f_mul(f32_ty, None, x, two)?;
            b.f_add(f32_ty, None, t, one)?
        }
        Body::SubgroupSum => {
            b.group_non_uniform_f_add(f32_ty, None, subgroup, GroupOperation::Reduce, x, None)?
        }
    };
    let po = b.access_chain(p_f32, None, output, [zero, i])?;
    b.store(po, y, None, [])?;
    b.branch(merge)?;
    b.begin_block(Some(merge))?;
    b.ret()?;
    b.end_function()?;
    // SPIR-V 1.4 and later: the interface lists every global variable the entry point uses.
    b.entry_point(
        ExecutionModel::GLCompute,
        main,
        "main",
        [gid, input, output, push],
    );
    b.execution_mode(main, ExecutionMode::LocalSize, [64, 1, 1]);
    Ok(b.module().assemble())
}

fn skip_all() -> bool {
    let skip = std::env::var("TESSERA_NO_VULKAN").is_ok_and(|v| v == "1");
    if skip {
        eprintln!("Vulkan test skipped: TESSERA_NO_VULKAN=1");
    }
    skip
}

/// The device, or None when the tests are skipped by `TESSERA_NO_VULKAN=1`; no device fails.
fn device() -> Option<Device> {
    if skip_all() {
        return None;
    }
    match Device::open() {
        Ok(d) => Some(d),
        Err(e) => panic!("Device::open: {e} (TESSERA_NO_VULKAN=1 skips the Vulkan tests)"),
    }
}

/// Runs `spirv-val --target-env vulkan1.3` on the words; fails the test with its output.
fn validate(words: &[Word]) {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!(
        "tessera-vulkan-test-{}-{n}.spv",
        std::process::id()
    ));
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(&path, bytes).expect("write the SPIR-V file");
    let out = std::process::Command::new("spirv-val")
        .arg("--target-env")
        .arg("vulkan1.3")
        .arg(&path)
        .output();
    let _ = std::fs::remove_file(&path);
    let out = out.expect("run spirv-val (Debian: apt install spirv-tools)");
    assert!(
        out.status.success(),
        "spirv-val rejected the shader:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn hash(words: &[Word]) -> u64 {
    let mut h = DefaultHasher::new();
    words.hash(&mut h);
    h.finish()
}

/// The shader's entry point, needing `lanes`-lane subgroups when given.
fn module(words: &[Word], lanes: Option<u32>) -> Module<'_> {
    let hash = hash(words);
    Module {
        words,
        entry: "main",
        hash,
        subgroup_size: lanes,
        shared_bytes: 0,
    }
}

/// `groups` workgroups in x, with the push constants `push`.
fn launch(groups: u32, push: &[u32]) -> Launch<'_> {
    Launch {
        grid: [groups, 1, 1],
        push,
    }
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[test]
fn device_is_send() {
    fn send<T: Send>() {}
    send::<Device>();
}

#[test]
fn shaders_pass_spirv_val() {
    if skip_all() {
        return;
    }
    validate(&shader(Body::Affine).expect("build the shader"));
    validate(&shader(Body::SubgroupSum).expect("build the shader"));
}

#[test]
fn affine_kernel_writes_every_element() {
    let words = shader(Body::Affine).expect("build the shader");
    let Some(mut dev) = device() else { return };
    validate(&words);
    eprintln!("{:#?}", dev.info());
    let n = 1000u32;
    let input: Vec<f32> = (0..n).map(|i| i as f32 * 0.25 - 100.0).collect();
    let mut buffers = vec![f32_bytes(&input), f32_bytes(&vec![-7.0; input.len()])];
    for _ in 0..2 {
        let push = [n];
        let (m, l) = (module(&words, None), launch(16, &push));
        dev.run(&m, &mut buffers, &[false, true], &l)
            .expect("run the kernel");
        let out = f32s(&buffers[1]);
        assert_eq!(out.len(), input.len());
        for (i, (&x, &y)) in input.iter().zip(&out).enumerate() {
            assert_eq!(y, x * 2.0 + 1.0, "out[{i}]");
        }
        assert_eq!(f32s(&buffers[0]), input, "not read back: unchanged");
    }
    assert_eq!(dev.pipelines.len(), 1, "the second run reuses the pipeline");
}

/// Runs the subgroup-sum kernel requiring `lanes`-lane subgroups and checks that every element is
/// the sum over its `lanes` consecutive invocations.
fn check_subgroup_sums(dev: &mut Device, words: &[Word], lanes: u32) {
    let n = 256u32;
    let input: Vec<f32> = (0..n).map(|i| ((i * 7) % 29) as f32).collect();
    let mut buffers = vec![f32_bytes(&input), vec![0; input.len() * 4]];
    let push = [n];
    let (m, l) = (module(words, Some(lanes)), launch(n / 64, &push));
    dev.run(&m, &mut buffers, &[false, true], &l)
        .expect("run the subgroup kernel");
    let w = lanes as usize;
    for (i, &y) in f32s(&buffers[1]).iter().enumerate() {
        let start = i / w * w;
        let want: f32 = input[start..start + w].iter().sum();
        assert_eq!(
            y, want,
            "out[{i}], {lanes}-lane subgroups: the sum of in[{start}..][..{w}]"
        );
    }
}

#[test]
fn subgroup_kernel_sums_its_lanes() {
    let words = shader(Body::SubgroupSum).expect("build the shader");
    let Some(mut dev) = device() else { return };
    validate(&words);
    let info = dev.info().clone();
    if (info.min_subgroup..=info.max_subgroup).contains(&32) {
        check_subgroup_sums(&mut dev, &words, 32);
    } else {
        // lavapipe: at most 16 lanes (module doc)
        let mut buffers = vec![vec![0; 1024], vec![0; 1024]];
        let (m, l) = (module(&words, Some(32)), launch(4, &[256]));
        let e = dev
            .run(&m, &mut buffers, &[false, true], &l)
            .expect_err("no 32-lane subgroups");
        assert!(
            e.message.contains("subgroups are") && e.message.contains("needs 32"),
            "{e}"
        );
        assert!(!e.fault);
    }
    // the device's own width, which the kernel's 64 invocations must hold whole
    if 64 % info.subgroup_size == 0 {
        check_subgroup_sums(&mut dev, &words, info.subgroup_size);
    }
}

#[test]
fn time_returns_one_positive_time_per_rep() {
    let words = shader(Body::Affine).expect("build the shader");
    let Some(mut dev) = device() else { return };
    let n = 1000u32;
    let buffers = vec![f32_bytes(&vec![1.5; 1000]), vec![0; 4000]];
    let push = [n];
    let (m, l) = (module(&words, None), launch(16, &push));
    let times = dev.time(&m, &buffers, &l, 2, 5).expect("time the kernel");
    eprintln!("times (us): {times:?}");
    assert_eq!(times.len(), 5);
    assert!(times.iter().all(|t| t.is_finite() && *t > 0.0), "{times:?}");
}

#[test]
fn bad_launches_are_errors() {
    let words = shader(Body::Affine).expect("build the shader");
    let Some(mut dev) = device() else { return };
    let m = module(&words, None);
    // empty buffers get 16 bytes on the device and come back empty
    let mut empty = vec![Vec::new(), Vec::new()];
    dev.run(&m, &mut empty, &[true, true], &launch(1, &[0]))
        .expect("empty run");
    assert!(empty.iter().all(Vec::is_empty));
    // a length that is not a multiple of 4 keeps its length
    let mut odd = vec![vec![0u8; 6], vec![9u8; 7]];
    dev.run(&m, &mut odd, &[true, true], &launch(1, &[1]))
        .expect("odd run");
    assert_eq!(odd[1].len(), 7);
    assert_eq!(f32s(&odd[1]), [1.0]);

    let max = dev.info().max_groups[0];
    if let Some(too_many) = max.checked_add(1) {
        let e = dev.run(&m, &mut empty, &[false, false], &launch(too_many, &[0]));
        let e = e.expect_err("grid too large");
        assert!(e.message.contains("grid dimension 0"), "{e}");
    }
    let e = dev
        .run(&m, &mut empty, &[false], &launch(1, &[0]))
        .expect_err("flags");
    assert!(e.message.contains("read-back flags"), "{e}");
    let junk = [1u32, 2, 3];
    let bad = Module {
        words: &junk,
        hash: 1,
        ..m
    }; // a new hash: the cache is keyed by it
    let e = dev
        .run(&bad, &mut empty, &[false, false], &launch(1, &[0]))
        .expect_err("junk");
    assert!(e.message.contains("SPIR-V"), "{e}");
    let odd_lanes = Module {
        subgroup_size: Some(3),
        ..m
    };
    let e = dev.run(&odd_lanes, &mut empty, &[false, false], &launch(1, &[0]));
    assert!(e
        .expect_err("3 lanes")
        .message
        .contains("this kernel needs 3"));
    let over = dev.info().max_shared_bytes.saturating_add(4);
    let big = Module {
        shared_bytes: over,
        hash: 2,
        ..m
    };
    // (a CPU device runs it: its module declares no workgroup memory; a GPU refuses it)
    let cpu = dev.info.cpu;
    dev.info.cpu = false;
    let e = dev.run(&big, &mut empty, &[false, false], &launch(1, &[0]));
    dev.info.cpu = cpu;
    let e = e.expect_err("workgroup memory over the limit");
    assert!(e.message.contains(&format!("needs {over} bytes")), "{e}");
    assert!(!e.fault, "a refused kernel is not a fault: {e}");
    // the device still works after refused launches
    let mut ok = vec![f32_bytes(&[3.0]), vec![0; 4]];
    dev.run(&m, &mut ok, &[false, true], &launch(1, &[1]))
        .expect("run after errors");
    assert_eq!(f32s(&ok[1]), [7.0]);
}
