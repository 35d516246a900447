//! `cargo op store ls|verify`: the published ops of a store, each loaded (every blob
//! re-hashed, the identity recomputed) before it is listed.

use super::{print_json, store};
use crate::cli::StoreArg;
use crate::error::{Error, Status};
use op_runtime::sharing::Store;

/// One published op as listed.
#[derive(serde::Serialize)]
struct Published {
    /// `name@version`.
    op: String,
    /// The content hash, where it loads.
    content_hash: Option<String>,
    /// Receipts stored for that content.
    receipts: usize,
    /// Why it does not load, where it does not.
    error: Option<String>,
}

/// The ids of the index entries in `cards/` (`~` back to `/`), sorted.
fn ids(store: &Store) -> Result<Vec<String>, Error> {
    let dir = store.dir().join("cards");
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::Io { path: dir.display().to_string(), reason: e.to_string() }),
    };
    let mut ids: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.strip_suffix(".json")).map(|n| n.replace('~', "/")))
        .collect();
    ids.sort();
    Ok(ids)
}

fn published(store: &Store) -> Result<Vec<Published>, Error> {
    Ok(ids(store)?
        .into_iter()
        .map(|op| match store.load(&op) {
            Ok(l) => Published { op, content_hash: Some(l.card.content_hash.clone()), receipts: l.receipts.len(), error: None },
            Err(e) => Published { op, content_hash: None, receipts: 0, error: Some(e.to_string()) },
        })
        .collect())
}

fn print(store: &Store, list: &[Published]) {
    println!("store {}", store.dir().display());
    for p in list {
        match (&p.content_hash, &p.error) {
            (Some(h), _) => println!("  {:<40} {}  {} receipt(s)", p.op, h.get(..16).unwrap_or(h), p.receipts),
            (None, Some(e)) => println!("  {:<40} DAMAGED: {e}", p.op),
            _ => {}
        }
    }
    println!("{} published op(s)", list.len());
}

/// `cargo op store ls`.
pub(crate) fn store_ls(arg: &StoreArg, json: bool) -> Result<Status, Error> {
    let store = store(arg)?;
    let list = published(&store)?;
    if json {
        print_json(&list)?;
    } else {
        print(&store, &list);
    }
    Ok(Status::Ok)
}

/// `cargo op store verify`: exit code 1 when an op does not load or a blob's bytes do not
/// hash to its name (every blob is re-hashed, also those no index entry names).
pub(crate) fn store_verify(arg: &StoreArg, json: bool) -> Result<Status, Error> {
    let store = store(arg)?;
    let list = published(&store)?;
    let damaged = list.iter().filter(|p| p.error.is_some()).count();
    let blobs = store.damaged_blobs()?;
    let intact = damaged == 0 && blobs.is_empty();
    if json {
        print_json(&serde_json::json!({ "store": store.dir(), "ops": list, "damaged": damaged, "damaged_blobs": blobs }))?;
    } else {
        print(&store, &list);
        for b in &blobs {
            println!("  DAMAGED blob {}", b.display());
        }
        println!(
            "{}",
            if intact {
                "every op loads intact, every blob hashes to its name".to_string()
            } else {
                format!("{damaged} damaged op(s), {} damaged blob(s)", blobs.len())
            }
        );
    }
    Ok(if intact { Status::Ok } else { Status::Failed })
}
