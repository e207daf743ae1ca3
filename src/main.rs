//! Thin binary: parse arguments, run the command, map errors to exit codes.

use std::sync::atomic::{AtomicBool, Ordering};

use clap::Parser;
use spinscope::cli::Cli;

fn main() {
    // Copy the arguments, then overwrite any password in the process's own argument memory
    // so `ps` and /proc/PID/cmdline stop showing it (as the mysql client does).
    let args = spinscope::server::conn::mysql_style_args(std::env::args_os().collect());
    if spinscope::server::argv::scrub_passwords() {
        eprintln!(
            "spinscope: [Warning] Using a password on the command line interface can be insecure."
        );
    }
    // The command's name only ("sweep run"), never a positional server (it may hold a password).
    let cmd: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .take_while(|a| !a.starts_with('-'))
        .take(2)
        .enumerate()
        .filter(|(i, a)| *i == 0 || matches!(a.as_str(), "prepare" | "run" | "cleanup"))
        .map(|(_, a)| a)
        .collect();
    spinscope::journal::set_command(&cmd.join(" "));
    // `--window 10 sec`: refused before clap takes `sec` for a server (src/cli/units.rs).
    let words: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if let Some(e) = spinscope::cli::units::stray_unit(&words) {
        eprintln!(
            "spinscope: error: {}",
            spinscope::secret::scrub(&e.to_string())
        );
        std::process::exit(spinscope::error::EXIT_BAD_INPUT);
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => match e.kind() {
            clap::error::ErrorKind::DisplayHelp
            | clap::error::ErrorKind::DisplayVersion
            | clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
            _ => {
                eprintln!(
                    "spinscope: error: {}",
                    spinscope::cli::usage_error_line(&e, &cmd.join(" "))
                );
                std::process::exit(spinscope::error::EXIT_BAD_INPUT);
            }
        },
    };
    quiet_on_closed_stdout();
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| spinscope::cli::run(cli)));
    let code = match run {
        Ok(Ok(code)) => code,
        Ok(Err(e)) => {
            // The one secret filter over every error line, whatever input it quotes.
            let msg = spinscope::secret::scrub(&spinscope::server::conn::plain_error_text(
                &e.to_string(),
            ));
            eprintln!("spinscope: error: {msg}");
            e.exit_code()
        }
        // The reader went away (`| head`): it has what it wanted, so end quietly, as ripgrep does.
        Err(_) if STDOUT_CLOSED.load(Ordering::SeqCst) => spinscope::error::EXIT_OK,
        Err(payload) => std::panic::resume_unwind(payload),
    };
    std::process::exit(code);
}

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// A closed stdout (`spinscope probe --json | head -c 10`) makes `println!` panic with EPIPE,
/// because Rust ignores SIGPIPE. Putting SIGPIPE back to its default would end quietly too, but
/// it kills the process on the spot: in the middle of a sweep or a doctor window that changed
/// server settings it would skip the guards that put them back, and a write to a server's Unix
/// socket that closed would kill it the same way. So instead this panic alone is silenced and
/// unwinds through those guards (they restore as on any early return), and `main` exits 0.
/// Every other panic still prints as before.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let p = info.payload();
        let msg = p
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| p.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if is_closed_stdout(msg) {
            STDOUT_CLOSED.store(true, Ordering::SeqCst);
        } else {
            default(info);
        }
    }));
}

/// The message of std's print macros when stdout's reader has gone (EPIPE).
fn is_closed_stdout(msg: &str) -> bool {
    msg.starts_with("failed printing to stdout")
        && msg.ends_with(&format!("(os error {})", libc::EPIPE))
}
