//! `tessera run` on files that are not scripts: bytes that are not UTF-8, endless device
//! files, huge files. Each ends quickly with exit status 2 and a diagnostic.

mod common;

use std::path::Path;
use std::time::Duration;

fn run(path: &Path) -> (i32, String, Duration) {
    let r = common::tessera(&[Path::new("run"), path], &[]);
    (r.code, r.stderr, r.took)
}

fn temp(name: &str) -> std::path::PathBuf {
    common::fresh_dir(&format!("files-{name}")).join(name)
}

#[test]
fn a_script_that_is_not_utf8_is_e0001_at_its_first_bad_byte() {
    let p = temp("latin1.tsr");
    // Line 2, column 8: 0xe9 (Latin-1 'é').
    std::fs::write(&p, b"x = 1\nprint(\"caf\xe9\")\n").unwrap();
    let (code, stderr, _) = run(&p);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("error[E0001]"), "{stderr}");
    assert!(stderr.contains("is not UTF-8 text"), "{stderr}");
    assert!(stderr.contains("byte 0xe9 is not UTF-8"), "{stderr}");
    assert!(
        stderr.contains(":2:11"),
        "the excerpt names line 2, column 11: {stderr}"
    );
    let _ = std::fs::remove_file(&p);
}

#[test]
fn an_endless_device_file_is_not_read_forever() {
    for dev in ["/dev/urandom", "/dev/zero"] {
        let p = std::path::Path::new(dev);
        if !p.exists() {
            continue;
        }
        let (code, stderr, took) = run(p);
        assert_eq!(code, 2, "{dev}: {stderr}");
        assert!(took < Duration::from_secs(60), "{dev} took {took:?}");
        // urandom fails the UTF-8 check; zero (all NUL bytes, valid UTF-8) hits the size cap.
        assert!(
            stderr.contains("is not UTF-8 text") || stderr.contains("is larger than 64 MiB"),
            "{dev}: {stderr}"
        );
        assert!(
            stderr.len() < 10_000,
            "{dev}: {} bytes of stderr",
            stderr.len()
        );
    }
}

#[test]
fn a_file_over_the_size_cap_is_e0700() {
    let p = temp("huge.tsr");
    let f = std::fs::File::create(&p).unwrap();
    // Sparse: no disk is used for the zeros.
    f.set_len((64 << 20) + 1).unwrap();
    drop(f);
    let (code, stderr, _) = run(&p);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("error[E0700]"), "{stderr}");
    assert!(stderr.contains("is larger than 64 MiB"), "{stderr}");
    let _ = std::fs::remove_file(&p);
}

#[test]
fn an_unwritable_emit_ptx_folder_stops_the_run_before_it_starts() {
    let p = temp("emit.tsr");
    std::fs::write(&p, "print(\"ran\")\n").unwrap();
    // /proc refuses new files even to root.
    let p = p.to_str().unwrap();
    let r = common::tessera(&["run", "--emit-ptx", "/proc/tessera-nope/ptx", p], &[]);
    let stderr = &r.stderr;
    assert_eq!(r.code, 2, "{stderr}");
    assert_eq!(r.stdout, "", "nothing may run");
    assert!(
        stderr.contains("--emit-ptx /proc/tessera-nope/ptx: cannot write there"),
        "{stderr}"
    );
    let _ = std::fs::remove_file(p);
}

#[test]
fn a_diagnostic_on_a_huge_line_shows_a_window_of_it() {
    // A 200,000-term expression on one line: the excerpt shows the part around the error,
    // not the megabyte-long line.
    let p = temp("wide.tsr");
    let mut line = String::from("x = 1");
    for _ in 0..200_000 {
        line.push_str(" + 1");
    }
    std::fs::write(&p, format!("y = 2\n{line}\n")).unwrap();
    let (code, stderr, _) = run(&p);
    assert_eq!(code, 2, "{}", &stderr[..stderr.len().min(2000)]);
    assert!(
        stderr.contains("error[E0001]"),
        "{}",
        &stderr[..stderr.len().min(2000)]
    );
    assert!(stderr.len() < 4000, "{} bytes of stderr", stderr.len());
    assert!(stderr.contains('…'), "{stderr}");
    // The header keeps the true line and column.
    let header = stderr
        .lines()
        .find(|l| l.contains("wide.tsr:"))
        .unwrap_or("");
    assert!(header.contains("wide.tsr:2:"), "{header}");
    let col: usize = header
        .rsplit(':')
        .next()
        .and_then(|c| c.trim_end_matches(" ]").trim().parse().ok())
        .unwrap_or(0);
    assert!(col > 1000, "{header}");
    let _ = std::fs::remove_file(&p);
}

#[test]
fn an_invalid_tessera_variable_is_an_error_naming_it() {
    let p = temp("env.tsr");
    std::fs::write(&p, "print(\"ran\")\n").unwrap();
    for (var, value) in [
        ("TESSERA_STEP_LIMIT", "lots"),
        ("TESSERA_MAX_BYTES", "4 gigs"),
        ("TESSERA_AUTOTUNE", "offf"),
        ("TESSERA_CUDA_TIMEOUT", "-1"),
        ("TESSERA_CUDA", "of"),
    ] {
        let r = common::tessera(&[Path::new("run"), &p], &[(var, value)]);
        let stderr = &r.stderr;
        assert_eq!(r.code, 2, "{var}={value}: {stderr}");
        assert!(stderr.contains("error[E0101]"), "{var}={value}: {stderr}");
        assert!(
            stderr.contains(&format!("{var}={value:?} is not valid")),
            "{stderr}"
        );
        assert_eq!(r.stdout, "", "{var}: nothing may run");
    }
    // Valid values run.
    let valid = [
        ("TESSERA_STEP_LIMIT", "100000"),
        ("TESSERA_MAX_BYTES", "512M"),
        ("TESSERA_AUTOTUNE", "OFF"),
    ];
    let r = common::tessera(&[Path::new("run"), &p], &valid);
    assert_eq!(r.stdout, "ran\n", "{}", r.stderr);
    let _ = std::fs::remove_file(&p);
}

/// Every error of `tessera lower` on a file it cannot read is a coded diagnostic: a directory,
/// bytes that are not UTF-8 (at the first bad byte), an endless device file (not read
/// forever), a missing file.
#[test]
fn tessera_lower_on_files_that_are_not_tile_ir_is_a_coded_error() {
    let latin1 = temp("latin1.tile");
    std::fs::write(&latin1, b"tile.kernel @caf\xe9() {\n}\n").unwrap();
    let dir = latin1.parent().unwrap().to_path_buf();
    let missing = dir.join("missing.tile");
    let cases: [(&Path, &str, &str); 4] = [
        (&dir, "error[E0101]", "Is a directory"),
        (&latin1, "error[E0001]", "byte 0xe9 is not UTF-8"),
        (Path::new("/dev/zero"), "error[E0700]", "larger than 64 MiB"),
        (&missing, "error[E0101]", "cannot read"),
    ];
    for (path, code, what) in cases {
        let r = common::tessera(&[Path::new("lower"), path], &[]);
        assert_eq!(r.code, 2, "{}: {}", path.display(), r.stderr);
        assert!(r.stderr.contains(code), "{}: {}", path.display(), r.stderr);
        assert!(r.stderr.contains(what), "{}: {}", path.display(), r.stderr);
        assert!(r.took < Duration::from_secs(60), "{}", path.display());
    }
    assert!(
        common::tessera(&[Path::new("lower"), &latin1], &[])
            .stderr
            .contains("latin1.tile:1:17"),
        "at line 1, column 17"
    );
    let _ = std::fs::remove_file(&latin1);
}

/// Kernels named in any Python identifier (`def 核函数`) get ASCII PTX names, and `--emit-ptx`
/// files of the same names, on the cpu and the emulator.
#[test]
fn non_ascii_kernel_names_emit_ascii_ptx_names() {
    let p = temp("unicode.tsr");
    std::fs::write(
        &p,
        "@op.kernel\ndef 核函数(数据):\n    return 数据 * 2.0\nprint(核函数(op.ones((4,))))\n",
    )
    .unwrap();
    for device in ["cpu", "emu"] {
        let dir = p.with_file_name(format!("ptx-{device}"));
        let _ = std::fs::remove_dir_all(&dir);
        let r = common::tessera(
            &[
                Path::new("run"),
                Path::new("--device"),
                Path::new(device),
                Path::new("--emit-ptx"),
                &dir,
                &p,
            ],
            &[],
        );
        assert_eq!(r.code, 0, "{device}: {}", r.stderr);
        assert!(r.stdout.contains("2.0000"), "{device}: {}", r.stdout);
        let files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".ptx"))
            .collect();
        assert_eq!(files, ["$u6838u51fdu6570$_elementwise_0.ptx"], "{device}");
        assert!(
            dir.join("$u6838u51fdu6570$_elementwise_0.regs").exists(),
            "{device}"
        );
        let ptx = std::fs::read_to_string(dir.join(&files[0])).unwrap();
        assert!(ptx.is_ascii(), "{device}");
        assert!(
            ptx.contains(".visible .entry $u6838u51fdu6570$_elementwise_0("),
            "{device}: {ptx}"
        );
    }
    // SPIR-V modules are written under the same ASCII name
    let dir = p.with_file_name("spv");
    let _ = std::fs::remove_dir_all(&dir);
    let r = common::tessera(
        &[
            Path::new("run"),
            Path::new("--target"),
            Path::new("spirv"),
            Path::new("--emit-spirv"),
            &dir,
            &p,
        ],
        &[],
    );
    assert_eq!(r.code, 0, "spirv: {}", r.stderr);
    let files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files, ["$u6838u51fdu6570$_elementwise_0.spv"]);
}

/// Usage errors of the command line (a bad flag value, an unknown flag, a missing file) are
/// coded like every other error: E0101, exit status 2.
#[test]
fn usage_errors_are_e0101() {
    for args in [
        &["lower", "--to", "bogus", "x.tile"][..],
        &["lower", "--bogus", "x.tile"][..],
        &["run"][..],
    ] {
        let args: Vec<&Path> = args.iter().map(Path::new).collect();
        let r = common::tessera(&args, &[]);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.starts_with("error[E0101]: "),
            "{args:?}: {}",
            r.stderr
        );
    }
}
