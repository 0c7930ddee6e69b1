//! `op.save` / `op.load` of `.safetensors` files (SPEC §4): every Tessera dtype round-trips
//! exactly (bf16 and fp8 included); a file written by the `safetensors` Python package
//! (`tests/data/hf_mixed.safetensors`, made by `tests/data/make_safetensors.py`) loads with its
//! values; dtypes Tessera cannot hold are E0201; a truncated, malformed or endless file is
//! E0500 (E0700 when over the memory limit) naming it, never a crash.
//! (`tests/oracle/npy_check.py`, run by `scripts/test`, reads Tessera's files with the
//! `safetensors` package itself.)

mod common;

use common::{assert_bad_files_fail, fresh_dir, run_script, tessera};

fn data(name: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
        .display()
        .to_string()
}

const DTYPES: [&str; 10] = [
    "fp64", "fp32", "tf32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "int64", "int32", "int8",
];

#[test]
fn every_dtype_round_trips_exactly() {
    let dir = fresh_dir("st-roundtrip");
    let p = dir.join("all.safetensors").display().to_string();
    let src = format!(
        "p = {p:?}\n\
         dts = {DTYPES:?}\n\
         items = []\n\
         for dt in dts:\n    items.append((dt, (op.randn((3, 5), seed=4) * 50).to(dt)))\n\
         items.append(('bool', op.randn((4,), seed=1) > 0))\n\
         items.append(('scalar', op.tensor(2.5)))\n\
         items.append(('empty', op.zeros((0, 3), dtype='bf16')))\n\
         op.save(p, items)\n\
         back = op.load(p)\n\
         print([n for n, t in back])\n\
         got = dict(back)\n\
         for n, x in items:\n    y = got[n]\n    \
         print(n, y.dtype == x.dtype or (n == 'tf32' and y.dtype == op.fp32), y.shape == x.shape, y.tolist() == x.tolist())\n"
    );
    let r = run_script(&dir, "rt.tsr", &src);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let mut names: Vec<&str> = DTYPES.to_vec();
    names.extend(["bool", "scalar", "empty"]);
    let mut sorted = names.clone();
    sorted.sort();
    let listed = format!("{sorted:?}").replace('"', "'");
    assert!(r.stdout.starts_with(&listed), "{}", r.stdout);
    for n in names {
        assert!(
            r.stdout.contains(&format!("\n{n} True True True\n")),
            "{n}:\n{}",
            r.stdout
        );
    }
}

#[test]
fn a_dict_of_tensors_saves_too() {
    let dir = fresh_dir("st-dict");
    let p = dir.join("d.safetensors").display().to_string();
    let r = run_script(
        &dir,
        "d.tsr",
        &format!("op.save({p:?}, {{'w': op.eye(2), 'b': op.arange(3)}})\nprint(op.load({p:?}))\n"),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stdout,
        "[('b', tensor([0, 1, 2], dtype=int64)), ('w', tensor([[1.0000, 0.0000], [0.0000, 1.0000]], dtype=fp32))]\n"
    );
}

#[test]
fn files_written_by_the_safetensors_package_load() {
    let dir = fresh_dir("st-hf");
    let src = format!(
        "for name, t in op.load({:?}):\n    print(name, t.dtype, t.shape, t.tolist())\n",
        data("hf_mixed.safetensors")
    );
    let r = run_script(&dir, "hf.tsr", &src);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stdout,
        "a_bf16 bf16 (2, 3) [[1.0, -2.5, 3.140625], [0.0078125, -0.0, 65280.0]]\n\
         b_e4m3 fp8_e4m3 (3,) [448.0, -0.001953125, 1.125]\n\
         c_e5m2 fp8_e5m2 (3,) [57344.0, -1.52587890625e-05, 3.0]\n\
         d_u8 int32 (3,) [0, 7, 255]\n\
         e_i16 int32 (3,) [-32768, 5, 32767]\n\
         f_u32 int64 (2,) [4294967295, 1]\n\
         g_f64 fp64 (2,) [0.1, -1e+300]\n\
         h_bool bool (3,) [True, False, True]\n\
         i_f16 fp16 (2, 1) [[65504.0], [-6.103515625e-05]]\n"
    );
    // C64 (complex64) loads as c64; c128 has no safetensors dtype, so saving it is E0201
    let r = run_script(
        &dir,
        "c64.tsr",
        &format!(
            "z = op.load({:?})[0][1]\nprint(z)\nop.save({:?}, [('z', op.cast(z, 'c128'))])\n",
            data("hf_complex.safetensors"),
            dir.join("c128.safetensors").display().to_string()
        ),
    );
    assert_eq!(r.stdout, "tensor([1.0000+2.0000j], dtype=c64)\n");
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("error[E0201]") && r.stderr.contains("complex128"),
        "{}",
        r.stderr
    );
}

/// A header of `json` with its length prefix, then `data`.
fn file_with_header(json: &str, data: &[u8]) -> Vec<u8> {
    let mut v = (json.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(json.as_bytes());
    v.extend_from_slice(data);
    v
}

#[test]
fn bad_files_are_e0500_naming_the_file() {
    let dir = fresh_dir("st-bad");
    let good = std::fs::read(data("hf_mixed.safetensors")).unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", good[..good.len() - 5].to_vec()),
        ("header_cut", good[..40].to_vec()),
        ("not_safetensors", b"hello, world, this is text".to_vec()),
        ("empty", Vec::new()),
        ("header_len_huge", {
            let mut v = good.clone();
            v[..8].copy_from_slice(&u64::MAX.to_le_bytes());
            v
        }),
        (
            "offsets_overlap",
            file_with_header(
                r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#,
                &[0u8; 8],
            ),
        ),
        (
            "shape_data_mismatch",
            file_with_header(
                r#"{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#,
                &[0u8; 8],
            ),
        ),
        (
            "huge_shape",
            file_with_header(
                r#"{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}"#,
                &[0u8; 8],
            ),
        ),
        ("not_json", file_with_header("{this is not json}", &[])),
        (
            // the JSON parser behind the format keeps one of two equal keys silently; the
            // `safetensors` package refuses the file
            "duplicate_name",
            file_with_header(
                r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
                &[0u8; 8],
            ),
        ),
        (
            "data_past_header",
            file_with_header(
                r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
                &[0u8; 12],
            ),
        ),
    ];
    assert_bad_files_fail(&dir, "safetensors", cases);
}

#[test]
fn an_endless_file_is_refused_by_its_first_bytes() {
    // /dev/zero and /dev/urandom have no end: the magic string and the header are read and
    // checked first (E0500), so nothing like the memory limit is read. Under the default limit
    // (a quarter of memory) reading up to it would take seconds and gigabytes.
    let dir = fresh_dir("st-zero");
    for dev in ["zero", "urandom"] {
        for ext in ["safetensors", "npy"] {
            let link = dir.join(format!("{dev}.{ext}"));
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(format!("/dev/{dev}"), &link).unwrap();
            let path = dir.join(format!("{dev}_{ext}.tsr"));
            std::fs::write(
                &path,
                format!("op.load({:?})\n", link.display().to_string()),
            )
            .unwrap();
            let start = std::time::Instant::now();
            let r = tessera(&["run".as_ref(), path.as_os_str()], &[]);
            let took = start.elapsed();
            assert_eq!(r.code, 1, "{dev}.{ext}: {}", r.stderr);
            assert!(
                r.stderr.contains("error[E0500]"),
                "{dev}.{ext}: {}",
                r.stderr
            );
            assert!(
                r.stderr.contains(&format!("{dev}.{ext}")),
                "{dev}.{ext}: {}",
                r.stderr
            );
            assert!(
                took < std::time::Duration::from_secs(20),
                "{dev}.{ext} took {took:?}"
            );
        }
    }
}

#[test]
fn a_huge_declared_data_length_is_e0700_before_reading() {
    // a valid header whose offsets declare more data than the limit: refused before the read
    let dir = fresh_dir("st-huge-data");
    let file = dir.join("big.safetensors");
    std::fs::write(
        &file,
        file_with_header(
            r#"{"a":{"dtype":"F32","shape":[268435456],"data_offsets":[0,1073741824]}}"#,
            &[0u8; 8],
        ),
    )
    .unwrap();
    let path = dir.join("big.tsr");
    std::fs::write(
        &path,
        format!("op.load({:?})\n", file.display().to_string()),
    )
    .unwrap();
    let r = tessera(
        &["run".as_ref(), path.as_os_str()],
        &[("TESSERA_MAX_BYTES", "8M")],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("error[E0700]"), "{}", r.stderr);
}

#[test]
fn wrong_arguments_are_e0101() {
    let dir = fresh_dir("st-args");
    let p = dir.join("x.safetensors").display().to_string();
    for (what, call) in [
        ("one tensor", format!("op.save({p:?}, op.ones((2,)))")),
        (
            "a duplicate name",
            format!("op.save({p:?}, [('a', op.ones((2,))), ('a', op.ones((2,)))])"),
        ),
        (
            // the format's reserved key: a file neither Tessera nor the package could load
            "the reserved name __metadata__",
            format!("op.save({p:?}, [('__metadata__', op.ones((2,)))])"),
        ),
        (
            "a non-string name",
            format!("op.save({p:?}, [(1, op.ones((2,)))])"),
        ),
        ("a non-tensor value", format!("op.save({p:?}, {{'a': 3}})")),
        (
            "a non-pair item",
            format!("op.save({p:?}, [op.ones((2,))])"),
        ),
        (
            "an unknown extension",
            "op.save('x.bin', [('a', op.ones((2,)))])".to_string(),
        ),
    ] {
        let r = run_script(&dir, "a.tsr", &format!("{call}\n"));
        assert_eq!(r.code, 1, "{what}: {}", r.stderr);
        assert!(r.stderr.contains("error[E0101]"), "{what}: {}", r.stderr);
    }
    assert!(
        !std::path::Path::new(&p).exists(),
        "nothing is written on an error"
    );
}
