//! trybuild suite: `fail/` declarations that must not compile (each with its `.stderr`), `pass/` ones that must.
