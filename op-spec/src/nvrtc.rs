//! CUDA kernels compiled at build time with NVRTC, when its library loads: the checker then
//! reports the compiler's own errors on the `cuda = "..."` token instead of leaving them to the
//! first run. NVRTC is optional: without the library (or with `OP_NVRTC=0`) nothing is
//! compiled and nothing is reported. `OP_NVRTC_LIB` names the library file to load. The library
//! is loaded once per compiler process; nothing here panics.

use std::ffi::{c_char, c_int, CString};
use std::sync::OnceLock;

type Program = *mut std::ffi::c_void;
type CreateFn =
    unsafe extern "C" fn(*mut Program, *const c_char, *const c_char, c_int, *const *const c_char, *const *const c_char) -> c_int;
type CompileFn = unsafe extern "C" fn(Program, c_int, *const *const c_char) -> c_int;
type LogSizeFn = unsafe extern "C" fn(Program, *mut usize) -> c_int;
type LogFn = unsafe extern "C" fn(Program, *mut c_char) -> c_int;
type DestroyFn = unsafe extern "C" fn(*mut Program) -> c_int;
type VersionFn = unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int;

/// The loaded library's entry points.
struct Nvrtc {
    _lib: libloading::Library,
    create: CreateFn,
    compile: CompileFn,
    log_size: LogSizeFn,
    log: LogFn,
    destroy: DestroyFn,
    version: (i32, i32),
}

const CANDIDATES: [&str; 8] = [
    "libnvrtc.so",
    "libnvrtc.so.13",
    "libnvrtc.so.12",
    "libnvrtc.so.11.2",
    "nvrtc64_130_0.dll",
    "nvrtc64_120_0.dll",
    "nvrtc64_112_0.dll",
    "libnvrtc.dylib",
];

fn load() -> Option<Nvrtc> {
    if std::env::var("OP_NVRTC").is_ok_and(|v| v == "0") {
        return None;
    }
    let names: Vec<String> = match std::env::var("OP_NVRTC_LIB") {
        Ok(p) => vec![p],
        Err(_) => CANDIDATES.iter().map(|s| s.to_string()).collect(),
    };
    // SAFETY: loading NVRTC runs no initialisers with preconditions; every symbol is looked up
    // with its documented C signature (nvrtc.h), and the library outlives the pointers (it is
    // stored next to them).
    unsafe {
        let lib = names.iter().find_map(|n| libloading::Library::new(n).ok())?;
        let create = *lib.get::<CreateFn>(b"nvrtcCreateProgram\0").ok()?;
        let compile = *lib.get::<CompileFn>(b"nvrtcCompileProgram\0").ok()?;
        let log_size = *lib.get::<LogSizeFn>(b"nvrtcGetProgramLogSize\0").ok()?;
        let log = *lib.get::<LogFn>(b"nvrtcGetProgramLog\0").ok()?;
        let destroy = *lib.get::<DestroyFn>(b"nvrtcDestroyProgram\0").ok()?;
        let version_fn = *lib.get::<VersionFn>(b"nvrtcVersion\0").ok()?;
        let (mut major, mut minor) = (0, 0);
        version_fn(&mut major, &mut minor);
        Some(Nvrtc { _lib: lib, create, compile, log_size, log, destroy, version: (major, minor) })
    }
}

fn nvrtc() -> Option<&'static Nvrtc> {
    static NVRTC: OnceLock<Option<Nvrtc>> = OnceLock::new();
    NVRTC.get_or_init(load).as_ref()
}

/// The loaded NVRTC's version, if it loads.
pub fn version() -> Option<(i32, i32)> {
    nvrtc().map(|n| n.version)
}

/// Compiles `source` (named `name`, with in-memory `headers` as (include name, text, names
/// distinct)). `None` when NVRTC is unavailable, or when the source includes CUDA's
/// half-precision headers and they are not found (`op_contract::cuda_headers`: nothing to
/// check it with); else `Ok`, or the program log (or why NVRTC refused to create the program).
pub fn compile(source: &str, name: &str, headers: &[(String, String)]) -> Option<Result<(), String>> {
    let n = nvrtc()?;
    let options = op_contract::cuda_headers::nvrtc_options(source).ok()?;
    let c = |s: &str| CString::new(s.replace('\0', " ")).unwrap_or_default();
    let options: Vec<CString> = options.iter().map(|o| c(o)).collect();
    let option_ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
    let (src, cname) = (c(source), c(name));
    let header_texts: Vec<CString> = headers.iter().map(|(_, t)| c(t)).collect();
    let header_names: Vec<CString> = headers.iter().map(|(h, _)| c(h)).collect();
    let texts: Vec<*const c_char> = header_texts.iter().map(|s| s.as_ptr()).collect();
    let names: Vec<*const c_char> = header_names.iter().map(|s| s.as_ptr()).collect();
    let mut prog: Program = std::ptr::null_mut();
    // SAFETY: every pointer passed points into a CString or Vec alive until the end of this
    // function; NVRTC copies what it keeps; the program is destroyed exactly once, below.
    unsafe {
        let created = (n.create)(&mut prog, src.as_ptr(), cname.as_ptr(), texts.len() as c_int, texts.as_ptr(), names.as_ptr());
        if created != 0 || prog.is_null() {
            // Refused inputs are the caller's error (repeated header names, say), never a skip.
            return Some(Err(format!("nvrtcCreateProgram refused the program (NVRTC result {created})")));
        }
        let ok = (n.compile)(prog, option_ptrs.len() as c_int, option_ptrs.as_ptr()) == 0;
        let mut size = 0usize;
        let mut log = String::new();
        if (n.log_size)(prog, &mut size) == 0 && size > 1 {
            let mut buf = vec![0u8; size];
            if (n.log)(prog, buf.as_mut_ptr() as *mut c_char) == 0 {
                log = String::from_utf8_lossy(&buf[..size - 1]).to_string();
            }
        }
        (n.destroy)(&mut prog);
        Some(if ok { Ok(()) } else { Err(log) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs where NVRTC loads; `OP_REQUIRE_NVRTC=1` makes its absence a failure (the device
    /// check sets it), elsewhere there is nothing to test.
    #[test]
    fn compiles_and_reports_errors_where_nvrtc_loads() {
        if version().is_none() {
            assert!(std::env::var("OP_REQUIRE_NVRTC").is_err(), "OP_REQUIRE_NVRTC is set but NVRTC does not load");
            return;
        }
        let headers = vec![("twice.cuh".to_string(), "__device__ inline float twice(float v) { return v + v; }\n".to_string())];
        let good = "#include \"twice.cuh\"\nextern \"C\" __global__ void k(const float* x, float* out, unsigned int n) { unsigned int i = threadIdx.x; if (i < n) out[i] = twice(x[i]); }\n";
        assert_eq!(compile(good, "k.cu", &headers), Some(Ok(())));
        let bad = good.replace("twice(x[i])", "thrice(x[i])");
        let log = compile(&bad, "k.cu", &headers).expect("nvrtc loads").expect_err("does not compile");
        assert!(log.contains("thrice"), "{log}");
        // Repeated header names: NVRTC refuses to create the program, reported, never a skip.
        let twice = vec![headers[0].clone(), headers[0].clone()];
        assert!(matches!(compile(good, "k.cu", &twice), Some(Err(_))));
        // The half-precision prelude's toolkit headers, where they are found (`OP_CUDA_INCLUDE`).
        let half = "#include <cuda_fp16.h>\ntypedef __half T;\nextern \"C\" __global__ void h(const T* x, T* out) { out[threadIdx.x] = T(float(x[threadIdx.x]) * 2.0f); }\n";
        match op_contract::cuda_headers::include_dir() {
            Some(_) => assert_eq!(compile(half, "h.cu", &[]), Some(Ok(()))),
            None => assert_eq!(compile(half, "h.cu", &[]), None, "nothing to check a half kernel with"),
        }
    }
}
