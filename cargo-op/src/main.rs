//! `cargo op`: the catalog of a crate's ops, the HTML conformance and gradcheck report, cards,
//! the store and the trust list. Cargo runs it as `cargo-op op <command>`; `cargo run -p
//! cargo-op -- op <command>` is the same. Exit codes: 0 success, 1 a verdict failed (a rejected
//! kernel, a failing generated test, a damaged store entry), 2 bad usage, 3 could not run (a
//! build failed, a file could not be read or written, nothing found).

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cargo_op::cli::Cli::parse();
    match cargo_op::run(cli) {
        Ok(status) => status.code(),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(cargo_op::Error::EXIT)
        }
    }
}
