//! Running cargo: the workspace's target directory (`cargo metadata`), and the generated tests
//! of the chosen packages and targets with `OP_REPORT_DIR` set, counted first (`--list`) so a
//! progress bar can show how many have run. Cargo's own output is kept and shown only when the
//! run fails.

use crate::cli::Scope;
use crate::error::Error;
use indicatif::{ProgressBar, ProgressStyle};
use op_runtime::report::REPORT_DIR_ENV;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The test-name filters of the generated tests.
pub const CONFORMANCE: &str = "__op_conformance";
/// The gradcheck tests.
pub const GRADCHECK: &str = "__op_gradcheck";
/// The catalog tests.
pub const CATALOG: &str = "__op_catalog";

/// The cargo that runs us (`$CARGO`, set by cargo for subcommands and `cargo run`), else
/// `cargo` from the path.
fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

fn text(cmd: &Command) -> String {
    let args: Vec<String> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
    format!("cargo {}", args.join(" "))
}

/// The workspace's target directory, from `cargo metadata`.
pub fn target_dir() -> Result<PathBuf, Error> {
    let mut cmd = cargo();
    cmd.args(["metadata", "--format-version", "1", "--no-deps"]);
    let out = cmd.output().map_err(|e| Error::Cargo { command: text(&cmd), reason: e.to_string() })?;
    if !out.status.success() {
        return Err(Error::Cargo { command: text(&cmd), reason: String::from_utf8_lossy(&out.stderr).trim().to_string() });
    }
    let meta: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| Error::Cargo { command: text(&cmd), reason: format!("unreadable output: {e}") })?;
    meta["target_directory"]
        .as_str()
        .map(PathBuf::from)
        .ok_or_else(|| Error::Cargo { command: text(&cmd), reason: "no `target_directory` in its output".into() })
}

/// `cargo test` over the scope's targets, with the test harness' arguments after `--`.
fn test_command(scope: &Scope, harness: &[&str]) -> Command {
    let mut cmd = cargo();
    cmd.arg("test");
    if scope.packages.is_empty() {
        cmd.arg("--workspace");
    }
    for p in &scope.packages {
        cmd.args(["-p", p]);
    }
    if scope.all_targets {
        cmd.args(["--lib", "--bins", "--examples", "--tests"]);
    } else {
        cmd.args(["--lib", "--bins", "--examples"]);
    }
    cmd.arg("--no-fail-fast").arg("--").args(harness);
    cmd
}

/// What a run of the generated tests did.
#[derive(Debug, Default)]
pub struct Run {
    /// Tests that passed.
    pub passed: usize,
    /// Tests that failed, by name.
    pub failed: Vec<String>,
    /// The end of the tests' and cargo's output (for a failure's message).
    pub tail: String,
}

/// How many tests match `filters` in the scope (building the test binaries on the way).
fn count(scope: &Scope, filters: &[&str], bar: &ProgressBar) -> Result<usize, Error> {
    let mut harness: Vec<&str> = filters.to_vec();
    harness.extend(["--list", "--format", "terse"]);
    let mut cmd = test_command(scope, &harness);
    bar.set_message("building the test binaries");
    let out = cmd.output().map_err(|e| Error::Cargo { command: text(&cmd), reason: e.to_string() })?;
    if !out.status.success() {
        return Err(Error::Cargo { command: text(&cmd), reason: tail(&String::from_utf8_lossy(&out.stderr), 40) });
    }
    Ok(String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.ends_with(": test")).count())
}

/// The last `n` lines of `s`.
fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Runs the generated tests matching `filters` with records written to `records` (emptied
/// first), showing progress on stderr.
pub fn run_tests(scope: &Scope, filters: &[&str], records: &Path, what: &str) -> Result<Run, Error> {
    match std::fs::remove_dir_all(records) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(Error::Io { path: records.display().to_string(), reason: e.to_string() })
        }
        _ => {}
    }
    let bar = ProgressBar::new_spinner();
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    let total = count(scope, filters, &bar)?;
    bar.set_length(total as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message(what.to_string());
    let mut cmd = test_command(scope, filters);
    cmd.env(REPORT_DIR_ENV, records).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| Error::Cargo { command: text(&cmd), reason: e.to_string() })?;
    let mut stderr = child.stderr.take();
    let errors = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(e) = stderr.as_mut() {
            let _ = e.read_to_string(&mut s);
        }
        s
    });
    let mut run = Run::default();
    let mut output = String::new();
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("test ") {
                if rest.ends_with(" ... ok") {
                    run.passed += 1;
                    bar.inc(1);
                } else if let Some(name) = rest.strip_suffix(" ... FAILED") {
                    run.failed.push(name.to_string());
                    bar.inc(1);
                }
            }
            output.push_str(&line);
            output.push('\n');
        }
    }
    let status = child.wait().map_err(|e| Error::Cargo { command: text(&cmd), reason: e.to_string() })?;
    let errors = errors.join().unwrap_or_default();
    bar.finish_and_clear();
    run.tail = tail(&format!("{output}{errors}"), 60);
    if !status.success() && run.failed.is_empty() {
        return Err(Error::Cargo { command: text(&cmd), reason: run.tail });
    }
    Ok(run)
}
