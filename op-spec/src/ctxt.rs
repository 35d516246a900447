//! Error accumulation (after serde_derive's `Ctxt`): every rule reports into one context and
//! `check` combines them, so a declaration's errors all appear in one compile. Dropping a
//! context without calling `check` loses its errors; callers always check (unlike serde,
//! there is no panicking `Drop`: the macro must never panic).

use std::cell::RefCell;

/// Collects `syn::Error`s from parsing and checking.
#[derive(Default)]
pub struct Ctxt {
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    /// A fresh context.
    pub fn new() -> Self {
        Ctxt { errors: RefCell::new(Some(Vec::new())) }
    }

    /// Records one error.
    pub fn error(&self, err: syn::Error) {
        if let Some(v) = self.errors.borrow_mut().as_mut() {
            v.push(err);
        }
    }

    /// Whether any error has been recorded so far.
    pub fn has_errors(&self) -> bool {
        self.errors.borrow().as_ref().is_some_and(|v| !v.is_empty())
    }

    /// How many errors have been recorded so far.
    pub fn error_count(&self) -> usize {
        self.errors.borrow().as_ref().map_or(0, Vec::len)
    }

    /// Consumes the errors: `Ok` if there were none, else every error in report order.
    pub fn check(self) -> Result<(), Vec<syn::Error>> {
        let errors = self.errors.borrow_mut().take().unwrap_or_default();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}
