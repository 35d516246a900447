//! The page of one op: identity and declaration, the contract, the kernels with their hashes,
//! every backend's verdict with receipt and trust, each rejected kernel's classes with their
//! shrunk cases, the error per case as an SVG plot, and the gradcheck probes with the negative
//! control's margins.

use crate::html::{class, esc, frame, receipt_text, trust_of, trust_text, verdict_text};
use crate::load::OpRecords;
use crate::svg::{Plot, Series};
use op_runtime::contract::Backward;
use op_runtime::report::{BackendRecord, GradcheckRecord, Verdict};
use std::fmt::Write;

/// Probes listed in the page's table (the plot shows them all).
const PROBE_ROWS: usize = 24;

/// The page's file name: the id and the identity's first 12 hex digits, every character but
/// `[A-Za-z0-9._-]` as `_`.
pub fn file_name(o: &OpRecords) -> String {
    let e = &o.entry;
    let id: String = e.id.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect();
    let hash: String = e.identity.chars().filter(char::is_ascii_hexdigit).take(12).collect();
    format!("{id}-{hash}.html")
}

/// Whether a result ran a kernel (so it has an error series).
pub(crate) fn ran(r: &BackendRecord) -> bool {
    matches!(r.verdict, Verdict::Conformed | Verdict::Rejected) && !r.errors.is_empty()
}

/// The largest ulp error of a result over its cases.
pub fn worst_ulp(r: &BackendRecord) -> f64 {
    r.errors.iter().map(|p| p.ulp).fold(0.0, f64::max)
}

fn head(o: &OpRecords) -> String {
    let e = &o.entry;
    let mut b = format!("<p><a href=\"../index.html\">← all ops</a></p><h1>{}</h1><table>", esc(&e.id));
    let rows = [
        ("identity", e.identity.clone()),
        ("source", format!("{:?}", e.source)),
        ("function", format!("{} in {}", e.rust_name, e.module)),
        ("declared at", e.site.clone()),
        ("category", e.category.clone()),
        ("tolerance", e.tolerance.clone()),
        ("backward", backward_text(&e.card.backward)),
        ("subgradient", e.card.subgradient.clone().unwrap_or_else(|| "—".into())),
        ("instances", if e.instances.is_empty() { "—".into() } else { e.instances.join("; ") }),
        ("recorded by", o.binaries.join(", ")),
    ];
    for (k, v) in rows {
        let _ = write!(b, "<tr><th>{k}</th><td>{}</td></tr>", esc(&v));
    }
    b.push_str("</table>");
    b
}

/// The backward form in a line: `vjp(rule, kernel(path), cpu(f))`, `jvp(rules)`,
/// `composite(graph)`.
fn backward_text(b: &Backward) -> String {
    match b {
        Backward::None => "none (not differentiable)".into(),
        Backward::Composite { graph } => format!("composite({})", graph.as_deref().unwrap_or("")),
        Backward::Declared { vjp, jvp, vjp_kernels, vjp_cpu } => {
            let mut parts = Vec::new();
            if let Some(v) = vjp {
                let gpu = vjp_kernels.iter().map(|k| format!(", kernel({})", k.path));
                let kernels: String = gpu.chain(vjp_cpu.iter().map(|k| format!(", cpu({})", k.path))).collect();
                parts.push(format!("vjp({v}{kernels})"));
            }
            if !jvp.is_empty() {
                parts.push(format!("jvp({})", jvp.join(", ")));
            }
            parts.join(" + ")
        }
    }
}

fn kernels(o: &OpRecords) -> String {
    let mut b =
        String::from("<h2>Kernels</h2><table><tr><th>backend</th><th>kernel</th><th>language</th><th>blake3</th><th>serves</th></tr>");
    for k in &o.entry.kernels {
        let lang = k.language.map(|l| format!("{l:?}")).unwrap_or_else(|| "Rust".into());
        let what = if k.vjp { format!("{} (VJP kernel)", k.kernel) } else { k.kernel.clone() };
        let _ = write!(
            b,
            "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>",
            k.backend.name(),
            esc(&what),
            esc(&lang),
            esc(k.blake3.as_deref().unwrap_or("(covered by the identity)")),
            esc(&k.dtypes.join("; "))
        );
    }
    b.push_str("</table>");
    b
}

fn results(o: &OpRecords) -> String {
    let Some(c) = &o.conformance else { return "<h2>Conformance</h2><p>Not recorded.</p>".into() };
    let mut b = String::from(
        "<h2>Conformance</h2><table><tr><th>instance</th><th>backend</th><th>verdict</th><th>cases</th><th>device</th><th>receipt</th><th>trust here</th></tr>",
    );
    for r in &c.results {
        let (word, why) = trust_text(trust_of(&c.trust, r.backend, &r.dtypes));
        let trust = if r.verdict == Verdict::Skipped { String::new() } else { format!("{word}: {why}") };
        let cases = if r.verdict == Verdict::Skipped { r.detail.clone() } else { format!("{} run, {} failed", r.cases, r.failed) };
        let _ = write!(
            b,
            "<tr class=\"{}\"><td>{}</td><td>{}</td><td><b>{}</b></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            class(r.verdict),
            esc(&r.dtypes),
            r.backend.name(),
            esc(&verdict_text(r)),
            esc(&cases),
            esc(r.device.as_deref().unwrap_or("")),
            esc(&receipt_text(r)),
            esc(&trust)
        );
    }
    b.push_str("</table>");
    for r in c.results.iter().filter(|r| matches!(r.verdict, Verdict::Rejected | Verdict::Failed)) {
        b.push_str(&failure(r));
    }
    b
}

/// A rejected (or failed) result: each class with its shrunk case, then the full report.
fn failure(r: &BackendRecord) -> String {
    let at = if r.dtypes.is_empty() { String::new() } else { format!(" at {}", r.dtypes) };
    let mut b = format!("<h3>{}{} — {}</h3>", r.backend.name(), esc(&at), esc(&verdict_text(r)));
    for (i, d) in r.defects.iter().enumerate() {
        let _ = write!(
            b,
            "<div class=\"defect\"><p><b>[{}] {}</b>: {}</p><table><tr><th>shrunk case</th><td><code>{}</code></td></tr>",
            i + 1,
            esc(&d.class),
            esc(&d.explanation),
            esc(&d.case)
        );
        if let Some(from) = &d.shrunk_from {
            let _ = write!(b, "<tr><th>shrunk from</th><td><code>{}</code></td></tr>", esc(from));
        }
        let _ = write!(b, "<tr><th>output</th><td>{}</td></tr></table></div>", esc(&d.output));
    }
    let _ = write!(b, "<details><summary>full report</summary><pre>{}</pre></details>", esc(&r.detail));
    b
}

/// The error plot: one series per kernel backend and instance that ran.
fn error_plot(o: &OpRecords) -> Option<Plot> {
    let c = o.conformance.as_ref()?;
    let mut series: Vec<Series> = Vec::new();
    for r in c.results.iter().filter(|r| ran(r)) {
        let name = if r.dtypes.is_empty() { r.backend.name().to_string() } else { format!("{} {}", r.backend.name(), r.dtypes) };
        let y = |u: f64| if u.is_finite() { (1.0 + u).log10() } else { u };
        series.push(Series { name: name.clone(), points: r.errors.iter().map(|p| (p.case as f64, y(p.ulp))).collect() });
        let nonfinite: Vec<(f64, f64)> = r.errors.iter().filter(|p| p.nonfinite > 0).map(|p| (p.case as f64, f64::INFINITY)).collect();
        if !nonfinite.is_empty() {
            series.push(Series { name: format!("{name}: inf/NaN differs"), points: nonfinite });
        }
    }
    if series.is_empty() {
        return None;
    }
    let line = ulp_bound(&o.entry.tolerance).map(|k| ((1.0 + k).log10(), format!("ulp({k})")));
    Some(Plot {
        title: format!("error per case against the reference ({})", o.entry.tolerance),
        x_label: "case (corpus order)".into(),
        y_label: "log10(1 + ulp)".into(),
        series,
        line,
    })
}

/// `k` of an `ulp(k)` tolerance.
fn ulp_bound(tolerance: &str) -> Option<f64> {
    tolerance.strip_prefix("ulp(")?.strip_suffix(')')?.parse().ok()
}

fn gradcheck(g: Option<&GradcheckRecord>) -> String {
    let Some(g) = g else { return "<h2>Gradcheck</h2><p>Not recorded.</p>".into() };
    let verdict = match (g.passed, g.not_differentiable) {
        (true, true) => "backward = none: not differentiable (refused with the typed error, as declared)",
        (true, false) => "passed",
        (false, _) => "FAILED",
    };
    let mut b =
        format!("<h2>Gradcheck</h2><p class=\"{}\"><b>{verdict}</b></p><pre>{}</pre>", if g.passed { "ok" } else { "bad" }, esc(&g.text));
    if !g.points.is_empty() {
        let plot = Plot {
            title: "gradcheck probes: |analytic - numeric| against the bound".into(),
            x_label: "probe".into(),
            y_label: "|analytic - numeric| / allowed".into(),
            series: vec![Series {
                name: "probes".into(),
                points: g
                    .points
                    .iter()
                    .enumerate()
                    .map(|(i, p)| (i as f64, (p.analytic - p.numeric).abs() / p.allowed.max(f64::MIN_POSITIVE)))
                    .collect(),
            }],
            line: Some((1.0, "bound".into())),
        };
        b.push_str(&plot.to_svg());
        b.push_str("<table><tr><th>at</th><th>analytic</th><th>numeric</th><th>allowed</th></tr>");
        for p in g.points.iter().take(PROBE_ROWS) {
            let _ = write!(
                b,
                "<tr><td>{}</td><td>{:.6e}</td><td>{:.6e}</td><td>{:.1e}</td></tr>",
                esc(&p.at),
                p.analytic,
                p.numeric,
                p.allowed
            );
        }
        let _ = write!(b, "</table><p class=\"small\">{} of {} probes listed.</p>", g.points.len().min(PROBE_ROWS), g.points.len());
    }
    if !g.control.is_empty() {
        b.push_str(
            "<h3>Negative control</h3><table><tr><th>corruption</th><th>applies</th><th>rejected</th><th>margin (× the bound)</th></tr>",
        );
        for c in &g.control {
            let _ = write!(
                b,
                "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{:.3e}</td></tr>",
                if c.rejected || !c.applicable { "ok" } else { "bad" },
                esc(&c.corruption),
                c.applicable,
                c.rejected,
                c.margin
            );
        }
        b.push_str("</table>");
    }
    b
}

/// The op's page.
pub fn page(o: &OpRecords) -> String {
    let mut b = head(o);
    b.push_str(&kernels(o));
    b.push_str(&results(o));
    if let Some(plot) = error_plot(o) {
        b.push_str("<h2>Error per case</h2>");
        b.push_str(&plot.to_svg());
        b.push_str(
            "<p class=\"small\">Each kernel against the reference at the same dtype, per case of the corpus: the largest distance in \
             ulps over the elements where both are finite (triangles on the top edge: the kernel failed, or an element is inf or NaN \
             on one side only). The verdict is conformance's: an <code>accum</code> op is judged against the reference in f64 within \
             its bound, so a kernel that conforms can still differ here.</p>",
        );
    }
    b.push_str(&gradcheck(o.gradcheck.as_ref()));
    let contract = serde_json::to_string_pretty(&o.entry.contract).unwrap_or_default();
    let _ = write!(b, "<h2>Contract</h2><pre>{}</pre>", esc(&contract));
    frame(&o.entry.id, &b)
}
