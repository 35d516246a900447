//! The index page: a summary, an overview plot of each kernel's worst error per op, and the
//! table with one row per op and instance and a column per backend (with its device).

use crate::html::{esc, frame, result_cell};
use crate::load::{OpRecords, Records};
use crate::page::{file_name, worst_ulp};
use crate::svg::{Plot, Series};
use op_runtime::report::Verdict;
use op_runtime::BackendKind;
use std::fmt::Write;

/// The devices each backend ran on, across every record.
fn devices(records: &Records, backend: BackendKind) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in records.ops.iter().flat_map(OpRecords::results).filter(|r| r.backend == backend) {
        if let Some(d) = &r.device {
            if !out.contains(d) {
                out.push(d.clone());
            }
        }
    }
    out
}

fn count(records: &Records, v: Verdict) -> usize {
    records.ops.iter().flat_map(OpRecords::results).filter(|r| r.verdict == v).count()
}

/// The overview: for each kernel backend, each op's worst error over its corpus.
fn overview(records: &Records) -> Plot {
    let series = [BackendKind::Cuda, BackendKind::Wgpu, BackendKind::Cpu]
        .into_iter()
        .map(|b| Series {
            name: b.name().to_string(),
            points: records
                .ops
                .iter()
                .enumerate()
                .flat_map(|(i, o)| {
                    o.results().filter(move |r| r.backend == b && !r.errors.is_empty()).map(move |r| (i as f64, worst_ulp(r)))
                })
                .map(|(x, u)| (x, (1.0 + u).log10()))
                .collect(),
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    Plot {
        title: "worst error of each kernel over its corpus".into(),
        x_label: "op (the table's # column)".into(),
        y_label: "log10(1 + ulp)".into(),
        series,
        line: None,
    }
}

fn gradcheck_cell(o: &OpRecords) -> String {
    match &o.gradcheck {
        None => "<td class=\"skip\">—</td>".into(),
        Some(g) if g.not_differentiable && g.passed => "<td class=\"skip\">backward = none</td>".into(),
        Some(g) if g.passed => format!(
            "<td class=\"ok\"><b>passed</b><div class=\"small\">worst {:.2} of the bound, {} probes</div></td>",
            g.worst_ratio,
            g.points.len()
        ),
        Some(g) => format!("<td class=\"bad\" title=\"{}\"><b>FAILED</b></td>", esc(&g.text)),
    }
}

/// The index page.
pub fn page(records: &Records) -> String {
    let mut b = String::new();
    let rows: usize = records.ops.iter().map(|o| o.rows().len()).sum();
    let _ = write!(
        b,
        "<h1>Op report</h1><p>{} ops, {rows} rows (op and instance). Backend results: {} conformed, {} rejected, {} failed, {} skipped. \
         Gradcheck: {} passed, {} failed.</p>",
        records.ops.len(),
        count(records, Verdict::Conformed),
        count(records, Verdict::Rejected),
        count(records, Verdict::Failed),
        count(records, Verdict::Skipped),
        records.ops.iter().filter(|o| o.gradcheck.as_ref().is_some_and(|g| g.passed && !g.not_differentiable)).count(),
        records.ops.iter().filter(|o| o.gradcheck.as_ref().is_some_and(|g| !g.passed)).count(),
    );
    b.push_str(&overview(records).to_svg());
    b.push_str(
        "<p class=\"small\">Each kernel's largest distance in ulps from the reference at the op's dtype, over its corpus (elements where \
         both are finite). The verdicts below are conformance's: <code>accum</code> ops are judged against the reference in f64 within \
         their bound, so a conforming kernel can sit well above zero here.</p>",
    );
    b.push_str("<table><tr><th>#</th><th>op</th><th>instance</th><th>source</th><th>category, tolerance</th>");
    for kind in BackendKind::PRIORITY {
        let d = devices(records, kind);
        let _ = write!(b, "<th>{}<div class=\"small\">{}</div></th>", kind.name(), esc(&d.join("; ")));
    }
    b.push_str("<th>gradcheck</th></tr>\n");
    for (n, o) in records.ops.iter().enumerate() {
        for (i, row) in o.rows().iter().enumerate() {
            let e = &o.entry;
            let _ = write!(b, "<tr><td>{}</td>", if i == 0 { n.to_string() } else { String::new() });
            let _ = write!(
                b,
                "<td><a href=\"ops/{}\">{}</a><div class=\"small\">{}</div></td><td>{}</td><td>{:?}</td><td>{}, {}</td>",
                esc(&file_name(o)),
                esc(&e.id),
                esc(e.identity.get(..16).unwrap_or(&e.identity)),
                esc(if row.dtypes.is_empty() { "—" } else { &row.dtypes }),
                e.source,
                esc(&e.category),
                esc(&e.tolerance),
            );
            let trust = o.conformance.as_ref().map(|c| c.trust.as_slice()).unwrap_or(&[]);
            for kind in BackendKind::PRIORITY {
                b.push_str(&result_cell(o.result(row, kind), trust));
            }
            b.push_str(&if i == 0 { gradcheck_cell(o) } else { "<td></td>".into() });
            b.push_str("</tr>\n");
        }
    }
    b.push_str("</table>");
    let _ = write!(b, "<p class=\"small\">Recorded by: {}.</p>", esc(&binaries(records).join(", ")));
    frame("Op report", &b)
}

fn binaries(records: &Records) -> Vec<String> {
    let mut all: Vec<String> = records.ops.iter().flat_map(|o| o.binaries.iter().cloned()).collect();
    all.sort();
    all.dedup();
    all
}
