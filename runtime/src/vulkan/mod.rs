//! The Vulkan device: SPIR-V compute kernels through `ash`, the loader (`libvulkan.so.1`) loaded at
//! run time, never linked, so the binary builds and runs without Vulkan ([`Device::open`] then
//! says what to install).
//!
//! - Device: `TESSERA_VULKAN_DEVICE` (an index, or a substring of the name), else the first Vulkan
//!   1.3 device with compute, preferring discrete, integrated, virtual GPUs, then CPUs (lavapipe).
//!   The optional features present are enabled ([`Info`]).
//! - lavapipe: `LP_NATIVE_VECTOR_WIDTH` is set to `512` unless set (before the loader loads), for
//!   16-lane subgroups instead of 8. It cannot run 32: its compute shaders are at most 16 lanes
//!   wide (Mesa's `lp_state_cs.c`: `cs_type.length = MIN2(lp_native_vector_width / 32, 16)`), and
//!   with `1024` it reports 32-lane subgroups whose operations act on 16 lanes. So its
//!   [`Info::subgroup_size`] is at most 16 whatever it reports; kernels needing 32 are refused
//!   (the device layer runs their form with warps in workgroup memory instead). `GALLIVM_PERF`
//!   is set to `no_opt` unless set: lavapipe then compiles shaders without LLVM's optimisation
//!   passes (milliseconds instead of seconds for a large kernel).
//! - Buffers are byte vectors, storage buffer bindings of set 0, in host-visible, host-coherent
//!   memory for one run (simple rather than fast). Pipelines are cached (a `VkPipelineCache`
//!   under them); [`Device::time`] uses GPU timestamps. A lost device or a timeout (120 s) is a
//!   [`VkError`] with `fault`: the device then refuses work and leaks its objects.

use ash::vk;
use std::collections::{hash_map::DefaultHasher, HashMap};
use std::ffi::{c_char, CStr, CString};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::time::Duration;
use vk::PhysicalDeviceMemoryProperties as Memory;
use vk::{AccessFlags as Access, DescriptorType, PipelineStageFlags as Stage, ShaderStageFlags};

mod float_controls;
mod select;
#[cfg(test)]
mod tests;

pub use float_controls::FloatControls;
use select::{create_device, version};

/// How long a run waits for its kernel before failing with a fault.
const TIMEOUT: Duration = Duration::from_secs(120);

/// The widest subgroup lavapipe runs (module doc).
const LAVAPIPE_LANES: u32 = 16;

/// The Vulkan device could not be opened (no loader, no driver, no Vulkan 1.3 device, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenError {
    pub message: String,
}

/// A run failed; `fault`: the device was lost or timed out and refuses work (open a new one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VkError {
    pub message: String,
    pub fault: bool,
}

macro_rules! message_error {
    ($($t:ty),*) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(&self.message) }
        }
        impl std::error::Error for $t {}
    )*};
}
message_error!(OpenError, VkError);

fn open_err(message: impl Into<String>) -> OpenError {
    let message = message.into();
    OpenError { message }
}

fn vk_err(message: impl Into<String>) -> VkError {
    let (message, fault) = (message.into(), false);
    VkError { message, fault }
}

/// A failed Vulkan call as an error value: `"{call} failed: {result}"`.
trait Checked<T> {
    fn vk(self, call: &str) -> Result<T, VkError>;
    fn open(self, call: &str) -> Result<T, OpenError>;
}

impl<T> Checked<T> for Result<T, vk::Result> {
    fn vk(self, call: &str) -> Result<T, VkError> {
        self.map_err(|r| {
            let message = format!("{call} failed: {r}");
            let fault = r == vk::Result::ERROR_DEVICE_LOST;
            VkError { message, fault }
        })
    }

    fn open(self, call: &str) -> Result<T, OpenError> {
        self.map_err(|r| open_err(format!("{call} failed: {r}")))
    }
}

/// The device [`Device::open`] chose and what it can do (each feature flag: present and enabled).
#[derive(Clone, Debug, PartialEq)]
pub struct Info {
    /// `deviceName`, `driverName` ("llvmpipe"), `driverInfo`, Vulkan version, a CPU device.
    pub name: String,
    pub driver: String,
    pub driver_info: String,
    pub api: (u32, u32, u32),
    pub cpu: bool,
    /// Subgroup lanes by default (lavapipe: at most 16, module doc) and the range a pipeline may
    /// require (`subgroup_control`), with full subgroups (`full_subgroups`).
    pub subgroup_size: u32,
    pub min_subgroup: u32,
    pub max_subgroup: u32,
    pub subgroup_control: bool,
    pub full_subgroups: bool,
    /// `VK_KHR_cooperative_matrix` is listed (reported only; not enabled).
    pub cooperative_matrix: bool,
    /// Arithmetic types; 16/8-bit values in storage buffers; `shaderBufferFloat32AtomicAdd`.
    pub float64: bool,
    pub int64: bool,
    pub float16: bool,
    pub int8: bool,
    pub storage16: bool,
    pub storage8: bool,
    pub atomic_float_add: bool,
    /// The float controls a module may ask for (the rest are dropped from its words).
    pub float_controls: FloatControls,
    /// Limits: shared bytes, invocations per group, groups per dimension, push constant bytes,
    /// buffers per kernel, bytes per buffer.
    pub max_shared_bytes: u32,
    pub max_invocations: u32,
    pub max_groups: [u32; 3],
    pub max_push_bytes: u32,
    pub max_buffers: u32,
    pub max_buffer_bytes: u64,
    /// Nanoseconds per timestamp tick, and the valid bits of a compute queue timestamp (0: none).
    pub timestamp_period_ns: f32,
    pub timestamp_bits: u32,
}

/// A kernel: SPIR-V words, its entry point, a hash of the words (the pipeline cache key) and,
/// when the kernel is written for one, the subgroup width it needs.
#[derive(Clone, Copy, Debug)]
pub struct Module<'a> {
    pub words: &'a [u32],
    pub entry: &'a str,
    pub hash: u64,
    pub subgroup_size: Option<u32>,
    /// Bytes of workgroup memory the module declares.
    pub shared_bytes: u32,
}

/// One dispatch: workgroups per dimension and the `u32` push constants (at offset 0).
#[derive(Clone, Copy, Debug)]
pub struct Launch<'a> {
    pub grid: [u32; 3],
    pub push: &'a [u32],
}

/// A cached kernel: its shader module, layouts and pipeline.
#[derive(Clone, Copy, Debug, Default)]
struct Pipe {
    shader: vk::ShaderModule,
    set_layout: vk::DescriptorSetLayout,
    layout: vk::PipelineLayout,
    pipeline: vk::Pipeline,
}

/// An open Vulkan device: instance, device, a compute queue with a command buffer, and pipelines.
pub struct Device {
    info: Info,
    memory: Memory,
    pipelines: HashMap<u64, Pipe>,
    cache: vk::PipelineCache,
    command_pool: vk::CommandPool,
    cmd: vk::CommandBuffer,
    query: vk::QueryPool,
    fence: vk::Fence,
    queue: vk::Queue,
    /// The last run's buffers and descriptor pool.
    bufs: Vec<Buf>,
    descriptor_pool: vk::DescriptorPool,
    /// Lost or timed out: no more work, and nothing is destroyed (the loader stays loaded).
    fault: bool,
    device: ash::Device,
    instance: ash::Instance,
    entry: Option<ash::Entry>,
}

/// Serialises opening: `set_var` and the loader's start-up do not race another open.
static OPENING: Mutex<()> = Mutex::new(());

/// One binding's buffer and memory (`len`: the caller's bytes), kept until the next run.
struct Buf {
    buf: vk::Buffer,
    mem: vk::DeviceMemory,
    len: usize,
}

fn destroy_pipe(dev: &ash::Device, p: &Pipe) {
    // SAFETY: the objects are `dev`'s, unused by pending work, destroyed once (null: no-op).
    unsafe {
        dev.destroy_pipeline(p.pipeline, None);
        dev.destroy_pipeline_layout(p.layout, None);
        dev.destroy_descriptor_set_layout(p.set_layout, None);
        dev.destroy_shader_module(p.shader, None);
    }
}

impl Device {
    /// Loads the Vulkan loader, picks a device (module doc) and creates it with one compute queue.
    pub fn open() -> Result<Device, OpenError> {
        let _opening = OPENING.lock().unwrap_or_else(|p| p.into_inner());
        if std::env::var_os("LP_NATIVE_VECTOR_WIDTH").is_none() {
            // lavapipe's subgroups are then 16 lanes, its widest (module doc); set before it loads.
            std::env::set_var("LP_NATIVE_VECTOR_WIDTH", "512");
        }
        if std::env::var_os("GALLIVM_PERF").is_none() {
            // lavapipe compiles shaders without LLVM's optimisation passes: a large kernel
            // compiles in milliseconds instead of seconds (the golden suite: 36 s → 1.2 s for
            // one script); `GALLIVM_PERF=` (set, empty) keeps them. No effect on other drivers.
            std::env::set_var("GALLIVM_PERF", "no_opt");
        }
        let why = "no Vulkan loader: libvulkan.so.1 could not be loaded (install the Vulkan \
                   loader and a driver, e.g. Debian's libvulkan1 and mesa-vulkan-drivers)";
        // SAFETY: the loader's initialisers have no preconditions; the Device keeps `entry` alive.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| open_err(format!("{why}: {e}")))?;
        // SAFETY: `entry` holds a loaded loader.
        let v = unsafe { entry.try_enumerate_instance_version() };
        let v = v.open("vkEnumerateInstanceVersion")?;
        let v = version(v.unwrap_or(vk::API_VERSION_1_0));
        if v < (1, 3, 0) {
            let why = format!("the Vulkan loader is {v:?}; Tessera needs 1.3");
            return Err(open_err(why));
        }
        let app = vk::ApplicationInfo::default().application_name(c"tessera");
        let app = app.engine_name(c"tessera").api_version(vk::API_VERSION_1_3);
        let ci = vk::InstanceCreateInfo::default().application_info(&app);
        // SAFETY: `ci` and what it points to live across the call.
        let instance = match unsafe { entry.create_instance(&ci, None) } {
            Ok(i) => i,
            Err(vk::Result::ERROR_INCOMPATIBLE_DRIVER) => {
                let why = "the loader found no driver; install one, e.g. mesa-vulkan-drivers";
                return Err(open_err(format!("no Vulkan device ({why})")));
            }
            Err(e) => return Err(open_err(format!("vkCreateInstance failed: {e}"))),
        };
        let (family, device, info, memory) = match create_device(&instance) {
            Ok(v) => v,
            Err(e) => {
                // SAFETY: no object was created from the instance; it is destroyed once.
                unsafe { instance.destroy_instance(None) };
                return Err(e);
            }
        };
        // SAFETY: queue 0 of this family was requested at device creation.
        let queue = unsafe { device.get_device_queue(family, 0) };
        let mut dev = Device {
            info,
            memory,
            pipelines: HashMap::new(),
            cache: vk::PipelineCache::null(),
            command_pool: vk::CommandPool::null(),
            cmd: vk::CommandBuffer::null(),
            query: vk::QueryPool::null(),
            fence: vk::Fence::null(),
            queue,
            bufs: Vec::new(),
            descriptor_pool: vk::DescriptorPool::null(),
            fault: false,
            device,
            instance,
            entry: Some(entry),
        };
        // From here on, an error drops `dev`, which destroys what was created.
        let pool = vk::CommandPoolCreateInfo::default().queue_family_index(family);
        let pool = pool.flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        let (cache, fence) = (Default::default(), Default::default());
        let query = vk::QueryPoolCreateInfo::default().query_type(vk::QueryType::TIMESTAMP);
        // SAFETY: the device is live; the create infos live across the calls.
        unsafe {
            let d = &dev.device;
            let cache = d.create_pipeline_cache(&cache, None);
            dev.cache = cache.open("vkCreatePipelineCache")?;
            let pool = d.create_command_pool(&pool, None);
            dev.command_pool = pool.open("vkCreateCommandPool")?;
            dev.fence = d.create_fence(&fence, None).open("vkCreateFence")?;
            let ai = vk::CommandBufferAllocateInfo::default().command_pool(dev.command_pool);
            let cmds = d.allocate_command_buffers(&ai.command_buffer_count(1));
            let cmds = cmds.open("vkAllocateCommandBuffers")?;
            dev.cmd = *cmds.first().ok_or_else(|| open_err("no command buffer"))?;
            if dev.info.timestamp_bits > 0 {
                let query = d.create_query_pool(&query.query_count(2), None);
                dev.query = query.open("vkCreateQueryPool")?;
            }
        }
        Ok(dev)
    }

    /// The device chosen and its features.
    pub fn info(&self) -> &Info {
        &self.info
    }

    /// Whether a kernel needing subgroups of `n` lanes runs here (required, or the only size).
    pub fn runs_subgroup(&self, n: u32) -> bool {
        let i = &self.info;
        (i.subgroup_control && (i.min_subgroup..=i.max_subgroup).contains(&n))
            || (i.min_subgroup == i.max_subgroup && i.subgroup_size == n)
    }

    /// Runs the module once. `buffers[i]` is storage-buffer binding i of descriptor set 0 (any
    /// length, possibly 0: at least 16 bytes are allocated, sizes rounded up to a multiple of 4);
    /// all are uploaded before and read back after the dispatch, and only those with
    /// `readback[i] == true` are copied back into `buffers[i]` (same length as before).
    pub fn run(
        &mut self,
        m: &Module,
        buffers: &mut [Vec<u8>],
        readback: &[bool],
        l: &Launch,
    ) -> Result<(), VkError> {
        if readback.len() != buffers.len() {
            let (b, r) = (buffers.len(), readback.len());
            return Err(vk_err(format!("{b} buffers but {r} read-back flags")));
        }
        let data: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
        self.record(m, &data, l, false)?;
        self.submit()?;
        let (dev, flags) = (&self.device, vk::MemoryMapFlags::empty());
        let pairs = buffers.iter_mut().zip(&self.bufs).zip(readback);
        for ((out, b), _) in pairs.filter(|x| *x.1) {
            // SAFETY: the memory is host-visible, unmapped, of `b.len` bytes or more, and written.
            unsafe {
                let ptr = dev.map_memory(b.mem, 0, vk::WHOLE_SIZE, flags);
                let ptr = ptr.vk("vkMapMemory")?.cast::<u8>();
                out.copy_from_slice(std::slice::from_raw_parts(ptr, b.len));
                dev.unmap_memory(b.mem);
            }
        }
        self.release();
        Ok(())
    }

    /// `warmup` untimed dispatches, then `reps` timed ones, each timed with GPU timestamps around
    /// the dispatch, in microseconds. The buffers are uploaded once and not read back.
    pub fn time(
        &mut self,
        m: &Module,
        buffers: &[Vec<u8>],
        l: &Launch,
        warmup: u32,
        reps: u32,
    ) -> Result<Vec<f64>, VkError> {
        let bits = self.info.timestamp_bits;
        if bits == 0 {
            return Err(vk_err("the Vulkan device's queue writes no timestamps"));
        }
        let data: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
        self.record(m, &data, l, true)?;
        let mask = u64::MAX >> 64u32.saturating_sub(bits).min(63);
        let period = f64::from(self.info.timestamp_period_ns);
        let mut times = Vec::new();
        for i in 0..warmup.saturating_add(reps) {
            self.submit()?;
            let mut stamps = [0u64; 2];
            let flags = vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT;
            // SAFETY: the pool's 2 timestamp queries were both written by the finished submission.
            let (dev, q) = (&self.device, self.query);
            let r = unsafe { dev.get_query_pool_results(q, 0, &mut stamps, flags) };
            self.check(r, "vkGetQueryPoolResults")?;
            let ticks = stamps[1].wrapping_sub(stamps[0]) & mask;
            if i >= warmup {
                times.push(ticks as f64 * period / 1000.0);
            }
        }
        self.release();
        Ok(times)
    }

    /// Checks the launch, finds or builds the pipeline, uploads the buffers, writes the descriptor
    /// set and records the command buffer (with timestamps when `t`).
    fn record(&mut self, m: &Module, data: &[&[u8]], l: &Launch, t: bool) -> Result<(), VkError> {
        if self.fault {
            let message = "the Vulkan device faulted earlier; open it again".into();
            let fault = true;
            return Err(VkError { message, fault });
        }
        self.release();
        let (grid, max) = (l.grid, self.info.max_groups);
        if let Some(d) = (0..3).find(|&d| grid[d] > max[d]) {
            let (g, max) = (grid[d], max[d]);
            let why = format!("grid dimension {d} is {g}; the Vulkan device allows {max}");
            return Err(vk_err(why));
        }
        let pipe = self.pipeline(m, data.len(), l.push.len())?;
        for (i, d) in data.iter().enumerate() {
            self.upload(i, d)?;
        }
        let set = self.bind(&pipe)?;
        let (dev, cmd, q) = (&self.device, self.cmd, self.query);
        let push: Vec<u8> = l.push.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let compute = vk::PipelineBindPoint::COMPUTE;
        let barrier = vk::MemoryBarrier::default().src_access_mask(Access::SHADER_WRITE);
        let dst = Access::HOST_READ | Access::SHADER_READ | Access::SHADER_WRITE;
        let barrier = barrier.dst_access_mask(dst);
        let (before, after) = (Stage::COMPUTE_SHADER, Stage::HOST | Stage::COMPUTE_SHADER);
        // SAFETY: the command buffer is not pending; the pipeline, layout (this push range and
        // these bindings), set and query pool (2 timestamps) are live and match.
        unsafe {
            let begin = vk::CommandBufferBeginInfo::default();
            let begun = dev.begin_command_buffer(cmd, &begin);
            begun.vk("vkBeginCommandBuffer")?;
            if t {
                dev.cmd_reset_query_pool(cmd, q, 0, 2);
                dev.cmd_write_timestamp(cmd, Stage::TOP_OF_PIPE, q, 0);
            }
            dev.cmd_bind_pipeline(cmd, compute, pipe.pipeline);
            if set != vk::DescriptorSet::null() {
                dev.cmd_bind_descriptor_sets(cmd, compute, pipe.layout, 0, &[set], &[]);
            }
            if !push.is_empty() {
                dev.cmd_push_constants(cmd, pipe.layout, ShaderStageFlags::COMPUTE, 0, &push);
            }
            dev.cmd_dispatch(cmd, l.grid[0], l.grid[1], l.grid[2]);
            if t {
                dev.cmd_write_timestamp(cmd, Stage::BOTTOM_OF_PIPE, q, 1);
            }
            let flags = vk::DependencyFlags::empty();
            dev.cmd_pipeline_barrier(cmd, before, after, flags, &[barrier], &[], &[]);
            dev.end_command_buffer(cmd).vk("vkEndCommandBuffer")?;
        }
        Ok(())
    }

    /// Creates, fills and maps binding `i`'s buffer.
    fn upload(&mut self, i: usize, data: &[u8]) -> Result<(), VkError> {
        let dev = &self.device;
        let (len, padded) = (data.len(), data.len().max(16).div_ceil(4).saturating_mul(4));
        let size = u64::try_from(padded).unwrap_or(u64::MAX);
        let max = self.info.max_buffer_bytes;
        if size > max {
            let why = format!("the Vulkan device's storage buffers hold at most {max} bytes");
            return Err(vk_err(format!("buffer {i} is {padded} bytes; {why}")));
        }
        let ci = vk::BufferCreateInfo::default().size(size);
        let ci = ci.usage(vk::BufferUsageFlags::STORAGE_BUFFER);
        let want = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        let (local, cached) = (
            vk::MemoryPropertyFlags::DEVICE_LOCAL,
            vk::MemoryPropertyFlags::HOST_CACHED,
        );
        let types = self.memory.memory_types_as_slice();
        let flags = vk::MemoryMapFlags::empty();
        // SAFETY: the create infos live across the calls; the memory is of a type the buffer
        // accepts, bound to it, and maps `padded >= len` bytes no one else uses while mapped.
        unsafe {
            let buf = dev.create_buffer(&ci, None).vk("vkCreateBuffer")?;
            let mem = vk::DeviceMemory::null();
            self.bufs.push(Buf { buf, mem, len });
            let req = dev.get_buffer_memory_requirements(buf);
            // Host-visible memory the GPU reads at its own speed first (a GPU's BAR; all of
            // lavapipe's memory), else host memory (the kernel then reads it across the bus:
            // NVIDIA's cached type is system memory), cached before uncached.
            let mut fits: Vec<u32> = (0..types.len().min(32) as u32)
                .filter(|&i| req.memory_type_bits & (1 << i) != 0)
                .filter(|&i| types[i as usize].property_flags.contains(want))
                .collect();
            if fits.is_empty() {
                return Err(vk_err("the Vulkan device has no host-visible memory"));
            }
            fits.sort_by_key(|&i| {
                let f = types[i as usize].property_flags;
                (!f.contains(local), !f.contains(cached))
            });
            let ai = vk::MemoryAllocateInfo::default().allocation_size(req.size);
            let mut mem = Err(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY);
            for &index in &fits {
                mem = dev.allocate_memory(&ai.memory_type_index(index), None);
                // a full heap (a small BAR) falls back to the next type
                if !matches!(
                    mem,
                    Err(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY
                        | vk::Result::ERROR_OUT_OF_HOST_MEMORY)
                ) {
                    break;
                }
            }
            let mem = mem.vk("vkAllocateMemory")?;
            if let Some(b) = self.bufs.last_mut() {
                b.mem = mem;
            }
            let bound = dev.bind_buffer_memory(buf, mem, 0);
            bound.vk("vkBindBufferMemory")?;
            let ptr = dev.map_memory(mem, 0, vk::WHOLE_SIZE, flags);
            let ptr = ptr.vk("vkMapMemory")?.cast::<u8>();
            std::ptr::copy_nonoverlapping(data.as_ptr(), ptr, len);
            std::ptr::write_bytes(ptr.add(len), 0, padded - len);
            dev.unmap_memory(mem);
        }
        Ok(())
    }

    /// Allocates the run's descriptor set (null without buffers), binding i to buffer i.
    fn bind(&mut self, pipe: &Pipe) -> Result<vk::DescriptorSet, VkError> {
        let n = u32::try_from(self.bufs.len()).map_err(|_| vk_err("too many buffers"))?;
        if n == 0 {
            return Ok(vk::DescriptorSet::null());
        }
        let (dev, ty) = (&self.device, DescriptorType::STORAGE_BUFFER);
        let sizes = [vk::DescriptorPoolSize::default().ty(ty).descriptor_count(n)];
        let pi = vk::DescriptorPoolCreateInfo::default().max_sets(1);
        let layouts = [pipe.set_layout];
        let info = vk::DescriptorBufferInfo::default().range(vk::WHOLE_SIZE);
        let infos: Vec<_> = self.bufs.iter().map(|b| info.buffer(b.buf)).collect();
        // SAFETY: the create infos live across the calls; the pool has room for the set; the set,
        // layout and buffers are live and unused. The write rolls over bindings 0..n (all alike).
        unsafe {
            let pool = dev.create_descriptor_pool(&pi.pool_sizes(&sizes), None);
            self.descriptor_pool = pool.vk("vkCreateDescriptorPool")?;
            let ai = vk::DescriptorSetAllocateInfo::default().descriptor_pool(self.descriptor_pool);
            let sets = dev.allocate_descriptor_sets(&ai.set_layouts(&layouts));
            let sets = sets.vk("vkAllocateDescriptorSets")?;
            let set = *sets.first().ok_or_else(|| vk_err("no descriptor set"))?;
            let write = vk::WriteDescriptorSet::default().dst_set(set);
            dev.update_descriptor_sets(&[write.descriptor_type(ty).buffer_info(&infos)], &[]);
            Ok(set)
        }
    }

    /// Submits the command buffer and waits for it.
    fn submit(&mut self) -> Result<(), VkError> {
        let (cmds, fences) = ([self.cmd], [self.fence]);
        // SAFETY: the fence is not in use (every submission is waited for before the next one).
        let r = unsafe { self.device.reset_fences(&fences) };
        self.check(r, "vkResetFences")?;
        let submit = [vk::SubmitInfo::default().command_buffers(&cmds)];
        // SAFETY: the command buffer is recorded and not pending; the queue is only used here.
        let r = unsafe { self.device.queue_submit(self.queue, &submit, self.fence) };
        self.check(r, "vkQueueSubmit")?;
        let ns = u64::try_from(TIMEOUT.as_nanos()).unwrap_or(u64::MAX);
        // SAFETY: the fence belongs to this device.
        let r = unsafe { self.device.wait_for_fences(&fences, true, ns) };
        let Err(e) = r else { return Ok(()) };
        // The kernel may still run: nothing it uses may be freed.
        self.fault = true;
        let secs = TIMEOUT.as_secs_f64();
        let message = match e {
            vk::Result::TIMEOUT => format!("timeout: the Vulkan kernel ran over {secs:.1} s"),
            _ => format!("vkWaitForFences failed: {e}"),
        };
        let fault = true;
        Err(VkError { message, fault })
    }

    /// Frees the last run's buffers and descriptor pool (leaked after a fault: a kernel may use them).
    fn release(&mut self) {
        if self.fault {
            return;
        }
        let pool = std::mem::take(&mut self.descriptor_pool);
        // SAFETY: no pending work uses these objects; each is destroyed once (null: no-op).
        unsafe {
            self.device.destroy_descriptor_pool(pool, None);
            for b in self.bufs.drain(..) {
                self.device.destroy_buffer(b.buf, None);
                self.device.free_memory(b.mem, None);
            }
        }
    }

    /// A call's result as an error value; a lost device is remembered.
    fn check<T>(&mut self, r: Result<T, vk::Result>, call: &str) -> Result<T, VkError> {
        let r = r.vk(call);
        self.fault |= r.as_ref().is_err_and(|e| e.fault);
        r
    }

    /// The cached pipeline for this kernel, binding count and push size, built on first use.
    fn pipeline(&mut self, m: &Module, bindings: usize, words: usize) -> Result<Pipe, VkError> {
        let mut h = DefaultHasher::new();
        (m.hash, m.entry, bindings, words, m.subgroup_size).hash(&mut h);
        let key = h.finish();
        if let Some(p) = self.pipelines.get(&key) {
            return Ok(*p);
        }
        // Require the kernel's subgroup size where the device can; none if it is its only size.
        let (i, lanes) = (&self.info, self.info.subgroup_size);
        let required = |n| i.subgroup_control && (i.min_subgroup..=i.max_subgroup).contains(&n);
        let only = |n| i.min_subgroup == i.max_subgroup && lanes == n;
        if let Some(n) = m.subgroup_size.filter(|&n| !required(n) && !only(n)) {
            let why =
                format!("the Vulkan device's subgroups are {lanes} lanes; this kernel needs {n}");
            return Err(vk_err(why));
        }
        // Over the limit a GPU's driver may lose the device (NVIDIA's does) rather than refuse
        // the kernel. A CPU device's workgroup memory is ordinary memory: lavapipe runs kernels
        // over the 32 KiB it reports (the FMA attention of head dimensions 128 and up), which
        // the vulkan check in CI relies on.
        let max = self.info.max_shared_bytes;
        if m.shared_bytes > max && !self.info.cpu {
            let why = format!(
                "the kernel needs {} bytes of workgroup memory; the Vulkan device allows {max} \
                 (maxComputeSharedMemorySize)",
                m.shared_bytes
            );
            return Err(vk_err(why));
        }
        let subgroup = m.subgroup_size.filter(|&n| required(n));
        if m.words.first() != Some(&0x0723_0203) {
            return Err(vk_err("the kernel is not SPIR-V (no SPIR-V magic number)"));
        }
        let entry = CString::new(m.entry).map_err(|_| vk_err("the entry point name has a NUL"))?;
        let max = self.info.max_buffers;
        let n = u32::try_from(bindings).ok().filter(|&n| n <= max);
        let why = format!("the kernel has {bindings} buffers; the Vulkan device binds {max}");
        let n = n.ok_or_else(|| vk_err(why))?;
        let max = self.info.max_push_bytes;
        let bytes = words.checked_mul(4).and_then(|b| u32::try_from(b).ok());
        let why = format!("{words} push-constant words; the Vulkan device takes {max} bytes");
        let push = bytes.filter(|&b| b <= max).ok_or_else(|| vk_err(why))?;
        let (dev, mut p) = (&self.device, Pipe::default());
        let build = |p: &mut Pipe| -> Result<(), VkError> {
            let compute = ShaderStageFlags::COMPUTE;
            let words = float_controls::fit(m.words, &self.info.float_controls);
            let si = vk::ShaderModuleCreateInfo::default().code(&words);
            let binding = vk::DescriptorSetLayoutBinding::default().stage_flags(compute);
            let binding = binding.descriptor_type(DescriptorType::STORAGE_BUFFER);
            let binding = binding.descriptor_count(1);
            let binds: Vec<_> = (0..n).map(|i| binding.binding(i)).collect();
            let li = vk::DescriptorSetLayoutCreateInfo::default().bindings(&binds);
            let range = vk::PushConstantRange::default().size(push);
            let range = [range.stage_flags(compute)];
            let ranges = &range[..usize::from(push > 0)];
            // SAFETY: the create infos live across the calls; the words are SPIR-V (magic checked).
            unsafe {
                let shader = dev.create_shader_module(&si, None);
                p.shader = shader.vk("vkCreateShaderModule")?;
                let layout = dev.create_descriptor_set_layout(&li, None);
                p.set_layout = layout.vk("vkCreateDescriptorSetLayout")?;
                let set_layouts = [p.set_layout];
                let pli = vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts);
                let layout = dev.create_pipeline_layout(&pli.push_constant_ranges(ranges), None);
                p.layout = layout.vk("vkCreatePipelineLayout")?;
            }
            let mut sg = vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default();
            let stage = vk::PipelineShaderStageCreateInfo::default().stage(compute);
            let mut stage = stage.module(p.shader).name(&entry);
            if let Some(lanes) = subgroup {
                sg = sg.required_subgroup_size(lanes);
                stage = stage.push_next(&mut sg);
                if self.info.full_subgroups {
                    let full = vk::PipelineShaderStageCreateFlags::REQUIRE_FULL_SUBGROUPS;
                    stage = stage.flags(full);
                }
            }
            let ci = vk::ComputePipelineCreateInfo::default().stage(stage);
            let ci = [ci.layout(p.layout)];
            // SAFETY: the device, cache, module and layout are live; `ci` and its chain live
            // across the call; a subgroup size is only required within the device's range.
            let made = unsafe { dev.create_compute_pipelines(self.cache, &ci, None) };
            let (pipes, r) = made.map_or_else(|(v, e)| (v, Err(e)), |v| (v, Ok(())));
            p.pipeline = pipes.first().copied().unwrap_or_default();
            r.vk("vkCreateComputePipelines")
        };
        if let Err(e) = build(&mut p) {
            destroy_pipe(dev, &p);
            self.fault |= e.fault;
            return Err(e);
        }
        self.pipelines.insert(key, p);
        Ok(p)
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        if self.fault {
            // A kernel may still run: destroying its objects or unloading the driver under it
            // could crash the process, so everything is leaked instead.
            std::mem::forget(self.entry.take());
            return;
        }
        self.release();
        // SAFETY: no work is pending; every object is this device's or instance's and destroyed
        // once, children first (null handles: no-ops).
        unsafe {
            for p in self.pipelines.values() {
                destroy_pipe(&self.device, p);
            }
            self.device.destroy_pipeline_cache(self.cache, None);
            self.device.destroy_query_pool(self.query, None);
            self.device.destroy_fence(self.fence, None);
            self.device.destroy_command_pool(self.command_pool, None);
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}
