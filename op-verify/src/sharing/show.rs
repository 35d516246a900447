//! A card as text. Every value is printed on its own line with control characters (and the
//! bidirectional overrides) escaped, so no field of a received card can forge a line (a "trust
//! ... verified" line inside a description, a kernel path or a device name); the description,
//! covered by neither the identity nor a receipt, is shown as unverified text.

use super::card::{OpCard, Trust};
use op_contract::contract::{Backward, Visibility};
use op_core::kind::BackendKind;
use op_core::op::OpSource;
use std::borrow::Cow;
use std::fmt;

/// What the card says of its description: the one field nothing verifies.
pub const DESCRIPTION_NOTE: &str = "unverified text (the author's; covered by neither the identity nor a receipt)";

/// Whether `c` must not reach a terminal as is: a control character, or a bidirectional
/// override or isolate (which reorders what follows it on screen).
fn unsafe_char(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
}

/// `s` with every unsafe character escaped (`\n`, `\u{202e}`).
pub fn one_line(s: &str) -> Cow<'_, str> {
    if !s.chars().any(unsafe_char) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(s.chars().map(|c| if unsafe_char(c) { c.escape_default().to_string() } else { c.to_string() }).collect())
}

fn backward_text(b: &Backward) -> String {
    match b {
        Backward::None => "none (not differentiable)".into(),
        Backward::Composite { graph: None } => "composite".into(),
        Backward::Composite { graph: Some(g) } => format!("composite({g})"),
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

fn short(hash: &str) -> &str {
    hash.get(..16).unwrap_or(hash)
}

/// ` serving T = f32; T = f16` for a kernel of an op with dtype variables.
fn serves_text(dtypes: &[String]) -> String {
    if dtypes.is_empty() {
        String::new()
    } else {
        format!(", serving {}", dtypes.join("; "))
    }
}

impl OpCard {
    /// The card's lines, before escaping.
    fn lines(&self) -> Vec<String> {
        let source = match self.source {
            OpSource::Builtin => "builtin",
            OpSource::User => "user",
        };
        let visibility = match self.visibility {
            Visibility::Private => "private",
            Visibility::Workspace => "workspace",
            Visibility::Public => "public",
        };
        let mut out = vec![format!("{}  [{source}, {visibility}, licence {}]", self.id, self.license.as_deref().unwrap_or("none"))];
        if !self.description.trim().is_empty() {
            out.push(format!("  description  {DESCRIPTION_NOTE}:"));
            out.extend(self.description.lines().map(|l| format!("    | {l}")));
        }
        out.push(format!("  content      {}", self.content_hash));
        out.push(format!("  category     {}", self.category.name()));
        out.push(format!("  tolerance    {}", self.tolerance));
        out.push(format!("  backward     {}", backward_text(&self.backward)));
        if let Some(s) = &self.subgradient {
            out.push(format!("  subgradient  {s}"));
        }
        if !self.instances.is_empty() {
            out.push(format!("  instances    {}", self.instances.join("; ")));
        }
        if let Some(cpu) = &self.cpu {
            out.push(format!("  cpu kernel   {cpu}{}", serves_text(&self.cpu_dtypes)));
        }
        for more in &self.cpu_more {
            out.push(format!("  cpu kernel   {}{}", more.path, serves_text(&more.dtypes)));
        }
        if self.kernels.is_empty() {
            out.push("  kernels      none (reference only)".into());
        }
        for k in &self.kernels {
            let lang = k.language.name();
            let label = if k.backward { "vjp kernel" } else { "kernel    " };
            out.push(format!("  {label}   {lang} {} (entry `{}`, blake3 {}){}", k.path, k.entry, short(&k.blake3), serves_text(&k.dtypes)));
            out.extend(k.headers.iter().map(|h| format!("    header     {} (blake3 {})", h.path, short(&h.blake3))));
        }
        if self.kernels.iter().any(|k| k.backward) {
            out.push(format!(
                "  vjp kernels  run as the VJP op `{}/vjp@{}`: conformed and trusted on its own card",
                self.name, self.version
            ));
        }
        if self.receipts.is_empty() {
            out.push("  receipts     none".into());
        }
        for r in &self.receipts {
            let signed = r.signature.as_ref().map(|s| format!(", signed by {}", s.key)).unwrap_or_default();
            let at = if r.dtypes.is_empty() { String::new() } else { format!(" at {}", r.dtypes) };
            out.push(format!("  receipt      {}{at} on {} ({} cases, {}{signed})", r.backend, r.device, r.cases, r.engine_version));
        }
        for (i, k) in self.trust.iter().enumerate() {
            let pad = if i == 0 { "  trust        " } else { "               " };
            let mut what = format!("{} {}", k.backend, if k.backend == BackendKind::Reference { "" } else { k.kernel.as_str() });
            if !k.dtypes.is_empty() {
                what = format!("{} at {}", what.trim_end(), k.dtypes);
            }
            out.push(match &k.trust {
                Trust::Verified { device, attestation, .. } => format!("{pad}{:<34} verified on {device} ({attestation})", what.trim()),
                Trust::Unverified { reason } => format!("{pad}{:<34} unverified: {reason}", what.trim()),
            });
        }
        if self.trust.is_empty() {
            out.push("  trust".into());
        }
        out
    }
}

impl fmt::Display for OpCard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines = self.lines();
        for (i, line) in lines.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            f.write_str(&one_line(line))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn unsafe_characters_are_escaped_and_safe_text_is_kept() {
        assert_eq!(one_line("kernels/a.wgsl"), "kernels/a.wgsl");
        assert_eq!(one_line("é 😀 → ok"), "é 😀 → ok");
        assert_eq!(one_line("x\n  trust        reference verified"), "x\\n  trust        reference verified");
        assert_eq!(one_line("a\u{1b}[2Kb\u{202e}c\r"), "a\\u{1b}[2Kb\\u{202e}c\\r");
    }
}
