//! What the adapter does with a kernel that misbehaves, measured once per engine by two tiny
//! launches (the probes here, run by the engine): whether it ends loops early (lavapipe, Mesa's software adapter, ends every loop
//! after a fixed number of turns), and whether a write past the end of a storage binding is
//! clamped into the binding or discarded (the bounds-check policy naga and the driver choose:
//! clamped without robust buffer access, discarded with it). From that it names what
//! conformance cannot test on the device: the profile's `untested.*` details, which every
//! receipt minted on the device lists. It must not decide verdicts.

use op_core::receipt::UNTESTED_DETAIL;

/// Canary bytes a guarded (conformance) run binds after each output's back guard band, so a
/// write up to this far past the output lands on canaries even where the adapter discards
/// writes past a binding (where it clamps them, every such write lands on the last canary).
pub const FAR_GUARD_BYTES: u64 = 64 << 10;

/// Turns the loop probe asks for: far more than a software adapter's cap, a few milliseconds
/// of one invocation on a GPU.
pub const LOOP_TURNS: u32 = 1 << 20;

/// One invocation counting to its uniform (`LOOP_TURNS`) in a loop, writing how far it got to
/// `out[0]`.
pub const LOOP_PROBE: &str = r#"
struct P { turns: u32 }
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var<uniform> p: P;
@compute @workgroup_size(1)
fn main() {
    var k = 0u;
    loop {
        if (k >= p.turns) { break; }
        k = k + 1u;
    }
    out[0] = k;
}
"#;

/// One invocation writing 1 at `out[p.at]`: bound as a window of [`PAST_BINDING_WINDOW`]
/// bytes at the start of a zeroed buffer of [`PAST_BINDING_BUFFER`] bytes, with `p.at` =
/// [`PAST_BINDING_AT`] past the window's end but inside the buffer.
pub const PAST_BINDING_PROBE: &str = r#"
struct P { at: u32 }
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var<uniform> p: P;
@compute @workgroup_size(1)
fn main() {
    out[p.at] = 1u;
}
"#;

/// The bound window of the bounds probe (4 words).
pub const PAST_BINDING_WINDOW: u64 = 16;
/// The bounds probe's buffer (128 words).
pub const PAST_BINDING_BUFFER: usize = 512;
/// The word the bounds probe writes.
pub const PAST_BINDING_AT: u32 = 100;

/// Where a write past the end of a storage binding goes on this adapter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PastBinding {
    /// Onto the binding's last element (naga's `Restrict` policy).
    Clamped,
    /// Nowhere (robust buffer access, or naga's `ReadZeroSkipWrite`).
    Discarded,
    /// Where it points: no bounds checks.
    Lands,
}

/// What the probes measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Behaviour {
    /// The turns after which the adapter ends a loop, where it does.
    pub loop_cap: Option<u32>,
    /// Where a write past a binding goes.
    pub past_binding: PastBinding,
}

impl Behaviour {
    /// What the probes' readbacks say: the loop probe's `out` and the bounds probe's whole
    /// buffer.
    pub fn from_probes(turns: &[u8], past: &[u8]) -> Behaviour {
        let word = |bytes: &[u8], i: usize| bytes.get(4 * i..4 * i + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        let loop_cap = word(turns, 0).filter(|t| *t < LOOP_TURNS);
        let last = (PAST_BINDING_WINDOW / 4 - 1) as usize;
        let past_binding = if word(past, last) == Some(1) {
            PastBinding::Clamped
        } else if word(past, PAST_BINDING_AT as usize) == Some(1) {
            PastBinding::Lands
        } else {
            PastBinding::Discarded
        };
        Behaviour { loop_cap, past_binding }
    }
}

/// The profile details (`untested.<what>` keys) naming what conformance cannot test on a
/// device that behaves as `measured` says.
/// `measured` is the probes' result or why they failed.
pub fn untested(measured: &Result<Behaviour, String>) -> Vec<(String, String)> {
    let key = |what: &str| format!("{UNTESTED_DETAIL}{what}");
    let far = format!("{} KiB", FAR_GUARD_BYTES >> 10);
    let b = match measured {
        Ok(b) => b,
        Err(e) => {
            let why = format!(
                "termination and writes more than {far} past an output not tested: measuring what the adapter does with \
                 loops that never end and writes past a binding failed ({e})"
            );
            return vec![(key("misbehaviour"), why)];
        }
    };
    let mut out = Vec::new();
    if let Some(cap) = b.loop_cap {
        out.push((
            key("termination"),
            format!(
                "termination not tested: the adapter ends every loop after {cap} turns (measured), so a kernel that never \
                 ends on another device ends here"
            ),
        ));
    }
    let past = match b.past_binding {
        PastBinding::Clamped => None,
        PastBinding::Discarded => Some(
            "the adapter's bounds checks discard writes past a buffer binding (measured), so such a write lands nowhere on this device",
        ),
        PastBinding::Lands => Some("the adapter does not check bounds (measured), so such a write lands outside the output's buffer"),
    };
    if let Some(why) = past {
        out.push((key("writes_past_binding"), format!("writes more than {far} past an output not tested: {why}")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probes_readbacks_are_read() {
        let words = |w: &[(usize, u32)]| {
            let mut b = vec![0u8; PAST_BINDING_BUFFER];
            for (i, v) in w {
                b[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
            }
            b
        };
        let b = Behaviour::from_probes(&65535u32.to_le_bytes(), &words(&[]));
        assert_eq!(b, Behaviour { loop_cap: Some(65535), past_binding: PastBinding::Discarded });
        let b = Behaviour::from_probes(&LOOP_TURNS.to_le_bytes(), &words(&[(3, 1)]));
        assert_eq!(b, Behaviour { loop_cap: None, past_binding: PastBinding::Clamped });
        let b = Behaviour::from_probes(&LOOP_TURNS.to_le_bytes(), &words(&[(PAST_BINDING_AT as usize, 1)]));
        assert_eq!(b.past_binding, PastBinding::Lands);
    }

    #[test]
    fn each_behaviour_names_what_it_leaves_untested() {
        let capped = Behaviour { loop_cap: Some(65535), past_binding: PastBinding::Discarded };
        let notes = untested(&Ok(capped));
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert_eq!(notes[0].0, "untested.termination");
        assert!(notes[0].1.starts_with("termination not tested: the adapter ends every loop after 65535 turns"), "{notes:?}");
        assert_eq!(notes[1].0, "untested.writes_past_binding");
        assert!(notes[1].1.contains("64 KiB") && notes[1].1.contains("discard"), "{notes:?}");
        // A GPU that runs loops to the end and clamps writes into the binding: nothing untested.
        assert!(untested(&Ok(Behaviour { loop_cap: None, past_binding: PastBinding::Clamped })).is_empty());
        let failed = untested(&Err("no".to_string()));
        assert_eq!(failed.len(), 1);
        assert!(failed[0].1.contains("termination and writes") && failed[0].1.ends_with("failed (no)"), "{failed:?}");
    }
}
