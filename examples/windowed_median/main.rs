//! The whole story: a user declares a sliding-window median, registers it next to the
//! built-ins, and runs it. (Conformance, gradcheck and training are added as they land.)

mod median;

use op_runtime::{Scalar, Tensor};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = op_runtime::registry();
    let median = registry.register(&median::windowed_median::DECL)?;
    let op = median.op();
    println!("op       : {}", op.id);
    println!("identity : {}", op.hash_hex());
    let x = Tensor::vector((0..16).map(|i| ((i * 7) % 5) as f32).collect::<Vec<f32>>());
    let out = median.call(&[&x], &[Scalar::U32(3)])?;
    println!("median(w = 3) of {:?}\n  = {:?}", x.as_slice::<f32>().unwrap_or_default(), out.outputs[0].as_slice::<f32>().unwrap_or_default());
    println!("provenance: {}", out.provenance);
    Ok(())
}
