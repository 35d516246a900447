//! The bytes between the verifier and a child running a kernel under test: a request (a case's
//! inputs and parameters) and a response (the outputs, or the error the call returned), each a
//! length-prefixed message. Decoding is bounded and total: a short, long or garbled message is
//! an error naming what was wrong, never a panic (a child that died mid-write sends exactly
//! that).

use op_contract::contract::DType;
use op_core::tensor::{Data, Scalar, Tensor};

/// What a child returns for one request: the call's outputs, or its error as text.
pub type Reply = Result<Vec<Tensor>, String>;

/// A message's body, prefixed with its length (8 bytes, little-endian).
pub fn frame(body: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 8);
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// The length a frame's 8-byte prefix announces.
pub fn frame_len(prefix: [u8; 8]) -> u64 {
    u64::from_le_bytes(prefix)
}

/// A request's body: the inputs, then the parameters.
pub fn request(inputs: &[&Tensor], params: &[Scalar]) -> Vec<u8> {
    let mut w = Vec::new();
    tensors(&mut w, inputs.iter().copied());
    w.extend_from_slice(&(params.len() as u32).to_le_bytes());
    for p in params {
        name(&mut w, p.dtype());
        bytes(&mut w, &p.to_le_bytes());
    }
    w
}

/// A reply's body: 0 and the outputs, or 1 and the error.
pub fn reply(r: &Reply) -> Vec<u8> {
    let mut w = Vec::new();
    match r {
        Ok(outs) => {
            w.push(0);
            tensors(&mut w, outs.iter());
        }
        Err(e) => {
            w.push(1);
            bytes(&mut w, e.as_bytes());
        }
    }
    w
}

/// Decodes a request's body.
pub fn read_request(body: &[u8]) -> Result<(Vec<Tensor>, Vec<Scalar>), String> {
    let mut r = Reader { b: body };
    let inputs = r.tensors()?;
    let n = r.u32()? as usize;
    let mut params = Vec::with_capacity(n.min(64));
    for _ in 0..n {
        let dtype = r.dtype()?;
        let raw = r.bytes()?;
        params.push(scalar(dtype, raw).ok_or_else(|| format!("a `{dtype}` parameter of {} byte(s)", raw.len()))?);
    }
    r.end()?;
    Ok((inputs, params))
}

/// Decodes a reply's body.
pub fn read_reply(body: &[u8]) -> Result<Reply, String> {
    let mut r = Reader { b: body };
    let reply = match r.u8()? {
        0 => Ok(r.tensors()?),
        1 => Err(String::from_utf8_lossy(r.bytes()?).into_owned()),
        t => return Err(format!("unknown reply tag {t}")),
    };
    r.end()?;
    Ok(reply)
}

fn name(w: &mut Vec<u8>, d: DType) {
    bytes(w, d.to_string().as_bytes());
}

fn bytes(w: &mut Vec<u8>, b: &[u8]) {
    w.extend_from_slice(&(b.len() as u64).to_le_bytes());
    w.extend_from_slice(b);
}

fn tensors<'a>(w: &mut Vec<u8>, ts: impl ExactSizeIterator<Item = &'a Tensor>) {
    w.extend_from_slice(&(ts.len() as u32).to_le_bytes());
    for t in ts {
        name(w, t.dtype());
        w.extend_from_slice(&(t.shape().len() as u32).to_le_bytes());
        t.shape().iter().for_each(|d| w.extend_from_slice(&(*d as u64).to_le_bytes()));
        bytes(w, &t.data().to_le_bytes());
    }
}

fn scalar(d: DType, b: &[u8]) -> Option<Scalar> {
    let a = |n: usize| -> Option<[u8; 8]> {
        let mut x = [0u8; 8];
        x.get_mut(..n)?.copy_from_slice(b.get(..n).filter(|_| b.len() == n)?);
        Some(x)
    };
    Some(match d {
        DType::bool => Scalar::Bool(a(1)?[0] == 1),
        DType::u8 => Scalar::U8(a(1)?[0]),
        DType::i8 => Scalar::I8(a(1)?[0] as i8),
        DType::u16 => Scalar::U16(u64::from_le_bytes(a(2)?) as u16),
        DType::i16 => Scalar::I16(u64::from_le_bytes(a(2)?) as u16 as i16),
        DType::u32 => Scalar::U32(u64::from_le_bytes(a(4)?) as u32),
        DType::i32 => Scalar::I32(u64::from_le_bytes(a(4)?) as u32 as i32),
        DType::u64 => Scalar::U64(u64::from_le_bytes(a(8)?)),
        DType::i64 => Scalar::I64(u64::from_le_bytes(a(8)?) as i64),
        DType::f32 => Scalar::F32(f32::from_bits(u64::from_le_bytes(a(4)?) as u32)),
        DType::f64 => Scalar::F64(f64::from_bits(u64::from_le_bytes(a(8)?))),
        _ => return None,
    })
}

struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.b.len() {
            return Err(format!("the message ends {} byte(s) early", n - self.b.len()));
        }
        let (head, tail) = self.b.split_at(n);
        self.b = tail;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, String> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(<[u8; 8]>::try_from(b).map_err(|_| "short u64")?))
    }
    fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = usize::try_from(self.u64()?).map_err(|_| "a length past the address space")?;
        self.take(n)
    }
    fn dtype(&mut self) -> Result<DType, String> {
        let raw = self.bytes()?;
        let name = std::str::from_utf8(raw).map_err(|_| "a dtype name that is not UTF-8")?;
        DType::from_name(name).ok_or_else(|| format!("unknown dtype `{name}`"))
    }
    fn tensors(&mut self) -> Result<Vec<Tensor>, String> {
        let n = self.u32()? as usize;
        let mut out = Vec::with_capacity(n.min(64));
        for _ in 0..n {
            let dtype = self.dtype()?;
            let rank = self.u32()? as usize;
            if rank > 64 {
                return Err(format!("a tensor of rank {rank}"));
            }
            let shape = (0..rank)
                .map(|_| self.u64().and_then(|d| usize::try_from(d).map_err(|_| "a dim past usize".into())))
                .collect::<Result<Vec<usize>, String>>()?;
            let data = Data::from_le_bytes(dtype, self.bytes()?).map_err(|e| e.to_string())?;
            out.push(Tensor::new(shape, data).map_err(|e| e.to_string())?);
        }
        Ok(out)
    }
    fn end(&self) -> Result<(), String> {
        if self.b.is_empty() {
            Ok(())
        } else {
            Err(format!("{} byte(s) after the message", self.b.len()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies_round_trip_and_garbage_is_an_error() {
        let x = Tensor::from_vec(vec![2, 3], vec![1.5f32, -0.0, f32::NAN, f32::INFINITY, 3.0, 1e-40]).unwrap();
        let m = Tensor::from_vec(vec![3], vec![true, false, true]).unwrap();
        let params = [Scalar::U32(7), Scalar::F32(-2.5), Scalar::I64(-9), Scalar::Bool(true), Scalar::F64(0.1)];
        let body = request(&[&x, &m], &params);
        let (ins, ps) = read_request(&body).unwrap();
        assert_eq!(ins[0].shape(), x.shape());
        assert_eq!(ins[0].data().to_le_bytes(), x.data().to_le_bytes());
        assert_eq!(ins[1].data().to_le_bytes(), m.data().to_le_bytes());
        assert_eq!(ps, params);
        let ok: Reply = Ok(vec![x.clone()]);
        assert_eq!(read_reply(&reply(&ok)).unwrap().unwrap()[0].data().to_le_bytes(), x.data().to_le_bytes());
        assert_eq!(read_reply(&reply(&Err("boom".into()))).unwrap().unwrap_err(), "boom");
        for cut in 0..body.len() {
            assert!(read_request(&body[..cut]).is_err(), "a request cut at {cut} bytes decodes");
        }
        let mut long = body.clone();
        long.push(0);
        assert!(read_request(&long).is_err());
        assert!(read_reply(&[9]).is_err());
        assert_eq!(frame_len(frame(vec![1, 2, 3])[..8].try_into().unwrap()), 3);
    }
}
