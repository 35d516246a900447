//! The example's conformance output: one table (op and instance by backend) instead of a line
//! per backend and instance; every skip folded into one line per backend with its first
//! reason; a rejection printed in full below the table.

use op_runtime::conformance::{conform, conform_all, ConformanceFailure};
use op_runtime::receipt::Receipt;
use op_runtime::{BackendKind, OpHandle};
use std::collections::BTreeMap;

/// What one backend did for one op instance.
enum Cell {
    Conformed(usize),
    Rejected,
    Skipped,
}

/// The conformance of several ops, gathered for one table.
#[derive(Default)]
pub struct Summary {
    /// (op, instance) and one cell per backend in `BackendKind::PRIORITY` order.
    rows: Vec<(String, String, Vec<Cell>)>,
    /// Skips per backend: (count, the first reason).
    skipped: BTreeMap<&'static str, (usize, String)>,
    /// The device each backend conformed on.
    devices: BTreeMap<&'static str, String>,
    /// Full reports of rejections.
    rejections: Vec<String>,
    /// Every receipt minted.
    pub receipts: Vec<Receipt>,
}

/// The reason, short: after the op and backend (`nothing to conform on wgpu: `, `unavailable
/// here, not conformed: `), before any parenthesis.
fn reason(e: &ConformanceFailure) -> String {
    let text = e.to_string();
    let after = ["not conformed: ", "nothing to conform on "]
        .iter()
        .find_map(|m| text.split_once(m).map(|(_, r)| r))
        .map(|r| r.split_once(": ").map(|(b, rest)| if b.contains(' ') { r } else { rest }).unwrap_or(r))
        .unwrap_or(&text);
    after.split(" (").next().unwrap_or(after).to_string()
}

impl Summary {
    /// Conforms `h` (every instance) on every backend and adds its rows.
    pub fn add(&mut self, h: &OpHandle) {
        let instances: Vec<String> = h.instances().iter().map(|x| x.op().binding_text()).collect();
        // `conform_all` runs every backend for each instance in turn.
        self.add_results(h, &instances, conform_all(h));
    }

    /// Conforms only the instance `h` is pinned to (`OpHandle::at`) on every backend and adds
    /// its row.
    pub fn add_instance(&mut self, h: &OpHandle) {
        let results = BackendKind::PRIORITY.into_iter().map(|k| (k, conform(h, k))).collect();
        self.add_results(h, &[h.op().binding_text()], results);
    }

    /// Adds the rows of `results`: every backend for each of `instances` in turn.
    fn add_results(&mut self, h: &OpHandle, instances: &[String], results: Vec<(BackendKind, Result<Receipt, ConformanceFailure>)>) {
        let mut by_instance: Vec<(String, Vec<Cell>)> = Vec::new();
        for (i, (kind, result)) in results.into_iter().enumerate() {
            let instance = instances.get(i / BackendKind::PRIORITY.len()).cloned().unwrap_or_default();
            let cell = match result {
                Ok(r) => {
                    self.devices.entry(kind.name()).or_insert_with(|| r.device.to_string());
                    let cases = r.cases;
                    self.receipts.push(r);
                    Cell::Conformed(cases)
                }
                Err(e) if e.is_skip() => {
                    let entry = self.skipped.entry(kind.name()).or_insert_with(|| (0, reason(&e)));
                    entry.0 += 1;
                    Cell::Skipped
                }
                Err(e) => {
                    self.rejections.push(format!("{kind}: {e}"));
                    Cell::Rejected
                }
            };
            match by_instance.iter_mut().find(|(d, _)| *d == instance) {
                Some((_, cells)) => cells.push(cell),
                None => by_instance.push((instance, vec![cell])),
            }
        }
        self.rows.extend(by_instance.into_iter().map(|(d, cells)| (h.id(), d, cells)));
    }

    /// The table, the skips (one line per backend), the devices and any rejection in full.
    pub fn print(&self) {
        let head: Vec<String> = BackendKind::PRIORITY.iter().map(|k| format!("{:<10}", k.name())).collect();
        println!("  {:<36} {:<9} {}", "op", "instance", head.join(""));
        for (op, instance, cells) in &self.rows {
            let cells: Vec<String> = cells
                .iter()
                .map(|c| match c {
                    Cell::Conformed(n) => format!("{:<10}", format!("ok {n}")),
                    Cell::Rejected => format!("{:<10}", "REJECTED"),
                    Cell::Skipped => format!("{:<10}", "-"),
                })
                .collect();
            println!("  {op:<36} {:<9} {}", if instance.is_empty() { "-" } else { instance }, cells.join(""));
        }
        println!("  (ok N: N engine-generated cases conform, receipt minted; -: skipped)");
        let total: usize = self.skipped.values().map(|(n, _)| n).sum();
        if total > 0 {
            let parts: Vec<String> = self.skipped.iter().map(|(k, (n, why))| format!("{k} {n} (e.g. {why})")).collect();
            println!("  skipped {total}: {}", parts.join("; "));
        }
        for (k, d) in &self.devices {
            println!("  {k:<9} ran on {d}");
        }
        for r in &self.rejections {
            println!("  REJECTED {r}");
        }
    }
}
