//! Records the compiler and target this crate is built with, for the host device profile
//! (`core::device`): `OP_RUSTC_VERSION` is `rustc -V` of the compiler cargo uses (never a
//! made-up "stable"), `OP_TARGET_TRIPLE` the target triple.

use std::process::Command;

fn main() {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = Command::new(&rustc)
        .arg("-V")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("unknown ({} -V failed)", rustc.to_string_lossy()));
    println!("cargo:rustc-env=OP_RUSTC_VERSION={version}");
    println!("cargo:rustc-env=OP_TARGET_TRIPLE={}", std::env::var("TARGET").unwrap_or_else(|_| "unknown".into()));
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC");
}
