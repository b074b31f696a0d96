//! Project automation, run as `cargo xtask <command>` (see `.cargo/config.toml`).

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        _ => {
            eprintln!("usage: cargo xtask <command>\ncommands: (none yet)");
            ExitCode::from(2)
        }
    }
}
