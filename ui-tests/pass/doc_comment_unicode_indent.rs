//! A doc comment whose lines start with a multi-byte whitespace character (U+3000) is the op's
//! description, stripped by characters (it used to panic the macro).

use op_runtime::{op, Real};

///　Doubles every element.
///　　(Indented further.)
#[op(
    name = "ui/pass/double_doc", version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise, tolerance = ulp(0),
    backward = none,
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

pub(crate) fn main() {
    assert_eq!(double::DECL.description, "Doubles every element.\n\u{3000}(Indented further.)");
}
