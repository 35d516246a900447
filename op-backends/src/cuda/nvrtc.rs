//! NVRTC: compiling a CUDA source (headers passed in memory) to PTX, the program's log, the
//! compiler's version and the architectures it can target. Every size NVRTC reports is bounded
//! before anything is allocated for it.

use std::ffi::{c_char, c_int, CStr, CString};

use cudarc::nvrtc::sys as nvsys;

use super::error::CudaError;

/// Runs NVRTC for `target_arch` (e.g. `compute_90`, unless `options` name an architecture);
/// returns (PTX text, program log).
pub(super) fn compile(
    target_arch: &str,
    source: &str,
    headers: &[(String, String)],
    entry: &str,
    options: &[String],
) -> Result<(String, String), CudaError> {
    let cstr = |s: &str, what: &str| CString::new(s).map_err(|_| CudaError::InvalidArgument(format!("{what} contains a NUL byte")));
    let src = cstr(source, "kernel source")?;
    let prog_name = cstr(&format!("{entry}.cu"), "entry name")?;
    let header_bodies = headers.iter().map(|(_, b)| cstr(b, "a header")).collect::<Result<Vec<_>, _>>()?;
    let header_names = headers.iter().map(|(n, _)| cstr(n, "a header name")).collect::<Result<Vec<_>, _>>()?;
    let body_ptrs: Vec<*const c_char> = header_bodies.iter().map(|c| c.as_ptr()).collect();
    let name_ptrs: Vec<*const c_char> = header_names.iter().map(|c| c.as_ptr()).collect();

    let mut all_options: Vec<String> = Vec::with_capacity(options.len() + 1);
    if !options.iter().any(|o| is_arch_option(o)) {
        all_options.push(format!("--gpu-architecture={}", target_arch));
    }
    all_options.extend(options.iter().cloned());
    let option_cstrs = all_options.iter().map(|o| cstr(o, "a compile option")).collect::<Result<Vec<_>, _>>()?;
    let option_ptrs: Vec<*const c_char> = option_cstrs.iter().map(|c| c.as_ptr()).collect();

    let mut raw: nvsys::nvrtcProgram = std::ptr::null_mut();
    let n_headers = c_int::try_from(headers.len()).map_err(|_| CudaError::InvalidArgument("too many headers".to_string()))?;
    // SAFETY: every pointer refers to a NUL-terminated CString that outlives the program
    // (they are dropped at the end of this function, after `Program`'s drop destroys it).
    let created = unsafe {
        nvsys::nvrtcCreateProgram(
            &mut raw,
            src.as_ptr(),
            prog_name.as_ptr(),
            n_headers,
            if headers.is_empty() { std::ptr::null() } else { body_ptrs.as_ptr() },
            if headers.is_empty() { std::ptr::null() } else { name_ptrs.as_ptr() },
        )
    };
    if created != nvsys::nvrtcResult::NVRTC_SUCCESS {
        return Err(CudaError::Compile {
            entry: entry.to_string(),
            log: format!("nvrtcCreateProgram failed: {}", nvrtc_error_string(created)),
        });
    }
    let program = Program(raw);

    // SAFETY: `program` is a live program; the option pointers are valid for the call.
    let compiled = unsafe { nvsys::nvrtcCompileProgram(program.0, option_ptrs.len() as c_int, option_ptrs.as_ptr()) };
    let log = program.log();
    if compiled != nvsys::nvrtcResult::NVRTC_SUCCESS {
        let log = if log.trim().is_empty() { "(NVRTC produced no log)".to_string() } else { log };
        return Err(CudaError::Compile {
            entry: entry.to_string(),
            log: format!("{log}\n[{}; options: {all_options:?}]", nvrtc_error_string(compiled)),
        });
    }
    let ptx =
        program.ptx().map_err(|e| CudaError::Compile { entry: entry.to_string(), log: format!("{log}\ncannot fetch the PTX: {e}") })?;
    drop(program);
    Ok((ptx, log))
}

/// The largest PTX or program log read from NVRTC (256 MiB): a size past it is not believed
/// (a stub library reports garbage), so nothing here allocates what a broken library claims.
const MAX_NVRTC_OUTPUT: usize = 256 << 20;

/// Owns an `nvrtcProgram`; destroys it on drop.
struct Program(nvsys::nvrtcProgram);

impl Program {
    fn log(&self) -> String {
        let mut size: usize = 0;
        // SAFETY: live program; out-parameter.
        if unsafe { nvsys::nvrtcGetProgramLogSize(self.0, &mut size) } != nvsys::nvrtcResult::NVRTC_SUCCESS {
            return String::new();
        }
        if size > MAX_NVRTC_OUTPUT {
            return format!("(NVRTC reported a {size}-byte log; not read: is the loaded libnvrtc a stub?)");
        }
        let mut buf = vec![0u8; size.max(1)];
        // SAFETY: `buf` holds `size` bytes as NVRTC asked for.
        if unsafe { nvsys::nvrtcGetProgramLog(self.0, buf.as_mut_ptr() as *mut c_char) } != nvsys::nvrtcResult::NVRTC_SUCCESS {
            return String::new();
        }
        c_buffer_to_string(buf)
    }

    fn ptx(&self) -> Result<String, String> {
        let mut size: usize = 0;
        // SAFETY: live, compiled program; out-parameter.
        let r = unsafe { nvsys::nvrtcGetPTXSize(self.0, &mut size) };
        if r != nvsys::nvrtcResult::NVRTC_SUCCESS {
            return Err(nvrtc_error_string(r));
        }
        if size > MAX_NVRTC_OUTPUT {
            return Err(format!("NVRTC reported a {size}-byte PTX, more than any kernel's: is the loaded libnvrtc a stub?"));
        }
        let mut buf = vec![0u8; size.max(1)];
        // SAFETY: `buf` holds `size` bytes as NVRTC asked for.
        let r = unsafe { nvsys::nvrtcGetPTX(self.0, buf.as_mut_ptr() as *mut c_char) };
        if r != nvsys::nvrtcResult::NVRTC_SUCCESS {
            return Err(nvrtc_error_string(r));
        }
        let ptx = c_buffer_to_string(buf);
        if ptx.trim().is_empty() {
            return Err("NVRTC returned empty PTX".to_string());
        }
        Ok(ptx)
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: destroys the program created by nvrtcCreateProgram exactly once.
            let _ = unsafe { nvsys::nvrtcDestroyProgram(&mut self.0) };
        }
    }
}

/// Bytes up to the first NUL, as (lossy) UTF-8; the result never contains a NUL.
pub(super) fn c_buffer_to_string(mut buf: Vec<u8>) -> String {
    if let Some(n) = buf.iter().position(|&b| b == 0) {
        buf.truncate(n);
    }
    String::from_utf8_lossy(&buf).into_owned()
}

fn nvrtc_error_string(r: nvsys::nvrtcResult) -> String {
    // SAFETY: nvrtcGetErrorString returns a static string (or null).
    let p = unsafe { nvsys::nvrtcGetErrorString(r) };
    if p.is_null() {
        format!("{r:?}")
    } else {
        // SAFETY: non-null, NUL-terminated static string.
        format!("{r:?}: {}", unsafe { CStr::from_ptr(p) }.to_string_lossy())
    }
}

pub(super) fn nvrtc_version() -> Result<(i32, i32), CudaError> {
    let (mut major, mut minor): (c_int, c_int) = (0, 0);
    // SAFETY: out-parameters; libnvrtc is loaded (probe checked it).
    let r = unsafe { nvsys::nvrtcVersion(&mut major, &mut minor) };
    if r != nvsys::nvrtcResult::NVRTC_SUCCESS {
        return Err(CudaError::Unavailable { reason: format!("nvrtcVersion failed: {r:?}") });
    }
    Ok((major, minor))
}

/// The virtual architectures NVRTC can target (e.g. `[50, 52, ..., 90]`); empty when unknown.
pub(super) fn nvrtc_supported_archs() -> Vec<i32> {
    let mut n: c_int = 0;
    // SAFETY: out-parameter.
    if unsafe { nvsys::nvrtcGetNumSupportedArchs(&mut n) } != nvsys::nvrtcResult::NVRTC_SUCCESS || n <= 0 {
        return Vec::new();
    }
    let mut archs = vec![0 as c_int; n as usize];
    // SAFETY: `archs` has room for the `n` entries NVRTC reported.
    if unsafe { nvsys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) } != nvsys::nvrtcResult::NVRTC_SUCCESS {
        return Vec::new();
    }
    archs
}

/// The PTX target for a device of compute capability `device_cc` (major*10+minor): the newest
/// architecture NVRTC supports that is not newer than the device (PTX JIT-compiles forward, never
/// backward). With no list, the device's own capability.
pub fn choose_ptx_arch(device_cc: i32, supported: &[i32]) -> Option<i32> {
    if supported.is_empty() {
        return Some(device_cc);
    }
    supported.iter().copied().filter(|&a| a <= device_cc).max()
}

fn is_arch_option(o: &str) -> bool {
    o.starts_with("-arch") || o.starts_with("--gpu-architecture")
}

pub(super) fn validate_compile_inputs(
    source: &str,
    headers: &[(String, String)],
    entry: &str,
    options: &[String],
) -> Result<(), CudaError> {
    let is_ident = !entry.is_empty()
        && !entry.starts_with(|c: char| c.is_ascii_digit())
        && entry.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if !is_ident {
        return Err(CudaError::InvalidArgument(format!("kernel entry {entry:?} is not a C identifier")));
    }
    let nul = |s: &str| s.as_bytes().contains(&0);
    if nul(source) {
        return Err(CudaError::InvalidArgument(format!("source of kernel `{entry}` contains a NUL byte")));
    }
    for (name, body) in headers {
        if name.is_empty() || nul(name) || nul(body) {
            return Err(CudaError::InvalidArgument(format!(
                "header {name:?} of kernel `{entry}` has an empty name or contains a NUL byte"
            )));
        }
    }
    if let Some(o) = options.iter().find(|o| nul(o)) {
        return Err(CudaError::InvalidArgument(format!("compile option {o:?} contains a NUL byte")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_choice_clamps_to_nvrtc() {
        let archs = [50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90];
        assert_eq!(choose_ptx_arch(90, &archs), Some(90));
        assert_eq!(choose_ptx_arch(100, &archs), Some(90));
        assert_eq!(choose_ptx_arch(88, &archs), Some(87));
        assert_eq!(choose_ptx_arch(35, &archs), None);
        assert_eq!(choose_ptx_arch(90, &[]), Some(90));
        assert!(is_arch_option("-arch=compute_80") && is_arch_option("--gpu-architecture=sm_90"));
        assert!(!is_arch_option("-DARCH=1"));
    }

    #[test]
    fn compile_inputs_are_validated() {
        assert!(validate_compile_inputs("s", &[], "add_f32", &[]).is_ok());
        for bad in ["", "1x", "a-b", "a b", "a\0"] {
            assert!(matches!(validate_compile_inputs("s", &[], bad, &[]), Err(CudaError::InvalidArgument(_))), "{bad:?}");
        }
        assert!(validate_compile_inputs("s\0", &[], "k", &[]).is_err());
        assert!(validate_compile_inputs("s", &[("h".into(), "\0".into())], "k", &[]).is_err());
        assert!(validate_compile_inputs("s", &[("".into(), "x".into())], "k", &[]).is_err());
        assert!(validate_compile_inputs("s", &[], "k", &["-D\0".into()]).is_err());
        assert_eq!(c_buffer_to_string(b"abc\0\0".to_vec()), "abc");
    }
}
