//! The command line (clap): `cargo op <command>`, as cargo passes a subcommand's arguments
//! (`cargo-op op <command> ...`).

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// Cargo's view: `cargo op ...` runs `cargo-op op ...`.
#[derive(Debug, Parser)]
#[command(name = "cargo", bin_name = "cargo", version)]
pub enum Cli {
    /// Ops declared with `#[op]`: catalog, report, cards, store and trust list.
    #[command(name = "op")]
    Op(OpCli),
}

/// `cargo op`.
#[derive(Debug, Args)]
#[command(
    about = "Ops declared with `#[op]`: catalog, report, cards, store and trust list",
    after_help = "Exit codes: 0 success; 1 a verdict failed (a rejected kernel, a failing generated test, a damaged store entry); 2 bad usage; 3 could not run (a build failed, a file could not be read or written, nothing found)."
)]
pub struct OpCli {
    /// Print JSON on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Which packages and targets the generated tests run in.
#[derive(Debug, Args, Clone, Default)]
pub struct Scope {
    /// Only these packages (default: every package of the workspace).
    #[arg(short = 'p', long = "package")]
    pub packages: Vec<String>,
    /// Also the integration tests (`tests/`), not only libraries, binaries and examples.
    #[arg(long)]
    pub all_targets: bool,
    /// Read the records already in the records directory instead of running the tests.
    #[arg(long)]
    pub no_run: bool,
    /// The records directory (default: `<target>/op-report/records`).
    #[arg(long)]
    pub records: Option<PathBuf>,
}

/// Where the store is.
#[derive(Debug, Args, Clone, Default)]
pub struct StoreArg {
    /// The store directory (default: `$OP_STORE`, else `<target>/op-store`).
    #[arg(long)]
    pub store: Option<PathBuf>,
}

/// Where the trust list is.
#[derive(Debug, Args, Clone, Default)]
pub struct TrustArg {
    /// The trust list file (default: `$OP_TRUST`, else `~/.config/op-runtime/trust.txt`).
    #[arg(long)]
    pub trust: Option<PathBuf>,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// The catalog: every op of the crate's libraries, binaries and examples (with the built-ins
    /// they link), with identity, category, tolerance and kernels.
    List {
        #[command(flatten)]
        scope: Scope,
        #[command(flatten)]
        store: StoreArg,
    },
    /// Runs the generated conformance and gradcheck tests with records, renders
    /// `target/op-report/index.html` and prints its path.
    Report {
        #[command(flatten)]
        scope: Scope,
        /// Where the pages go (default: `<target>/op-report`).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// The card of one op (`name` or `name@version`): kernels, receipts, trust on this machine.
    Card {
        /// The op.
        name: String,
        #[command(flatten)]
        scope: Scope,
        #[command(flatten)]
        store: StoreArg,
        #[command(flatten)]
        trust: TrustArg,
    },
    /// The content-addressed store of published ops.
    Store {
        #[command(subcommand)]
        command: StoreCommand,
    },
    /// The trust list: whose signed receipts count on this machine.
    Trust {
        #[command(subcommand)]
        command: TrustCommand,
    },
}

/// `cargo op store ...`.
#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Every published op with its content hash and receipts.
    Ls {
        #[command(flatten)]
        store: StoreArg,
    },
    /// Loads every published op, re-hashing every file; exit code 1 when one is damaged.
    Verify {
        #[command(flatten)]
        store: StoreArg,
    },
}

/// `cargo op trust ...`.
#[derive(Debug, Subcommand)]
pub enum TrustCommand {
    /// Trusts a public key (`ed25519:<64 hex digits>`) under a label.
    Add {
        /// The key.
        key: String,
        /// Who it is.
        label: String,
        #[command(flatten)]
        trust: TrustArg,
    },
    /// Stops trusting a key.
    Rm {
        /// The key.
        key: String,
        #[command(flatten)]
        trust: TrustArg,
    },
    /// The trusted keys.
    Ls {
        #[command(flatten)]
        trust: TrustArg,
    },
}
