use clap::{Parser, Subcommand};
use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use tessera::script::{self, RunOptions};

/// Tessera: a tile-programming language for GPUs.
#[derive(Parser)]
#[command(name = "tessera", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Cmd>,
}

#[derive(clap::Args, Clone, Default)]
struct RunFlags {
    /// Target: sm_80, sm_90, sm_90a, sm_100, or spirv (Vulkan 1.3 compute) (default: the GPU
    /// present, spirv on --device vulkan, else sm_90).
    #[arg(long, value_parser = ["sm_80", "sm_90", "sm_90a", "sm_100", "spirv"])]
    target: Option<String>,
    #[arg(long, value_parser = device_choices(), help = device_help())]
    device: Option<String>,
    /// Print this IR of every compiled kernel to stderr (repeatable).
    #[arg(long, value_parser = ["graph", "schedule", "tile", "target", "ptx", "spirv"])]
    dump: Vec<String>,
    /// Write one .ptx file per compiled kernel into DIR (and a .regs file beside it: the
    /// compiler's estimate of its registers per thread).
    #[arg(long, value_name = "DIR")]
    emit_ptx: Option<PathBuf>,
    /// Write one .spv file per compiled kernel into DIR (the spirv target).
    #[arg(long, value_name = "DIR")]
    emit_spirv: Option<PathBuf>,
    /// Print the profile table of the whole run at exit.
    #[arg(long)]
    profile: bool,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a script in batch.
    Run {
        file: PathBuf,
        /// Arguments passed to the script as `sys.argv[1:]`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
        #[command(flatten)]
        flags: RunFlags,
    },
    /// Parse and check a script without running it.
    Check { file: PathBuf },
    /// Golden-output tests of .tsr scripts.
    Test {
        paths: Vec<PathBuf>,
        /// Rewrite the expected files from the actual output.
        #[arg(long)]
        bless: bool,
        /// Only run cases whose path matches this regular expression.
        #[arg(long)]
        filter: Option<String>,
        /// The time limit of each case, in seconds; a case that runs longer is killed and fails.
        #[arg(long, value_name = "S", default_value_t = 120.0, value_parser = positive_seconds)]
        timeout: f64,
    },
    /// Lower Tile IR text (as `--dump tile` prints it) to Target IR or PTX.
    Lower {
        file: PathBuf,
        /// The level to print.
        #[arg(long, value_parser = ["target", "ptx", "spirv"], default_value = "ptx")]
        to: String,
        /// Target architecture: sm_80, sm_90, sm_90a, sm_100 (default sm_90; spirv with --to spirv).
        #[arg(long, value_parser = ["sm_80", "sm_90", "sm_90a", "sm_100", "spirv"])]
        target: Option<String>,
    },
    /// The interactive REPL (without a terminal: reads cells from stdin and echoes values).
    Repl {
        /// Target: sm_80, sm_90, sm_90a, sm_100, spirv (default: the GPU present, else sm_90).
        #[arg(long, value_parser = ["sm_80", "sm_90", "sm_90a", "sm_100", "spirv"])]
        target: Option<String>,
        #[arg(long, value_parser = device_choices(), help = device_help())]
        device: Option<String>,
    },
    /// A Jupyter kernel process (started by Jupyter through the kernelspec).
    Kernel {
        /// The connection file Jupyter wrote for this kernel.
        #[arg(long, value_name = "FILE")]
        connection_file: PathBuf,
    },
    /// What an error code means, an example that produces it and how to fix it (all codes
    /// without one).
    Explain { code: Option<String> },
    /// Runs the tsr blocks of a guide page in one session, one JSON line per block (the child
    /// process of `tessera test PAGE.md`).
    #[command(hide = true)]
    GuideCells { page: PathBuf },
    /// Jupyter integration.
    Jupyter {
        #[command(subcommand)]
        command: JupyterCmd,
    },
}

#[derive(Subcommand)]
enum JupyterCmd {
    /// Install the kernelspec `tessera` (system-wide unless --user or --prefix).
    Install {
        /// Into the user's Jupyter data directory.
        #[arg(long, conflicts_with = "prefix")]
        user: bool,
        /// Into PREFIX/share/jupyter (a virtual environment, or any private prefix).
        #[arg(long, value_name = "PREFIX")]
        prefix: Option<PathBuf>,
    },
}

/// `--device`'s values: `auto` and every device of the registry.
fn device_choices() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(tessera_runtime::device::registry::choices())
}

/// `--device`'s help line.
fn device_help() -> String {
    format!(
        "Where kernels run: {}",
        tessera_runtime::device::registry::choices_text()
    )
}

fn options(flags: RunFlags, args: Vec<String>) -> RunOptions {
    RunOptions {
        args,
        target: flags.target,
        device: flags.device,
        dump: flags.dump,
        emit_ptx: flags.emit_ptx,
        emit_spirv: flags.emit_spirv,
        profile: flags.profile,
    }
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) if e.use_stderr() => {
            // a usage error is a wrong argument like any other: E0101
            let text = e.render().to_string();
            let text = match text.strip_prefix("error: ") {
                Some(rest) => format!("error[E0101]: {rest}"),
                None => text,
            };
            eprint!("{text}");
            std::process::exit(2);
        }
        Err(e) => {
            let _ = e.print();
            std::process::exit(0);
        }
    };
    let code = match cli.command {
        Some(Cmd::Run { file, args, flags }) => {
            script::run_file(&file, &options(flags, args), false)
        }
        Some(Cmd::Check { file }) => script::run_file(&file, &RunOptions::default(), true),
        Some(Cmd::Test {
            paths,
            bless,
            filter,
            timeout,
        }) => {
            let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("tessera"));
            let paths = if paths.is_empty() {
                vec![PathBuf::from(".")]
            } else {
                paths
            };
            let bless = bless || std::env::var_os("TESSERA_BLESS").is_some_and(|v| v == "1");
            let timeout = std::time::Duration::from_secs_f64(timeout);
            tessera::golden::main(&exe, &paths, bless, filter.as_deref(), timeout)
        }
        Some(Cmd::Lower { file, to, target }) => {
            let level = match to.as_str() {
                "target" => tessera::lower::Level::Target,
                "spirv" => tessera::lower::Level::Spirv,
                _ => tessera::lower::Level::Ptx,
            };
            tessera::lower::main(&file, level, target.as_deref())
        }
        Some(Cmd::Repl { target, device }) => repl(target, device),
        Some(Cmd::GuideCells { page }) => tessera::guide::cells_main(&page),
        Some(Cmd::Explain { code }) => tessera::explain::main(code.as_deref()),
        Some(Cmd::Kernel { connection_file }) => kernel(&connection_file),
        Some(Cmd::Jupyter {
            command: JupyterCmd::Install { user, prefix },
        }) => jupyter_install(user, prefix),
        None => {
            if std::io::stdin().is_terminal() {
                repl(None, None)
            } else {
                let mut text = String::new();
                match std::io::stdin().read_to_string(&mut text) {
                    Ok(_) => script::run_source("<stdin>", text, &RunOptions::default(), false),
                    Err(e) => {
                        eprintln!("error: cannot read stdin: {e}");
                        2
                    }
                }
            }
        }
    };
    std::process::exit(code);
}

#[cfg(feature = "jupyter")]
fn kernel(connection_file: &std::path::Path) -> i32 {
    tessera_jupyter::run_kernel(connection_file, tessera_jupyter::SessionOptions::default())
}

#[cfg(not(feature = "jupyter"))]
fn kernel(_: &std::path::Path) -> i32 {
    no_jupyter()
}

#[cfg(not(feature = "jupyter"))]
fn jupyter_install(_: bool, _: Option<PathBuf>) -> i32 {
    no_jupyter()
}

#[cfg(not(feature = "jupyter"))]
fn no_jupyter() -> i32 {
    eprintln!("error: this tessera was built without its Jupyter kernel (cargo feature `jupyter`)");
    2
}

#[cfg(feature = "jupyter")]
fn jupyter_install(user: bool, prefix: Option<PathBuf>) -> i32 {
    let target = match (user, prefix) {
        (_, Some(p)) => tessera_jupyter::InstallTarget::Prefix(p),
        (true, None) => tessera_jupyter::InstallTarget::User,
        (false, None) => tessera_jupyter::InstallTarget::System,
    };
    let exe = match std::env::current_exe().and_then(|p| p.canonicalize()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: cannot find the path of the tessera binary: {e}");
            return 1;
        }
    };
    match tessera_jupyter::install(&target, &exe) {
        Ok(dir) => {
            tessera::sayln!("Installed the kernelspec tessera in {}", dir.display());
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

/// `tessera repl` (and `tessera` on a terminal), on the evaluator's big-stack thread.
fn repl(target: Option<String>, device: Option<String>) -> i32 {
    let opts = tessera_repl::SessionOptions {
        target,
        device,
        color: false,
    };
    script::with_big_stack(move || tessera_repl::term::main(opts))
}

/// A `--timeout` value: a positive number of seconds (at most a year).
fn positive_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 3.2e7 => Ok(v),
        _ => Err(format!(
            "`{s}` is not a positive number of seconds (at most 32000000)"
        )),
    }
}
