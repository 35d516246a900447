//! The size of every public error type, across the floors (the facade names them all).

/// The `Ok` path stays small: every public error type is under 128 bytes, tag included,
/// so a `Result` carrying one is not a large copy and clippy's `result_large_err` (which
/// fires from 128 bytes) never fires for a user returning one.
#[test]
fn errors_stay_under_128_bytes() {
    use std::mem::size_of;
    #[allow(unused_mut)] // without the GPU features nothing is added below
    let mut sizes = vec![
        ("BackendError", size_of::<crate::BackendError>()),
        ("TensorError", size_of::<crate::TensorError>()),
        ("RegistrationError", size_of::<crate::RegistrationError>()),
        ("KernelCompilationError", size_of::<crate::KernelCompilationError>()),
        ("KernelFallbackExhaustedError", size_of::<crate::KernelFallbackExhaustedError>()),
        ("DispatchError", size_of::<crate::DispatchError>()),
        ("BatchError", size_of::<crate::BatchError>()),
        ("TapeError", size_of::<crate::train::TapeError>()),
        ("GraphError", size_of::<crate::graph::GraphError>()),
        ("GradcheckError", size_of::<crate::gradcheck::GradcheckError>()),
        ("ConformanceFailure", size_of::<crate::conformance::ConformanceFailure>()),
        ("ReceiptError", size_of::<crate::receipt::ReceiptError>()),
        ("KeyError", size_of::<crate::trust::KeyError>()),
        ("SharingError", size_of::<crate::sharing::SharingError>()),
    ];
    #[cfg(feature = "wgpu")]
    sizes.push(("WgpuError", size_of::<crate::wgpu::WgpuError>()));
    #[cfg(feature = "cuda")]
    sizes.push(("CudaError", size_of::<crate::cuda::CudaError>()));
    let large: Vec<_> = sizes.iter().filter(|(_, s)| *s >= 128).collect();
    assert!(large.is_empty(), "public error types of 128 bytes or more: {large:?}");
}
