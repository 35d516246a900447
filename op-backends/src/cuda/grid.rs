//! The shape of a CUDA launch ([`CudaGrid`]) and the blocks it needs along x, y and z, checked
//! against the device's limits before anything is launched.

use super::error::CudaError;

/// The shape of a launch: invocations and threads per block along x, y and z (y and z: 1 for
/// a 1-D launch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CudaGrid {
    /// Invocations along x, y and z.
    pub threads: [u64; 3],
    /// Threads per block along x, y and z.
    pub block: [u32; 3],
}

impl CudaGrid {
    /// A 1-D launch of `threads` invocations in blocks of `block`.
    pub fn linear(threads: u64, block: u32) -> CudaGrid {
        CudaGrid { threads: [threads, 1, 1], block: [block, 1, 1] }
    }
}

/// Blocks along x, y and z for `g`, within the device's limits (threads per block in all and
/// per dimension, blocks per dimension); an extent of 0 gives 0 blocks there (nothing runs).
pub(super) fn launch_grid(g: CudaGrid, max_threads: u32, max_block: [u32; 3], max_grid: [u32; 3]) -> Result<[u32; 3], CudaError> {
    let b = g.block;
    let total = b.iter().fold(1u64, |t, &d| t.saturating_mul(u64::from(d)));
    if b.contains(&0) || total > u64::from(max_threads) || (0..3).any(|d| b[d] > max_block[d]) {
        return Err(CudaError::InvalidArgument(format!(
            "block size {b:?} out of range: every dimension at least 1, at most {max_block:?}, {max_threads} threads in all"
        )));
    }
    let mut grid = [0u32; 3];
    for d in 0..3 {
        let n = g.threads[d].div_ceil(u64::from(b[d]));
        if n > u64::from(max_grid[d]) {
            return Err(CudaError::InvalidArgument(format!(
                "{} threads along {} in blocks of {} need {n} blocks, more than the device's grid limit of {}",
                g.threads[d],
                ["x", "y", "z"][d],
                b[d],
                max_grid[d]
            )));
        }
        grid[d] = n as u32;
    }
    Ok(grid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_geometry_is_validated() {
        let (mb, mg) = ([1024, 1024, 64], [65535, 65535, 65535]);
        let grid = |t: u64, b: u32, mg: [u32; 3]| launch_grid(CudaGrid::linear(t, b), 1024, mb, mg);
        assert_eq!(grid(1000, 256, mg).unwrap(), [4, 1, 1]);
        assert_eq!(grid(1024, 256, mg).unwrap(), [4, 1, 1]);
        assert_eq!(grid(0, 256, mg).unwrap(), [0, 1, 1]);
        assert!(matches!(grid(10, 0, mg), Err(CudaError::InvalidArgument(_))));
        assert!(matches!(grid(10, 2048, mg), Err(CudaError::InvalidArgument(_))));
        assert!(matches!(grid(u64::MAX, 1, [u32::MAX; 3]), Err(CudaError::InvalidArgument(_))));
        // 2-D and 3-D: blocks per dimension, the block's total and its z limit.
        let g2 = CudaGrid { threads: [100, 33, 1], block: [16, 16, 1] };
        assert_eq!(launch_grid(g2, 1024, mb, mg).unwrap(), [7, 3, 1]);
        let g3 = CudaGrid { threads: [8, 8, 130], block: [4, 4, 64] };
        assert_eq!(launch_grid(g3, 1024, mb, mg).unwrap(), [2, 2, 3]);
        let too_many = CudaGrid { threads: [1, 1, 1], block: [64, 32, 1] };
        assert!(matches!(launch_grid(too_many, 1024, mb, mg), Err(CudaError::InvalidArgument(_))));
        let deep = CudaGrid { threads: [1, 1, 1], block: [1, 1, 128] };
        assert!(matches!(launch_grid(deep, 1024, mb, mg), Err(CudaError::InvalidArgument(_))));
        let tall = CudaGrid { threads: [1, 65536 * 16, 1], block: [1, 16, 1] };
        assert!(matches!(launch_grid(tall, 1024, mb, mg), Err(CudaError::InvalidArgument(_))));
        let huge = CudaGrid { threads: [1, 1, 1], block: [u32::MAX; 3] };
        assert!(matches!(launch_grid(huge, 1024, mb, mg), Err(CudaError::InvalidArgument(_))), "no overflow panic");
    }
}
