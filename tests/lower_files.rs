//! Compiletest-style tests of `tessera lower`: each hand-written `tests/lower/NAME.tile` is
//! lowered to PTX for sm_90 and compared with `NAME.ptx`, or, when lowering fails, its
//! diagnostic with `NAME.stderr` (one of the two must exist). `TESSERA_BLESS=1` rewrites the
//! expected files from the actual output.

use std::path::PathBuf;
use tessera::lower::{lower_text, Level};
use tessera_compiler::backend::ptx::Target;

#[test]
fn hand_written_tile_ir_lowers_as_expected() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/lower");
    let bless = std::env::var_os("TESSERA_BLESS").is_some_and(|v| v == "1");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/lower")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "tile"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .tile files in {}", dir.display());
    let mut failures = vec![];
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read .tile");
        let name = f
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let (actual, ext, other) = match lower_text(&name, &text, Level::Ptx, Target::Sm90) {
            Ok(ptx) => (ptx, "ptx", "stderr"),
            Err((msg, _)) => (msg, "stderr", "ptx"),
        };
        if ext == "stderr" && !actual.starts_with("error[E") {
            failures.push(format!("{name}: an error without a code:\n{actual}"));
        }
        let expected_path = f.with_extension(ext);
        if bless {
            std::fs::write(&expected_path, &actual).expect("bless");
            let _ = std::fs::remove_file(f.with_extension(other));
            continue;
        }
        match std::fs::read_to_string(&expected_path) {
            Ok(exp) if exp == actual => {}
            Ok(exp) => failures.push(format!(
                "{name}: output differs from {}:\n--- expected\n{}\n--- actual\n{}",
                expected_path.display(),
                exp.lines().take(40).collect::<Vec<_>>().join("\n"),
                actual.lines().take(40).collect::<Vec<_>>().join("\n")
            )),
            Err(_) => failures.push(format!(
                "{name}: no {} (lowering gave {ext}); bless with TESSERA_BLESS=1",
                expected_path.display()
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The same files lowered to SPIR-V (`tessera lower --to spirv`): the disassembly compared with
/// `NAME.spvasm`, or the reason it is not translated with `NAME.spirv.stderr`; every module
/// translated passes `spirv-val --target-env vulkan1.3` (Debian's spirv-tools, installed by
/// `scripts/test`).
#[test]
fn hand_written_tile_ir_lowers_to_valid_spirv() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/lower");
    let bless = std::env::var_os("TESSERA_BLESS").is_some_and(|v| v == "1");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/lower")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "tile"))
        .collect();
    files.sort();
    let mut failures = vec![];
    let mut translated = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read .tile");
        let name = f
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let (actual, ext, other) = match lower_text(&name, &text, Level::Spirv, Target::Spirv) {
            Ok(asm) => (asm, "spvasm", "spirv.stderr"),
            Err((msg, _)) => (msg, "spirv.stderr", "spvasm"),
        };
        if ext == "spirv.stderr" && !actual.starts_with("error[E") {
            failures.push(format!("{name}: an error without a code:\n{actual}"));
        }
        if ext == "spvasm" {
            translated += 1;
            let mut modules = vec![];
            // a file of several kernels: each from its `tile.kernel` line
            let mut starts: Vec<usize> = text
                .match_indices("\ntile.kernel")
                .map(|(i, _)| i + 1)
                .collect();
            starts.insert(0, 0);
            starts.push(text.len());
            for (i, w) in starts.windows(2).enumerate() {
                let mut sources = tessera_lang::SourceMap::new();
                let k = tessera_compiler::tile::text::parse(&text[w[0]..w[1]], &mut sources)
                    .expect("parses");
                let checked = tessera_compiler::tile::check::check(&k).expect("checks");
                let s = tessera_compiler::backend::spirv::translate(checked).expect("translates");
                modules.push((format!("{i}"), s.words));
                if let Some(sw) = s.shared_warps {
                    modules.push((format!("{i}.shared-warps"), sw));
                }
            }
            for (form, words) in &modules {
                let path = std::env::temp_dir()
                    .join(format!("tessera-{}-{name}{form}.spv", std::process::id()));
                let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
                std::fs::write(&path, bytes).expect("write a module");
                let out = std::process::Command::new("spirv-val")
                    .args(["--target-env", "vulkan1.3"])
                    .arg(&path)
                    .output()
                    .expect("spirv-val runs (scripts/test installs Debian's spirv-tools)");
                let _ = std::fs::remove_file(&path);
                if !out.status.success() {
                    failures.push(format!(
                        "{name}{form}: spirv-val: {}{}",
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr)
                    ));
                }
            }
        }
        let expected_path = f.with_extension(ext);
        if bless {
            std::fs::write(&expected_path, &actual).expect("bless");
            let _ = std::fs::remove_file(f.with_extension(other));
            continue;
        }
        match std::fs::read_to_string(&expected_path) {
            Ok(exp) if exp == actual => {}
            Ok(_) => failures.push(format!(
                "{name}: SPIR-V output differs from {}",
                expected_path.display()
            )),
            Err(_) => failures.push(format!(
                "{name}: no {}; bless with TESSERA_BLESS=1",
                expected_path.display()
            )),
        }
    }
    assert!(
        translated >= 2,
        "only {translated} .tile files translate to SPIR-V"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// `tessera lower` on a file of many kernels (a dump of a large script) takes time linear in
/// their number: each kernel is parsed from its own lines (a copy of the whole file per
/// kernel made 2,000 kernels take 30 s and 727 MB).
#[test]
fn lowering_a_file_of_many_kernels_is_linear_in_their_number() {
    let dir = std::env::temp_dir().join(format!("tessera-lower-many-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let time = |n: usize| {
        let mut text = String::new();
        for i in 1..=n {
            text.push_str(&format!(
                "tile.kernel @k{i}(%0 @x: !tile.global<fp32> in, %1 @y: !tile.global<fp32> out) grid = [1, 1, 1] block = [32, 1, 1] {{   loc(\"m.tsr\":1:1)\n  %2 = tile.special %tid.x : u32   loc(\"m.tsr\":2:1)\n  %3 = tile.load.f32 %0[%2] : f32   loc(\"m.tsr\":3:1)\n  tile.store.f32 %1[%2], (%3)   loc(\"m.tsr\":4:1)\n}}\n"
            ));
        }
        let path = dir.join(format!("many{n}.tile"));
        std::fs::write(&path, text).expect("write");
        let start = std::time::Instant::now();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["lower", "--to", "target"])
            .arg(&path)
            .output()
            .expect("tessera runs");
        let took = start.elapsed().as_secs_f64();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains(&format!("k{n}")),
            "the last kernel is lowered"
        );
        took
    };
    // 4× the kernels: about 4× the time when linear, 16× when quadratic.
    let (small, large) = (time(500), time(2000));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        large < 9.0 * small.max(0.05),
        "500 kernels {small:.2} s; 2,000 kernels {large:.2} s"
    );
}
