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
}

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
}
