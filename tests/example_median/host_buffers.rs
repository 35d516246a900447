//! Large host outputs (`op_runtime::cpu::hostmem`): a `cpu` kernel's large output is advised for
//! transparent huge pages, or is the buffer of a dropped tensor taken back from the pool. Neither
//! may change a single bit of what the kernel computes: results on the huge-page path equal the
//! same values computed by small calls (below the huge-page threshold), and a kernel handed a
//! pooled buffer full of a dropped tensor's values writes every element (a negative control,
//! a kernel that skips its last element, shows the check catches stale data).
//!
//! The pool is one per process: every test here holds [`SERIAL`], and the stale-data test
//! empties the pool before it plants its buffer, so no other buffer can be taken instead.

use crate::median;

use op_runtime::backend::{CpuBackend, ReferenceBackend};
use op_runtime::conformance::accum_bound;
use op_runtime::cpu::hostmem;
use op_runtime::{builtins, op, BackendKind, CallOptions, DType, OpHandle, Real, Registry, Scalar, Tensor};
use std::sync::{Arc, Mutex, MutexGuard};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// The built-ins and the example median on a CPU backend of 2 threads (several chunks) and the
/// reference.
fn registry() -> (Registry, OpHandle) {
    let r = Registry::with_backends(vec![Arc::new(CpuBackend::with_threads(2)), Arc::new(ReferenceBackend::default())]);
    builtins::register_all(&r);
    let median = r.register(&median::windowed_median::DECL).expect("the median registers");
    r.register(&skips_last::DECL).expect("the negative control registers");
    (r, median)
}

/// `n` values from a fixed generator, uniform in `[lo, hi)`.
fn values(n: usize, lo: f64, hi: f64, seed: u64) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

fn f32s(n: usize, lo: f64, hi: f64, seed: u64) -> Vec<f32> {
    values(n, lo, hi, seed).into_iter().map(|v| v as f32).collect()
}

/// The single output of `h` on the CPU backend (asserted to have run there).
fn on_cpu(h: &OpHandle, inputs: &[&Tensor], params: &[Scalar]) -> Tensor {
    let mut out = h.call_with(inputs, params, CallOptions::on(BackendKind::Cpu)).unwrap_or_else(|e| panic!("{}: {e}", h.op().id()));
    assert_eq!(out.provenance.backend, BackendKind::Cpu);
    out.outputs.swap_remove(0)
}

/// Every element's bits.
fn bits(t: &Tensor) -> Vec<u64> {
    (0..t.numel()).map(|i| t.data().bits(i).expect("a host element")).collect()
}

/// Where the output's first element lives.
fn address(t: &Tensor) -> usize {
    match t.dtype() {
        DType::f64 => t.as_slice::<f64>().map_or(0, |s| s.as_ptr() as usize),
        _ => t.as_slice::<f32>().map_or(0, |s| s.as_ptr() as usize),
    }
}

/// The first index where `got` differs from `want`, with both values.
fn first_difference(got: &Tensor, want: &[u64]) -> Option<(usize, u64, u64)> {
    bits(got).into_iter().zip(want).enumerate().find(|(_, (g, w))| g != *w).map(|(i, (g, w))| (i, g, *w))
}

/// Whether the mapping holding `addr` is advised for huge pages (`hg` in `/proc/self/smaps`);
/// `None` where transparent huge pages are off or the file cannot be read.
fn advised(addr: usize) -> Option<bool> {
    let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok()?;
    if !(thp.contains("[always]") || thp.contains("[madvise]")) {
        return None;
    }
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let mut inside = false;
    for line in smaps.lines() {
        let range = line.split_once(' ').and_then(|(r, _)| r.split_once('-'));
        if let Some((a, b)) = range.and_then(|(a, b)| Some((usize::from_str_radix(a, 16).ok()?, usize::from_str_radix(b, 16).ok()?))) {
            inside = a <= addr && addr < b;
        } else if inside && line.starts_with("VmFlags:") {
            return Some(line.split_whitespace().any(|f| f == "hg"));
        }
    }
    Some(false)
}

/// Elements of 4 bytes in the smallest advised buffer, and a size above it for each test.
const BIG: usize = hostmem::HUGE_PAGE_MIN_BYTES / 4;

#[test]
fn outputs_on_the_huge_page_path_are_identical_to_the_same_values_from_small_calls() {
    let _s = serial();
    let (r, _) = registry();
    let (exp, tanh) = (r.lookup("builtin/exp").expect("exp"), r.lookup("builtin/tanh").expect("tanh"));
    // Elementwise: one call of 2 * BIG + 5 elements against chunks of BIG / 16 (256 KiB).
    let x = f32s(2 * BIG + 5, -20.0, 20.0, 1);
    for h in [&exp, &tanh] {
        // A fresh allocation (not a pooled buffer of an earlier input, which nobody advised).
        hostmem::clear_pool();
        let big = on_cpu(h, &[&Tensor::vector(x.clone())], &[]);
        // The middle: the advice covers the whole pages inside the allocation.
        match advised(address(&big) + big.nbytes() / 2) {
            Some(hg) => assert!(hg, "{}: the large output lies in a mapping advised for huge pages", h.op().id()),
            None => eprintln!("not checked: transparent huge pages are off here"),
        }
        let small: Vec<u64> = x.chunks(BIG / 16).flat_map(|c| bits(&on_cpu(h, &[&Tensor::vector(c.to_vec())], &[]))).collect();
        assert_eq!(first_difference(&big, &small), None, "{}: large output vs small calls", h.op().id());
    }
    // matmul f32: a 1024 x 1025 output (4.2 MB) against blocks of 64 rows (256 KiB); then a B
    // whose packed copy is above the threshold (k = 1100, n = 1000: 4.4 MB) against blocks of
    // 100 columns. The summation order is per element, whatever the tiling.
    let mm = r.lookup("builtin/matmul").expect("matmul");
    let mat = |rows: usize, cols: usize, seed| Tensor::from_vec(vec![rows, cols], f32s(rows * cols, -1.0, 1.0, seed)).expect("a matrix");
    let (m, k, n) = (1024, 5, 1025);
    let (a, b) = (mat(m, k, 2), mat(k, n, 3));
    let big = on_cpu(&mm, &[&a, &b], &[]);
    let av = a.as_slice::<f32>().expect("f32");
    let small: Vec<u64> = av
        .chunks(64 * k)
        .flat_map(|rows| bits(&on_cpu(&mm, &[&Tensor::from_vec(vec![rows.len() / k, k], rows.to_vec()).expect("rows"), &b], &[])))
        .collect();
    assert_eq!(first_difference(&big, &small), None, "matmul: a large output vs blocks of rows");
    let (m, k, n) = (3, 1100, 1000);
    let (a, b) = (mat(m, k, 4), mat(k, n, 5));
    let big = on_cpu(&mm, &[&a, &b], &[]);
    let bv = b.as_slice::<f32>().expect("f32");
    let mut small = vec![0u64; m * n];
    for c0 in (0..n).step_by(100) {
        let cols: Vec<f32> = (0..k).flat_map(|p| bv[p * n + c0..p * n + c0 + 100].to_vec()).collect();
        let part = bits(&on_cpu(&mm, &[&a, &Tensor::from_vec(vec![k, 100], cols).expect("cols")], &[]));
        for i in 0..m {
            small[i * n + c0..i * n + c0 + 100].copy_from_slice(&part[i * 100..(i + 1) * 100]);
        }
    }
    assert_eq!(first_difference(&big, &small), None, "matmul: a large packed B vs blocks of columns");
    // matmul f64 in the same per-element order: a 700 x 760 output (4.3 MB) against blocks of
    // 64 rows; and within the `accum(2)` bound of the reference, as conformance judges it.
    let (m, k, n) = (700, 3, 760);
    let a = Tensor::from_f64(DType::f64, vec![m, k], &values(m * k, -1.0, 1.0, 6)).expect("a");
    let b = Tensor::from_f64(DType::f64, vec![k, n], &values(k * n, -1.0, 1.0, 7)).expect("b");
    let big = on_cpu(&mm, &[&a, &b], &[]);
    let small: Vec<u64> = a
        .as_slice::<f64>()
        .expect("f64")
        .chunks(64 * k)
        .flat_map(|rows| bits(&on_cpu(&mm, &[&Tensor::from_vec(vec![rows.len() / k, k], rows.to_vec()).expect("rows"), &b], &[])))
        .collect();
    assert_eq!(first_difference(&big, &small), None, "matmul f64: a large output vs blocks of rows");
    let (av, bv) = (a.as_slice::<f64>().expect("f64"), b.as_slice::<f64>().expect("f64"));
    let reference = builtins::matmul(av, bv, m, k, n);
    for (e, (got, want)) in big.as_slice::<f64>().expect("f64").iter().zip(&reference).enumerate() {
        let s: f64 = (0..k).map(|p| (av[e / n * k + p] * bv[p * n + e % n]).abs()).sum();
        let bound = accum_bound(2, DType::f64, k, s);
        assert!((got - want).abs() <= bound, "matmul f64 element {e}: {got:e} vs the reference's {want:e} (bound {bound:e})");
    }
}

/// The example median's own small-call result of `x` in chunks of outputs.
fn median_in_chunks(h: &OpHandle, x: &[f32], w: usize, chunk: usize) -> Vec<u64> {
    let outs = x.len() + 1 - w;
    (0..outs)
        .step_by(chunk)
        .flat_map(|o| bits(&on_cpu(h, &[&Tensor::vector(x[o..(o + chunk).min(outs) + w - 1].to_vec())], &[Scalar::U32(w as u32)])))
        .collect()
}

/// `planted` (full of a mark no kernel computes here) is dropped into the pool, emptied first
/// so that its buffer is the only one kept; `call` must then take exactly that buffer and
/// overwrite every element with `want`. `Err` names the first stale element.
fn through_a_planted_buffer(planted: Tensor, want: &[u64], call: &dyn Fn() -> Tensor) -> Result<(), String> {
    hostmem::clear_pool();
    let (at, bytes) = (address(&planted), planted.nbytes());
    drop(planted);
    assert!(hostmem::pooled_bytes() >= bytes, "the dropped tensor's buffer is pooled");
    let out = call();
    assert_eq!(address(&out), at, "the kernel's output is the planted buffer (else this test checks nothing)");
    match first_difference(&out, want) {
        None => Ok(()),
        Some((i, g, w)) => Err(format!("element {i}: {g:#x}, want {w:#x}")),
    }
}

/// A quiet NaN with a payload no kernel computes from these inputs, at f32 and f64.
const MARK32: u32 = 0x7fe5_a5a5;
const MARK64: u64 = 0x7ffa_5a5a_5a5a_5a5a;

/// A tensor of `shape` full of the mark.
fn planted(dtype: DType, shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    match dtype {
        DType::f64 => Tensor::from_vec(shape.to_vec(), vec![f64::from_bits(MARK64); n]),
        _ => Tensor::from_vec(shape.to_vec(), vec![f32::from_bits(MARK32); n]),
    }
    .expect("the planted tensor")
}

#[test]
fn a_kernel_writing_into_a_reused_pooled_buffer_never_sees_stale_data() {
    let _s = serial();
    let (r, med) = registry();
    let x = Tensor::vector(f32s(BIG + 3, -20.0, 20.0, 11));
    for op in ["exp", "tanh", "relu"] {
        let h = r.lookup(&format!("builtin/{op}")).expect(op);
        let want = bits(&on_cpu(&h, &[&x], &[]));
        through_a_planted_buffer(planted(DType::f32, &[BIG + 3]), &want, &|| on_cpu(&h, &[&x], &[]))
            .unwrap_or_else(|e| panic!("{op}: {e}"));
    }
    let y = Tensor::vector(f32s(BIG + 3, -1.0, 1.0, 12));
    let add = r.lookup("builtin/add").expect("add");
    let want = bits(&on_cpu(&add, &[&x, &y], &[]));
    through_a_planted_buffer(planted(DType::f32, &[BIG + 3]), &want, &|| on_cpu(&add, &[&x, &y], &[]))
        .unwrap_or_else(|e| panic!("add: {e}"));
    // matmul at f32 and f64 (a 1024 x 1024 output; k small for a debug build).
    let mm = r.lookup("builtin/matmul").expect("matmul");
    for dtype in [DType::f32, DType::f64] {
        let (m, k, n) = (1024, 3, 1024);
        let a = Tensor::from_f64(dtype, vec![m, k], &values(m * k, -1.0, 1.0, 13)).expect("a");
        let b = Tensor::from_f64(dtype, vec![k, n], &values(k * n, -1.0, 1.0, 14)).expect("b");
        let want = bits(&on_cpu(&mm, &[&a, &b], &[]));
        through_a_planted_buffer(planted(dtype, &[m, n]), &want, &|| on_cpu(&mm, &[&a, &b], &[]))
            .unwrap_or_else(|e| panic!("matmul {dtype}: {e}"));
    }
    // The example median (its output from `hostmem::for_overwrite`), checked against small calls.
    let w = 7;
    let sig = f32s(BIG + 100, -1.0, 1.0, 15);
    let want = median_in_chunks(&med, &sig, w, BIG / 8);
    let st = Tensor::vector(sig);
    through_a_planted_buffer(planted(DType::f32, &[BIG + 100 + 1 - w]), &want, &|| on_cpu(&med, &[&st], &[Scalar::U32(w as u32)]))
        .unwrap_or_else(|e| panic!("median: {e}"));
    hostmem::clear_pool();
}

/// Negative control: a `cpu` kernel that takes its output from `hostmem::for_overwrite` and
/// never writes the last element.
fn skips_last_cpu(x: &[f32]) -> Vec<f32> {
    let mut out: Vec<f32> = hostmem::for_overwrite(x.len());
    let n = x.len().saturating_sub(1);
    out[..n].copy_from_slice(&x[..n]);
    out
}

/// The identity, with a broken `cpu` kernel.
#[op(name = "test/pool/skips_last", version = 1, signature(x: f32[n]) -> f32[n],
     category = selection, tolerance = exact, backward = none, cpu = skips_last_cpu, generated_tests = false)]
pub fn skips_last<T: Real>(x: &[T]) -> Vec<T> {
    x.to_vec()
}

#[test]
fn a_kernel_that_leaves_an_element_of_a_pooled_buffer_unwritten_is_caught() {
    let _s = serial();
    let (r, _) = registry();
    let h = r.lookup("test/pool/skips_last").expect("registered");
    let n = BIG + 3;
    let x = Tensor::vector(f32s(n, -1.0, 1.0, 21));
    let want = bits(&x);
    match through_a_planted_buffer(planted(DType::f32, &[n]), &want, &|| on_cpu(&h, &[&x], &[])) {
        Err(e) => assert!(e.starts_with(&format!("element {}: {MARK32:#x}", n - 1)), "the stale last element: {e}"),
        Ok(()) => panic!("a kernel leaving the pooled buffer's last element unwritten passed"),
    }
    hostmem::clear_pool();
}
