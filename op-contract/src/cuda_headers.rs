//! CUDA's own headers for NVRTC: the half-precision prelude (`generic::cuda_prelude`) includes
//! `<cuda_fp16.h>` / `<cuda_bf16.h>`, which NVRTC does not ship (it searches no directory of its
//! own), so every place that runs NVRTC (the checker at build time, the CUDA engine at run
//! time) finds them here, by one rule.

use std::path::{Path, PathBuf};

/// Names the directory holding CUDA's headers (`cuda_fp16.h`): a toolkit's `include/`, or the
/// `nvidia/cuda_runtime/include` directory of the `nvidia-cuda-runtime-cu12` Python wheel.
pub const INCLUDE_ENV: &str = "OP_CUDA_INCLUDE";

/// The toolkit headers a source may include with angle brackets that NVRTC cannot find alone.
const TOOLKIT_HEADERS: [&str; 2] = ["cuda_fp16.h", "cuda_bf16.h"];

/// Whether `source` includes a toolkit header (`#include <cuda_fp16.h>`, `<cuda_bf16.h>`).
pub fn needs_toolkit_headers(source: &str) -> bool {
    source
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("#include"))
        .any(|l| TOOLKIT_HEADERS.iter().any(|h| l.contains(&format!("<{h}>"))))
}

/// The directory NVRTC is pointed at for the toolkit headers: `$OP_CUDA_INCLUDE`, else
/// `$CUDA_PATH/include`, `$CUDA_HOME/include`, `/usr/local/cuda/include`: the first that holds
/// `cuda_fp16.h`. `None` when none does.
pub fn include_dir() -> Option<PathBuf> {
    let env = |k: &str| std::env::var_os(k).map(PathBuf::from);
    let candidates = [
        env(INCLUDE_ENV),
        env("CUDA_PATH").map(|p| p.join("include")),
        env("CUDA_HOME").map(|p| p.join("include")),
        Some(PathBuf::from("/usr/local/cuda/include")),
    ];
    candidates.into_iter().flatten().find(|d| holds_headers(d))
}

fn holds_headers(dir: &Path) -> bool {
    dir.join(TOOLKIT_HEADERS[0]).is_file()
}

/// NVRTC's options for `source`: `--include-path=<dir>` where it needs the toolkit headers and
/// they are found; `Err` (what is missing and how to provide it) where it needs them and they
/// are not; no option where it needs none.
pub fn nvrtc_options(source: &str) -> Result<Vec<String>, String> {
    if !needs_toolkit_headers(source) {
        return Ok(Vec::new());
    }
    match include_dir() {
        Some(dir) => Ok(vec![format!("--include-path={}", dir.display())]),
        None => Err(format!(
            "the kernel includes CUDA's half-precision headers (cuda_fp16.h / cuda_bf16.h), which NVRTC \
             does not ship and which were not found; set {INCLUDE_ENV} to a directory holding cuda_fp16.h \
             (a CUDA toolkit's include/, or the nvidia-cuda-runtime-cu12 wheel's nvidia/cuda_runtime/include), \
             or CUDA_PATH to the toolkit"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_angle_includes_of_the_half_headers_need_the_toolkit() {
        assert!(needs_toolkit_headers("#include <cuda_fp16.h>\ntypedef __half T;\n"));
        assert!(needs_toolkit_headers("  #include <cuda_bf16.h>\n"));
        assert!(!needs_toolkit_headers("#include \"pairwise.cuh\"\n// #include <cuda_fp16.h> is not needed\n"));
        assert!(!needs_toolkit_headers("typedef float T;\n"));
        assert_eq!(nvrtc_options("typedef float T;\n"), Ok(Vec::new()));
    }

    #[test]
    fn a_needed_directory_is_found_or_named_as_missing() {
        match (include_dir(), nvrtc_options("#include <cuda_fp16.h>\n")) {
            (Some(dir), Ok(opts)) => assert_eq!(opts, vec![format!("--include-path={}", dir.display())]),
            (None, Err(e)) => assert!(e.contains(INCLUDE_ENV) && e.contains("cuda_fp16.h"), "{e}"),
            other => panic!("include_dir and nvrtc_options disagree: {other:?}"),
        }
    }
}
