//! The renderer on records from real conformance and gradcheck runs: the rejected kernel's page
//! names its failure class and its shrunk case, the correct twin's row says conformed, every
//! page is static (no script) with escaped text and an SVG plot; broken records are refused
//! with an error naming the file.

mod fixtures;

use op_report::{render, Records, ReportError};
use op_runtime::report::{Verdict, CONFORMANCE_DIR};
use op_runtime::BackendKind;

fn read(p: &std::path::Path) -> String {
    std::fs::read_to_string(p).expect("reads")
}

#[test]
fn a_rejected_kernel_shows_its_class_and_shrunk_case_and_its_twin_conforms() {
    let dir = tempfile::tempdir().expect("tempdir");
    let records = dir.path().join("records");
    let (broken, twin) = fixtures::all(&records);
    let cpu = |c: &op_runtime::report::ConformanceRecord| c.results.iter().find(|r| r.backend == BackendKind::Cpu).cloned().expect("cpu");
    let (bad, good) = (cpu(&broken), cpu(&twin));
    assert_eq!(bad.verdict, Verdict::Rejected);
    assert_eq!(good.verdict, Verdict::Conformed);
    let defect = bad.defects.first().expect("a class");
    assert!(bad.errors.iter().any(|p| p.ulp > 0.0) && good.errors.iter().all(|p| p.ulp == 0.0));

    let out = dir.path().join("site");
    std::fs::create_dir_all(out.join("ops")).expect("mkdir");
    std::fs::write(out.join("ops/stale.html"), "an op no longer recorded").expect("writes");
    let rendered = render(&Records::load(&records).expect("loads"), &out).expect("renders");
    assert!(!out.join("ops/stale.html").exists(), "an earlier render's page is removed");
    assert_eq!((rendered.ops, rendered.rejected), (3, 1), "add, the broken op and its twin; one rejection");
    assert!(!rendered.all_passed());
    let index = read(&rendered.index);
    for id in ["builtin/add@1", "user/report/double_broken@1", "user/report/double@1"] {
        assert!(index.contains(id), "{id} listed");
    }
    assert!(index.contains(&format!("REJECTED: {}", defect.class)), "the class in the index");
    assert!(index.contains("<svg"), "the overview plot");
    let page = rendered.pages.iter().find(|p| p.to_string_lossy().contains("double_broken_1")).expect("the broken op's page");
    let page = read(page);
    assert!(page.contains(&defect.class) && page.contains("shrunk case"), "class and shrunk case");
    let case = op_report::esc(&defect.case);
    assert!(page.contains(&case), "the shrunk case itself: {case}");
    // Where shrinking found a smaller case than the corpus's first failing one (the corpus is
    // seeded from the identity), the page names that one too.
    if let Some(from) = &defect.shrunk_from {
        assert!(page.contains("shrunk from") && page.contains(&op_report::esc(from)), "the case it was shrunk from");
    }
    assert!(page.contains("<svg") && page.contains("Error per case"), "the error plot");
    assert!(page.contains("Negative control") && page.contains("margin"), "gradcheck's negative control");
    let add = rendered.pages.iter().find(|p| p.to_string_lossy().contains("builtin_add_1")).expect("add's page");
    let add = read(add);
    let wgsl = broken_free_hash(&records);
    assert!(add.contains(&wgsl), "add's WGSL kernel hash on its page");
    for p in rendered.pages.iter().chain([&rendered.index]) {
        let text = read(p);
        assert!(!text.contains("<script"), "no script: {}", p.display());
        assert_eq!(text.matches("http").count(), text.matches("http://www.w3.org/2000/svg").count(), "no network: {}", p.display());
    }
}

/// The blake3 of add's first GPU kernel, from its record.
fn broken_free_hash(records: &std::path::Path) -> String {
    let r = Records::load(records).expect("loads");
    let add = r.ops.iter().find(|o| o.entry.id == "builtin/add@1").expect("add");
    add.entry.kernels.iter().find_map(|k| k.blake3.clone()).expect("add declares a GPU kernel")
}

#[test]
fn records_that_do_not_parse_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert!(matches!(Records::load(dir.path()), Err(ReportError::Empty { .. })));
    let conf = dir.path().join(CONFORMANCE_DIR);
    std::fs::create_dir_all(&conf).expect("mkdir");
    std::fs::write(conf.join("x.conformance.json"), "{ not json").expect("writes");
    let e = Records::load(dir.path()).unwrap_err();
    assert!(matches!(&e, ReportError::Record { path, .. } if path.ends_with("x.conformance.json")), "{e}");
}

#[test]
fn a_record_of_another_format_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let records = dir.path().join("records");
    let twin = op_runtime::register(&fixtures::double::DECL).expect("registers");
    let mut c = op_runtime::report::ConformanceRecord::of(&twin, &op_runtime::conform_all(&twin));
    c.format += 1;
    op_runtime::report::write_record(&records, CONFORMANCE_DIR, "x.json", &c).expect("writes");
    let e = Records::load(&records).unwrap_err();
    assert!(e.to_string().contains("record format"), "{e}");
}
