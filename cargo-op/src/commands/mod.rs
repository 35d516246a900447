//! The commands: each reads or runs what it needs, prints text or JSON on stdout, and returns
//! its [`Status`](crate::Status).

mod catalog;
mod report;
mod store;
mod trust;

pub(crate) use catalog::{card, list};
pub(crate) use report::report;
pub(crate) use store::{store_ls, store_verify};
pub(crate) use trust::{trust_add, trust_ls, trust_rm};

use crate::cli::{Scope, StoreArg, TrustArg};
use crate::error::Error;
use op_runtime::sharing::Store;
use op_runtime::trust::TrustList;
use std::path::{Path, PathBuf};

/// Prints `value` as pretty JSON on stdout.
pub(crate) fn print_json(value: &impl serde::Serialize) -> Result<(), Error> {
    let text = serde_json::to_string_pretty(value).map_err(|e| Error::Io { path: "(stdout)".into(), reason: e.to_string() })?;
    println!("{text}");
    Ok(())
}

/// The records directory of a scope: `--records`, else `<target>/op-report/<default>`.
pub(crate) fn records_dir(scope: &Scope, default: &str) -> Result<PathBuf, Error> {
    match &scope.records {
        Some(d) => Ok(d.clone()),
        None => Ok(crate::cargo::target_dir()?.join("op-report").join(default)),
    }
}

/// The store: `--store`, else `$OP_STORE`, else `<target>/op-store`.
pub(crate) fn store(arg: &StoreArg) -> Result<Store, Error> {
    if let Some(d) = &arg.store {
        return Ok(Store::open(d));
    }
    if let Some(d) = std::env::var_os("OP_STORE").filter(|d| !d.is_empty()) {
        return Ok(Store::open(PathBuf::from(d)));
    }
    Ok(Store::open(crate::cargo::target_dir()?.join("op-store")))
}

/// The trust list's file: `--trust`, else `$OP_TRUST`, else
/// `$XDG_CONFIG_HOME/op-runtime/trust.txt` (`~/.config` without it).
pub(crate) fn trust_path(arg: &TrustArg) -> Result<PathBuf, Error> {
    if let Some(p) = &arg.trust {
        return Ok(p.clone());
    }
    if let Some(p) = std::env::var_os("OP_TRUST").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .ok_or_else(|| Error::Io { path: "~/.config".into(), reason: "neither XDG_CONFIG_HOME nor HOME is set; pass --trust".into() })?;
    Ok(config.join("op-runtime").join("trust.txt"))
}

/// The trust list at `path`; a missing file is the empty list.
pub(crate) fn load_trust(path: &Path) -> Result<TrustList, Error> {
    if !path.exists() {
        return Ok(TrustList::new());
    }
    Ok(TrustList::load(path)?)
}
