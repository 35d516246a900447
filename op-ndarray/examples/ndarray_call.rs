//! A verified op called on ndarray arrays: the windowed median of
//! `examples/windowed_median/median.rs` on an `Array1` view (`call_nd`, no `Tensor` in sight),
//! then the round trip of an owned array through a tensor, checked to be zero-copy by pointer
//! equality, and what happens to a transposed array (refused whole, or copied on request).
//!
//! ```text
//! cargo run --release --example ndarray_call
//! ```

#[path = "../../examples/windowed_median/median.rs"]
mod median;

use ndarray::{Array, Array1, Array2};
use op_ndarray::CallNd;
use op_runtime::Scalar;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let median = op_runtime::register(&median::windowed_median::DECL)?;

    // A call through arrays: the input view is copied into a tensor once, the output comes
    // back as an array without a copy.
    let x: Array1<f32> = Array::from_shape_fn(1000, |i| (i as f32 * 0.05).sin() + if i % 37 == 0 { 4.0 } else { 0.0 });
    let out = median.call_nd(&[&x.view()], &[Scalar::U32(5)])?;
    println!("call_nd  : {} on {} ran on {}", median.id(), out.provenance.device.adapter, out.provenance.backend);
    let y = out.into_array::<f32>()?;
    let want = median::windowed_median(x.as_slice().ok_or("x is standard")?, 5);
    println!("           {} samples in, {} out; equal to the reference: {}", x.len(), y.len(), y.as_slice() == Some(&want[..]));
    if y.as_slice() != Some(&want[..]) {
        return Err("the call through arrays differs from the reference".into());
    }

    // The round trip of an owned standard-layout array: its allocation moves into the tensor
    // and back out.
    let a: Array2<f32> = Array::from_shape_fn((256, 64), |(i, j)| (i * 64 + j) as f32);
    let ptr = a.as_ptr();
    let t = op_ndarray::into_tensor(a)?;
    let in_place = t.try_slice::<f32>()?.as_ptr() == ptr;
    let back = op_ndarray::into_array::<f32>(t)?;
    let out_place = back.as_ptr() == ptr;
    if !(in_place && out_place) {
        println!("ndarray round trip: copied (into the tensor in place: {in_place}; back in place: {out_place})");
        return Err("the standard-layout round trip copied".into());
    }
    println!("ndarray round trip: zero-copy");

    // A transposed array: refused by the zero-copy conversion (and handed back), copied in
    // logical order on request.
    let at = back.reversed_axes();
    let refused = op_ndarray::into_tensor(at).err().ok_or("a transposed array was not refused")?;
    println!("transposed: {refused}");
    let at = refused.into_inner();
    let copy = op_ndarray::copy_to_tensor(&at)?;
    let first = copy.try_slice::<f32>()?.iter().take(3).map(|v| v.to_string()).collect::<Vec<_>>().join(", ");
    println!(
        "            copy_to_tensor: shape {:?}, logical order [{first}, ...], a new allocation: {}",
        copy.shape(),
        copy.try_slice::<f32>()?.as_ptr() != at.as_ptr()
    );
    Ok(())
}
