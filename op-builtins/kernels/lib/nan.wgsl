// Whether `v` is a NaN, decided on the bits (a float compare may be folded away).
fn is_nan_(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}
