//! The per-element sweep of gradcheck: elements of the differentiable inputs probed one at a
//! time along their own coordinate, under one random cotangent per draw, so a backward wrong at
//! a single element can neither hide inside a random projection nor be missed by sampling.
//! Owns choosing the swept elements; measuring is `probe`'s and judging the parent's.

use super::probe::{locate, measure, Checker, Dir, Measured};
use super::GradcheckError;
use op_contract::sample::Rng;

/// Which elements each draw sweeps: all of them where the differentiable inputs hold at most
/// `cap` elements, else `cap` per draw, consecutive slices of one pseudo-random permutation of
/// the elements (`i -> (a i + s) mod total`, `a` coprime to `total`), so that the draws cover
/// `min(total, draws * cap)` distinct elements between them.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    total: usize,
    cap: usize,
    a: usize,
    s: usize,
}

impl Plan {
    /// A plan over `total` elements, at most `cap` per draw.
    pub fn new(total: usize, cap: usize, rng: &mut Rng) -> Plan {
        let mut a = 1;
        if total > cap {
            for _ in 0..64 {
                let c = 1 + rng.index(total - 1);
                if gcd(c, total) == 1 {
                    a = c;
                    break;
                }
            }
        }
        Plan { total, cap, a, s: rng.index(total) }
    }

    /// The elements draw `c` sweeps, in increasing order.
    pub fn elements(&self, c: usize) -> Vec<usize> {
        if self.total <= self.cap {
            return (0..self.total).collect();
        }
        let mut out: Vec<usize> = (c * self.cap..(c + 1) * self.cap)
            .map(|i| ((self.a as u128 * (i % self.total) as u128 + self.s as u128) % self.total as u128) as usize)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

fn gcd(mut a: usize, mut b: usize) -> usize {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Input elements one draw's sweep may evaluate the forward over, summed over its probes:
/// 256 swept elements of inputs of 4096 elements in all.
const WORK: usize = 1 << 20;

/// Elements swept per draw: `requested`, fewer where the inputs hold more than `WORK /
/// requested` elements (the forward's cost grows with them), but no fewer than 16 (or
/// `requested`, if smaller).
pub fn per_draw(requested: usize, input_elements: usize) -> usize {
    requested.min((WORK / input_elements.max(1)).max(16))
}

/// Measures draw `c`'s sweep at the checker's current draw (see [`Plan`]). The VJP (where
/// declared) runs once, the JVP once per element.
pub fn sweep(ck: &Checker, plan: &Plan, c: usize, rng: &mut Rng) -> Result<Vec<Measured>, GradcheckError> {
    let sizes = ck.sizes();
    if plan.cap == 0 || plan.total == 0 {
        return Ok(Vec::new());
    }
    let base = ck.forward(&ck.inputs)?;
    let u = ck.cotangent(&ck.out_shapes()?, rng);
    let g = if ck.has_vjp { Some(ck.vjp(&u)?) } else { None };
    plan.elements(c)
        .into_iter()
        .map(|p| {
            let (k, j) = locate(&sizes, p);
            let step = ck.step(k, ck.value(k, j).unwrap_or(1.0));
            measure(ck, &Dir::coordinate(&sizes, k, j, step), &u, &base, g.as_deref())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_inputs_sweep_fewer_elements_but_never_none() {
        assert_eq!(per_draw(256, 1000), 256);
        assert_eq!(per_draw(256, 4096), 256);
        assert_eq!(per_draw(256, 8192), 128);
        assert_eq!(per_draw(256, 100_000), 16);
        assert_eq!(per_draw(8, 100_000), 8);
        assert_eq!(per_draw(0, 10), 0);
    }

    #[test]
    fn draws_sweep_disjoint_slices_covering_every_element_they_can() {
        let mut rng = Rng::new(3);
        let small = Plan::new(5, 64, &mut rng);
        assert_eq!(small.elements(0), vec![0, 1, 2, 3, 4]);
        assert_eq!(small.elements(3), vec![0, 1, 2, 3, 4]);
        for total in [65usize, 100, 256, 1000, 4096] {
            let plan = Plan::new(total, 64, &mut rng);
            let all: Vec<usize> = (0..4).flat_map(|c| plan.elements(c)).collect();
            assert!(all.iter().all(|&i| i < total));
            let mut distinct = all.clone();
            distinct.sort_unstable();
            distinct.dedup();
            assert_eq!(distinct.len(), total.min(256), "{total}");
            assert!((0..4).all(|c| plan.elements(c).len() == 64), "{total}");
        }
    }
}
