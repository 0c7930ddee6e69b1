//! The `tessera` command line: running scripts, checking them, and golden-output tests.

// `Diagnostic` is the one error type of host code; it is returned by value on purpose.

/// Writes `text` to stdout and flushes it. A reader that went away (`tessera lower f.tile |
/// head -1`) ends the process quietly with status 0, as `tessera run` does and as the Unix
/// tools do, instead of a panic; any other write error is reported and ends it with status 1.
pub fn say(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write the output: {e}");
        std::process::exit(1);
    }
}

/// `println!` through [`say`].
#[macro_export]
macro_rules! sayln {
    () => {
        $crate::say("\n")
    };
    ($($arg:tt)*) => {
        $crate::say(&format!("{}\n", format_args!($($arg)*)))
    };
}

pub mod explain;
pub mod golden;
pub mod guide;
pub mod lower;
pub mod reference;
pub mod script;
