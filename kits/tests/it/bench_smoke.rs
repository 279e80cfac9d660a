//! A tiny run of the bench engine against the real binaries: every phase
//! runs, every figure is filled, both files are written. Timings are never
//! asserted (they depend on the machine; the targets are for
//! `cargo xtask bench` to report).

use devkit::bins;
use harness::WrapperCommand;
use kits::bench::{self, BenchConfig, Compared, SubjectKind};

#[test]
fn a_tiny_bench_fills_every_figure() {
    let out = tempfile::tempdir().unwrap();
    let mut config = BenchConfig::new(WrapperCommand::this_workspace(), bins::fake_daemon_bin());
    config.amounts.calls = 200;
    config.amounts.warmup_calls = 20;
    config.amounts.pipelined_calls = 200;
    config.amounts.depths = vec![1, 8];
    config.amounts.rounds = 2;
    config.amounts.cold_starts = 2;
    config.amounts.recoveries = 2;
    config.amounts.outages = 1;
    config.amounts.away_ms = 300;
    config.amounts.herds = vec![3];
    config.amounts.herd_rounds = 1;
    config.amounts.herd_away_ms = 300;
    // A compared subject that cannot start: recorded, not fatal.
    config.compare = vec![Compared {
        name: "missing".to_owned(),
        cmd: WrapperCommand::new("/nonexistent/iai-mcp-wrapper"),
    }];

    let report = bench::run(&config).unwrap();
    report.write_files(out.path()).unwrap();

    let names: Vec<&str> = report.subjects.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["floor", "wrapper", "missing"]);
    let floor = &report.subjects[0];
    assert_eq!(floor.kind, SubjectKind::Floor);
    assert!(floor.errors.is_empty(), "{:?}", floor.errors);
    assert_eq!(
        floor.sequential.as_ref().unwrap().latency.unwrap().count,
        200
    );

    let wrapper = &report.subjects[1];
    assert!(wrapper.errors.is_empty(), "{:?}", wrapper.errors);
    let cold = wrapper.cold_start.as_ref().unwrap();
    assert_eq!((cold.attempts, cold.failures), (2, 0));
    let sequential = wrapper.sequential.as_ref().unwrap();
    assert_eq!((sequential.calls, sequential.failures), (200, 0));
    let depths: Vec<usize> = wrapper.pipelined.iter().map(|t| t.depth).collect();
    assert_eq!(depths, [1, 8]);
    assert!(
        wrapper
            .pipelined
            .iter()
            .all(|t| t.calls == 200 && t.failures == 0)
    );
    assert!(cfg!(not(target_os = "linux")) || wrapper.peak_rss_kib.is_some());
    let recovery = wrapper.recovery.as_ref().unwrap();
    assert_eq!((recovery.attempts, recovery.failures), (2, 0));
    // The outage phase: every figure there, the counts exact, no time
    // judged.
    let outage = wrapper.outage.as_ref().unwrap();
    assert_eq!(outage.outages, 1);
    assert_eq!(
        (outage.after_rebind_failures, outage.waited_failures),
        (0, 0),
        "{:?}",
        outage.failure_examples
    );
    for figure in [outage.normal, outage.after_rebind, outage.waited] {
        assert_eq!(figure.map(|f| f.count), Some(1), "{outage:?}");
    }
    let away = outage.away.unwrap();
    assert!(away.window_ms >= 300, "{away:?}");
    assert!(away.dials_per_min.is_some(), "this wrapper logs its dials");
    assert!(cfg!(not(target_os = "linux")) || away.wakeups_per_min.is_some());
    // The herd: a restart in each start-up order, every call answered,
    // every figure there, and not one dial while the daemon was away.
    let herd = &wrapper.herds[..];
    assert_eq!(herd.len(), 1);
    assert_eq!(herd[0].wrappers, 3);
    let orders: Vec<&str> = herd[0].restarts.iter().map(|r| r.order.as_str()).collect();
    assert_eq!(orders, ["at-once", "listen-after=50"]);
    for restarts in &herd[0].restarts {
        assert_eq!(
            (restarts.restarts, restarts.failed_calls),
            (1, 0),
            "{restarts:?}"
        );
        assert_eq!(
            restarts.all_answered.map(|a| a.count),
            Some(1),
            "{restarts:?}"
        );
        assert!(restarts.accepts_per_wrapper.is_some() && restarts.failed_dials.is_some());
    }
    assert!(herd[0].away_ms >= 300, "{herd:?}");
    assert_eq!(herd[0].dials_per_min, Some(0.0), "{herd:?}");
    assert!(herd[0].wakeups_per_min.is_some(), "{herd:?}");

    let missing = &report.subjects[2];
    assert!(missing.sequential.is_none());
    assert!(missing.outage.as_ref().is_none_or(|o| o.waited.is_none()));
    assert!(missing.herds.is_empty());
    assert!(!missing.errors.is_empty());

    let markdown = std::fs::read_to_string(out.path().join("bench.md")).unwrap();
    assert_eq!(markdown, report.to_markdown());
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.path().join("bench.json")).unwrap()).unwrap();
    assert_eq!(json["subjects"][1]["name"], "wrapper");
    assert_eq!(json["targets"].as_array().unwrap().len(), 9);
    let work = wrapper
        .own_work(Some(8))
        .expect("work per call at 8 in flight");
    assert!(work.cpu_ns > 0.0 && work.io_calls() > 0.0, "{work:?}");
    assert!(floor.own_work(None).is_some_and(|w| w.io_calls() >= 2.0));
}
