//! Running a `.tsr` script in batch (`tessera run`, `tessera check`, piped stdin).

use std::cell::RefCell;
use std::io::{IsTerminal, Write};
use std::rc::Rc;
use tessera_lang::eval::Interp;
use tessera_lang::{parse, Diagnostic};

/// Options of `tessera run` (SPEC §1).
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    pub args: Vec<String>,
    pub target: Option<String>,
    pub device: Option<String>,
    pub dump: Vec<String>,
    pub emit_ptx: Option<std::path::PathBuf>,
    /// `--emit-spirv DIR`.
    pub emit_spirv: Option<std::path::PathBuf>,
    pub profile: bool,
}

/// Exit status of SPEC §1: 0 success, 1 runtime error, 2 parse error or bad argument.
pub type ExitCode = i32;

/// Whether diagnostics on stderr get colour.
pub fn stderr_color() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn print_diags(interp: &Interp, diags: &[Diagnostic]) {
    let color = stderr_color();
    let mut err = std::io::stderr().lock();
    for d in diags {
        let _ = err.write_all(d.render(&interp.sources, color).as_bytes());
    }
    let _ = err.flush();
}

/// Runs `f` on a thread with a large stack: deep recursion in user code must reach the
/// recursion limit (E0500), never overflow the native stack.
pub fn with_big_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let handle = std::thread::Builder::new()
        .name("tessera-eval".into())
        .stack_size(1 << 30)
        .spawn(f);
    match handle {
        Ok(h) => match h.join() {
            Ok(v) => v,
            Err(_) => {
                eprintln!("error: internal error: the evaluator thread panicked");
                std::process::exit(101);
            }
        },
        Err(e) => {
            eprintln!("error: cannot start the evaluator thread: {e}");
            std::process::exit(101);
        }
    }
}

/// A session ready to run host code: the interpreter with every builtin module installed.
pub fn new_interp(opts: &RunOptions, script_name: &str) -> Result<Interp, Diagnostic> {
    new_session(opts, script_name).map(|(i, _)| i)
}

/// [`new_interp`] with the kernel session it installed.
pub fn new_session(
    opts: &RunOptions,
    script_name: &str,
) -> Result<(Interp, Rc<tessera_stdlib::session::Session>), Diagnostic> {
    let mut interp = Interp::new();
    let mut argv = vec![script_name.to_string()];
    argv.extend(opts.args.iter().cloned());
    let session = tessera_stdlib::install_session(
        &mut interp,
        &tessera_stdlib::Config {
            argv,
            target: opts.target.clone(),
            device: opts.device.clone(),
            dump: opts.dump.clone(),
            emit_ptx: opts.emit_ptx.clone(),
            emit_spirv: opts.emit_spirv.clone(),
        },
    )?;
    Ok((interp, session))
}

/// Runs source text as a script. `check_only` parses and stops.
pub fn run_source(name: &str, text: String, opts: &RunOptions, check_only: bool) -> ExitCode {
    let name = name.to_string();
    let opts = opts.clone();
    with_big_stack(move || run_source_inner(&name, text, &opts, check_only))
}

fn run_source_inner(name: &str, text: String, opts: &RunOptions, check_only: bool) -> ExitCode {
    let (mut interp, session) = match new_session(opts, name) {
        Ok(i) => i,
        Err(d) => {
            print_diags(&Interp::new(), &[d]);
            return 2;
        }
    };
    // A testing aid: bound the evaluation steps of a run (E0500 beyond).
    interp.step_limit = std::env::var("TESSERA_STEP_LIMIT")
        .ok()
        .and_then(|v| v.parse().ok());
    let file = interp.sources.add(name, text.clone());
    let module = match parse::parse_module(&text, file) {
        Ok(m) => m,
        Err(diags) => {
            print_diags(&interp, &diags);
            return 2;
        }
    };
    if check_only {
        // Names are resolved statically (nothing runs): an undefined name or an unknown
        // module member is reported as the run would report it, with exit status 1.
        let diags = interp.check_names(&module);
        if diags.is_empty() {
            return 0;
        }
        print_diags(&interp, &diags);
        return 1;
    }
    // stdout is line-buffered, on a terminal and to a pipe or file alike: a long run shows
    // its progress as it prints. `print(..., flush=True)` flushes a partial line too, and a
    // warning or dump on stderr first flushes what stdout holds, so the two stay in order.
    let out = Rc::new(RefCell::new(std::io::BufWriter::with_capacity(
        1 << 16,
        std::io::stdout(),
    )));
    // A reader that went away (`tessera run x.tsr | head -1`): the run stops at its next step
    // and ends quietly, as Python's does, instead of printing into a closed pipe forever.
    let broken = Rc::new(std::cell::Cell::new(false));
    let check = {
        let (saw, stop) = (broken.clone(), interp.interrupt.clone());
        move |r: std::io::Result<()>| {
            if r.is_err_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) {
                saw.set(true);
                stop.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
    };
    let (sink, done) = (out.clone(), check.clone());
    interp.set_output(Box::new(move |s| {
        let mut w = sink.borrow_mut();
        let mut r = w.write_all(s.as_bytes());
        if r.is_ok() && s.contains('\n') {
            r = w.flush();
        }
        done(r);
    }));
    let (sink, done) = (out.clone(), check);
    interp.set_flush(Box::new(move || done(sink.borrow_mut().flush())));
    let sink = out.clone();
    interp.set_err_output(Box::new(move |s| {
        let _ = sink.borrow_mut().flush();
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(s.as_bytes());
        let _ = err.flush();
    }));
    // `--profile`: every launch of the run is timed once; launches of the same kernel are
    // merged (the median is shown) and the table goes to stderr at exit.
    let prev = opts
        .profile
        .then(|| session.profile.borrow_mut().start(1, true));
    let result = interp.exec_module(&module);
    let flushed = out.borrow_mut().flush();
    if broken.get()
        || flushed
            .as_ref()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    {
        // the reader is gone: nothing more can be shown; the run ends without an error message
        return 0;
    }
    if let Err(e) = flushed {
        eprintln!("error: cannot write the output: {e}");
        return 1;
    }
    if let Some(prev) = prev {
        let rows = session.profile.borrow_mut().finish(prev);
        let notes = std::mem::take(&mut session.profile.borrow_mut().notes);
        let launches: u32 = rows.iter().map(|r| r.launches).sum();
        let mut table = tessera_stdlib::profile::table(
            &rows,
            Some(format!(
                "profile of the run: device {}, model for {}, {launches} kernel launch(es)",
                session.device(),
                session.target.get().name()
            )),
        );
        table.add_notes(notes);
        eprintln!("{}", table.text());
    }
    match result {
        Ok(_) => 0,
        Err(d) => {
            // The file parsed and ran until the error: exit status 1.
            print_diags(&interp, &[d]);
            1
        }
    }
}

/// `tessera run FILE` / `tessera check FILE`.
pub fn run_file(path: &std::path::Path, opts: &RunOptions, check_only: bool) -> ExitCode {
    let name = path.display().to_string();
    match tessera_lang::read::read_text(path, tessera_lang::read::MAX_SCRIPT_BYTES) {
        Ok(text) => run_source(&name, text, opts, check_only),
        Err(tessera_lang::read::ReadError::Io(e)) => {
            eprintln!("error: cannot read {name}: {e}");
            2
        }
        Err(e) => {
            let mut sources = tessera_lang::SourceMap::new();
            let d = e.diagnostic(&name, &mut sources);
            eprint!("{}", d.render(&sources, stderr_color()));
            2
        }
    }
}
