//! Choosing the Vulkan device and creating it with the optional features it has.

use super::*;

pub(super) fn version(v: u32) -> (u32, u32, u32) {
    let (major, minor) = (vk::api_version_major(v), vk::api_version_minor(v));
    (major, minor, vk::api_version_patch(v))
}

pub(super) fn c_text(r: Result<&CStr, std::ffi::FromBytesUntilNulError>) -> String {
    r.map_or(String::new(), |c| c.to_string_lossy().into_owned())
}

/// The first compute queue family, preferring one with timestamps: `(index, timestampValidBits)`.
pub(super) fn compute_family(
    instance: &ash::Instance,
    pd: vk::PhysicalDevice,
) -> Option<(u32, u32)> {
    // SAFETY: `pd` was enumerated from this live instance.
    let families = unsafe { instance.get_physical_device_queue_family_properties(pd) };
    let (i, f) = (families.iter().enumerate())
        .filter(|(_, f)| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
        .min_by_key(|(_, f)| f.timestamp_valid_bits == 0)?;
    Some((u32::try_from(i).ok()?, f.timestamp_valid_bits))
}

/// The physical device to use (module doc), its compute queue family and timestamp bits.
pub(super) fn pick(instance: &ash::Instance) -> Result<(vk::PhysicalDevice, u32, u32), OpenError> {
    // SAFETY: the instance is live.
    let pds = unsafe { instance.enumerate_physical_devices() };
    let pds = pds.open("vkEnumeratePhysicalDevices")?;
    // SAFETY: each handle `props` sees was enumerated from this live instance.
    let props = |pd| unsafe { instance.get_physical_device_properties(pd) };
    let name = |pd| c_text(props(pd).device_name_as_c_str());
    let list: Vec<String> = pds.iter().map(|&pd| name(pd)).collect();
    use vk::PhysicalDeviceType as T;
    let order = [T::DISCRETE_GPU, T::INTEGRATED_GPU, T::VIRTUAL_GPU, T::CPU];
    let rank = |pd| order.iter().position(|&t| t == props(pd).device_type);
    let usable =
        |pd| props(pd).api_version >= vk::API_VERSION_1_3 && compute_family(instance, pd).is_some();
    let chosen = match std::env::var("TESSERA_VULKAN_DEVICE") {
        Ok(want) if !want.trim().is_empty() => {
            let (want, w) = (want.trim(), want.trim().to_lowercase());
            let lower = |pd| name(pd).to_lowercase();
            let named = pds.iter().copied().find(|&pd| lower(pd).contains(&w));
            let found = want.parse::<usize>().map_or(named, |i| pds.get(i).copied());
            let why = format!("TESSERA_VULKAN_DEVICE={want}: no Vulkan 1.3 device with compute");
            let found = found.filter(|&pd| usable(pd));
            found.ok_or_else(|| open_err(format!("{why} in {list:?}")))?
        }
        _ => (pds.iter().copied().filter(|&pd| usable(pd)))
            .min_by_key(|&pd| rank(pd).unwrap_or(4))
            .ok_or_else(|| open_err(format!("no Vulkan 1.3 device with compute in {list:?}")))?,
    };
    let (family, bits) = compute_family(instance, chosen).unwrap_or_default();
    Ok((chosen, family, bits))
}

/// Creates the device [`pick`] chooses with one compute queue and every optional feature present:
/// `(queue family, device, what it can do, its memory types)`.
#[allow(clippy::field_reassign_with_default)] // enables the features present, one by one
pub(super) fn create_device(
    instance: &ash::Instance,
) -> Result<(u32, ash::Device, Info, Memory), OpenError> {
    let (pd, family, timestamp_bits) = pick(instance)?;
    // SAFETY: `pd` is a live physical device of this instance.
    let exts = unsafe { instance.enumerate_device_extension_properties(pd) }
        .open("vkEnumerateDeviceExtensionProperties")?;
    let has = |name: &CStr| exts.iter().any(|e| e.extension_name_as_c_str() == Ok(name));
    let atomic_listed = has(ash::ext::shader_atomic_float::NAME);
    let mut f11 = vk::PhysicalDeviceVulkan11Features::default();
    let mut f12 = vk::PhysicalDeviceVulkan12Features::default();
    let mut f13 = vk::PhysicalDeviceVulkan13Features::default();
    let mut fat = vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT::default();
    let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut f11);
    f2 = f2.push_next(&mut f12).push_next(&mut f13);
    if atomic_listed {
        f2 = f2.push_next(&mut fat);
    }
    // SAFETY: `f2` heads a valid chain of feature structs that outlive the call.
    unsafe { instance.get_physical_device_features2(pd, &mut f2) };
    let f = f2.features;
    let mut base = vk::PhysicalDeviceFeatures::default();
    let (f64, i64, i16) = (f.shader_float64, f.shader_int64, f.shader_int16);
    (base.shader_float64, base.shader_int64, base.shader_int16) = (f64, i64, i16);
    let mut e11 = vk::PhysicalDeviceVulkan11Features::default();
    e11.storage_buffer16_bit_access = f11.storage_buffer16_bit_access;
    let mut e12 = vk::PhysicalDeviceVulkan12Features::default();
    e12.storage_buffer8_bit_access = f12.storage_buffer8_bit_access;
    (e12.shader_float16, e12.shader_int8) = (f12.shader_float16, f12.shader_int8);
    e12.vulkan_memory_model = f12.vulkan_memory_model;
    e12.vulkan_memory_model_device_scope = f12.vulkan_memory_model_device_scope;
    let mut e13 = vk::PhysicalDeviceVulkan13Features::default();
    e13.subgroup_size_control = f13.subgroup_size_control;
    e13.compute_full_subgroups = f13.compute_full_subgroups;
    let mut eat = vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT::default();
    eat.shader_buffer_float32_atomic_add = fat.shader_buffer_float32_atomic_add;
    eat.shader_shared_float32_atomic_add = fat.shader_shared_float32_atomic_add;
    let on = |b: vk::Bool32| b == vk::TRUE;
    let mut p11 = vk::PhysicalDeviceVulkan11Properties::default();
    let mut p12 = vk::PhysicalDeviceVulkan12Properties::default();
    let mut p13 = vk::PhysicalDeviceVulkan13Properties::default();
    let mut drv = vk::PhysicalDeviceDriverProperties::default();
    let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut p11);
    p2 = p2
        .push_next(&mut p12)
        .push_next(&mut p13)
        .push_next(&mut drv);
    // SAFETY: `p2` heads a valid chain of property structs that outlive the call.
    unsafe { instance.get_physical_device_properties2(pd, &mut p2) };
    let (props, lim) = (p2.properties, p2.properties.limits);
    // lavapipe runs at most 16 lanes whatever subgroup size it reports (module doc).
    let llvmpipe = drv.driver_id == vk::DriverId::MESA_LLVMPIPE;
    let cap = if llvmpipe { LAVAPIPE_LANES } else { u32::MAX };
    let lanes = p11.subgroup_size.min(cap);
    let stages = p13.required_subgroup_size_stages;
    let compute_sg = stages.contains(ShaderStageFlags::COMPUTE);
    let sg = on(f13.subgroup_size_control) && lanes == p11.subgroup_size && compute_sg;
    let (lo, hi) = (p13.min_subgroup_size, p13.max_subgroup_size);
    let (min_subgroup, max_subgroup) = if sg { (lo, hi) } else { (lanes, lanes) };
    let buffers = lim.max_per_stage_descriptor_storage_buffers;
    let range = u64::from(lim.max_storage_buffer_range);
    let info = Info {
        name: c_text(props.device_name_as_c_str()),
        driver: c_text(drv.driver_name_as_c_str()),
        driver_info: c_text(drv.driver_info_as_c_str()),
        api: version(props.api_version),
        cpu: props.device_type == vk::PhysicalDeviceType::CPU,
        subgroup_size: lanes,
        min_subgroup,
        max_subgroup,
        subgroup_control: sg,
        full_subgroups: on(f13.compute_full_subgroups),
        cooperative_matrix: has(ash::khr::cooperative_matrix::NAME),
        float64: on(f.shader_float64),
        int64: on(f.shader_int64),
        float16: on(f12.shader_float16),
        int8: on(f12.shader_int8),
        storage16: on(f11.storage_buffer16_bit_access),
        storage8: on(f12.storage_buffer8_bit_access),
        atomic_float_add: on(eat.shader_buffer_float32_atomic_add),
        float_controls: super::FloatControls {
            denorm_preserve: [
                on(p12.shader_denorm_preserve_float16),
                on(p12.shader_denorm_preserve_float32),
                on(p12.shader_denorm_preserve_float64),
            ],
            signed_zero_inf_nan: [
                on(p12.shader_signed_zero_inf_nan_preserve_float16),
                on(p12.shader_signed_zero_inf_nan_preserve_float32),
                on(p12.shader_signed_zero_inf_nan_preserve_float64),
            ],
        },
        max_shared_bytes: lim.max_compute_shared_memory_size,
        max_invocations: lim.max_compute_work_group_invocations,
        max_groups: lim.max_compute_work_group_count,
        max_push_bytes: lim.max_push_constants_size,
        max_buffers: buffers.min(lim.max_descriptor_set_storage_buffers),
        max_buffer_bytes: range.min(p11.max_memory_allocation_size),
        timestamp_period_ns: lim.timestamp_period,
        timestamp_bits,
    };
    let mut f2 = vk::PhysicalDeviceFeatures2::default().features(base);
    f2 = f2.push_next(&mut e11).push_next(&mut e12);
    f2 = f2.push_next(&mut e13);
    let mut extensions: Vec<*const c_char> = Vec::new();
    if info.atomic_float_add || on(eat.shader_shared_float32_atomic_add) {
        f2 = f2.push_next(&mut eat);
        extensions.push(ash::ext::shader_atomic_float::NAME.as_ptr());
    }
    let priorities = [1.0f32];
    let queue = vk::DeviceQueueCreateInfo::default().queue_family_index(family);
    let queues = [queue.queue_priorities(&priorities)];
    let ci = vk::DeviceCreateInfo::default().queue_create_infos(&queues);
    let ci = ci.enabled_extension_names(&extensions).push_next(&mut f2);
    // SAFETY: `ci` and its chain live across the call; it asks only for what the device has.
    let device = unsafe { instance.create_device(pd, &ci, None) }.open("vkCreateDevice")?;
    // SAFETY: `pd` is a live physical device of this instance.
    let memory = unsafe { instance.get_physical_device_memory_properties(pd) };
    Ok((family, device, info, memory))
}
