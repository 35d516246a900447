//! The build configuration a `cfg` can test, as the compiler was told it: the `--cfg` options
//! (enabled features and every other `--cfg`) and what decides the built-in cfgs (target,
//! codegen options, `--test`), read once from the compiler's command line (a proc macro runs in
//! the compiler's process; `@file` argument files are read too). It decides nothing: the
//! closure folds the values of the cfgs its code tests into the identity.

use std::sync::OnceLock;

/// What the compiler's command line says about cfgs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildConfig {
    /// Every `--cfg` value, spaces removed (`feature="fast"`, `my_cfg`), sorted.
    pub cfgs: Vec<String>,
    /// What decides the built-in cfgs (`target_os`, `debug_assertions`, `test`, ...): the target
    /// (or the host the macro was built for), the codegen options and `--test`, sorted.
    pub builtin: Vec<String>,
}

impl BuildConfig {
    /// The configuration of the compiler process this runs in, if its command line is a
    /// compiler's (`None` in a test binary, an IDE's expander or anything else).
    pub fn of_process() -> Option<BuildConfig> {
        static CONFIG: OnceLock<Option<BuildConfig>> = OnceLock::new();
        CONFIG.get_or_init(|| BuildConfig::from_args(&args())).clone()
    }

    /// The configuration a compiler command line gives; `None` if it is not one (no
    /// `--crate-name`).
    pub fn from_args(args: &[String]) -> Option<BuildConfig> {
        let mut c = BuildConfig::default();
        let mut compiler = false;
        let mut target = None;
        let mut it = args.iter().peekable();
        while let Some(a) = it.next() {
            let (flag, inline) = match a.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (a.as_str(), None),
            };
            let mut value = || inline.clone().or_else(|| it.next().cloned());
            match flag {
                "--crate-name" => compiler = true,
                "--cfg" => c.cfgs.extend(value().map(|v| v.replace(' ', ""))),
                "--target" => target = value(),
                "--test" => c.builtin.push("--test".into()),
                "-C" | "--codegen" => c.builtin.extend(value().filter(|v| codegen_matters(v)).map(|v| format!("-C {v}"))),
                f if f.starts_with("-C") && f.len() > 2 && codegen_matters(&f[2..]) => c.builtin.push(format!("-C {}", &f[2..])),
                _ => {}
            }
        }
        let host = || format!("host {}-{}-{}", std::env::consts::ARCH, std::env::consts::OS, std::env::consts::FAMILY);
        c.builtin.push(target.map_or_else(host, |t| format!("--target {t}")));
        c.cfgs.sort();
        c.cfgs.dedup();
        c.builtin.sort();
        compiler.then_some(c)
    }

    /// Whether `atom` (`name` or `name="value"`, spaces removed) is set by a `--cfg`.
    pub fn has(&self, atom: &str) -> bool {
        self.cfgs.binary_search_by(|c| c.as_str().cmp(atom)).is_ok()
    }

    /// What decides `atoms` (none of them set by a `--cfg`), from [`BuildConfig::builtin`]:
    /// for each atom only what can change its value (`target_*`, `unix`, `windows`: the
    /// target; `test`: `--test`; `debug_assertions`: those codegen options; `target_feature`:
    /// the target and `-C target-feature`/`target-cpu`; a feature or a name no built-in has:
    /// nothing beyond `--cfg`), every entry for a built-in this does not know. An absent
    /// decider counts (no `--test` reads differently from `--test`): `None` only where no atom
    /// needs one.
    pub fn deciding(&self, atoms: &[&str]) -> Option<Vec<String>> {
        let mut kinds: Vec<Decider> = Vec::new();
        for a in atoms {
            kinds.extend(deciders(a.split('=').next().unwrap_or_default()));
        }
        if kinds.is_empty() {
            return None;
        }
        let mut names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        names.sort_unstable();
        names.dedup();
        let picked = self.builtin.iter().filter(|b| kinds.iter().any(|k| k.decides(b))).cloned();
        Some(names.iter().map(|n| format!("[{n}]")).chain(picked).collect())
    }
}

/// Something on the compiler's command line that decides built-in cfgs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decider {
    /// `--target` (or the host).
    Target,
    /// `--test`.
    Test,
    /// `-C <key>=...`.
    Codegen(&'static str),
    /// Everything in [`BuildConfig::builtin`] (a built-in this does not know).
    All,
}

impl Decider {
    fn name(&self) -> &'static str {
        match self {
            Decider::Target => "target",
            Decider::Test => "test",
            Decider::Codegen(k) => k,
            Decider::All => "all",
        }
    }

    /// Whether the [`BuildConfig::builtin`] entry `b` is one of this decider's.
    fn decides(&self, b: &str) -> bool {
        match self {
            Decider::Target => b.starts_with("host ") || b.starts_with("--target "),
            Decider::Test => b == "--test",
            Decider::Codegen(k) => b.strip_prefix("-C ").is_some_and(|o| o.split('=').next() == Some(k)),
            Decider::All => true,
        }
    }
}

/// What decides the cfg named `name` where no `--cfg` sets it.
fn deciders(name: &str) -> Vec<Decider> {
    use Decider::*;
    match name {
        "test" => vec![Test],
        "debug_assertions" => vec![Codegen("debug-assertions"), Codegen("opt-level")],
        "overflow_checks" => vec![Codegen("overflow-checks"), Codegen("debug-assertions"), Codegen("opt-level")],
        "panic" => vec![Codegen("panic"), Target],
        "relocation_model" => vec![Codegen("relocation-model"), Target],
        "target_feature" => vec![Target, Codegen("target-feature"), Codegen("target-cpu")],
        "unix" | "windows" => vec![Target],
        n if n.starts_with("target_") => vec![Target],
        // Set by `--cfg` only (cargo's features, a build script's cfgs): "not set" says it all.
        "feature" => Vec::new(),
        n if !BUILTIN_NAMES.contains(&n) && !n.is_empty() => Vec::new(),
        _ => vec![All],
    }
}

/// Cfg names the compiler (or rustdoc, miri, a proc-macro build) may set without a `--cfg`
/// that [`deciders`] has no narrower rule for.
const BUILTIN_NAMES: &[&str] = &["doc", "doctest", "miri", "proc_macro", "sanitize", "fmt_debug", "ub_checks", "contract_checks"];

/// Codegen options that decide a built-in cfg (`debug_assertions`, `overflow_checks`, `panic`,
/// `target_feature`, `relocation_model`...).
fn codegen_matters(opt: &str) -> bool {
    let key = opt.split('=').next().unwrap_or_default();
    matches!(key, "opt-level" | "debug-assertions" | "overflow-checks" | "panic" | "target-feature" | "target-cpu" | "relocation-model")
}

/// The process's arguments, `@file` argument files expanded (one argument per line).
fn args() -> Vec<String> {
    let mut out = Vec::new();
    for a in std::env::args_os().skip(1) {
        let a = a.to_string_lossy().into_owned();
        match a.strip_prefix('@').map(std::fs::read_to_string) {
            Some(Ok(text)) => out.extend(text.lines().map(str::to_string)),
            _ => out.push(a),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn features_cfgs_and_what_decides_builtins_are_read_from_a_compiler_command_line() {
        let c = BuildConfig::from_args(&args(
            "--crate-name x --edition=2021 src/lib.rs --cfg feature=\"fast\" --cfg=my_cfg -C opt-level=3 -Cdebug-assertions=on -C incremental=/tmp --test",
        ))
        .expect("a compiler command line");
        assert_eq!(c.cfgs, vec!["feature=\"fast\"".to_string(), "my_cfg".to_string()]);
        assert!(c.has("feature=\"fast\"") && !c.has("feature=\"slow\""));
        assert!(c.builtin.contains(&"-C opt-level=3".to_string()) && c.builtin.contains(&"-C debug-assertions=on".to_string()));
        assert!(c.builtin.contains(&"--test".to_string()));
        assert!(!c.builtin.iter().any(|b| b.contains("incremental")), "{:?}", c.builtin);
        assert!(BuildConfig::from_args(&args("--nocapture")).is_none(), "not a compiler");
        let t = BuildConfig::from_args(&args("--crate-name x --target aarch64-unknown-linux-gnu")).expect("compiler");
        assert!(t.builtin.contains(&"--target aarch64-unknown-linux-gnu".to_string()));
    }

    #[test]
    fn each_cfg_is_decided_by_what_can_change_it_alone() {
        let run = BuildConfig::from_args(&args("--crate-name x -C opt-level=0 -C debug-assertions=on")).expect("compiler");
        let test = BuildConfig::from_args(&args("--crate-name x -C opt-level=0 -C debug-assertions=on --test")).expect("compiler");
        let arm = BuildConfig::from_args(&args("--crate-name x -C opt-level=0 --target aarch64-unknown-linux-gnu")).expect("compiler");
        let release = BuildConfig::from_args(&args("--crate-name x -C opt-level=3")).expect("compiler");
        // The target decides target_arch: the same under --test, another on another target.
        let arch = ["target_arch=\"x86_64\""];
        assert_eq!(run.deciding(&arch), test.deciding(&arch));
        assert_ne!(run.deciding(&arch), arm.deciding(&arch));
        assert_eq!(run.deciding(&arch), release.deciding(&arch), "opt-level does not decide target_arch");
        // --test decides test, present or absent.
        assert_ne!(run.deciding(&["test"]), test.deciding(&["test"]));
        assert_eq!(run.deciding(&["test"]), release.deciding(&["test"]));
        // debug_assertions: the codegen options, not the target or --test.
        assert_ne!(run.deciding(&["debug_assertions"]), release.deciding(&["debug_assertions"]));
        assert_eq!(run.deciding(&["debug_assertions"]), test.deciding(&["debug_assertions"]));
        // A feature or a user's cfg not set: nothing beyond "not set by --cfg".
        assert_eq!(run.deciding(&["feature=\"fast\"", "my_cfg"]), None);
        // A built-in this does not know: everything.
        assert_ne!(run.deciding(&["doc"]), test.deciding(&["doc"]));
        assert_ne!(run.deciding(&["doc"]), release.deciding(&["doc"]));
        // Two atoms: the union of what decides each.
        assert_ne!(run.deciding(&["target_os=\"linux\"", "test"]), test.deciding(&["target_os=\"linux\"", "test"]));
    }
}
