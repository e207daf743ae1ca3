//! Thin binary: parse arguments, run the command, map errors to exit codes.

use clap::Parser;
use spinscope::cli::Cli;

fn main() {
    let cli = Cli::parse();
    let code = match spinscope::cli::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("spinscope: error: {e}");
            e.exit_code()
        }
    };
    std::process::exit(code);
}
