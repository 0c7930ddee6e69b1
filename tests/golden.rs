//! Golden script tests: every `.tsr` under `tests/golden/`, `tests/ir/`, `tests/hostile/` and
//! `examples/`, and every page of the guide (`docs/guide/src`), runs through the same runner as
//! `tessera test`. The guide's generated reference pages are also compared with what the code
//! generates now, and every builtin module member must have a description.
//! `TESSERA_BLESS=1 cargo test --test golden` rewrites expectations (and the generated pages).

use libtest_mimic::{Arguments, Failed, Trial};
use std::path::{Path, PathBuf};

fn main() {
    let args = Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_tessera"));
    let bless = std::env::var_os("TESSERA_BLESS").is_some_and(|v| v == "1");
    let cases = tessera::golden::discover(&[
        root.join("tests/golden"),
        root.join("tests/ir"),
        root.join("tests/hostile"),
        root.join("examples"),
    ]);
    assert!(
        !cases.is_empty(),
        "no golden cases found under tests/golden and examples"
    );
    let guide = root.join("docs/guide/src");
    let reference = guide.join("reference");
    let generated = ["modules.md", "cli.md", "repl.md", "errors.md"].map(|f| reference.join(f));
    let cases: Vec<PathBuf> = cases
        .into_iter()
        .chain(tessera::golden::discover(std::slice::from_ref(&guide)))
        .filter(|p| !generated.contains(p))
        .collect();
    let hostile = root.join("tests/hostile");
    let mut trials: Vec<Trial> = vec![Trial::test("tests/hostile: the set", move || {
        hostile_set(&hostile)
    })];
    trials.push(Trial::test(
        "docs/guide: every module member is described",
        || {
            let problems = tessera::reference::description_problems().map_err(Failed::from)?;
            match problems.is_empty() {
                true => Ok(()),
                false => Err(problems.join("\n").into()),
            }
        },
    ));
    let guide2 = guide.clone();
    trials.push(Trial::test(
        "docs/guide: links and the table of contents",
        move || guide_links(&guide2),
    ));
    let (exe2, reference2) = (exe.clone(), reference.clone());
    trials.push(Trial::test(
        "docs/guide/src/reference: generated pages",
        move || generated_pages(&exe2, &reference2, bless),
    ));
    trials.extend(cases.into_iter().map(|path| {
        let name = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .display()
            .to_string();
        let exe = exe.clone();
        Trial::test(name, move || {
            match tessera::golden::run_case(&exe, &path, bless, tessera::golden::TIMEOUT) {
                tessera::golden::Outcome::Passed | tessera::golden::Outcome::Blessed => Ok(()),
                tessera::golden::Outcome::Failed(report) => Err(Failed::from(report)),
            }
        })
    }));
    libtest_mimic::run(&args, trials).exit();
}

/// The hostile set (issue 15): at least 60 scripts, each with its expected exit status and
/// stderr; a failing one reports an error code, one that exits 0 reports a warning, and none
/// shows a panic or a backtrace.
fn hostile_set(dir: &Path) -> Result<(), Failed> {
    let scripts = tessera::golden::discover(&[dir.to_path_buf()]);
    if scripts.len() < 60 {
        return Err(format!("{} hostile scripts, want at least 60", scripts.len()).into());
    }
    for tsr in scripts {
        let code = std::fs::read_to_string(tsr.with_extension("code"))
            .map_err(|e| format!("{}: no .code file: {e}", tsr.display()))?;
        let stderr = std::fs::read_to_string(tsr.with_extension("stderr"))
            .map_err(|e| format!("{}: no .stderr file: {e}", tsr.display()))?;
        let status: i32 = code
            .trim()
            .parse()
            .map_err(|_| format!("{}: bad .code {code:?}", tsr.display()))?;
        let has_code = stderr.contains("error[E");
        let ok = match status {
            0 => stderr.contains("warning"),
            _ => has_code,
        };
        if !ok || stderr.contains("panicked") || stderr.contains("RUST_BACKTRACE") {
            return Err(format!(
                "{}: exit {status} needs an error code (or, at 0, a warning) and no panic:\n{stderr}",
                tsr.display()
            )
            .into());
        }
    }
    Ok(())
}

/// The generated reference pages equal what the code generates now (their `output` blocks
/// aside), and pass as guide pages. Blessing writes them, then blesses their output blocks.
fn generated_pages(exe: &Path, dir: &Path, bless: bool) -> Result<(), Failed> {
    let mut report = String::new();
    for page in tessera::reference::pages(exe).map_err(Failed::from)? {
        let path = dir.join(page.file);
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        if tessera::reference::without_outputs(&old) != page.text {
            if bless {
                std::fs::write(&path, &page.text).map_err(|e| e.to_string())?;
            } else {
                report.push_str(&format!(
                    "{} is not what the code generates (bless to rewrite it):\n{}",
                    path.display(),
                    tessera::golden::diff(
                        page.file,
                        &tessera::reference::without_outputs(&old),
                        &page.text
                    )
                ));
                continue;
            }
        }
        if !path.exists() {
            continue;
        }
        if let tessera::golden::Outcome::Failed(r) =
            tessera::golden::run_case(exe, &path, bless, tessera::golden::TIMEOUT)
        {
            report.push_str(&format!("{}:\n{r}", path.display()));
        }
    }
    match report.is_empty() {
        true => Ok(()),
        false => Err(report.into()),
    }
}

/// Every relative link of a guide page names a file that exists, and every page is in
/// `SUMMARY.md` (mdbook builds only the pages listed there).
fn guide_links(src: &Path) -> Result<(), Failed> {
    let mut pages = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).map_err(|e| e.to_string())?.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                pages.push(p);
            }
        }
    }
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).map_err(|e| e.to_string())?;
    let mut problems = Vec::new();
    for page in &pages {
        let rel = page.strip_prefix(src).unwrap_or(page).display().to_string();
        if rel != "SUMMARY.md" && !summary.contains(&format!("]({rel})")) {
            problems.push(format!("{rel} is not in SUMMARY.md"));
        }
        let text = std::fs::read_to_string(page).map_err(|e| e.to_string())?;
        let mut in_code = false;
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                in_code = !in_code;
            }
            if in_code {
                continue;
            }
            for (i, _) in line.match_indices("](") {
                let rest = &line[i + 2..];
                let Some(end) = rest.find(')') else { continue };
                let target = rest[..end].split('#').next().unwrap_or("");
                if target.is_empty() || target.contains("://") {
                    continue;
                }
                let dir = page.parent().unwrap_or(src);
                if !dir.join(target).exists() {
                    problems.push(format!(
                        "{rel}:{}: link to {target}, which does not exist",
                        n + 1
                    ));
                }
            }
        }
    }
    match problems.is_empty() {
        true => Ok(()),
        false => Err(problems.join("\n").into()),
    }
}
