//! `cargo op`'s commands as a library, so tests drive them without a process. Each command
//! returns a [`Status`] (success, or a verdict that failed) or an [`Error`] (could not run);
//! `main` turns them into exit codes.

pub mod cargo;
pub mod cli;
mod commands;
mod error;

pub use error::{Error, Status};

use cli::{Cli, Command, StoreCommand, TrustCommand};

/// Runs one command line.
pub fn run(cli: Cli) -> Result<Status, Error> {
    let Cli::Op(op) = cli;
    let json = op.json;
    match op.command {
        Command::List { scope, store } => commands::list(&scope, &store, json),
        Command::Report { scope, out } => commands::report(&scope, out, json),
        Command::Card { name, scope, store, trust } => commands::card(&name, &scope, &store, &trust, json),
        Command::Store { command: StoreCommand::Ls { store } } => commands::store_ls(&store, json),
        Command::Store { command: StoreCommand::Verify { store } } => commands::store_verify(&store, json),
        Command::Trust { command: TrustCommand::Add { key, label, trust } } => commands::trust_add(&key, &label, &trust, json),
        Command::Trust { command: TrustCommand::Rm { key, trust } } => commands::trust_rm(&key, &trust, json),
        Command::Trust { command: TrustCommand::Ls { trust } } => commands::trust_ls(&trust, json),
    }
}
