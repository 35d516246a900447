//! `cargo op trust add|rm|ls`: the trust list file (whose signed receipts count here).

use super::{load_trust, print_json, trust_path};
use crate::cli::TrustArg;
use crate::error::{Error, Status};
use op_runtime::trust::{PublicKey, TrustList};
use std::path::Path;

fn save(list: &TrustList, path: &Path) -> Result<(), Error> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::Io { path: dir.display().to_string(), reason: e.to_string() })?;
    }
    Ok(list.save(path)?)
}

/// `cargo op trust add KEY LABEL`.
pub(crate) fn trust_add(key: &str, label: &str, arg: &TrustArg, json: bool) -> Result<Status, Error> {
    let path = trust_path(arg)?;
    let key = PublicKey::parse(key)?;
    let mut list = load_trust(&path)?;
    list.trust(key, label);
    save(&list, &path)?;
    if json {
        print_json(&serde_json::json!({ "trusted": key.to_string(), "label": label, "file": path }))?;
    } else {
        println!("trusted {key} ({label}) in {}", path.display());
    }
    Ok(Status::Ok)
}

/// `cargo op trust rm KEY`: exit code 1 when the key was not trusted.
pub(crate) fn trust_rm(key: &str, arg: &TrustArg, json: bool) -> Result<Status, Error> {
    let path = trust_path(arg)?;
    let key = PublicKey::parse(key)?;
    let mut list = load_trust(&path)?;
    let removed = list.revoke(&key);
    if removed {
        save(&list, &path)?;
    }
    if json {
        print_json(&serde_json::json!({ "key": key.to_string(), "removed": removed, "file": path }))?;
    } else if removed {
        println!("no longer trusted: {key}");
    } else {
        println!("{key} was not trusted in {}", path.display());
    }
    Ok(if removed { Status::Ok } else { Status::Failed })
}

/// `cargo op trust ls`.
pub(crate) fn trust_ls(arg: &TrustArg, json: bool) -> Result<Status, Error> {
    let path = trust_path(arg)?;
    let list = load_trust(&path)?;
    if json {
        let keys: Vec<_> = list.keys().map(|(k, l)| serde_json::json!({ "key": k.to_string(), "label": l })).collect();
        print_json(&serde_json::json!({ "file": path, "keys": keys, "require_signatures": list.requires_signatures() }))?;
    } else {
        println!("trust list {}", path.display());
        for (k, l) in list.keys() {
            println!("  {k} {l}");
        }
    }
    Ok(Status::Ok)
}
