//! A verifier no kernel can take down: `cpu` kernels that misbehave the way user code does
//! (panic, abort, segmentation fault, a huge allocation, an infinite loop, a slow call, an exit
//! in the middle of a call, a result that changes between calls) are each rejected with their
//! class and case, because conformance runs a user's kernel in a child process
//! (`op_runtime::conformance::Isolation`). This test binary, the verifier, survives every one of
//! them, and a correct op conformed after them (and beside them in one `conform_all` sweep)
//! still gets its receipt.
//!
//! Each op is `y = 2x` over `f32[n]`, `ulp(0)`, whose kernel misbehaves for `n > 5`. A `cpu`
//! kernel returns its outputs by value, so it cannot write into the guard bands; a write it
//! makes outside its own allocations is seen only when it crashes the child (the far write
//! here), not when it silently corrupts the child's heap.

use op_runtime::conformance::{conform, Class, ConformanceFailure, RunLimits};
use op_runtime::{op, BackendKind, Real, Registry};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The correct kernel.
fn twice(x: &[f32]) -> Vec<f32> {
    x.iter().map(|v| v * 2.0).collect()
}

macro_rules! double_op {
    ($fn_name:ident, $op_name:literal, $kernel:ident) => {
        #[op(
                                    name = $op_name, version = 1, signature(x: f32[n]) -> f32[n],
                                    category = elementwise, tolerance = ulp(0), backward = none, cpu = $kernel, generated_tests = false,
                                )]
        pub fn $fn_name<T: Real>(x: &[T]) -> Vec<T> {
            x.iter().map(|v| *v + *v).collect()
        }
    };
}

pub fn good_cpu(x: &[f32]) -> Vec<f32> {
    twice(x)
}
pub fn panics_cpu(x: &[f32]) -> Vec<f32> {
    assert!(x.len() <= 5, "a kernel that panics for n > 5");
    twice(x)
}
pub fn aborts_cpu(x: &[f32]) -> Vec<f32> {
    if x.len() > 5 {
        std::process::abort();
    }
    twice(x)
}
pub fn segfaults_cpu(x: &[f32]) -> Vec<f32> {
    if x.len() > 5 {
        // An out-of-bounds read far from any mapping: the page at address 64.
        let bad = std::hint::black_box(64usize) as *const f32;
        // SAFETY: none; this kernel is hostile on purpose.
        return vec![unsafe { std::ptr::read_volatile(bad) }; x.len()];
    }
    twice(x)
}
pub fn writes_far_cpu(x: &[f32]) -> Vec<f32> {
    let mut y = twice(x);
    if x.len() > 5 {
        // A write 256 GiB past the output: no mapping there.
        let far = (y.as_mut_ptr() as usize).wrapping_add(std::hint::black_box(1usize << 38)) as *mut f32;
        // SAFETY: none; this kernel is hostile on purpose.
        unsafe { std::ptr::write_volatile(far, 1.0) };
    }
    y
}
pub fn allocates_cpu(x: &[f32]) -> Vec<f32> {
    if x.len() > 5 {
        // 3 GiB, past the 1 GiB this op's limits allow the child (set in the test).
        let v = std::hint::black_box(vec![1u8; 3 << 30]);
        return vec![v[x.len()] as f32; x.len()];
    }
    twice(x)
}
pub fn loops_cpu(x: &[f32]) -> Vec<f32> {
    while x.len() > 5 {
        std::hint::black_box(x);
    }
    twice(x)
}
pub fn sleeps_cpu(x: &[f32]) -> Vec<f32> {
    if x.len() > 5 {
        std::thread::sleep(Duration::from_secs(5));
    }
    twice(x)
}
pub fn exits_cpu(x: &[f32]) -> Vec<f32> {
    if x.len() > 5 {
        std::process::exit(3);
    }
    twice(x)
}
static CALLS: AtomicU32 = AtomicU32::new(0);
pub fn flaky_cpu(x: &[f32]) -> Vec<f32> {
    let odd = CALLS.fetch_add(1, Ordering::Relaxed) % 2 == 1;
    let mut y = twice(x);
    if x.len() > 5 && odd {
        // One ulp off on every other call.
        y.iter_mut().for_each(|v| *v = f32::from_bits(v.to_bits() ^ 1));
    }
    y
}

double_op!(good, "user/hostile/good", good_cpu);
double_op!(panics, "user/hostile/panics", panics_cpu);
double_op!(aborts, "user/hostile/aborts", aborts_cpu);
double_op!(segfaults, "user/hostile/segfaults", segfaults_cpu);
double_op!(writes_far, "user/hostile/writes_far", writes_far_cpu);
double_op!(allocates, "user/hostile/allocates", allocates_cpu);
double_op!(loops, "user/hostile/loops", loops_cpu);
double_op!(sleeps, "user/hostile/sleeps", sleeps_cpu);
double_op!(exits, "user/hostile/exits", exits_cpu);
double_op!(flaky, "user/hostile/flaky", flaky_cpu);

/// The cpu verdict on `decl` in a private registry, with `limits` where given.
fn cpu_verdict(decl: &'static op_runtime::OpDecl, limits: Option<RunLimits>) -> Result<op_runtime::receipt::Receipt, ConformanceFailure> {
    let reg = Registry::with_builtins();
    let h = reg.register(decl).expect("registers");
    if let Some(l) = limits {
        reg.set_run_limits(&h, l);
    }
    conform(&h, BackendKind::Cpu)
}

/// Asserts a rejection of `class` whose report names the case (`case #`) and `says`.
fn assert_rejected(decl: &'static op_runtime::OpDecl, limits: Option<RunLimits>, class: Class, says: &str) {
    let e = cpu_verdict(decl, limits).expect_err("a hostile kernel is rejected");
    let report = e.report().unwrap_or_else(|| panic!("a rejection, not {e}"));
    let text = report.to_string();
    assert_eq!(report.first().class, class, "{text}");
    assert!(report.first().case.inputs[0].numel() > 5, "the case is one the kernel misbehaves on: {text}");
    assert!(text.contains("case #") && text.contains(says), "the report names the case and says `{says}`: {text}");
    // The verifier survived: a correct op conforms in the same process, after it.
    cpu_verdict(&good::DECL, None).expect("the correct op still conforms");
}

#[test]
fn a_panic_is_rejected_in_process_terms() {
    let e = cpu_verdict(&panics::DECL, None).expect_err("rejected");
    let text = e.to_string();
    assert_eq!(e.report().map(|r| r.first().class.clone()), Some(Class::Failed), "{text}");
    assert!(text.contains("panicked"), "{text}");
}

#[test]
fn an_abort_is_a_crash() {
    assert_rejected(&aborts::DECL, None, Class::Crashed, "SIGABRT");
}

#[test]
fn a_segmentation_fault_is_a_crash() {
    assert_rejected(&segfaults::DECL, None, Class::Crashed, "SIGSEGV");
}

#[test]
fn a_write_far_past_the_output_is_a_crash() {
    // A write near the output corrupts the child's own heap, which the verifier cannot see
    // unless the child then crashes; a far one meets no mapping.
    assert_rejected(&writes_far::DECL, None, Class::Crashed, "SIGSEGV");
}

#[test]
fn an_exit_during_the_call_is_a_crash() {
    assert_rejected(&exits::DECL, None, Class::Crashed, "exited with status 3");
}

#[test]
fn a_huge_allocation_is_out_of_memory() {
    let limits = RunLimits::default().with_memory(1 << 30);
    assert_rejected(&allocates::DECL, Some(limits), Class::OutOfMemory, "memory allocation of");
}

#[test]
fn an_infinite_loop_times_out_under_the_ops_own_limit() {
    let limit = Duration::from_millis(300);
    let t = Instant::now();
    assert_rejected(&loops::DECL, Some(RunLimits::default().with_time(limit)), Class::TimedOut, "timed out after 0.300 s");
    assert!(t.elapsed() < Duration::from_secs(60), "the survey stops at the confirmed timeout");
}

#[test]
fn a_slow_kernel_times_out_under_the_default_limit() {
    // 5 s per call against the reference's microseconds: past the 2 s floor.
    assert_rejected(&sleeps::DECL, None, Class::TimedOut, "timed out after 2.000 s");
}

#[test]
fn a_result_that_changes_between_calls_is_non_deterministic() {
    assert_rejected(&flaky::DECL, None, Class::NonDeterministic, "first run");
    let e = cpu_verdict(&flaky::DECL, None).expect_err("rejected");
    let text = e.to_string();
    assert!(!text.contains("rounds differently"), "not called a rounding defect: {text}");
}

#[test]
fn every_verdict_of_one_sweep_is_kept() {
    // One registry, the hostile ops and the correct one, conformed one after another as
    // `cargo op report` and the generated tests do: each gets its own verdict.
    let reg = Registry::with_builtins();
    let quick = RunLimits::default().with_time(Duration::from_millis(300)).with_memory(1 << 30);
    let decls = [&aborts::DECL, &segfaults::DECL, &good::DECL, &exits::DECL, &loops::DECL, &allocates::DECL];
    let mut verdicts = Vec::new();
    for d in decls {
        let h = reg.register(d).expect("registers");
        reg.set_run_limits(&h, quick);
        verdicts.push((h.id(), conform(&h, BackendKind::Cpu).map_err(|e| e.report().map(|r| r.first().class.clone()))));
    }
    let classes: Vec<String> = verdicts.iter().map(|(id, v)| format!("{id}: {v:?}")).collect();
    let want = [Some(Class::Crashed), Some(Class::Crashed), None, Some(Class::Crashed), Some(Class::TimedOut), Some(Class::OutOfMemory)];
    for ((id, v), w) in verdicts.iter().zip(want) {
        match w {
            None => assert!(v.is_ok(), "{id} conforms: {classes:?}"),
            Some(c) => assert_eq!(v.as_ref().err(), Some(&Some(c)), "{id}: {classes:?}"),
        }
    }
}

#[test]
fn correct_kernels_are_not_accused_when_isolated() {
    // The correct op in a child on every case of its corpus, and four built-ins' cpu kernels
    // (every instance) run in a child under the policy's `Child`: each conforms as it does in
    // process, so the child's own pools, the pipe and the rerun accuse nobody.
    cpu_verdict(&good::DECL, None).expect("conforms in a child");
    let reg = Registry::with_builtins();
    for name in ["builtin/exp", "builtin/sum", "builtin/matmul", "builtin/add"] {
        let h = reg.lookup(name).expect("a built-in");
        reg.set_run_limits(&h, RunLimits::default().with_isolation(op_runtime::conformance::Isolation::Child));
        for inst in h.instances() {
            match conform(&inst, BackendKind::Cpu) {
                Ok(_) => {}
                Err(e) if e.is_skip() => {}
                Err(e) => panic!("{name} in a child: {e}"),
            }
        }
    }
}
