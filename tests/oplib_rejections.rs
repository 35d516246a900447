//! The op library's checks can fail: for each family of new built-ins a deliberately broken
//! kernel (WGSL forward, WGSL VJP, `cpu`) is rejected by conformance against the built-in's own
//! reference or VJP rule, and a deliberately wrong VJP rule is rejected by gradcheck, each over
//! several salts. The fixtures share the built-ins' contracts and references; only the broken
//! part differs (`generated_tests = false`).
//!
//! wgpu rejections skip with a printed reason when no adapter exists, unless
//! `OP_REQUIRE_GPU_ADAPTER=1` (CI).

mod common;

use op_runtime::builtins;
use op_runtime::gradcheck::{gradcheck_with, GradcheckOptions};
use op_runtime::testing::{assert_conformance_rejected, assert_gradcheck_rejected, assert_vjp_conformance_rejected};
use op_runtime::{op, BackendKind, Real};

// ---- Windows: unfold. ----

/// Deliberately broken unfold kernel: window `i` starts at `i` whatever the step.
#[op(name = "test/broken/unfold_ignores_step", version = 1,
     signature(x: f32[n], w: u32, s: u32 where 1 <= w, w <= n, s >= 1) -> f32[(n - w) / s + 1, w],
     category = selection, tolerance = exact, backward = none, generated_tests = false,
     kernel(wgsl = "kernels/broken/unfold_ignores_step.wgsl", bindings(x: read, out: read_write, uniform(n, w, s)), threads = ((n - w) / s + 1) * w))]
pub fn unfold_ignores_step<T: Real>(x: &[T], w: u32, s: u32) -> Vec<T> {
    builtins::unfold(x, w, s)
}

/// Deliberately broken unfold `cpu` kernel: the same mistake on the CPU.
#[op(name = "test/broken/unfold_cpu_ignores_step", version = 1,
     signature(x: f32[n], w: u32, s: u32 where 1 <= w, w <= n, s >= 1) -> f32[(n - w) / s + 1, w],
     category = selection, tolerance = exact, backward = none, generated_tests = false, cpu = unfold_step_one)]
pub fn unfold_cpu_ignores_step<T: Real>(x: &[T], w: u32, s: u32) -> Vec<T> {
    builtins::unfold(x, w, s)
}
/// Wrong on purpose: windows of step 1, as many as the step-`s` output has.
pub fn unfold_step_one(x: &[f32], w: u32, s: u32) -> Vec<f32> {
    let (w, s) = (w as usize, s as usize);
    let rows = (x.len() - w) / s + 1;
    (0..rows).flat_map(|i| x[i..i + w].to_vec()).collect()
}

/// Deliberately broken unfold VJP kernel: skips the last window containing each element.
#[op(name = "test/broken/unfold_vjp_skips_window", version = 1,
     signature(x: f32[n], w: u32, s: u32 where 1 <= w, w <= n, s >= 1) -> f32[(n - w) / s + 1, w],
     category = selection, tolerance = exact, generated_tests = false,
     backward = vjp(builtins::unfold_vjp,
         kernel(wgsl = "kernels/broken/unfold_vjp_skips_window.wgsl", bindings(x: read, d_out: read, d_x: read_write, uniform(n, w, s)), threads = n)),
     subgradient = "a copy")]
pub fn unfold_vjp_skips_window<T: Real>(x: &[T], w: u32, s: u32) -> Vec<T> {
    builtins::unfold(x, w, s)
}

/// Unfold with a VJP rule that overwrites instead of adding where windows overlap. Declared for
/// overlapping windows only (`s < w`, at least two windows): elsewhere no element is in two
/// windows and the rule is right, and gradcheck judges one drawn shape per run.
#[op(name = "test/bad/unfold_vjp_overwrites", version = 1,
     signature(x: f32[n], w: u32, s: u32 where 1 <= s, s < w, 2 * w <= n) -> f32[(n - w) / s + 1, w],
     category = selection, tolerance = exact, generated_tests = false,
     backward = vjp(unfold_vjp_overwrites_rule), subgradient = "a copy")]
pub fn unfold_vjp_overwrites<T: Real>(x: &[T], w: u32, s: u32) -> Vec<T> {
    builtins::unfold(x, w, s)
}
/// Wrong on purpose: the last window's cotangent wins.
pub fn unfold_vjp_overwrites_rule<T: Real>(x: &[T], w: u32, s: u32, g: &[T]) -> Vec<T> {
    let (w, s) = (w as usize, s as usize);
    let mut gx = vec![T::zero(); x.len()];
    for i in 0..(x.len() - w) / s + 1 {
        for j in 0..w {
            gx[i * s + j] = g[i * w + j];
        }
    }
    gx
}

// ---- Rows that order values: sort_rows, median_rows. ----

/// Deliberately broken sort_rows kernel: ranks with a plain float `<` (-0 == +0, NaN unordered).
#[op(name = "test/broken/sort_rows_plain_compare", version = 1,
     signature(x: f32[r, c] where c <= 1024) -> f32[r, c],
     category = selection, tolerance = exact, backward = none, generated_tests = false,
     kernel(wgsl = "kernels/broken/sort_rows_plain_compare.wgsl", bindings(x: read, out: read_write, uniform(r, c)), threads = r * c))]
pub fn sort_rows_plain_compare<T: Real>(x: &[T], c: usize) -> Vec<T> {
    builtins::sort_rows(x, c)
}

/// Deliberately broken median_rows kernel: the upper median (rank `c / 2`).
#[op(name = "test/broken/median_rows_upper", version = 1,
     signature(x: f32[r, c] where 1 <= c, c <= 1024) -> f32[r],
     category = selection, tolerance = exact, backward = none, generated_tests = false,
     kernel(wgsl = "kernels/broken/median_rows_upper.wgsl", bindings(x: read, out: read_write, uniform(r, c)), threads = r * c))]
pub fn median_rows_upper<T: Real>(x: &[T], c: usize) -> Vec<T> {
    builtins::median_rows(x, c)
}

/// Deliberately broken median_rows `cpu` kernel: the upper median.
#[op(name = "test/broken/median_rows_cpu_upper", version = 1,
     signature(x: f32[r, c] where 1 <= c, c <= 1024) -> f32[r],
     category = selection, tolerance = exact, backward = none, generated_tests = false, cpu = median_rows_upper_cpu)]
pub fn median_rows_cpu_upper<T: Real>(x: &[T], c: usize) -> Vec<T> {
    builtins::median_rows(x, c)
}
/// Wrong on purpose: rank `c / 2`.
pub fn median_rows_upper_cpu(x: &[f32], c: usize) -> Vec<f32> {
    x.chunks(c)
        .map(|row| {
            let mut v = row.to_vec();
            v.sort_by(|a, b| a.total_cmp(b));
            v[c / 2]
        })
        .collect()
}

/// Deliberately broken median_rows VJP kernel: ties routed to the later element.
#[op(name = "test/broken/median_rows_vjp_ties_later", version = 1,
     signature(x: f32[r, c] where 1 <= c, c <= 1024) -> f32[r],
     category = selection, tolerance = exact, generated_tests = false,
     backward = vjp(builtins::median_rows_vjp,
         kernel(wgsl = "kernels/broken/median_rows_vjp_ties_later.wgsl", bindings(x: read, d_out: read, d_x: read_write, uniform(r, c)), threads = r * c)),
     subgradient = "the cotangent goes to the selected element")]
pub fn median_rows_vjp_ties_later<T: Real>(x: &[T], c: usize) -> Vec<T> {
    builtins::median_rows(x, c)
}

/// median_rows with a VJP rule that routes ties to the later element.
#[op(name = "test/bad/median_rows_ties_later", version = 1,
     signature(x: f32[r, c] where 1 <= c, c <= 1024) -> f32[r],
     category = selection, tolerance = exact, generated_tests = false,
     backward = vjp(median_rows_ties_later_rule), subgradient = "the later of equal elements (wrong on purpose)")]
pub fn median_rows_ties_later<T: Real>(x: &[T], c: usize) -> Vec<T> {
    builtins::median_rows(x, c)
}
/// Wrong on purpose: of equal elements, the later one is taken as the median.
pub fn median_rows_ties_later_rule<T: Real>(x: &[T], c: usize, g: &[T]) -> Vec<T> {
    let mut gx = vec![T::zero(); x.len()];
    for (r, gi) in g.iter().enumerate() {
        let row = &x[r * c..(r + 1) * c];
        let mut idx: Vec<usize> = (0..c).collect();
        idx.sort_by(|a, b| row[*a].total_cmp(&row[*b]).then(b.cmp(a)));
        gx[r * c + idx[(c - 1) / 2]] = *gi;
    }
    gx
}

/// sort_rows with a VJP rule that applies the permutation the wrong way round. Declared for rows
/// of 8 or more: a permutation of 2 elements is its own inverse (the rule is then right), and of
/// 3 most are; a random one of 8 elements rarely is.
#[op(name = "test/bad/sort_rows_inverse", version = 1,
     signature(x: f32[r, c] where 8 <= c, c <= 1024) -> f32[r, c],
     category = selection, tolerance = exact, generated_tests = false,
     backward = vjp(sort_rows_inverse_rule), subgradient = "the permutation inverted (wrong on purpose)")]
pub fn sort_rows_inverse<T: Real>(x: &[T], c: usize) -> Vec<T> {
    builtins::sort_rows(x, c)
}
/// Wrong on purpose: `g[start + order[k]]` goes to position `k` instead of the reverse.
pub fn sort_rows_inverse_rule<T: Real>(x: &[T], c: usize, g: &[T]) -> Vec<T> {
    let mut gx = vec![T::zero(); x.len()];
    for start in (0..x.len()).step_by(c.max(1)) {
        let row = &x[start..start + c];
        let mut idx: Vec<usize> = (0..c).collect();
        idx.sort_by(|a, b| row[*a].total_cmp(&row[*b]));
        for (k, i) in idx.into_iter().enumerate() {
            gx[start + k] = g[start + i];
        }
    }
    gx
}

// ---- Elementwise, masks, reductions along rows, shapes. ----

/// Deliberately broken abs kernel: keeps -0.
#[op(name = "test/broken/abs_keeps_minus_zero", version = 1, signature(x: f32[n]) -> f32[n],
     category = selection, tolerance = exact, backward = none, generated_tests = false,
     kernel(wgsl = "kernels/broken/abs_select_keeps_minus_zero.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = n))]
pub fn abs_keeps_minus_zero<T: Real>(x: &[T]) -> Vec<T> {
    builtins::abs(x)
}

/// Deliberately broken maximum kernel: WGSL's `max`.
#[op(name = "test/broken/maximum_builtin_max", version = 1, signature(a: f32[n], b: f32[n]) -> f32[n],
     category = selection, tolerance = exact, backward = none, generated_tests = false,
     kernel(wgsl = "kernels/broken/maximum_builtin_max.wgsl", bindings(a: read, b: read, out: read_write, uniform(n)), threads = n))]
pub fn maximum_builtin_max<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    builtins::maximum(a, b)
}

/// Deliberately broken maximum `cpu` kernel: `f32::max`, which returns the number beside a NaN.
#[op(name = "test/broken/maximum_cpu_f32_max", version = 1, signature(a: f32[n], b: f32[n]) -> f32[n],
     category = selection, tolerance = exact, backward = none, generated_tests = false, cpu = maximum_f32_max)]
pub fn maximum_cpu_f32_max<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    builtins::maximum(a, b)
}
/// Wrong on purpose.
pub fn maximum_f32_max(a: &[f32], b: &[f32]) -> Vec<f32> {
    a.iter().zip(b).map(|(x, y)| x.max(*y)).collect()
}

/// Deliberately broken greater kernel: total order, so +0 > -0.
#[op(name = "test/broken/greater_total_order", version = 1, signature(a: f32[n], b: f32[n]) -> u32[n],
     category = selection, tolerance = exact, backward = none, generated_tests = false,
     kernel(wgsl = "kernels/broken/greater_total_order.wgsl", bindings(a: read, b: read, out: read_write, uniform(n)), threads = n))]
pub fn greater_total_order<T: Real>(a: &[T], b: &[T]) -> Vec<u32> {
    builtins::greater(a, b)
}

/// Deliberately broken sum_rows kernel: drops each row's last element.
#[op(name = "test/broken/sum_rows_drops_last", version = 1, signature(x: f32[r, c]) -> f32[r],
     category = reduction, tolerance = accum(2), backward = none, generated_tests = false,
     kernel(wgsl = "kernels/broken/sum_rows_drops_last.wgsl", bindings(x: read, out: read_write, uniform(r, c)), threads = r))]
pub fn sum_rows_drops_last<T: Real>(x: &[T], r: usize, c: usize) -> Vec<T> {
    builtins::sum_rows(x, r, c)
}

/// Deliberately broken max_rows VJP kernel: ties to the first of equal maxima.
#[op(name = "test/broken/max_rows_vjp_first_tie", version = 1, signature(x: f32[r, c] where c >= 1) -> f32[r],
     category = selection, tolerance = exact, generated_tests = false,
     backward = vjp(builtins::max_rows_vjp,
         kernel(wgsl = "kernels/broken/max_rows_vjp_first_tie.wgsl", bindings(x: read, d_out: read, d_x: read_write, uniform(r, c)), threads = r)),
     subgradient = "the cotangent goes to the selected element")]
pub fn max_rows_vjp_first_tie<T: Real>(x: &[T], c: usize) -> Vec<T> {
    builtins::max_rows(x, c)
}

/// max_rows with a VJP rule that routes ties to the first of equal maxima.
#[op(name = "test/bad/max_rows_first_tie", version = 1, signature(x: f32[r, c] where c >= 1) -> f32[r],
     category = selection, tolerance = exact, generated_tests = false,
     backward = vjp(max_rows_first_tie_rule), subgradient = "the first of equal maxima (wrong on purpose)")]
pub fn max_rows_first_tie<T: Real>(x: &[T], c: usize) -> Vec<T> {
    builtins::max_rows(x, c)
}
/// Wrong on purpose: strict `>` keeps the first of equal maxima.
pub fn max_rows_first_tie_rule<T: Real>(x: &[T], c: usize, g: &[T]) -> Vec<T> {
    let mut gx = vec![T::zero(); x.len()];
    for (r, gi) in g.iter().enumerate() {
        let row = &x[r * c..(r + 1) * c];
        let mut best = 0;
        for j in 1..c {
            if row[j].total_cmp(&row[best]).is_gt() {
                best = j;
            }
        }
        gx[r * c + best] = *gi;
    }
    gx
}

/// sigmoid with the VJP `g s (1 + s)` instead of `g s (1 - s)`.
#[op(name = "test/bad/sigmoid_plus", version = 1, signature(x: f32[n]) -> f32[n],
     category = transcendental, tolerance = ulp(16), backward = vjp(sigmoid_plus_rule), generated_tests = false)]
pub fn sigmoid_plus<T: Real>(x: &[T]) -> Vec<T> {
    builtins::sigmoid(x)
}
/// Wrong on purpose.
pub fn sigmoid_plus_rule<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    builtins::sigmoid(x).into_iter().zip(g).map(|(s, g)| *g * s * (T::one() + s)).collect()
}

/// Deliberately broken transpose kernel: a copy.
#[op(name = "test/broken/transpose_copies", version = 1, signature(x: f32[r, c]) -> f32[c, r],
     category = selection, tolerance = exact, backward = none, generated_tests = false,
     kernel(wgsl = "kernels/broken/transpose_copies.wgsl", bindings(x: read, out: read_write, uniform(r, c)), threads = r * c))]
pub fn transpose_copies<T: Real>(x: &[T], r: usize, c: usize) -> Vec<T> {
    builtins::transpose(x, r, c)
}

/// Deliberately broken gather VJP kernel: overwrites where it should add.
#[op(name = "test/broken/gather_vjp_overwrites", version = 1, signature(x: f32[n], idx: u32[m] where n >= 1) -> f32[m],
     category = selection, tolerance = exact, generated_tests = false,
     backward = vjp(builtins::gather_vjp,
         kernel(wgsl = "kernels/broken/gather_vjp_overwrites.wgsl", bindings(x: read, idx: read, d_out: read, d_x: read_write, uniform(n, m)), threads = n)),
     subgradient = "a copy")]
pub fn gather_vjp_overwrites<T: Real>(x: &[T], idx: &[u32]) -> Vec<T> {
    builtins::gather(x, idx)
}

/// slice with a VJP rule that puts each cotangent one element too far.
#[op(name = "test/bad/slice_shifted", version = 1,
     signature(x: f32[n], start: u32, stop: u32, step: u32 where start <= stop, stop < n, step >= 1) -> f32[(stop - start + step - 1) / step],
     category = selection, tolerance = exact, generated_tests = false,
     backward = vjp(slice_shifted_rule), subgradient = "shifted (wrong on purpose)")]
pub fn slice_shifted<T: Real>(x: &[T], start: u32, stop: u32, step: u32) -> Vec<T> {
    builtins::slice(x, start, stop, step)
}
/// Wrong on purpose: one element to the right.
pub fn slice_shifted_rule<T: Real>(x: &[T], start: u32, stop: u32, step: u32, g: &[T]) -> Vec<T> {
    let mut gx = vec![T::zero(); x.len()];
    for (k, q) in (start as usize..stop as usize).step_by(step as usize).enumerate() {
        gx[q + 1] = g[k];
    }
    gx
}

// ---- Indices along an axis and permutations: take_along, permute3, permute4. ----

/// Deliberately broken take_along kernel: every row's indices read row 0.
#[op(name = "test/broken/take_along_row_zero", version = 1, signature(x: f32[r, c], idx: u32[r, k] where c >= 1) -> f32[r, k],
     category = selection, tolerance = exact, backward = none, generated_tests = false,
     kernel(wgsl = "kernels/broken/take_along_row_zero.wgsl", bindings(x: read, idx: read, out: read_write, uniform(r, c, k)), threads = r * k))]
pub fn take_along_row_zero<T: Real>(x: &[T], idx: &[u32], c: usize, k: usize) -> Vec<T> {
    builtins::take_along(x, idx, c, k)
}

/// Deliberately broken take_along `cpu` kernel: the same mistake on the CPU.
#[op(name = "test/broken/take_along_cpu_row_zero", version = 1, signature(x: f32[r, c], idx: u32[r, k] where c >= 1) -> f32[r, k],
     category = selection, tolerance = exact, backward = none, generated_tests = false, cpu = take_along_first_row)]
pub fn take_along_cpu_row_zero<T: Real>(x: &[T], idx: &[u32], c: usize, k: usize) -> Vec<T> {
    builtins::take_along(x, idx, c, k)
}
/// Wrong on purpose: the row offset forgotten.
pub fn take_along_first_row(x: &[f32], idx: &[u32], c: usize, _k: usize) -> Vec<f32> {
    idx.iter().map(|i| x[(*i as usize).min(c - 1)]).collect()
}

/// Deliberately broken take_along VJP kernel: overwrites where it should add.
#[op(name = "test/broken/take_along_vjp_overwrites", version = 1, signature(x: f32[r, c], idx: u32[r, k] where c >= 1) -> f32[r, k],
     category = selection, tolerance = exact, generated_tests = false,
     backward = vjp(builtins::take_along_vjp,
         kernel(wgsl = "kernels/broken/take_along_vjp_overwrites.wgsl", bindings(x: read, idx: read, d_out: read, d_x: read_write, uniform(r, c, k)), threads = r * c)),
     subgradient = "a copy")]
pub fn take_along_vjp_overwrites<T: Real>(x: &[T], idx: &[u32], c: usize, k: usize) -> Vec<T> {
    builtins::take_along(x, idx, c, k)
}

/// take_along with a VJP rule that scatters every row's cotangents into row 0. Declared for two
/// rows or more, each reading at least one element: with one row the rule is right.
#[op(name = "test/bad/take_along_into_row_zero", version = 1, signature(x: f32[r, c], idx: u32[r, k] where c >= 1, r >= 2, k >= 1) -> f32[r, k],
     category = selection, tolerance = exact, generated_tests = false,
     backward = vjp(take_along_into_row_zero_rule), subgradient = "row 0 (wrong on purpose)")]
pub fn take_along_into_row_zero<T: Real>(x: &[T], idx: &[u32], c: usize, k: usize) -> Vec<T> {
    builtins::take_along(x, idx, c, k)
}
/// Wrong on purpose: the row offset forgotten.
pub fn take_along_into_row_zero_rule<T: Real>(x: &[T], idx: &[u32], c: usize, _k: usize, g: &[T]) -> Vec<T> {
    let mut gx = vec![T::zero(); x.len()];
    for (i, gi) in idx.iter().zip(g) {
        gx[(*i as usize).min(c - 1)] += *gi;
    }
    gx
}

/// Deliberately broken permute4 kernel: decomposes the output index over the input's dims.
#[op(name = "test/broken/permute4_unpermuted_dims", version = 1,
     signature(x: f32[d0, d1, d2, d3], p0: u32, p1: u32, p2: u32, p3: u32
        where p0 < 4, p1 < 4, p2 < 4, p3 < 4, p0 != p1, p0 != p2, p0 != p3, p1 != p2, p1 != p3, p2 != p3)
        -> f32[d0 + (d1 - d0) * min(p0, 1) + (d2 - d1) * (p0 / 2) + (d3 - d2) * (p0 / 3), d0 + (d1 - d0) * min(p1, 1) + (d2 - d1) * (p1 / 2) + (d3 - d2) * (p1 / 3),
               d0 + (d1 - d0) * min(p2, 1) + (d2 - d1) * (p2 / 2) + (d3 - d2) * (p2 / 3), d0 + (d1 - d0) * min(p3, 1) + (d2 - d1) * (p3 / 2) + (d3 - d2) * (p3 / 3)],
     category = selection, tolerance = exact, backward = none, generated_tests = false,
     kernel(wgsl = "kernels/broken/permute4_unpermuted_dims.wgsl", bindings(x: read, out: read_write, uniform(d0, d1, d2, d3, p0, p1, p2, p3)), threads = d0 * d1 * d2 * d3))]
#[allow(clippy::too_many_arguments)]
pub fn permute4_unpermuted_dims<T: Real>(
    x: &[T],
    p0: u32,
    p1: u32,
    p2: u32,
    p3: u32,
    d0: usize,
    d1: usize,
    d2: usize,
    d3: usize,
) -> Vec<T> {
    builtins::permute4(x, p0, p1, p2, p3, d0, d1, d2, d3)
}

/// Deliberately broken permute3 `cpu` kernel: the inverse permutation (the VJP's) as the forward.
#[op(name = "test/broken/permute3_cpu_inverse", version = 1,
     signature(x: f32[d0, d1, d2], p0: u32, p1: u32, p2: u32 where p0 < 3, p1 < 3, p2 < 3, p0 != p1, p0 != p2, p1 != p2)
        -> f32[d0 + (d1 - d0) * min(p0, 1) + (d2 - d1) * (p0 / 2), d0 + (d1 - d0) * min(p1, 1) + (d2 - d1) * (p1 / 2), d0 + (d1 - d0) * min(p2, 1) + (d2 - d1) * (p2 / 2)],
     category = selection, tolerance = exact, backward = none, generated_tests = false, cpu = permute3_by_inverse)]
pub fn permute3_cpu_inverse<T: Real>(x: &[T], p0: u32, p1: u32, p2: u32, d0: usize, d1: usize, d2: usize) -> Vec<T> {
    builtins::permute3(x, p0, p1, p2, d0, d1, d2)
}
/// Wrong on purpose: `x` permuted by the inverse permutation (right only for an involution).
pub fn permute3_by_inverse(x: &[f32], p0: u32, p1: u32, p2: u32, d0: usize, d1: usize, d2: usize) -> Vec<f32> {
    let mut inv = [0u32; 3];
    for (k, p) in [p0, p1, p2].into_iter().enumerate() {
        inv[p as usize] = k as u32;
    }
    builtins::permute3(x, inv[0], inv[1], inv[2], d0, d1, d2)
}

/// permute3 with a VJP rule that applies the permutation again instead of its inverse. Declared
/// for one 3-cycle (a permutation that is not its own inverse) and dims of two or more.
#[op(name = "test/bad/permute3_not_inverted", version = 1,
     signature(x: f32[d0, d1, d2], p0: u32, p1: u32, p2: u32 where p0 == 1, p1 == 2, p2 == 0, d0 >= 2, d1 >= 2, d2 >= 2) -> f32[d1, d2, d0],
     category = selection, tolerance = exact, generated_tests = false,
     backward = vjp(permute3_not_inverted_rule), subgradient = "the permutation, not inverted (wrong on purpose)")]
pub fn permute3_not_inverted<T: Real>(x: &[T], p0: u32, p1: u32, p2: u32, d0: usize, d1: usize, d2: usize) -> Vec<T> {
    builtins::permute3(x, p0, p1, p2, d0, d1, d2)
}
/// Wrong on purpose: `g` (dims `d1, d2, d0`) permuted forward once more.
#[allow(clippy::too_many_arguments)]
pub fn permute3_not_inverted_rule<T: Real>(_x: &[T], p0: u32, p1: u32, p2: u32, d0: usize, d1: usize, d2: usize, g: &[T]) -> Vec<T> {
    builtins::permute3(g, p0, p1, p2, d1, d2, d0)
}

// ---- The assertions. ----

#[test]
fn broken_unfold_kernels_are_rejected() {
    common::wgpu_rejection(&unfold_ignores_step::DECL);
    let reports = assert_conformance_rejected(&unfold_cpu_ignores_step::DECL);
    assert!(reports.iter().any(|r| r.backend == BackendKind::Cpu), "the cpu kernel runs everywhere and must be rejected");
    let reports = assert_vjp_conformance_rejected(&unfold_vjp_skips_window::DECL);
    if common::wgpu_available() {
        assert!(reports.iter().any(|r| r.backend == BackendKind::Wgpu), "wgpu ran and must have rejected it");
    }
}

#[test]
fn broken_row_kernels_are_rejected() {
    if let Some(r) = common::wgpu_rejection(&sort_rows_plain_compare::DECL) {
        assert!(r.to_string().contains("test/broken/sort_rows_plain_compare"), "{r}");
    }
    common::wgpu_rejection(&median_rows_upper::DECL);
    let reports = assert_conformance_rejected(&median_rows_cpu_upper::DECL);
    assert!(reports.iter().any(|r| r.backend == BackendKind::Cpu), "the cpu kernel runs everywhere and must be rejected");
    let reports = assert_vjp_conformance_rejected(&median_rows_vjp_ties_later::DECL);
    if common::wgpu_available() {
        assert!(reports.iter().any(|r| r.backend == BackendKind::Wgpu), "wgpu ran and must have rejected it");
    }
}

/// Gradcheck rejects `decl` at every salt.
fn rejected_at_every_salt(decl: &'static op_runtime::OpDecl) {
    let _ = assert_gradcheck_rejected(decl);
    for salt in 1..8u64 {
        let o = GradcheckOptions { salt, ..GradcheckOptions::default() };
        let r = gradcheck_with(op_runtime::registry(), decl, &o);
        assert!(r.is_err(), "{} passed gradcheck at salt {salt}: {}", decl.rust_name, r.map(|r| r.to_string()).unwrap_or_default());
    }
}

#[test]
fn wrong_vjp_rules_of_the_library_are_rejected_by_gradcheck() {
    rejected_at_every_salt(&unfold_vjp_overwrites::DECL);
    rejected_at_every_salt(&median_rows_ties_later::DECL);
    rejected_at_every_salt(&sort_rows_inverse::DECL);
}

/// A sort whose reference turns `+inf` into a NaN: it declares `nan = ordered`, and a NaN that
/// no input holds breaks that.
#[op(name = "test/bad/sort_rows_makes_nan", version = 1,
     signature(x: f32[r, c] where c <= 1024) -> f32[r, c],
     category = selection, tolerance = exact, nan = ordered, backward = none, generated_tests = false)]
pub fn sort_rows_makes_nan<T: Real>(x: &[T], c: usize) -> Vec<T> {
    let (inf, made_up) = (T::one() / T::zero(), T::zero() / T::zero());
    builtins::sort_rows(x, c).into_iter().map(|v| if v == inf { made_up } else { v }).collect()
}

#[test]
fn a_reference_that_makes_up_a_nan_breaks_nan_ordered() {
    let e = op_runtime::testing::assert_reference_rejected(&sort_rows_makes_nan::DECL);
    assert!(e.to_string().contains("nan = ordered"), "{e}");
}

#[test]
fn broken_elementwise_mask_row_and_shape_kernels_are_rejected() {
    common::wgpu_rejection(&abs_keeps_minus_zero::DECL);
    common::wgpu_rejection(&maximum_builtin_max::DECL);
    let reports = assert_conformance_rejected(&maximum_cpu_f32_max::DECL);
    assert!(reports.iter().any(|r| r.backend == BackendKind::Cpu), "the cpu kernel runs everywhere and must be rejected");
    common::wgpu_rejection(&greater_total_order::DECL);
    common::wgpu_rejection(&sum_rows_drops_last::DECL);
    let reports = assert_vjp_conformance_rejected(&max_rows_vjp_first_tie::DECL);
    if common::wgpu_available() {
        assert!(reports.iter().any(|r| r.backend == BackendKind::Wgpu), "wgpu ran and must have rejected it");
    }
    common::wgpu_rejection(&transpose_copies::DECL);
    let reports = assert_vjp_conformance_rejected(&gather_vjp_overwrites::DECL);
    if common::wgpu_available() {
        assert!(reports.iter().any(|r| r.backend == BackendKind::Wgpu), "wgpu ran and must have rejected it");
    }
}

#[test]
fn wrong_vjp_rules_of_rows_elementwise_and_shapes_are_rejected_by_gradcheck() {
    rejected_at_every_salt(&max_rows_first_tie::DECL);
    rejected_at_every_salt(&sigmoid_plus::DECL);
    rejected_at_every_salt(&slice_shifted::DECL);
}

#[test]
fn broken_take_along_kernels_are_rejected() {
    common::wgpu_rejection(&take_along_row_zero::DECL);
    let reports = assert_conformance_rejected(&take_along_cpu_row_zero::DECL);
    assert!(reports.iter().any(|r| r.backend == BackendKind::Cpu), "the cpu kernel runs everywhere and must be rejected");
    let reports = assert_vjp_conformance_rejected(&take_along_vjp_overwrites::DECL);
    if common::wgpu_available() {
        assert!(reports.iter().any(|r| r.backend == BackendKind::Wgpu), "wgpu ran and must have rejected it");
    }
}

#[test]
fn wrong_vjp_rules_of_take_along_and_permute_are_rejected_by_gradcheck() {
    rejected_at_every_salt(&take_along_into_row_zero::DECL);
    rejected_at_every_salt(&permute3_not_inverted::DECL);
}

#[test]
fn broken_permute_kernels_are_rejected() {
    common::wgpu_rejection(&permute4_unpermuted_dims::DECL);
    let reports = assert_conformance_rejected(&permute3_cpu_inverse::DECL);
    assert!(reports.iter().any(|r| r.backend == BackendKind::Cpu), "the cpu kernel runs everywhere and must be rejected");
}
