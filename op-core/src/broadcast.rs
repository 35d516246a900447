//! numpy broadcasting of an op declared `broadcast = numpy`: the host expansion of an operand
//! to the broadcast shape (before the op runs on its operands flattened) and the reduction of
//! a gradient back to an operand's shape (summing over the axes it was expanded along). The
//! shape rule itself is `op_contract::contract::broadcast_shapes`, applied by the plan. Owns
//! index arithmetic on host tensors only; device tensors that would need expanding are refused
//! by the caller (no implicit copy).

use crate::error::{DispatchError, TensorError};
use crate::op::RegisteredOp;
use crate::tensor::{checked_numel, Data, Tensor};

/// For each position of the `to`-shaped output (row-major), the position in an operand of
/// `shape` it reads: the operand aligned at the last axis, its length-1 (and missing) axes
/// repeated.
fn source_index(shape: &[usize], to: &[usize]) -> Vec<usize> {
    let n = checked_numel(to).unwrap_or(0);
    let lead = to.len() - shape.len();
    // The operand's stride along each axis of `to` (0 where it is repeated).
    let mut strides = vec![0usize; to.len()];
    let mut s = 1usize;
    for k in (0..shape.len()).rev() {
        if shape[k] != 1 {
            strides[lead + k] = s;
        }
        s *= shape[k];
    }
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0usize; to.len()];
    let mut at = 0usize;
    for _ in 0..n {
        out.push(at);
        // Odometer step over `to`, last axis fastest.
        for k in (0..to.len()).rev() {
            idx[k] += 1;
            at += strides[k];
            if idx[k] < to[k] {
                break;
            }
            at -= strides[k] * idx[k];
            idx[k] = 0;
        }
    }
    out
}

/// `t` (a host tensor) expanded to the shape `to`, which it broadcasts to.
pub fn expand_host(t: &Tensor, to: &[usize]) -> Result<Tensor, TensorError> {
    let size = t.dtype().size();
    let bytes = t.host_data()?.to_le_bytes();
    let src = source_index(t.shape(), to);
    let mut out = Vec::with_capacity(src.len() * size);
    for i in src {
        out.extend_from_slice(&bytes[i * size..(i + 1) * size]);
    }
    Tensor::new(to.to_vec(), Data::from_le_bytes(t.dtype(), &out)?)
}

/// `g` (a float host tensor of the broadcast shape) summed over the axes an operand of `shape`
/// was expanded along: each element of the result sums, in f64 and in row-major order, the
/// elements of `g` that read it, rounded once to `g`'s dtype.
pub fn reduce_host(g: &Tensor, shape: &[usize]) -> Result<Tensor, TensorError> {
    let src = source_index(shape, g.shape());
    let values = g.host_data()?.to_f64_vec().ok_or(TensorError::NotFloat { from: g.dtype(), to: g.dtype() })?;
    let mut acc = vec![0f64; checked_numel(shape).unwrap_or(0)];
    for (v, i) in values.iter().zip(src) {
        acc[i] += *v;
    }
    Tensor::new(shape.to_vec(), Data::try_from_f64(g.dtype(), &acc)?)
}

/// The inputs of a call of a broadcasting op expanded to the broadcast shape `to`, or `None`
/// where every input already has it (or the op does not broadcast). A device tensor that would
/// need expanding is refused (expansion runs on the host; nothing is copied implicitly).
pub fn expand_inputs(op: &RegisteredOp, inputs: &[&Tensor], to: &[usize]) -> Result<Option<Vec<Tensor>>, DispatchError> {
    if !op.plan.broadcasts() || inputs.iter().all(|t| t.shape() == to) {
        return Ok(None);
    }
    let names = op.contract.signature.inputs().map(|t| t.name.clone());
    let mut out = Vec::with_capacity(inputs.len());
    for (t, name) in inputs.iter().zip(names) {
        if t.shape() == to {
            out.push((*t).clone());
            continue;
        }
        if !t.is_host() {
            return Err(DispatchError::BroadcastOnDevice { op: op.id.clone(), input: name, shape: t.shape().into(), to: to.into() });
        }
        let e = expand_host(t, to).map_err(|e| DispatchError::Broadcast {
            op: op.id.clone(),
            first: name.clone(),
            first_shape: t.shape().into(),
            second: format!("the broadcast shape ({e})"),
            second_shape: to.into(),
        })?;
        out.push(e);
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_repeats_length_one_and_missing_axes() {
        let row = Tensor::from_vec(vec![3], vec![1.0f32, 2.0, 3.0]).unwrap();
        let e = expand_host(&row, &[2, 3]).unwrap();
        assert_eq!(e.as_slice::<f32>().unwrap(), &[1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
        let col = Tensor::from_vec(vec![2, 1], vec![1u32, 2]).unwrap();
        let e = expand_host(&col, &[2, 3]).unwrap();
        assert_eq!(e.as_slice::<u32>().unwrap(), &[1, 1, 1, 2, 2, 2]);
        let mid = Tensor::from_vec(vec![2, 1, 2], vec![1.0f64, 2.0, 3.0, 4.0]).unwrap();
        let e = expand_host(&mid, &[2, 3, 2]).unwrap();
        assert_eq!(e.as_slice::<f64>().unwrap(), &[1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 3.0, 4.0, 3.0, 4.0, 3.0, 4.0]);
        let scalar = Tensor::from_vec(Vec::<usize>::new(), vec![7.0f32]).unwrap();
        assert_eq!(expand_host(&scalar, &[2, 2]).unwrap().as_slice::<f32>().unwrap(), &[7.0; 4]);
    }

    #[test]
    fn reduction_sums_over_the_expanded_axes() {
        let g = Tensor::from_vec(vec![2, 3], vec![1.0f32, 2.0, 3.0, 10.0, 20.0, 30.0]).unwrap();
        assert_eq!(reduce_host(&g, &[3]).unwrap().as_slice::<f32>().unwrap(), &[11.0, 22.0, 33.0]);
        assert_eq!(reduce_host(&g, &[2, 1]).unwrap().as_slice::<f32>().unwrap(), &[6.0, 60.0]);
        assert_eq!(reduce_host(&g, &[]).unwrap().as_slice::<f32>().unwrap(), &[66.0]);
        assert_eq!(reduce_host(&g, &[2, 3]).unwrap().as_slice::<f32>().unwrap(), g.as_slice::<f32>().unwrap());
    }
}
