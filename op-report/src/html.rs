//! HTML building blocks shared by the pages: escaping (every recorded string is escaped, so a
//! description or a kernel path cannot inject markup), the page frame with its stylesheet, and
//! the verdict, receipt and trust cells.

use op_runtime::report::{BackendRecord, Verdict};
use op_runtime::sharing::{KernelTrust, Trust};
use op_runtime::BackendKind;

/// `s` with `& < > " '` escaped, for text and attribute values alike.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:sans-serif;margin:24px;color:#222;max-width:1400px}\
h1{font-size:22px}h2{font-size:18px;margin-top:28px}table{border-collapse:collapse;margin:8px 0}\
th,td{border:1px solid #ccc;padding:4px 8px;vertical-align:top;text-align:left;font-size:13px}\
th{background:#f3f3f3}.ok{background:#e3f5e1}.bad{background:#fbe0de}.skip{color:#777;background:#fafafa}\
.fail{background:#fdf0c8}.small{font-size:11px;color:#555}code,pre{font-family:monospace;font-size:12px}\
pre{background:#f7f7f7;padding:8px;overflow-x:auto;white-space:pre-wrap}.plot{border:1px solid #ddd;margin:8px 0}\
a{color:#0b57d0}";

/// A complete page: `title`, then `body` (already HTML).
pub fn frame(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n{body}\n</body></html>\n",
        esc(title)
    )
}

/// The CSS class of a verdict's cell.
pub fn class(v: Verdict) -> &'static str {
    match v {
        Verdict::Conformed => "ok",
        Verdict::Rejected => "bad",
        Verdict::Skipped => "skip",
        Verdict::Failed => "fail",
    }
}

/// The verdict as a word, with the failure classes of a rejection.
pub fn verdict_text(r: &BackendRecord) -> String {
    match r.verdict {
        Verdict::Conformed => "conformed".into(),
        Verdict::Rejected => {
            let classes: Vec<&str> = r.defects.iter().map(|d| d.class.as_str()).collect();
            format!("REJECTED: {}", classes.join("; "))
        }
        Verdict::Skipped => "skipped".into(),
        Verdict::Failed => "FAILED".into(),
    }
}

/// The receipt and its signer: `receipt 0123abcd… (unsigned: valid on this device only)` or
/// `signed by ed25519:…`.
pub fn receipt_text(r: &BackendRecord) -> String {
    match &r.receipt {
        None => "no receipt".into(),
        Some(rc) => {
            let digest = rc.digest.get(..12).unwrap_or(&rc.digest);
            match &rc.signature {
                Some(sig) => format!("receipt {digest}…, signed by {}", sig.key.get(..24).unwrap_or(&sig.key)),
                None => format!("receipt {digest}…, unsigned (minted here)"),
            }
        }
    }
}

/// The trust line of the kernel `backend` runs at `dtypes`, if the card lists one.
pub fn trust_of<'a>(trust: &'a [KernelTrust], backend: BackendKind, dtypes: &str) -> Option<&'a KernelTrust> {
    trust.iter().find(|k| k.backend == backend && k.dtypes == dtypes)
}

/// A trust line in a few words, with the reason as the full text.
pub fn trust_text(t: Option<&KernelTrust>) -> (String, String) {
    match t.map(|k| &k.trust) {
        Some(Trust::Verified { attestation, .. }) => ("trusted".into(), format!("verified: {attestation}")),
        Some(Trust::Unverified { reason }) => ("untrusted".into(), reason.clone()),
        None => ("n/a".into(), "no kernel declared for this backend".into()),
    }
}

/// A table cell for one backend's result: verdict, cases, receipt, trust, device.
pub fn result_cell(r: Option<&BackendRecord>, trust: &[KernelTrust]) -> String {
    let Some(r) = r else { return "<td class=\"skip\">—</td>".into() };
    if r.verdict == Verdict::Skipped {
        return format!(
            "<td class=\"skip\" title=\"{}\">skipped<div class=\"small\">{}</div></td>",
            esc(&r.detail),
            esc(&skip_reason(&r.detail))
        );
    }
    let (trust_word, trust_why) = trust_text(trust_of(trust, r.backend, &r.dtypes));
    let cases = if r.failed > 0 { format!("{} of {} cases failed", r.failed, r.cases) } else { format!("{} cases", r.cases) };
    format!(
        "<td class=\"{}\"><b>{}</b><div>{cases}</div><div class=\"small\">{}</div><div class=\"small\" title=\"{}\">{trust_word}</div></td>",
        class(r.verdict),
        esc(&verdict_text(r)),
        esc(&receipt_text(r)),
        esc(&trust_why),
    )
}

/// A skip's reason, short enough for a cell: after the op and backend (`nothing to conform on
/// wgpu: `, `unavailable here, not conformed: `), before any parenthesis, at most 60 characters.
pub(crate) fn skip_reason(detail: &str) -> String {
    let after = ["not conformed: ", "nothing to conform on "]
        .iter()
        .find_map(|m| detail.split_once(m).map(|(_, r)| r))
        .map(|r| r.split_once(": ").map(|(b, rest)| if b.contains(' ') { r } else { rest }).unwrap_or(r))
        .unwrap_or(detail);
    let short = after.split(" (").next().unwrap_or(after);
    let mut s: String = short.chars().take(60).collect();
    if short.chars().count() > 60 {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_reasons_keep_the_reason() {
        let d = "op `a@1`: nothing to conform on wgpu: the op's WGSL kernels do not serve `T = f16` (no silent conversion: run another backend)";
        assert_eq!(skip_reason(d), "the op's WGSL kernels do not serve `T = f16`");
        let d =
            "op `a@1`: backend cuda is unavailable here, not conformed: CUDA backend unavailable: cannot load libcuda (the NVIDIA driver)";
        assert_eq!(skip_reason(d), "CUDA backend unavailable: cannot load libcuda");
    }

    #[test]
    fn markup_in_recorded_text_is_escaped() {
        assert_eq!(esc("<script>alert('x')</script> & \"q\""), "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
        let page = frame("<t>", "<p>x</p>");
        assert!(page.contains("<title>&lt;t&gt;</title>") && page.contains("<p>x</p>"));
        assert!(!page.contains("<script"), "no script in a report page");
    }
}
