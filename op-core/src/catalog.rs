//! The catalog: every op description linked into this binary, gathered at link time. Each
//! `#[op]` adds its `DECL` to one distributed slice (`linkme`: a linker section, no code runs
//! before `main`), so a program lists its ops without registering any. Owns the slice only;
//! what is shown of each op is `verify::record`'s.

use super::decl::OpDecl;

/// The distributed slice every `#[op]` declaration adds its description to.
#[doc(hidden)] // filled by the code `#[op]` generates (`__op_catalog!`)
#[linkme::distributed_slice]
#[linkme(crate = linkme)]
pub static CATALOG: [&'static OpDecl];

/// Every op description linked into this binary (built-ins, the program's own ops, and those
/// of every crate it links), in no particular order. A declaration compiled out by `cfg` is
/// absent; nothing here registers or runs anything.
pub fn decls() -> &'static [&'static OpDecl] {
    &CATALOG
}

/// Adds the `DECL` of the module it is invoked in to the catalog: the one line `#[op]` emits
/// next to the description.
#[doc(hidden)]
#[macro_export]
macro_rules! __op_catalog {
    () => {
        #[::op_runtime::__private::linkme::distributed_slice(::op_runtime::__private::CATALOG)]
        #[linkme(crate = ::op_runtime::__private::linkme)]
        static __OP_CATALOG_ENTRY: &'static ::op_runtime::__private::OpDecl = &DECL;
    };
}
