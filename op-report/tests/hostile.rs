//! The report of a run with kernels that crash or hang (issue 33): each is recorded, as the
//! generated tests record it, as a rejection with its class (`crashed`, `timed out`) and its
//! case, the report shows it as a failure, and a correct op recorded in the same run still
//! conforms. Nothing here takes the test binary down: the kernels run in a child process.

use op_report::{render, Records};
use op_runtime::conformance::RunLimits;
use op_runtime::report::{record_name, write_record, ConformanceRecord, Verdict, CONFORMANCE_DIR};
use op_runtime::{conform_all, op, BackendKind, OpDecl, Real};
use std::path::Path;
use std::time::Duration;

macro_rules! double_op {
    ($fn_name:ident, $op_name:literal, $kernel:ident) => {
        #[op(name = $op_name, version = 1, signature(x: f32[n]) -> f32[n],
                                     category = elementwise, tolerance = ulp(0), backward = none, cpu = $kernel, generated_tests = false)]
        pub fn $fn_name<T: Real>(x: &[T]) -> Vec<T> {
            x.iter().map(|v| *v + *v).collect()
        }
    };
}

/// Aborts the process for n > 5.
pub fn aborts_cpu(x: &[f32]) -> Vec<f32> {
    if x.len() > 5 {
        std::process::abort();
    }
    x.iter().map(|v| v * 2.0).collect()
}

/// Never returns for n > 5.
pub fn loops_cpu(x: &[f32]) -> Vec<f32> {
    while x.len() > 5 {
        std::hint::spin_loop();
    }
    x.iter().map(|v| v * 2.0).collect()
}

/// Correct.
pub fn good_cpu(x: &[f32]) -> Vec<f32> {
    x.iter().map(|v| v * 2.0).collect()
}

double_op!(aborts, "user/report_hostile/aborts", aborts_cpu);
double_op!(loops, "user/report_hostile/loops", loops_cpu);
double_op!(good, "user/report_hostile/good", good_cpu);

/// Conforms `decl` on every backend and writes its record under `dir`, as a generated test does.
fn record(dir: &Path, decl: &'static OpDecl) -> ConformanceRecord {
    let h = op_runtime::register(decl).expect("registers");
    op_runtime::registry().set_run_limits(&h, RunLimits::default().with_time(Duration::from_millis(300)));
    let c = ConformanceRecord::of(&h, &conform_all(&h));
    write_record(dir, CONFORMANCE_DIR, &record_name(&c.op, "conformance"), &c).expect("writes");
    c
}

#[test]
fn a_crash_and_a_hang_are_failures_in_the_report_and_the_correct_op_conforms() {
    let dir = tempfile::tempdir().expect("tempdir");
    let records = dir.path().join("records");
    let cpu = |c: &ConformanceRecord| c.results.iter().find(|r| r.backend == BackendKind::Cpu).cloned().expect("a cpu row");
    let crashed = cpu(&record(&records, &aborts::DECL));
    let hung = cpu(&record(&records, &loops::DECL));
    let fine = cpu(&record(&records, &good::DECL));
    assert_eq!(crashed.verdict, Verdict::Rejected);
    assert_eq!(crashed.defects.first().map(|d| d.class.as_str()), Some("crashed"), "{crashed:?}");
    assert!(!crashed.defects[0].case.is_empty(), "the case that crashed it is named");
    assert_eq!(hung.verdict, Verdict::Rejected);
    assert_eq!(hung.defects.first().map(|d| d.class.as_str()), Some("timed out"), "{hung:?}");
    assert_eq!(fine.verdict, Verdict::Conformed);

    let out = dir.path().join("site");
    let rendered = render(&Records::load(&records).expect("loads"), &out).expect("renders");
    assert_eq!((rendered.ops, rendered.rejected), (3, 2), "three ops, two rejected");
    assert!(!rendered.all_passed());
    let index = std::fs::read_to_string(&rendered.index).expect("reads");
    assert!(index.contains("REJECTED: crashed") && index.contains("REJECTED: timed out"), "each class in the index");
    assert!(index.contains("user/report_hostile/good@1"), "the correct op is listed");
}
