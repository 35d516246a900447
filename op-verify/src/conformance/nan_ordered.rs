//! The check of `nan = ordered` on the reference's outputs: a selection op orders NaN like any
//! value and moves it, so every NaN of an output is, bit for bit, a NaN of a float input (a
//! made-up or quieted NaN breaks the declaration). Judges the reference only, like the other
//! NaN policy; a kernel is then held to the reference's bits by its tolerance class.

use op_core::tensor::Tensor;

use super::cases::Case;

/// `Err` names the first output NaN whose bits no input NaN has.
pub fn check(case: &Case, outputs: &[Tensor]) -> Result<(), String> {
    let mut input_nans: Vec<u64> = Vec::new();
    for t in case.inputs.iter().filter(|t| t.dtype().is_float()) {
        let d = t.data();
        input_nans.extend((0..d.len()).filter(|i| d.get_f64(*i).is_some_and(f64::is_nan)).filter_map(|i| d.bits(i)));
    }
    for (k, o) in outputs.iter().enumerate().filter(|(_, o)| o.dtype().is_float()) {
        let d = o.data();
        for i in 0..d.len() {
            let (Some(v), Some(bits)) = (d.get_f64(i), d.bits(i)) else { continue };
            if v.is_nan() && !input_nans.contains(&bits) {
                return Err(format!(
                    "declares `nan = ordered` (NaN moved like any value, never made), but output {k} element {i} is a NaN (bits {bits:#x}) that no input holds"
                ));
            }
        }
    }
    Ok(())
}
