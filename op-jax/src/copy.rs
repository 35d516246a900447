//! Buffers in and out of XLA: one `memcpy` each way on a little-endian host, where an element's
//! bytes in memory are its little-endian encoding (`Data::from_le_bytes` / `to_le_bytes` go
//! element by element, several times slower at 1M elements). A big-endian host takes that path.

use op_runtime::{DType, Data};

/// Applies `$e` to the storage vector of every variant of `Data`.
macro_rules! each {
    ($d:expr, $v:ident => $e:expr) => {
        match $d {
            Data::Bool($v) => $e,
            Data::U8($v) => $e,
            Data::I8($v) => $e,
            Data::U16($v) => $e,
            Data::I16($v) => $e,
            Data::U32($v) => $e,
            Data::I32($v) => $e,
            Data::U64($v) => $e,
            Data::I64($v) => $e,
            Data::F16($v) => $e,
            Data::BF16($v) => $e,
            Data::F32($v) => $e,
            Data::F64($v) => $e,
        }
    };
}

/// The storage's bytes as they lie in memory.
fn bytes(d: &Data) -> &[u8] {
    // SAFETY: every element type of `Data` is plain old data (integers, floats, `bool`, and the
    // half types, `repr(transparent)` over u16); the slice covers exactly the vector's elements.
    each!(d, v => unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v.as_slice())) })
}

/// The storage's bytes as they lie in memory, writable.
fn bytes_mut(d: &mut Data) -> &mut [u8] {
    // SAFETY: as in `bytes`; callers write only valid encodings (`bool` is checked first).
    each!(d, v => unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, std::mem::size_of_val(v.as_slice())) })
}

/// `src` (little-endian elements of `dtype`) as op-runtime storage. The length must be a whole
/// number of elements; a `bool` byte other than 0 or 1 is refused.
pub fn data_from(dtype: DType, src: &[u8]) -> Result<Data, String> {
    if cfg!(target_endian = "big") || dtype == DType::bool {
        return Data::from_le_bytes(dtype, src).map_err(|e| e.to_string());
    }
    let size = dtype.size();
    if !src.len().is_multiple_of(size) {
        return Data::from_le_bytes(dtype, src).map_err(|e| e.to_string());
    }
    let mut d = Data::try_zeros(dtype, src.len() / size)?;
    bytes_mut(&mut d).copy_from_slice(src);
    Ok(d)
}

/// Copies `d` into `dst`, which must be exactly as long as its bytes (false where it is not).
pub fn write_into(d: &Data, dst: &mut [u8]) -> bool {
    if cfg!(target_endian = "big") {
        let b = d.to_le_bytes();
        return b.len() == dst.len() && {
            dst.copy_from_slice(&b);
            true
        };
    }
    let b = bytes(d);
    b.len() == dst.len() && {
        dst.copy_from_slice(b);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_dtype_as_the_element_codec_does() {
        let raw: Vec<u8> = (0u8..48).collect();
        // Every dtype but bool (whose bytes must be 0 or 1: refused below).
        for d in DType::ALL.into_iter().filter(|d| *d != DType::bool) {
            let fast = data_from(d, &raw).unwrap();
            let slow = Data::from_le_bytes(d, &raw).unwrap();
            assert_eq!(fast.to_le_bytes(), slow.to_le_bytes(), "{d}");
            let mut out = vec![0u8; raw.len()];
            assert!(write_into(&fast, &mut out));
            assert_eq!(out, raw, "{d}");
            assert!(!write_into(&fast, &mut out[1..]), "{d}: a short destination is refused");
        }
        assert!(data_from(DType::bool, &[0, 1, 2]).is_err(), "a bool byte of 2 is refused");
        assert!(data_from(DType::f32, &[0, 1, 2]).is_err(), "a partial element is refused");
    }
}
