//! Device-resident tensors on wgpu: `to_device` / `to_host` are the only transfers (counted by
//! the engine); a chain of ops on device tensors binds their buffers in place and returns device
//! tensors, moving no tensor data between host and device, and ends bit for bit where the host
//! path does; a device tensor on a host backend, on another engine, or beside a host input is a
//! typed `Placement` error naming the op; nothing reads a device tensor's elements implicitly.

mod common;

use op_runtime::device::Device;
use op_runtime::device::Placement;
use op_runtime::wgpu::WgpuEngine;
use op_runtime::BatchError;
use op_runtime::{BackendError, DispatchError, TensorError};
use op_runtime::{BackendKind, CallOptions, Registry, Tensor};

/// An engine of this test binary's own and a registry with wgpu on it (`common::private_wgpu`).
fn setup() -> Option<(&'static WgpuEngine, Registry)> {
    common::private_wgpu()
}

fn inputs(n: usize) -> (Tensor, Tensor) {
    let a = Tensor::vector((0..n).map(|i| (i as f32 * 0.37).sin() * 3.0).collect::<Vec<f32>>());
    let b = Tensor::vector((0..n).map(|i| 1.0 + (i as f32 * 0.11).cos()).collect::<Vec<f32>>());
    (a, b)
}

fn call(r: &Registry, name: &str, ins: &[&Tensor], opts: CallOptions) -> Result<Tensor, DispatchError> {
    Ok(r.lookup(name)?.call_with(ins, &[], opts)?.output().expect("one output"))
}

/// `-(a + b) * b`, every step on `opts`' backend (or where the inputs live).
fn chain(r: &Registry, a: &Tensor, b: &Tensor, opts: CallOptions) -> Tensor {
    let s = call(r, "builtin/add", &[a, b], opts).expect("add");
    let p = call(r, "builtin/mul", &[&s, b], opts).expect("mul");
    call(r, "builtin/neg", &[&p], opts).expect("neg")
}

fn bits(t: &Tensor) -> Vec<u32> {
    t.as_slice::<f32>().expect("host f32").iter().map(|v| v.to_bits()).collect()
}

#[test]
fn a_chain_on_device_tensors_moves_no_tensor_data_and_equals_the_host_path() {
    let Some((engine, r)) = setup() else { return };
    let n = 100_003;
    let (a, b) = inputs(n);
    let host = chain(&r, &a, &b, CallOptions::on(BackendKind::Wgpu));
    let t0 = engine.transfers();
    let (da, db) = (a.to_device(engine).expect("upload a"), b.to_device(engine).expect("upload b"));
    let t1 = engine.transfers();
    assert_eq!((t1.to_device - t0.to_device, t1.to_device_bytes - t0.to_device_bytes), (2, 2 * 4 * n as u64));
    assert_eq!(da.placement(), Placement::Device(engine.id()));
    // Default selection: device inputs choose their device's backend.
    let out = chain(&r, &da, &db, CallOptions::default());
    let t2 = engine.transfers();
    assert_eq!(out.placement(), Placement::Device(engine.id()), "outputs stay on the device");
    assert_eq!(out.shape(), &[n]);
    assert_eq!(
        (t2.to_device, t2.to_device_bytes, t2.to_host, t2.to_host_bytes),
        (t1.to_device, t1.to_device_bytes, t1.to_host, t1.to_host_bytes),
        "no tensor data crossed between the three ops"
    );
    assert_eq!(t2.uniform_writes - t1.uniform_writes, 3, "each kernel wrote its dims once");
    // Called again with the same dims: each prepared kernel reuses its uniform buffer.
    let again = chain(&r, &da, &db, CallOptions::default());
    let t2b = engine.transfers();
    assert_eq!(t2b, t2, "a repeated chain writes nothing, not even a uniform");
    assert_eq!(bits(&again.to_host().expect("again")), bits(&host));
    let t2 = engine.transfers();
    // Other dims write a new uniform block.
    let (sa, sb) = inputs(7);
    let small = chain(&r, &sa.to_device(engine).expect("a"), &sb.to_device(engine).expect("b"), CallOptions::default());
    assert_eq!(engine.transfers().uniform_writes - t2.uniform_writes, 3);
    assert_eq!(bits(&small.to_host().expect("small")), bits(&chain(&r, &sa, &sb, CallOptions::on(BackendKind::Wgpu))));
    let t2 = engine.transfers();
    // Nothing reads a device tensor's elements implicitly.
    assert_eq!(out.as_slice::<f32>(), None);
    assert!(matches!(out.try_slice::<f32>(), Err(TensorError::OnDevice { .. })));
    assert!(matches!(out.host_data(), Err(TensorError::OnDevice { .. })));
    let back = out.to_host().expect("read back");
    let t3 = engine.transfers();
    assert_eq!((t3.to_host - t2.to_host, t3.to_host_bytes - t2.to_host_bytes), (1, 4 * n as u64));
    assert!(back.is_host());
    assert_eq!(bits(&back), bits(&host), "device chain equals the host path bit for bit");
    // And the host path equals the reference for these exact ops.
    assert_eq!(bits(&chain(&r, &a, &b, CallOptions::on(BackendKind::Reference))), bits(&host));
    // A host-tensor call counts its upload and readback too.
    let t4 = engine.transfers();
    call(&r, "builtin/neg", &[&a], CallOptions::on(BackendKind::Wgpu)).expect("neg");
    let t5 = engine.transfers();
    assert_eq!((t5.to_device - t4.to_device, t5.to_host - t4.to_host), (1, 1));
}

#[test]
fn to_device_and_to_host_round_trip_every_dtype_exactly() {
    let Some((engine, _)) = setup() else { return };
    let ts = [
        Tensor::vector(vec![1.5f32, -0.0, f32::NAN, f32::INFINITY]),
        Tensor::from_vec([3], vec![7u8, 0, 255]).expect("u8"),
        Tensor::from_vec([2, 2], vec![1i64, -2, i64::MAX, i64::MIN]).expect("i64"),
        Tensor::from_vec([0], Vec::<f32>::new()).expect("empty"),
    ];
    for t in ts {
        let d = t.to_device(engine).expect("upload");
        assert_eq!((d.dtype(), d.shape(), d.numel()), (t.dtype(), t.shape(), t.numel()));
        assert_eq!(d.to_device(engine).expect("already there"), d, "no second upload");
        let h = d.to_host().expect("download");
        assert_eq!(h.data().to_le_bytes(), t.data().to_le_bytes());
        assert_eq!(h.shape(), t.shape());
    }
}

#[test]
fn a_device_tensor_on_a_host_backend_is_a_placement_error_naming_the_op() {
    let Some((engine, r)) = setup() else { return };
    let (a, b) = inputs(64);
    let (da, db) = (a.to_device(engine).expect("a"), b.to_device(engine).expect("b"));
    for kind in [BackendKind::Reference, BackendKind::Cpu] {
        let before = engine.transfers();
        match call(&r, "builtin/add", &[&da, &db], CallOptions::on(kind)) {
            Err(e @ DispatchError::Execution { source: BackendError::Placement(_), .. }) => {
                let msg = e.to_string();
                assert!(msg.contains("builtin/add") && msg.contains("input `a`") && msg.contains("to_host"), "{msg}");
            }
            other => panic!("{kind}: expected a Placement error, got {other:?}"),
        }
        assert_eq!(engine.transfers(), before, "{kind}: nothing was copied");
    }
    // The tape and batched calls take host tensors only.
    let mut tape = op_runtime::Tape::with_registry(&r);
    assert!(matches!(tape.param("w", da.clone()), Err(op_runtime::train::TapeError::Placement { .. })));
    let x = tape.input("x", op_runtime::DType::f32, [64]);
    tape.call1("builtin/neg", &[x], &[]).expect("records");
    let fed = tape.run(&[(x, &da)]);
    assert!(matches!(fed, Err(op_runtime::train::TapeError::Placement { ref name, .. }) if name == "x"), "{:?}", fed.err());
    assert!(tape.run(&[(x, &a)]).is_ok(), "the same feed on the host runs");
    let batched = r.lookup("builtin/neg").expect("neg").call_batched(&[&da], &[], CallOptions::default());
    assert!(matches!(batched, Err(BatchError::Placement { .. })), "{batched:?}");
    assert!(matches!(da.to_dtype(op_runtime::DType::f64), Err(TensorError::OnDevice { .. })));
}

#[test]
fn a_device_tensor_of_another_engine_or_beside_a_host_input_is_refused() {
    let Some((engine, r)) = setup() else { return };
    let other = WgpuEngine::minimal().expect("second engine");
    assert_ne!(other.id(), engine.id());
    let (a, b) = inputs(64);
    let foreign = a.to_device(&other).expect("upload to the other engine");
    let db = b.to_device(engine).expect("b");
    let placement = |res: Result<Tensor, DispatchError>| match res {
        Err(e @ DispatchError::Execution { source: BackendError::Placement(_), .. }) => e.to_string(),
        other => panic!("expected a Placement error, got {other:?}"),
    };
    let before = engine.transfers();
    let msg = placement(call(&r, "builtin/add", &[&foreign, &db], CallOptions::default()));
    assert!(msg.contains("builtin/add") && msg.contains("input `a`") && msg.contains(&other.id().to_string()), "{msg}");
    let msg = placement(call(&r, "builtin/add", &[&a, &db], CallOptions::default()));
    assert!(msg.contains("input `a` is on the host"), "{msg}");
    assert_eq!(engine.transfers(), before, "nothing was copied");
    // Moving between engines is explicit too.
    assert!(matches!(foreign.to_device(engine), Err(TensorError::Transfer { .. })));
}

/// Runs `chain` and reads the result back (every intermediate and the output dropped after).
fn chain_bits(r: &Registry, a: &Tensor, b: &Tensor) -> Vec<u32> {
    bits(&chain(r, a, b, CallOptions::default()).to_host().expect("read back"))
}

#[test]
fn a_repeated_chain_allocates_no_buffer_and_reuses_its_bind_groups() {
    let Some((engine, r)) = setup() else { return };
    let n = 4099;
    let (a, b) = inputs(n);
    let host = bits(&chain(&r, &a, &b, CallOptions::on(BackendKind::Wgpu)));
    let (da, db) = (a.to_device(engine).expect("a"), b.to_device(engine).expect("b"));
    // Warm-up: the pool hands dropped buffers back in a cycle of three, so after three chains
    // every bind group the chain needs is cached.
    for _ in 0..4 {
        assert_eq!(chain_bits(&r, &da, &db), host);
    }
    let (pool, binds) = (engine.pool_stats(), engine.bind_stats());
    assert_eq!(pool.held_bytes, 3 * 4 * 4099, "the chain's three buffers are held for reuse");
    for _ in 0..6 {
        assert_eq!(chain_bits(&r, &da, &db), host, "pooled outputs give the same bits");
    }
    let (pool2, binds2) = (engine.pool_stats(), engine.bind_stats());
    assert_eq!(pool2.created, pool.created, "no buffer was created");
    assert_eq!(pool2.reused - pool.reused, 18, "each of the 6 chains took its 3 outputs from the pool");
    assert_eq!(binds2.built, binds.built, "no bind group was created");
    assert_eq!(binds2.reused - binds.reused, 18);
    // Without a pool every output is a new buffer (and so a new bind group).
    engine.set_pool_limit(0);
    assert_eq!(engine.pool_stats().held_bytes, 0, "a lower limit frees what the pool held");
    assert_eq!(chain_bits(&r, &da, &db), host);
    let pool3 = engine.pool_stats();
    assert_eq!((pool3.created - pool2.created, pool3.reused, pool3.held_bytes), (3, pool2.reused, 0));
    assert_eq!(engine.bind_stats().built - binds2.built, 3);
    // Trim frees what is held and forgets the cached bind groups.
    engine.set_pool_limit(op_runtime::wgpu::DEFAULT_POOL_LIMIT);
    assert_eq!(chain_bits(&r, &da, &db), host);
    assert!(engine.pool_stats().held_bytes > 0);
    engine.trim();
    assert_eq!(engine.pool_stats().held_bytes, 0);
    let built = engine.bind_stats().built;
    assert_eq!(chain_bits(&r, &da, &db), host);
    assert_eq!(engine.bind_stats().built - built, 3, "after trim the chain builds its bind groups again");
}
