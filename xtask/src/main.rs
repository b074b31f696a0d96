//! Project automation, run as `cargo xtask <command>` (see `.cargo/config.toml`).

use std::process::ExitCode;

fn main() -> ExitCode {
    let command = std::env::args().nth(1);
    eprintln!("usage: cargo xtask <command>\nunknown command: {command:?}");
    ExitCode::from(2)
}
