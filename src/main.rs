//! Thin binary: parse arguments, run the command, map errors to exit codes.

use clap::Parser;
use spinscope::cli::Cli;

fn main() {
    // Copy the arguments, then overwrite any password in the process's own argument memory
    // so `ps` and /proc/PID/cmdline stop showing it (as the mysql client does).
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if spinscope::server::argv::scrub_passwords() {
        eprintln!(
            "spinscope: [Warning] Using a password on the command line interface can be insecure."
        );
    }
    let cmd: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .take_while(|a| !a.starts_with('-'))
        .take(2)
        .collect();
    spinscope::journal::set_command(&cmd.join(" "));
    let cli = Cli::parse_from(args);
    let code = match spinscope::cli::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("spinscope: error: {e}");
            e.exit_code()
        }
    };
    std::process::exit(code);
}
