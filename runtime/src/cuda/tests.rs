//! Tests that hold on any machine. Without a CUDA driver, opening fails cleanly with a reason
//! that names the driver; with one, the device opens and reports a supported GPU.

use super::*;

fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the library.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

#[test]
fn open_without_a_driver_is_an_error_naming_it() {
    let r = Device::open(0);
    if driver_present() {
        // A machine with the driver: either a usable GPU or a reason that is not about the
        // library.
        if let Err(why) = r {
            assert!(!why.to_string().is_empty());
        }
    } else {
        let why = r.err().expect("no driver library, so open must fail");
        let text = why.to_string();
        assert!(text.contains("libcuda"), "{text}");
        assert!(text.contains("CUDA driver"), "{text}");
        assert_eq!(probe_driver().err(), Some(why));
    }
}

#[test]
fn open_twice_without_a_driver_keeps_failing_cleanly() {
    if driver_present() {
        return;
    }
    for _ in 0..3 {
        assert!(Device::open(0).is_err());
        assert!(Device::open(7).is_err());
    }
}

#[test]
fn sticky_errors_are_faults() {
    for n in [
        "CUDA_ERROR_ILLEGAL_ADDRESS",
        "CUDA_ERROR_ASSERT",
        "CUDA_ERROR_LAUNCH_TIMEOUT",
        "CUDA_ERROR_MISALIGNED_ADDRESS",
        "timeout",
    ] {
        assert!(is_fault(n), "{n}");
    }
    for n in [
        "CUDA_ERROR_OUT_OF_MEMORY",
        "CUDA_ERROR_INVALID_PTX",
        "CUDA_ERROR_INVALID_VALUE",
        "CUDA_ERROR_NOT_FOUND",
    ] {
        assert!(!is_fault(n), "{n}");
    }
}

#[test]
fn targets_follow_the_compute_capability() {
    let mut i = DeviceInfo {
        ordinal: 0,
        name: "x".into(),
        capability: (8, 6),
        sm_count: 1,
        max_shared_optin: 0,
        total_mem: 0,
        driver_version: (12, 8),
    };
    assert_eq!(i.target_name(), "sm_80");
    i.capability = (9, 0);
    assert_eq!(i.target_name(), "sm_90");
    i.capability = (10, 0);
    assert_eq!(i.target_name(), "sm_100");
    i.capability = (12, 0);
    assert_eq!(i.target_name(), "sm_100");
}

#[test]
fn errors_print_what_name_and_detail() {
    let e = CudaError {
        what: "launching kernel 'k'".into(),
        name: "CUDA_ERROR_ILLEGAL_ADDRESS".into(),
        detail: "an illegal memory access was encountered".into(),
        fault: true,
    };
    assert_eq!(
        e.to_string(),
        "launching kernel 'k': CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)"
    );
}
