//! `op.save` / `op.load` of `.npy` files (SPEC §4): every NumPy dtype round-trips exactly
//! through a file; files written by NumPy (`tests/data/numpy_*.npy`, made with `numpy.save`)
//! load with their values; bf16 is E0201; a truncated, malformed or foreign file is E0500
//! naming it, never a crash. (`tests/oracle/npy_check.py`, run by `scripts/test`, loads what
//! Tessera writes with NumPy itself.)

mod common;

use common::{assert_bad_files_fail, fresh_dir, run_script};

#[test]
fn every_numpy_dtype_round_trips_exactly() {
    let dir = fresh_dir("npy-roundtrip");
    let src = format!(
        "d = {:?}\nfor dt in ['fp16', 'fp32', 'fp64', 'int8', 'int32', 'int64', 'bool']:\n    x = (op.randn((3, 5), seed=4) * 50).to(dt)\n    p = d + '/' + dt + '.npy'\n    op.save(p, x)\n    y = op.load(p)\n    print(dt, y.dtype == x.dtype, y.shape == x.shape, y.tolist() == x.tolist())\nop.save(d + '/scalar.npy', op.tensor(2.5))\nprint(op.load(d + '/scalar.npy'))\n",
        dir.display().to_string()
    );
    let r = run_script(&dir, "rt.tsr", &src);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for dt in ["fp16", "fp32", "fp64", "int8", "int32", "int64", "bool"] {
        assert!(
            r.stdout.contains(&format!("{dt} True True True")),
            "{dt}:\n{}",
            r.stdout
        );
    }
    assert!(
        r.stdout.ends_with("tensor(2.5000, dtype=fp32)\n"),
        "{}",
        r.stdout
    );
}

#[test]
fn files_written_by_numpy_load() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let dir = fresh_dir("npy-numpy");
    let src = format!(
        "print(op.load({:?}))\nprint(op.load({:?}))\n",
        data.join("numpy_f64_3x4.npy").display().to_string(),
        data.join("numpy_i8_3.npy").display().to_string()
    );
    let r = run_script(&dir, "np.tsr", &src);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stdout,
        "tensor([[0.0000, 0.5000, 1.0000, 1.5000], [2.0000, 2.5000, 3.0000, 3.5000], [4.0000, 4.5000, 5.0000, 5.5000]], dtype=fp64)\ntensor([-1, 2, 3], dtype=int8)\n"
    );
}

#[test]
fn complex_round_trips_and_numpy_complex_files_load() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let dir = fresh_dir("npy-complex");
    let src = format!(
        "d = {:?}\nfor dt in ['c64', 'c128']:\n    x = op.complex(op.randn((3, 5), seed=4, dtype='fp64'), op.randn((3, 5), seed=5, dtype='fp64')).to(dt)\n    op.save(d + '/' + dt + '.npy', x)\n    y = op.load(d + '/' + dt + '.npy')\n    print(dt, y.dtype == x.dtype, y.shape == x.shape, op.real(y).tolist() == op.real(x).tolist(), op.imag(y).tolist() == op.imag(x).tolist())\nprint(op.load({:?}))\nprint(op.load({:?}))\n",
        dir.display().to_string(),
        data.join("numpy_c64_3.npy").display().to_string(),
        data.join("numpy_c128_2x2.npy").display().to_string()
    );
    let r = run_script(&dir, "c.tsr", &src);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stdout,
        "c64 True True True True\nc128 True True True True\n\
         tensor([1.0000+2.0000j, -0.5000-0.2500j, 0.0000+3.0000j], dtype=c64)\n\
         tensor([[1.0000e-01+2.0000e-01j, -1.0000e+300+0.0000e+00j], [0.0000e+00+1.0000e+00j, 2.0000e+00-2.0000e+00j]], dtype=c128)\n"
    );
}

#[test]
fn bad_files_are_e0500_naming_the_file() {
    let dir = fresh_dir("npy-bad");
    let good = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/numpy_f64_3x4.npy"),
    )
    .unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", good[..good.len() - 8].to_vec()),
        ("header_cut", good[..40].to_vec()),
        ("not_npy", b"hello, world".to_vec()),
        ("empty", Vec::new()),
        ("huge_shape", {
            let mut v = good.clone();
            let h = String::from_utf8_lossy(&v[10..128]).replace("(3, 4)", "(9999999999, 99)");
            v.splice(10..128, h.into_bytes());
            v
        }),
    ];
    assert_bad_files_fail(&dir, "npy", cases);
    // a header without one of its keys is named by the key it lacks
    for (key, entry) in [
        ("fortran_order", "'fortran_order': False, "),
        ("shape", "'shape': (3, 4), "),
        ("descr", "'descr': '<f8', "),
    ] {
        let mut v = good.clone();
        let h = String::from_utf8_lossy(&v[10..128]).replace(entry, &" ".repeat(entry.len()));
        assert_ne!(h.as_bytes(), &v[10..128], "{key}");
        v.splice(10..128, h.into_bytes());
        let file = dir.join(format!("no_{key}.npy"));
        std::fs::write(&file, v).unwrap();
        let r = run_script(
            &dir,
            "nokey.tsr",
            &format!("op.load({:?})\n", file.display().to_string()),
        );
        assert!(
            r.stderr.contains("error[E0500]") && r.stderr.contains(&format!("no '{key}'")),
            "{key}: {}",
            r.stderr
        );
        assert!(!r.stderr.contains("Fortran"), "{key}: {}", r.stderr);
    }
    let r = run_script(
        &dir,
        "bf16.tsr",
        &format!(
            "op.save({:?}, op.ones((2,), dtype='bf16'))\n",
            dir.join("b.npy").display().to_string()
        ),
    );
    assert!(r.stderr.contains("error[E0201]"), "{}", r.stderr);
    let r = run_script(&dir, "ext.tsr", "op.save('x.safetensors', op.ones((2,)))\n");
    assert!(r.stderr.contains("error[E0101]"), "{}", r.stderr);
}
