//! What a default registry holds, gathered at link time: the backends every crate linked into
//! the binary compiled in (`BACKENDS`, filled by `op-backends`), and the ops installed into
//! every registry built with the built-ins (`INSTALLERS`, filled by `op-builtins`). The core
//! names neither crate (they sit above it); each adds itself to a distributed slice (`linkme`: a
//! linker section, no code runs before `main`), as the catalog does. A program that links only
//! `op-core` gets registries without backends or built-ins, which says so when called.

use super::Registry;
use crate::backend::Backend;
use std::sync::{Arc, OnceLock};

/// Each entry adds the backends one crate compiled in (feature-gated ones included).
#[doc(hidden)] // filled by op-backends
#[linkme::distributed_slice]
pub static BACKENDS: [fn(&mut Vec<Arc<dyn Backend>>)];

/// Each entry installs ops (the built-ins and their VJP ops) into a registry.
#[doc(hidden)] // filled by op-builtins
#[linkme::distributed_slice]
pub static INSTALLERS: [fn(&Registry)];

/// Every backend linked into this binary, in no particular order (dispatch ranks them by
/// `BackendKind::rank`).
pub fn all_backends() -> Vec<Arc<dyn Backend>> {
    let mut out = Vec::new();
    for add in BACKENDS {
        add(&mut out);
    }
    out
}

impl Registry {
    /// An empty registry with every backend compiled in (`op_runtime::backend::all`).
    pub fn new() -> Registry {
        Registry::with_backends(all_backends())
    }

    /// A new registry with every backend compiled in, holding the built-ins.
    pub fn with_builtins() -> Registry {
        let r = Registry::new();
        for install in INSTALLERS {
            install(&r);
        }
        r
    }
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

/// The process-wide registry, holding the built-ins.
pub fn registry() -> &'static Registry {
    static GLOBAL: OnceLock<Registry> = OnceLock::new();
    GLOBAL.get_or_init(Registry::with_builtins)
}

/// Registers an op in the process-wide registry.
pub fn register(decl: &'static crate::decl::OpDecl) -> Result<super::OpHandle, crate::error::RegistrationError> {
    registry().register(decl)
}
