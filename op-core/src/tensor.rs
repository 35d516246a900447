//! Tensors: a dtype, a shape and contiguous row-major storage for every dtype of the design,
//! on the host or on a device (see [`crate::device`]), plus scalar parameter values.
//! Creating a tensor from bytes checks dtype and length; nothing is ever reinterpreted, and
//! nothing moves between host and device except through [`Tensor::to_device`] and
//! [`Tensor::to_host`]. Every constructor that allocates checks the size (overflow, the host's
//! physical memory) and allocates fallibly: a size it cannot allocate is a typed
//! [`TensorError`], never an abort or a panic.

use crate::device::{DeviceId, DeviceStorage, Placement};
use crate::error::TensorError;
use crate::hostmem::host_memory;
pub use half::{bf16, f16};
pub use op_contract::contract::DType;
use std::sync::Arc;

/// Why `n` elements of `T` cannot be allocated on the host, if they cannot: their bytes overflow
/// `usize`, exceed the host's physical memory, or the allocator refuses them. Never allocates.
fn host_room<T>(n: usize) -> Result<usize, String> {
    let bytes = n.checked_mul(std::mem::size_of::<T>()).filter(|b| *b <= isize::MAX as usize);
    let bytes = bytes.ok_or_else(|| format!("{n} elements of {} bytes overflow the address space", std::mem::size_of::<T>()))?;
    match host_memory() {
        Some(mem) if bytes as u64 > mem => Err(format!("{bytes} bytes, more than this host's physical memory ({mem} bytes)")),
        _ => Ok(bytes),
    }
}

/// An empty vector with room for `n` elements: a kept buffer of a dropped tensor where one fits,
/// else allocated fallibly ([`host_room`], then `try_reserve_exact`) and advised for huge pages
/// where large ([`crate::hostmem`]); the reason as text when it cannot be.
fn try_with_capacity<T: Send + 'static>(n: usize) -> Result<Vec<T>, String> {
    let bytes = host_room::<T>(n)?;
    if let Some(v) = crate::hostmem::take_empty(n) {
        return Ok(v);
    }
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|e| format!("{bytes} bytes could not be allocated ({e})"))?;
    crate::hostmem::advise(&mut v);
    Ok(v)
}

/// The `n` items of `items` collected into a vector allocated fallibly (see [`try_with_capacity`]).
fn try_collect<T: Send + 'static>(n: usize, items: impl Iterator<Item = T>) -> Result<Vec<T>, String> {
    let mut v = try_with_capacity(n)?;
    v.extend(items.take(n));
    Ok(v)
}

/// `n` default (zero) elements, allocated fallibly.
fn try_zeroed<T: Default + Clone + Send + 'static>(n: usize) -> Result<Vec<T>, String> {
    let mut v = try_with_capacity(n)?;
    v.resize(n, T::default());
    Ok(v)
}

/// Typed contiguous storage.
#[derive(Clone, Debug, PartialEq)]
#[allow(missing_docs)]
pub enum Data {
    Bool(Vec<bool>),
    U8(Vec<u8>),
    I8(Vec<i8>),
    U16(Vec<u16>),
    I16(Vec<i16>),
    U32(Vec<u32>),
    I32(Vec<i32>),
    U64(Vec<u64>),
    I64(Vec<i64>),
    F16(Vec<f16>),
    BF16(Vec<bf16>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

/// Rust element types of tensors.
pub trait Element: Copy + Send + Sync + std::fmt::Debug + 'static {
    /// The dtype.
    const DTYPE: DType;
    /// Borrows storage of this type.
    fn slice(d: &Data) -> Option<&[Self]>;
    /// Mutably borrows storage of this type.
    fn slice_mut(d: &mut Data) -> Option<&mut [Self]>;
    /// Wraps a vector without copying.
    fn wrap(v: Vec<Self>) -> Data;
    /// Little-endian bytes of one element.
    fn to_le(self, out: &mut Vec<u8>);
    /// Bits as u64 (for reports).
    fn bits(self) -> u64;
}

macro_rules! element {
    ($t:ty, $d:ident, $v:ident, |$x:ident| $bits:expr) => {
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            fn slice(d: &Data) -> Option<&[Self]> {
                match d {
                    Data::$v(v) => Some(v),
                    _ => None,
                }
            }
            fn slice_mut(d: &mut Data) -> Option<&mut [Self]> {
                match d {
                    Data::$v(v) => Some(v),
                    _ => None,
                }
            }
            fn wrap(v: Vec<Self>) -> Data {
                Data::$v(v)
            }
            fn to_le(self, out: &mut Vec<u8>) {
                let $x = self;
                out.extend_from_slice(&($bits).to_le_bytes()[..std::mem::size_of::<$t>()]);
            }
            fn bits(self) -> u64 {
                let $x = self;
                $bits
            }
        }
    };
}

element!(bool, bool, Bool, |x| x as u64);
element!(u8, u8, U8, |x| x as u64);
element!(i8, i8, I8, |x| x as u8 as u64);
element!(u16, u16, U16, |x| x as u64);
element!(i16, i16, I16, |x| x as u16 as u64);
element!(u32, u32, U32, |x| x as u64);
element!(i32, i32, I32, |x| x as u32 as u64);
element!(u64, u64, U64, |x| x);
element!(i64, i64, I64, |x| x as u64);
element!(f16, f16, F16, |x| x.to_bits() as u64);
element!(bf16, bf16, BF16, |x| x.to_bits() as u64);
element!(f32, f32, F32, |x| x.to_bits() as u64);
element!(f64, f64, F64, |x| x.to_bits());

impl Data {
    /// The dtype of the storage.
    pub fn dtype(&self) -> DType {
        match self {
            Data::Bool(_) => DType::bool,
            Data::U8(_) => DType::u8,
            Data::I8(_) => DType::i8,
            Data::U16(_) => DType::u16,
            Data::I16(_) => DType::i16,
            Data::U32(_) => DType::u32,
            Data::I32(_) => DType::i32,
            Data::U64(_) => DType::u64,
            Data::I64(_) => DType::i64,
            Data::F16(_) => DType::f16,
            Data::BF16(_) => DType::bf16,
            Data::F32(_) => DType::f32,
            Data::F64(_) => DType::f64,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Data::Bool(v) => v.len(),
            Data::U8(v) => v.len(),
            Data::I8(v) => v.len(),
            Data::U16(v) => v.len(),
            Data::I16(v) => v.len(),
            Data::U32(v) => v.len(),
            Data::I32(v) => v.len(),
            Data::U64(v) => v.len(),
            Data::I64(v) => v.len(),
            Data::F16(v) => v.len(),
            Data::BF16(v) => v.len(),
            Data::F32(v) => v.len(),
            Data::F64(v) => v.len(),
        }
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` as f64 (lossless for every dtype but 64-bit integers beyond 2^53).
    pub fn get_f64(&self, i: usize) -> Option<f64> {
        Some(match self {
            Data::Bool(v) => *v.get(i)? as u8 as f64,
            Data::U8(v) => *v.get(i)? as f64,
            Data::I8(v) => *v.get(i)? as f64,
            Data::U16(v) => *v.get(i)? as f64,
            Data::I16(v) => *v.get(i)? as f64,
            Data::U32(v) => *v.get(i)? as f64,
            Data::I32(v) => *v.get(i)? as f64,
            Data::U64(v) => *v.get(i)? as f64,
            Data::I64(v) => *v.get(i)? as f64,
            Data::F16(v) => v.get(i)?.to_f64(),
            Data::BF16(v) => v.get(i)?.to_f64(),
            Data::F32(v) => *v.get(i)? as f64,
            Data::F64(v) => *v.get(i)?,
        })
    }

    /// Bits of element `i` (zero-extended).
    pub fn bits(&self, i: usize) -> Option<u64> {
        Some(match self {
            Data::Bool(v) => v.get(i)?.bits(),
            Data::U8(v) => v.get(i)?.bits(),
            Data::I8(v) => v.get(i)?.bits(),
            Data::U16(v) => v.get(i)?.bits(),
            Data::I16(v) => v.get(i)?.bits(),
            Data::U32(v) => v.get(i)?.bits(),
            Data::I32(v) => v.get(i)?.bits(),
            Data::U64(v) => v.get(i)?.bits(),
            Data::I64(v) => v.get(i)?.bits(),
            Data::F16(v) => v.get(i)?.bits(),
            Data::BF16(v) => v.get(i)?.bits(),
            Data::F32(v) => v.get(i)?.bits(),
            Data::F64(v) => v.get(i)?.bits(),
        })
    }

    /// Little-endian bytes of the whole storage.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        fn go<E: Element>(v: &[E]) -> Vec<u8> {
            let mut out = Vec::with_capacity(std::mem::size_of_val(v));
            v.iter().for_each(|x| x.to_le(&mut out));
            out
        }
        match self {
            Data::Bool(v) => go(v),
            Data::U8(v) => go(v),
            Data::I8(v) => go(v),
            Data::U16(v) => go(v),
            Data::I16(v) => go(v),
            Data::U32(v) => go(v),
            Data::I32(v) => go(v),
            Data::U64(v) => go(v),
            Data::I64(v) => go(v),
            Data::F16(v) => go(v),
            Data::BF16(v) => go(v),
            Data::F32(v) => go(v),
            Data::F64(v) => go(v),
        }
    }

    /// Decodes little-endian bytes of a dtype; the length must be a whole number of elements.
    /// The storage is allocated fallibly (`TooLarge` where it cannot be).
    pub fn from_le_bytes(dtype: DType, bytes: &[u8]) -> Result<Data, TensorError> {
        let size = dtype.size();
        if !bytes.len().is_multiple_of(size) {
            return Err(TensorError::ByteLength { dtype, bytes: bytes.len(), elements: None });
        }
        let n = bytes.len() / size;
        let too_large = |why: String| TensorError::TooLarge { what: format!("`{dtype}` storage of {n} element(s)"), why };
        let c = bytes.chunks_exact(size);
        let le2 = |c: &[u8]| [c[0], c[1]];
        let le4 = |c: &[u8]| [c[0], c[1], c[2], c[3]];
        let le8 = |c: &[u8]| <[u8; 8]>::try_from(c).unwrap_or([0; 8]);
        Ok(match dtype {
            DType::bool => {
                if let Some((index, byte)) = bytes.iter().enumerate().find(|(_, b)| **b > 1) {
                    return Err(TensorError::InvalidBool { index, byte: *byte });
                }
                Data::Bool(try_collect(n, bytes.iter().map(|b| *b == 1)).map_err(too_large)?)
            }
            DType::u8 => Data::U8(try_collect(n, bytes.iter().copied()).map_err(too_large)?),
            DType::i8 => Data::I8(try_collect(n, bytes.iter().map(|b| *b as i8)).map_err(too_large)?),
            DType::u16 => Data::U16(try_collect(n, c.map(|c| u16::from_le_bytes(le2(c)))).map_err(too_large)?),
            DType::i16 => Data::I16(try_collect(n, c.map(|c| i16::from_le_bytes(le2(c)))).map_err(too_large)?),
            DType::u32 => Data::U32(try_collect(n, c.map(|c| u32::from_le_bytes(le4(c)))).map_err(too_large)?),
            DType::i32 => Data::I32(try_collect(n, c.map(|c| i32::from_le_bytes(le4(c)))).map_err(too_large)?),
            DType::u64 => Data::U64(try_collect(n, c.map(|c| u64::from_le_bytes(le8(c)))).map_err(too_large)?),
            DType::i64 => Data::I64(try_collect(n, c.map(|c| i64::from_le_bytes(le8(c)))).map_err(too_large)?),
            DType::f16 => Data::F16(try_collect(n, c.map(|c| f16::from_bits(u16::from_le_bytes(le2(c))))).map_err(too_large)?),
            DType::bf16 => Data::BF16(try_collect(n, c.map(|c| bf16::from_bits(u16::from_le_bytes(le2(c))))).map_err(too_large)?),
            DType::f32 => Data::F32(try_collect(n, c.map(|c| f32::from_le_bytes(le4(c)))).map_err(too_large)?),
            DType::f64 => Data::F64(try_collect(n, c.map(|c| f64::from_le_bytes(le8(c)))).map_err(too_large)?),
        })
    }

    /// `n` zero elements of `dtype` (`false` for `bool`), allocated fallibly: the reason as text
    /// when they cannot be (too many bytes for this host, or refused by the allocator).
    pub fn try_zeros(dtype: DType, n: usize) -> Result<Data, String> {
        Ok(match dtype {
            DType::bool => Data::Bool(try_zeroed(n)?),
            DType::u8 => Data::U8(try_zeroed(n)?),
            DType::i8 => Data::I8(try_zeroed(n)?),
            DType::u16 => Data::U16(try_zeroed(n)?),
            DType::i16 => Data::I16(try_zeroed(n)?),
            DType::u32 => Data::U32(try_zeroed(n)?),
            DType::i32 => Data::I32(try_zeroed(n)?),
            DType::u64 => Data::U64(try_zeroed(n)?),
            DType::i64 => Data::I64(try_zeroed(n)?),
            DType::f16 => Data::F16(try_zeroed(n)?),
            DType::bf16 => Data::BF16(try_zeroed(n)?),
            DType::f32 => Data::F32(try_zeroed(n)?),
            DType::f64 => Data::F64(try_zeroed(n)?),
        })
    }

    /// A copy of elements `start..end`; `None` if the range is out of bounds.
    pub fn slice_range(&self, start: usize, end: usize) -> Option<Data> {
        macro_rules! go {
            ($($v:ident),*) => {
                match self {
                    $(Data::$v(v) => Data::$v(v.get(start..end)?.to_vec()),)*
                }
            };
        }
        Some(go!(Bool, U8, I8, U16, I16, U32, I32, U64, I64, F16, BF16, F32, F64))
    }

    /// Concatenates storages of one dtype; `None` if the dtypes differ, `parts` is empty, or
    /// the result cannot be allocated (its length overflows, or the allocator refuses it).
    pub fn concat(parts: &[&Data]) -> Option<Data> {
        let first = parts.first()?;
        let len = parts.iter().try_fold(0usize, |n, p| n.checked_add(p.len()))?;
        macro_rules! go {
            ($($v:ident),*) => {
                match first {
                    $(Data::$v(_) => {
                        let mut out = try_with_capacity(len).ok()?;
                        for p in parts {
                            match p {
                                Data::$v(v) => out.extend_from_slice(v),
                                _ => return None,
                            }
                        }
                        Data::$v(out)
                    })*
                }
            };
        }
        Some(go!(Bool, U8, I8, U16, I16, U32, I32, U64, I64, F16, BF16, F32, F64))
    }

    /// Float storage of `dtype` holding `v`, each value rounded to nearest (ties to even) once;
    /// `None` for a non-float dtype, or storage that cannot be allocated
    /// ([`Data::try_from_f64`] says which).
    pub fn from_f64(dtype: DType, v: &[f64]) -> Option<Data> {
        Data::try_from_f64(dtype, v).ok()
    }

    /// [`Data::from_f64`] with a typed error: `NotFloat` for a non-float dtype, `TooLarge`
    /// where the storage cannot be allocated.
    pub fn try_from_f64(dtype: DType, v: &[f64]) -> Result<Data, TensorError> {
        let too_large = |why: String| TensorError::TooLarge { what: format!("`{dtype}` storage of {} element(s)", v.len()), why };
        let n = v.len();
        Ok(match dtype {
            DType::f16 => Data::F16(try_collect(n, v.iter().map(|x| half::f16::from_f64(*x))).map_err(too_large)?),
            DType::bf16 => Data::BF16(try_collect(n, v.iter().map(|x| half::bf16::from_f64(*x))).map_err(too_large)?),
            DType::f32 => Data::F32(try_collect(n, v.iter().map(|x| *x as f32)).map_err(too_large)?),
            DType::f64 => Data::F64(try_collect(n, v.iter().copied()).map_err(too_large)?),
            _ => return Err(TensorError::NotFloat { from: DType::f64, to: dtype }),
        })
    }

    /// Converts float storage to f64 (for gradcheck); `None` for non-float storage, or a
    /// vector that cannot be allocated.
    pub fn to_f64_vec(&self) -> Option<Vec<f64>> {
        let n = self.len();
        match self {
            Data::F16(v) => try_collect(n, v.iter().map(|x| x.to_f64())).ok(),
            Data::BF16(v) => try_collect(n, v.iter().map(|x| x.to_f64())).ok(),
            Data::F32(v) => try_collect(n, v.iter().map(|x| *x as f64)).ok(),
            Data::F64(v) => try_collect(n, v.iter().copied()).ok(),
            _ => None,
        }
    }
}

/// A device host tensors can be moved to (e.g. a `WgpuEngine`).
pub trait Device {
    /// Which device this is.
    fn id(&self) -> DeviceId;
    /// Copies a host tensor's data into a new buffer on this device, counted as one
    /// host-to-device transfer. A tensor already on this device is returned as is (no
    /// transfer); one on another device is refused (move it through the host explicitly).
    fn upload(&self, t: &Tensor) -> Result<Tensor, TensorError>;
}

/// A tensor's shape, stored inline up to 4 dims (no allocation on the call path).
pub type Shape = smallvec::SmallVec<[usize; 4]>;

/// A tensor: dtype, shape, contiguous row-major storage on the host, or a buffer on a device
/// (a *device tensor*: its host storage is empty; [`Tensor::as_slice`] is `None`, and every host
/// backend refuses it with `BackendError::Placement`).
#[derive(Clone, Debug)]
pub struct Tensor {
    shape: Shape,
    /// Host elements; empty (of the tensor's dtype) for a device tensor.
    data: Data,
    device: Option<Arc<dyn DeviceStorage>>,
}

/// A large host tensor's storage goes to the buffer pool when the tensor is dropped
/// ([`crate::hostmem`]): the next large output of its element type and size reuses it,
/// without page faults. Small storage is freed as usual.
impl Drop for Tensor {
    fn drop(&mut self) {
        if self.device.is_some() {
            return;
        }
        macro_rules! keep {
            ($($v:ident),*) => {
                match &mut self.data {
                    $(Data::$v(v) => crate::hostmem::keep(std::mem::take(v)),)*
                }
            };
        }
        keep!(Bool, U8, I8, U16, I16, U32, I32, U64, I64, F16, BF16, F32, F64)
    }
}

/// Host tensors are equal when shapes and elements are; device tensors only when they share
/// the same device buffer (their elements are not compared: that would need a transfer).
impl PartialEq for Tensor {
    fn eq(&self, other: &Tensor) -> bool {
        let same_storage = match (&self.device, &other.device) {
            (None, None) => self.data == other.data,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        same_storage && self.shape == other.shape && self.dtype() == other.dtype()
    }
}

impl Tensor {
    /// A tensor from typed data; the shape must hold exactly `data.len()` elements.
    pub fn new(shape: impl Into<Vec<usize>>, data: Data) -> Result<Tensor, TensorError> {
        Tensor::with_shape(Shape::from_vec(shape.into()), data)
    }

    /// `new` with the shape as stored (no allocation for up to 4 dims).
    pub fn with_shape(shape: Shape, data: Data) -> Result<Tensor, TensorError> {
        let n = checked_numel(&shape).ok_or_else(|| TensorError::ShapeOverflow { shape: shape.to_vec() })?;
        if n != data.len() {
            return Err(TensorError::ShapeMismatch { shape: shape.to_vec(), elements: data.len() });
        }
        Ok(Tensor { shape, data, device: None })
    }

    /// A host tensor from storage the caller has checked holds exactly the shape's elements.
    pub fn from_checked(shape: Shape, data: Data) -> Tensor {
        debug_assert_eq!(checked_numel(&shape), Some(data.len()), "storage does not fill the shape");
        Tensor { shape, data, device: None }
    }

    /// A device tensor over `storage` (for GPU backends): the storage must hold exactly the
    /// shape's elements of `dtype`.
    pub fn on_device(dtype: DType, shape: impl Into<Vec<usize>>, storage: Arc<dyn DeviceStorage>) -> Result<Tensor, TensorError> {
        let shape = Shape::from_vec(shape.into());
        let overflow = || TensorError::ShapeOverflow { shape: shape.to_vec() };
        let n = checked_numel(&shape).ok_or_else(overflow)?;
        let want = n.checked_mul(dtype.size()).ok_or_else(overflow)? as u64;
        if storage.bytes() != want {
            return Err(TensorError::ByteLength { dtype, bytes: storage.bytes() as usize, elements: Some(n) });
        }
        Ok(Tensor { shape, data: Data::from_le_bytes(dtype, &[])?, device: Some(storage) })
    }

    /// Where the elements live.
    pub fn placement(&self) -> Placement {
        match &self.device {
            None => Placement::Host,
            Some(d) => Placement::Device(d.device()),
        }
    }

    /// Whether the elements are in host memory.
    pub fn is_host(&self) -> bool {
        self.device.is_none()
    }

    /// The device storage of a device tensor (`None` on the host).
    pub fn device_storage(&self) -> Option<&Arc<dyn DeviceStorage>> {
        self.device.as_ref()
    }

    /// This tensor on `device`: one counted host-to-device transfer for a host tensor, the same
    /// tensor if it is already there; a tensor on another device is refused.
    pub fn to_device(&self, device: &dyn Device) -> Result<Tensor, TensorError> {
        device.upload(self)
    }

    /// This tensor on the host: one counted device-to-host transfer for a device tensor, a
    /// clone for a host tensor.
    pub fn to_host(&self) -> Result<Tensor, TensorError> {
        let Some(d) = &self.device else { return Ok(self.clone()) };
        let bytes = d.read()?;
        Tensor::with_shape(self.shape.clone(), Data::from_le_bytes(self.dtype(), &bytes)?)
    }

    /// The host storage, or `OnDevice` for a device tensor.
    pub fn host_data(&self) -> Result<&Data, TensorError> {
        match &self.device {
            None => Ok(&self.data),
            Some(d) => Err(TensorError::OnDevice { placement: Placement::Device(d.device()).to_string() }),
        }
    }

    /// A float tensor of `dtype` from f64 values (each rounded once to `dtype`).
    pub fn from_f64(dtype: DType, shape: impl Into<Vec<usize>>, v: &[f64]) -> Result<Tensor, TensorError> {
        let shape = Shape::from_vec(shape.into());
        let n = checked_numel(&shape).ok_or_else(|| TensorError::ShapeOverflow { shape: shape.to_vec() })?;
        if n != v.len() {
            return Err(TensorError::ShapeMismatch { shape: shape.to_vec(), elements: v.len() });
        }
        Tensor::with_shape(shape, Data::try_from_f64(dtype, v)?)
    }

    /// This tensor converted to another float dtype: every element rounded once to nearest
    /// (ties to even) from its exact value; the same tensor for its own dtype. Conversions are
    /// never implicit: ops refuse a dtype they do not serve. `Err` for a non-float dtype on
    /// either side.
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor, TensorError> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        let data = self.host_data()?;
        if !self.dtype().is_float() || !dtype.is_float() {
            return Err(TensorError::NotFloat { from: self.dtype(), to: dtype });
        }
        let v = data.to_f64_vec().ok_or_else(|| TensorError::TooLarge {
            what: format!("an f64 copy of {} element(s)", data.len()),
            why: "it could not be allocated".into(),
        })?;
        Tensor::with_shape(self.shape.clone(), Data::try_from_f64(dtype, &v)?)
    }

    /// A tensor from a typed vector.
    pub fn from_vec<E: Element>(shape: impl Into<Vec<usize>>, v: Vec<E>) -> Result<Tensor, TensorError> {
        Tensor::new(shape, E::wrap(v))
    }

    /// A rank-1 tensor.
    pub fn vector<E: Element>(v: Vec<E>) -> Tensor {
        Tensor { shape: smallvec::smallvec![v.len()], data: E::wrap(v), device: None }
    }

    /// A tensor from little-endian bytes. The dtype is named by string so that unsupported
    /// names (packed sub-byte, fp8) are refused with a reason, never reinterpreted.
    pub fn from_bytes(dtype: &str, shape: impl Into<Vec<usize>>, bytes: &[u8]) -> Result<Tensor, TensorError> {
        let shape = shape.into();
        if let Some(why) = op_contract::contract::refused_dtype(dtype) {
            return Err(TensorError::UnsupportedDType { dtype: dtype.to_string(), why: why.to_string() });
        }
        let d = DType::from_name(dtype)
            .ok_or_else(|| TensorError::UnsupportedDType { dtype: dtype.to_string(), why: "unknown dtype name".to_string() })?;
        let n = checked_numel(&shape).ok_or_else(|| TensorError::ShapeOverflow { shape: shape.clone() })?;
        let want = n.checked_mul(d.size()).ok_or_else(|| TensorError::ShapeOverflow { shape: shape.clone() })?;
        if want != bytes.len() {
            return Err(TensorError::ByteLength { dtype: d, bytes: bytes.len(), elements: Some(n) });
        }
        Tensor::new(shape, Data::from_le_bytes(d, bytes)?)
    }

    /// Zero-filled tensor (`false` for `bool`). A shape whose element count or bytes overflow
    /// is `ShapeOverflow`; one this host cannot hold (more bytes than its physical memory, or
    /// refused by the allocator) is `TooLarge`: never an abort or a panic.
    pub fn zeros(dtype: DType, shape: impl Into<Vec<usize>>) -> Result<Tensor, TensorError> {
        let shape = Shape::from_vec(shape.into());
        let overflow = || TensorError::ShapeOverflow { shape: shape.to_vec() };
        let n = checked_numel(&shape).ok_or_else(overflow)?;
        n.checked_mul(dtype.size()).ok_or_else(overflow)?;
        let data = Data::try_zeros(dtype, n)
            .map_err(|why| TensorError::TooLarge { what: format!("a `{dtype}` tensor of shape {:?}", shape.as_slice()), why })?;
        Ok(Tensor::from_checked(shape, data))
    }

    /// The dtype.
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }
    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
    /// Number of elements.
    pub fn numel(&self) -> usize {
        match self.device {
            None => self.data.len(),
            // `on_device` checked that the product fits.
            Some(_) => checked_numel(&self.shape).unwrap_or(0),
        }
    }
    /// The host storage; for a device tensor, empty storage of its dtype (use
    /// [`Tensor::host_data`] where a device tensor may arrive, or [`Tensor::to_host`]).
    pub fn data(&self) -> &Data {
        &self.data
    }
    /// Consumes the tensor into its host storage (empty for a device tensor, as [`Tensor::data`]).
    pub fn into_data(mut self) -> Data {
        std::mem::replace(&mut self.data, Data::Bool(Vec::new()))
    }
    /// Typed view; `None` if the dtype differs or the tensor lives on a device.
    pub fn as_slice<E: Element>(&self) -> Option<&[E]> {
        self.device.is_none().then(|| E::slice(&self.data)).flatten()
    }
    /// Typed mutable view; `None` if the dtype differs or the tensor lives on a device.
    pub fn as_mut_slice<E: Element>(&mut self) -> Option<&mut [E]> {
        if self.device.is_some() {
            return None;
        }
        E::slice_mut(&mut self.data)
    }
    /// Typed view, or a typed error naming both dtypes (or where the tensor lives).
    pub fn try_slice<E: Element>(&self) -> Result<&[E], TensorError> {
        E::slice(self.host_data()?).ok_or(TensorError::DTypeMismatch { expected: E::DTYPE, found: self.dtype() })
    }
    /// Size in bytes.
    pub fn nbytes(&self) -> usize {
        self.numel() * self.dtype().size()
    }
}

/// Product of dims, `None` on overflow.
pub fn checked_numel(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d))
}

/// A scalar parameter value.
#[derive(Clone, Copy, Debug, PartialEq)]
#[allow(missing_docs)]
pub enum Scalar {
    Bool(bool),
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    U64(u64),
    I64(i64),
    F32(f32),
    F64(f64),
}

impl Scalar {
    /// The scalar's dtype.
    pub fn dtype(&self) -> DType {
        match self {
            Scalar::Bool(_) => DType::bool,
            Scalar::U8(_) => DType::u8,
            Scalar::I8(_) => DType::i8,
            Scalar::U16(_) => DType::u16,
            Scalar::I16(_) => DType::i16,
            Scalar::U32(_) => DType::u32,
            Scalar::I32(_) => DType::i32,
            Scalar::U64(_) => DType::u64,
            Scalar::I64(_) => DType::i64,
            Scalar::F32(_) => DType::f32,
            Scalar::F64(_) => DType::f64,
        }
    }

    /// An integer scalar of dtype `dtype` holding `v`; `None` if `dtype` is not an integer
    /// type or `v` does not fit it.
    pub fn from_int(dtype: DType, v: i128) -> Option<Scalar> {
        Some(match dtype {
            DType::u8 => Scalar::U8(u8::try_from(v).ok()?),
            DType::i8 => Scalar::I8(i8::try_from(v).ok()?),
            DType::u16 => Scalar::U16(u16::try_from(v).ok()?),
            DType::i16 => Scalar::I16(i16::try_from(v).ok()?),
            DType::u32 => Scalar::U32(u32::try_from(v).ok()?),
            DType::i32 => Scalar::I32(i32::try_from(v).ok()?),
            DType::u64 => Scalar::U64(u64::try_from(v).ok()?),
            DType::i64 => Scalar::I64(i64::try_from(v).ok()?),
            _ => return None,
        })
    }

    /// The value as f64 (floats exactly, integers where they fit, booleans as 0 or 1).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Scalar::F32(v) => Some(v as f64),
            Scalar::F64(v) => Some(v),
            Scalar::Bool(b) => Some(if b { 1.0 } else { 0.0 }),
            other => other.as_i128().map(|v| v as f64),
        }
    }

    /// The integer value, for constraint evaluation.
    pub fn as_i128(&self) -> Option<i128> {
        Some(match *self {
            Scalar::U8(v) => v as i128,
            Scalar::I8(v) => v as i128,
            Scalar::U16(v) => v as i128,
            Scalar::I16(v) => v as i128,
            Scalar::U32(v) => v as i128,
            Scalar::I32(v) => v as i128,
            Scalar::U64(v) => v as i128,
            Scalar::I64(v) => v as i128,
            _ => return None,
        })
    }

    /// Little-endian bytes (4 bytes for every 32-bit type).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match *self {
            Scalar::Bool(v) => vec![v as u8],
            Scalar::U8(v) => vec![v],
            Scalar::I8(v) => vec![v as u8],
            Scalar::U16(v) => v.to_le_bytes().to_vec(),
            Scalar::I16(v) => v.to_le_bytes().to_vec(),
            Scalar::U32(v) => v.to_le_bytes().to_vec(),
            Scalar::I32(v) => v.to_le_bytes().to_vec(),
            Scalar::U64(v) => v.to_le_bytes().to_vec(),
            Scalar::I64(v) => v.to_le_bytes().to_vec(),
            Scalar::F32(v) => v.to_le_bytes().to_vec(),
            Scalar::F64(v) => v.to_le_bytes().to_vec(),
        }
    }
}

impl std::fmt::Display for Scalar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scalar::Bool(v) => write!(f, "{v}"),
            Scalar::F32(v) => write!(f, "{v}"),
            Scalar::F64(v) => write!(f, "{v}"),
            other => write!(f, "{}", other.as_i128().unwrap_or_default()),
        }
    }
}

/// Rust types usable as scalar parameters of a reference.
pub trait ParamValue: Copy {
    /// Reads the value; floats accept any float scalar (f32 params run in f64 for gradcheck).
    fn from_scalar(s: &Scalar) -> Option<Self>;
}

macro_rules! param_value {
    ($t:ty, $v:ident) => {
        impl ParamValue for $t {
            fn from_scalar(s: &Scalar) -> Option<Self> {
                match s {
                    Scalar::$v(v) => Some(*v),
                    _ => None,
                }
            }
        }
        impl From<$t> for Scalar {
            fn from(v: $t) -> Scalar {
                Scalar::$v(v)
            }
        }
    };
}
param_value!(bool, Bool);
param_value!(u8, U8);
param_value!(i8, I8);
param_value!(u16, U16);
param_value!(i16, I16);
param_value!(u32, U32);
param_value!(i32, I32);
param_value!(u64, U64);
param_value!(i64, I64);

impl ParamValue for f32 {
    fn from_scalar(s: &Scalar) -> Option<Self> {
        match s {
            Scalar::F32(v) => Some(*v),
            _ => None,
        }
    }
}
impl ParamValue for f64 {
    fn from_scalar(s: &Scalar) -> Option<Self> {
        match s {
            Scalar::F32(v) => Some(*v as f64),
            Scalar::F64(v) => Some(*v),
            _ => None,
        }
    }
}
/// Half-precision parameters arrive as `f32` or `f64` scalars (there is no 16-bit scalar),
/// rounded to the type once.
macro_rules! half_param {
    ($t:ty) => {
        impl ParamValue for $t {
            fn from_scalar(s: &Scalar) -> Option<Self> {
                match s {
                    Scalar::F32(v) => Some(<$t>::from_f32(*v)),
                    Scalar::F64(v) => Some(<$t>::from_f64(*v)),
                    _ => None,
                }
            }
        }
    };
}
half_param!(f16);
half_param!(bf16);

impl From<f32> for Scalar {
    fn from(v: f32) -> Scalar {
        Scalar::F32(v)
    }
}
impl From<f64> for Scalar {
    fn from(v: f64) -> Scalar {
        Scalar::F64(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_roundtrip_and_refusals() {
        let t = Tensor::from_bytes("f32", [2], &[0, 0, 128, 63, 0, 0, 0, 192]).unwrap();
        assert_eq!(t.as_slice::<f32>().unwrap(), &[1.0, -2.0]);
        assert_eq!(Tensor::from_bytes("f32", [2], &t.data().to_le_bytes()).unwrap(), t);
        let e = Tensor::from_bytes("f8e4m3", [2], &[0, 0]).unwrap_err();
        assert!(e.to_string().contains("fp8"), "{e}");
        let e = Tensor::from_bytes("u4", [4], &[0, 0]).unwrap_err();
        assert!(e.to_string().contains("packed"), "{e}");
        let e = Tensor::from_bytes("f32", [3], &[0; 8]).unwrap_err();
        assert_eq!(e.to_string(), "8 bytes do not hold 3 `f32` element(s), which take 12 bytes");
        assert!(matches!(Tensor::from_bytes("f64", [usize::MAX / 4], &[]), Err(TensorError::ShapeOverflow { .. })));
        assert!(matches!(Tensor::from_bytes("bool", [1], &[2]), Err(TensorError::InvalidBool { .. })));
        assert!(matches!(Tensor::from_bytes("f32", [usize::MAX, 2], &[]), Err(TensorError::ShapeOverflow { .. })));
        let h = Tensor::from_bytes("f16", [1], &f16::from_f32(1.5).to_bits().to_le_bytes()).unwrap();
        assert_eq!(h.as_slice::<f16>().unwrap()[0].to_f32(), 1.5);
    }
}
