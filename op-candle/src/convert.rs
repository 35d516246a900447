//! Moving elements between candle and op-runtime: the dtype map (every dtype both libraries
//! have; candle's fp8/fp6/fp4 are refused), candle CPU storage read through its layout into a
//! runtime tensor, and runtime tensors into candle storage or tensors. It never reads a strided
//! layout as if it were contiguous, and never converts a dtype.

use crate::error::Error;
use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, Device, Layout, Shape, Storage};
use op_runtime::Data;
use op_runtime::TensorError;
use op_runtime::{DType, Tensor};

/// The runtime dtype of a candle dtype, or `None` for candle's 8-, 6- and 4-bit floats, which
/// op-runtime does not have.
pub fn runtime_dtype(d: candle_core::DType) -> Option<DType> {
    use candle_core::DType as C;
    Some(match d {
        C::U8 => DType::u8,
        C::U32 => DType::u32,
        C::I16 => DType::i16,
        C::I32 => DType::i32,
        C::I64 => DType::i64,
        C::BF16 => DType::bf16,
        C::F16 => DType::f16,
        C::F32 => DType::f32,
        C::F64 => DType::f64,
        // F8E4M3, F6E2M3, F6E3M2, F4, F8E8M0, and any dtype a later candle adds.
        _ => return None,
    })
}

/// What a call reads a tensor for, for error messages: the op and the input's name.
pub(crate) struct Site<'a> {
    pub op: &'a str,
    pub what: &'a str,
}

impl Site<'_> {
    fn dtype_err(&self, dtype: String) -> Error {
        Error::UnsupportedDType { op: self.op.to_string(), what: self.what.to_string(), dtype }
    }
}

/// Copies the elements `layout` addresses in `storage` into a runtime tensor (a runtime tensor
/// owns its storage, so this is one copy of a contiguous range). A layout that is not row-major
/// contiguous is `Error::Strided`; a range outside the storage is `Error::Layout`.
pub(crate) fn tensor_from_cpu(site: &Site<'_>, storage: &CpuStorage, layout: &Layout) -> Result<Tensor, Error> {
    let strided = || Error::Strided {
        op: site.op.to_string(),
        what: site.what.to_string(),
        shape: layout.dims().to_vec(),
        stride: layout.stride().to_vec(),
        offset: layout.start_offset(),
    };
    let (start, end) = layout.contiguous_offsets().ok_or_else(strided)?;
    let shape = layout.dims().to_vec();
    macro_rules! take {
        ($v:expr) => {{
            let part = $v.get(start..end).ok_or_else(|| Error::Layout {
                op: site.op.to_string(),
                what: site.what.to_string(),
                why: format!("elements {start}..{end} of a storage of {} element(s)", $v.len()),
            })?;
            Tensor::from_vec(shape, copied(site, part)?).map_err(|e| Error::Tensor { op: site.op.to_string(), source: e })
        }};
    }
    match storage {
        CpuStorage::U8(v) => take!(v),
        CpuStorage::U32(v) => take!(v),
        CpuStorage::I16(v) => take!(v),
        CpuStorage::I32(v) => take!(v),
        CpuStorage::I64(v) => take!(v),
        CpuStorage::BF16(v) => take!(v),
        CpuStorage::F16(v) => take!(v),
        CpuStorage::F32(v) => take!(v),
        CpuStorage::F64(v) => take!(v),
        other => Err(site.dtype_err(format!("{:?}", other.dtype()))),
    }
}

/// A copy of `part`, allocated fallibly: `Error::Tensor` (`TooLarge`) where it cannot be,
/// never an abort.
fn copied<T: Copy>(site: &Site<'_>, part: &[T]) -> Result<Vec<T>, Error> {
    let mut v = Vec::new();
    v.try_reserve_exact(part.len()).map_err(|e| Error::Tensor {
        op: site.op.to_string(),
        source: TensorError::TooLarge { what: format!("a copy of {} ({} element(s))", site.what, part.len()), why: e.to_string() },
    })?;
    v.extend_from_slice(part);
    Ok(v)
}

/// A candle tensor's elements as a runtime tensor: CPU storage only (another device is
/// `Error::Device`, never copied implicitly); a strided layout is made contiguous by candle's
/// `contiguous()` first (an explicit copy, used for backward's tensors).
pub(crate) fn tensor_from_candle(site: &Site<'_>, t: &candle_core::Tensor) -> Result<Tensor, Error> {
    check_cpu(site, t)?;
    let t = match t.is_contiguous() {
        true => t.clone(),
        false => t.contiguous().map_err(|e| Error::Candle { op: site.op.to_string(), source: Box::new(e) })?,
    };
    let (storage, layout) = t.storage_and_layout();
    match &*storage {
        Storage::Cpu(s) => tensor_from_cpu(site, s, layout),
        _ => Err(device_err(site, t.device())),
    }
}

/// `Error::Device` unless `t` lives on candle's CPU device.
pub(crate) fn check_cpu(site: &Site<'_>, t: &candle_core::Tensor) -> Result<(), Error> {
    match t.device().is_cpu() {
        true => Ok(()),
        false => Err(device_err(site, t.device())),
    }
}

fn device_err(site: &Site<'_>, d: &Device) -> Error {
    Error::Device { op: site.op.to_string(), what: site.what.to_string(), device: format!("{:?}", d.location()) }
}

/// A host runtime tensor as candle CPU storage and shape, moving its elements (no copy). A
/// device tensor is `Error::Device`; a dtype candle lacks (bool, i8, u16, u64) is
/// `Error::UnsupportedDType`.
pub(crate) fn cpu_from_tensor(site: &Site<'_>, t: Tensor) -> Result<(CpuStorage, Shape), Error> {
    if !t.is_host() {
        return Err(Error::Device { op: site.op.to_string(), what: site.what.to_string(), device: t.placement().to_string() });
    }
    let shape = Shape::from(t.shape().to_vec());
    let storage = match t.into_data() {
        Data::U8(v) => CpuStorage::U8(v),
        Data::U32(v) => CpuStorage::U32(v),
        Data::I16(v) => CpuStorage::I16(v),
        Data::I32(v) => CpuStorage::I32(v),
        Data::I64(v) => CpuStorage::I64(v),
        Data::BF16(v) => CpuStorage::BF16(v),
        Data::F16(v) => CpuStorage::F16(v),
        Data::F32(v) => CpuStorage::F32(v),
        Data::F64(v) => CpuStorage::F64(v),
        other => return Err(site.dtype_err(other.dtype().to_string())),
    };
    Ok((storage, shape))
}

/// A host runtime tensor as a candle tensor on the CPU device, moving its elements (candle's
/// `from_vec` keeps the vector on the CPU).
pub(crate) fn candle_from_tensor(site: &Site<'_>, t: Tensor) -> Result<candle_core::Tensor, Error> {
    let (storage, shape) = cpu_from_tensor(site, t)?;
    let cpu = Device::Cpu;
    let made = match storage {
        CpuStorage::U8(v) => candle_core::Tensor::from_vec(v, shape, &cpu),
        CpuStorage::U32(v) => candle_core::Tensor::from_vec(v, shape, &cpu),
        CpuStorage::I16(v) => candle_core::Tensor::from_vec(v, shape, &cpu),
        CpuStorage::I32(v) => candle_core::Tensor::from_vec(v, shape, &cpu),
        CpuStorage::I64(v) => candle_core::Tensor::from_vec(v, shape, &cpu),
        CpuStorage::BF16(v) => candle_core::Tensor::from_vec(v, shape, &cpu),
        CpuStorage::F16(v) => candle_core::Tensor::from_vec(v, shape, &cpu),
        CpuStorage::F32(v) => candle_core::Tensor::from_vec(v, shape, &cpu),
        CpuStorage::F64(v) => candle_core::Tensor::from_vec(v, shape, &cpu),
        other => return Err(site.dtype_err(format!("{:?}", other.dtype()))),
    };
    made.map_err(|e| Error::Candle { op: site.op.to_string(), source: Box::new(e) })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SITE: Site<'static> = Site { op: "test/op@1", what: "input `x`" };

    /// The forward hook reads the contiguous range at its offset, and refuses a strided layout
    /// or one past its storage rather than read it as something else.
    #[test]
    fn layouts_are_read_at_their_offset_or_refused() {
        let storage = CpuStorage::F32((0..12).map(|v| v as f32).collect());
        let at = Layout::contiguous_with_offset((2, 3), 4);
        let t = tensor_from_cpu(&SITE, &storage, &at).unwrap();
        assert_eq!((t.shape(), t.as_slice::<f32>().unwrap()), (&[2, 3][..], &[4.0f32, 5.0, 6.0, 7.0, 8.0, 9.0][..]));
        let transposed = Layout::contiguous((3, 4)).transpose(0, 1).unwrap();
        match tensor_from_cpu(&SITE, &storage, &transposed) {
            Err(Error::Strided { shape, stride, offset, .. }) => assert_eq!((shape, stride, offset), (vec![4, 3], vec![1, 4], 0)),
            other => panic!("expected Error::Strided, got {other:?}"),
        }
        let past = Layout::contiguous_with_offset(8, 6);
        let e = tensor_from_cpu(&SITE, &storage, &past).unwrap_err();
        assert!(matches!(e, Error::Layout { .. }), "{e}");
        assert_eq!(
            e.to_string(),
            "op `test/op@1`: input `x`'s layout addresses elements 6..14 of a storage of 12 element(s); it is not read"
        );
        let f4 = CpuStorage::F4(vec![0x11]);
        assert!(matches!(tensor_from_cpu(&SITE, &f4, &Layout::contiguous(1)), Err(Error::UnsupportedDType { .. })));
    }

    /// A runtime tensor moves into candle storage without a copy.
    #[test]
    fn outputs_move_into_candle_storage() {
        let t = Tensor::vector(vec![1.0f32, 2.0, 3.0]);
        let ptr = t.as_slice::<f32>().unwrap().as_ptr();
        let (s, shape) = cpu_from_tensor(&SITE, t).unwrap();
        match s {
            CpuStorage::F32(v) => assert_eq!((v.as_ptr(), shape.dims()), (ptr, &[3][..])),
            other => panic!("expected f32 storage, got {:?}", other.dtype()),
        }
    }
}
