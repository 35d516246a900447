// A WGSL header shared through `// @include` (op-macros/src/forms.md).
fn twice(v: f32) -> f32 {
    return v + v;
}
