//! Tensors from and to ndarray arrays. A runtime tensor owns its storage (a `Vec`), so an owned
//! array in standard layout moves in without a copy and a host tensor moves out as an owned
//! array without a copy; a tensor is borrowed as an array view without a copy; an array view
//! cannot be borrowed by a tensor, so it (and any non-standard layout) is copied, by a function
//! whose name says so. Dtypes are never converted.

use crate::error::{Error, Refused};
use ndarray::{ArrayBase, ArrayD, ArrayViewD, Dimension, IxDyn};
use op_runtime::Tensor;
use op_runtime::TensorError;
use op_runtime::{Data, Element};

/// The element types arrays and tensors share: every dtype of op-runtime (`bool`, the integers,
/// `f16`, `bf16`, `f32`, `f64`).
pub trait NdElement: Element + Default {
    /// The storage's elements, moved out (no copy); the storage back where its dtype differs.
    fn take(d: Data) -> Result<Vec<Self>, Data>;
}

macro_rules! nd_element {
    ($($t:ty => $v:ident),* $(,)?) => {$(
        impl NdElement for $t {
            fn take(d: Data) -> Result<Vec<Self>, Data> {
                match d {
                    Data::$v(v) => Ok(v),
                    other => Err(other),
                }
            }
        }
    )*};
}
nd_element!(bool => Bool, u8 => U8, i8 => I8, u16 => U16, i16 => I16, u32 => U32, i32 => I32, u64 => U64, i64 => I64,
    op_runtime::f16 => F16, op_runtime::bf16 => BF16, f32 => F32, f64 => F64);

/// An owned array as a tensor of the same shape, without copying its elements: the array's
/// vector becomes the tensor's storage (a window sliced in place is first moved to the front of
/// its own allocation: no new allocation). An array not in standard layout (a transposed one) is
/// refused with [`Error::NotStandard`] and handed back in the [`Refused`]; copy it explicitly
/// with [`copy_to_tensor`].
pub fn into_tensor<T: NdElement, D: Dimension>(a: ndarray::Array<T, D>) -> Result<Tensor, Refused<ndarray::Array<T, D>>> {
    if !a.is_standard_layout() {
        let error = Error::NotStandard { shape: a.shape().to_vec(), strides: a.strides().to_vec() };
        return Err(Refused::new(error, a));
    }
    let (shape, n, ndim) = (a.shape().to_vec(), a.len(), a.ndim());
    let (mut v, offset) = a.into_raw_vec_and_offset();
    if let Some(k) = offset.filter(|k| *k > 0) {
        v.drain(..k);
    }
    v.truncate(n);
    // ndarray's shape always fills its elements, so this cannot fail; were it to, the refusal
    // holds an empty array (the elements went into the failed tensor).
    Tensor::from_vec(shape, v).map_err(|e| Refused::new(e.into(), ndarray::Array::default(D::zeros(ndim))))
}

/// A copy of any array or view as a tensor, its elements in logical (row-major) order whatever
/// its layout: one copy of a contiguous slice for a standard layout, an element-by-element walk
/// otherwise (a transposed view). The copy is allocated fallibly (`TooLarge`, never an abort).
pub fn copy_to_tensor<T: NdElement, S: ndarray::Data<Elem = T>, D: Dimension>(a: &ArrayBase<S, D>) -> Result<Tensor, Error> {
    let mut v = Vec::new();
    v.try_reserve_exact(a.len())
        .map_err(|e| TensorError::TooLarge { what: format!("a copy of an array of shape {:?}", a.shape()), why: e.to_string() })?;
    match a.as_slice() {
        Some(s) => v.extend_from_slice(s),
        None => v.extend(a.iter().copied()),
    }
    Ok(Tensor::from_vec(a.shape().to_vec(), v)?)
}

/// A host tensor as an owned array of its shape, without copying its elements (its storage
/// becomes the array's vector). A tensor of another dtype ([`Error::DType`]) or on a device
/// ([`Error::Device`]) is refused and handed back in the [`Refused`].
pub fn into_array<T: NdElement>(t: Tensor) -> Result<ArrayD<T>, Refused<Tensor>> {
    if let Err(error) = view_of::<T>(&t) {
        return Err(Refused::new(error, t));
    }
    let shape = t.shape().to_vec();
    match T::take(t.into_data()) {
        // The view above accepted this shape over these elements, so this cannot fail; were it
        // to, the refusal holds an empty tensor (the elements went into the failed array).
        Ok(v) => ArrayD::from_shape_vec(IxDyn(&shape), v)
            .map_err(|source| Refused::new(Error::Shape { shape, source }, Tensor::vector(Vec::<T>::new()))),
        // Refused by the view above already; the storage goes back as it came.
        Err(d) => {
            let error = Error::DType { what: "the tensor".into(), expected: T::DTYPE, found: d.dtype() };
            Err(Refused::new(error, Tensor::new(shape, d).unwrap_or_else(|_| Tensor::vector(Vec::<T>::new()))))
        }
    }
}

/// A host tensor borrowed as an array view of its shape (no copy). A tensor of another dtype
/// or on a device is refused.
pub fn view_of<T: NdElement>(t: &Tensor) -> Result<ArrayViewD<'_, T>, Error> {
    view_named(t, "the tensor")
}

/// [`view_of`], naming the tensor in errors.
pub(crate) fn view_named<'a, T: NdElement>(t: &'a Tensor, what: &str) -> Result<ArrayViewD<'a, T>, Error> {
    if !t.is_host() {
        return Err(Error::Device { what: what.to_string(), placement: t.placement().to_string() });
    }
    let s = t.as_slice::<T>().ok_or_else(|| Error::DType { what: what.to_string(), expected: T::DTYPE, found: t.dtype() })?;
    ArrayViewD::from_shape(IxDyn(t.shape()), s).map_err(|source| Error::Shape { shape: t.shape().to_vec(), source })
}
