//! Sweeps through the real wrapper and fake daemon binaries: the `harness
//! sweep` command and its JSON and SVG files, independence from `--jobs`,
//! and Ctrl-C.
//!
//! Offsets are chosen well inside the reconnect window (prefix mode must
//! fail there) or well after it (every mode must succeed), never at its
//! edges, where outcomes legitimately flip between runs. No assertion is
//! about speed.

use std::collections::BTreeSet;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use devkit::process::ChildGuard;
use harness::scenario::sweep::{Subject, SweepConfig, SweepReport, run_sweep};
use harness::{BridgeMode, Signal, WrapperCommand};
use serde_json::{Value, json};

/// A bound for waits on the harness process, so a broken build fails the
/// test instead of hanging it; not a speed requirement.
const SAFETY_TIMEOUT: Duration = Duration::from_secs(120);

/// A fresh directory for one test's report, kept under the target
/// directory for inspection.
fn out_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("sweep-{name}"));
    let _ = fs::remove_dir_all(&dir);
    dir
}

/// Runs `harness` with `args` (split at spaces) and `--out-dir dir`.
fn harness_sweep(args: &str, dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_harness"));
    cmd.args(args.split(' ')).arg("--out-dir").arg(dir);
    cmd.stdin(Stdio::null());
    cmd
}

/// The JSON report and the SVG chart written to `dir`.
fn report_files(dir: &Path) -> (Value, String) {
    let json = fs::read_to_string(dir.join("sweep.json")).expect("sweep.json is written");
    let json = serde_json::from_str(&json).expect("sweep.json is JSON");
    let svg = fs::read_to_string(dir.join("sweep.svg")).expect("sweep.svg is written");
    roxmltree::Document::parse(&svg).expect("sweep.svg is well-formed XML");
    (json, svg)
}

/// A check of one JSON field.
type Check = fn(&Value) -> bool;

fn assert_fields(value: &Value, fields: &[(&str, Check)], what: &str) {
    for (field, check) in fields {
        let v = &value[*field];
        assert!(check(v), "{what}: field `{field}` is {v}");
    }
}

/// `harness sweep` over delay 800 ms, offsets 100 and 1500 ms (far inside
/// and far outside the window, so machine load cannot flip them), one run
/// each, both modes (plus the production point).
#[test]
fn cli_sweep_prints_a_table_and_writes_the_documented_json_and_svg() {
    let dir = out_dir("cli");
    let args = "sweep --delay-ms 800 --from-ms 100 --to-ms 1500 --step-ms 1400 --runs 1";
    let output = harness_sweep(args, &dir).output().expect("harness runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "harness sweep failed: {}\nstdout: {stdout}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    for line in ["median latency", "report: /", "chart:  /"] {
        assert!(stdout.contains(line), "{stdout}");
    }

    let (json, svg) = report_files(&dir);
    assert_fields(
        &json,
        &[
            ("format", |v| v == "iai-mcp-race-sweep"),
            ("version", |v| v == 1),
            ("partial", |v| v == false),
            ("runs_planned", |v| v == 6),
            ("runs_done", |v| v == 6),
            ("elapsed_ms", |v| v.is_f64()),
            ("config", Value::is_object),
            ("subjects", |v| v.as_array().is_some_and(|a| a.len() == 2)),
            ("points", |v| v.as_array().is_some_and(|a| a.len() == 6)),
        ],
        "report",
    );
    assert_fields(
        &json["config"],
        &[
            ("delay_ms", |v| v == 800),
            ("from_ms", |v| v == 100),
            ("to_ms", |v| v == 1500),
            ("step_ms", |v| v == 1400),
            ("offsets_ms", |v| *v == serde_json::json!([100, 1500])),
            ("production_point", |v| v == true),
            ("runs", |v| v == 1),
            ("jobs", Value::is_u64),
            ("seed", Value::is_u64),
            ("call_timeout_ms", |v| v.is_f64()),
            ("settle_ms", |v| v.is_f64()),
            ("recovery_timeout_ms", |v| v.is_f64()),
        ],
        "config",
    );
    let subjects: Vec<(&str, &str)> = json["subjects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            assert!(s["wrapper"].is_string(), "{s}");
            (s["label"].as_str().unwrap(), s["mode"].as_str().unwrap())
        })
        .collect();
    assert_eq!(subjects, [("prefix", "prefix"), ("fixed", "fixed")]);

    let mut order = Vec::new();
    for point in json["points"].as_array().unwrap() {
        assert_fields(
            point,
            &[
                ("subject", Value::is_string),
                ("mode", Value::is_string),
                ("delay_ms", Value::is_u64),
                ("offset_ms", Value::is_u64),
                ("production", Value::is_boolean),
                ("runs_planned", |v| v == 1),
                ("runs", |v| v == 1),
                ("ok", Value::is_u64),
                ("daemon_unreachable", Value::is_u64),
                ("other_error", Value::is_u64),
                ("timeout", Value::is_u64),
                ("errors", |v| v == 0),
                ("success_rate", |v| {
                    v.as_f64().is_some_and(|r| (0.0..=1.0).contains(&r))
                }),
                ("median_racing_latency_ms", |v| v.is_f64()),
                ("conns_after", Value::is_object),
                ("runs_with_defects", Value::is_u64),
                ("samples", |v| v.as_array().is_some_and(|a| a.len() == 1)),
            ],
            "point",
        );
        let sample = &point["samples"][0];
        assert_fields(
            sample,
            &[
                ("run", |v| v == 0),
                ("outcome", |v| {
                    ["ok", "daemon_unreachable", "other_error", "timeout"]
                        .contains(&v.as_str().unwrap_or(""))
                }),
                ("racing_latency_ms", |v| v.is_f64()),
                ("recovered_after_ms", |v| {
                    v.is_null() || v.as_f64().is_some_and(|ms| ms >= 0.0)
                }),
                ("conns_after", |v| v.is_null() || v.is_u64()),
                ("stdout_defects", Value::is_u64),
            ],
            "sample",
        );
        assert!(sample.get("detail").is_some(), "{sample}");
        order.push((
            point["subject"].as_str().unwrap().to_owned(),
            point["delay_ms"].as_u64().unwrap(),
            point["offset_ms"].as_u64().unwrap(),
        ));
        // Well inside the window prefix fails, after it both succeed.
        let outcome = sample["outcome"].as_str().unwrap();
        match (point["mode"].as_str().unwrap(), point["delay_ms"].as_u64()) {
            ("prefix", Some(800)) if point["offset_ms"] == 100 => {
                assert_eq!(outcome, "daemon_unreachable", "{point}");
            }
            (_, Some(800)) => assert_eq!(outcome, "ok", "{point}"),
            _ => {}
        }
    }
    let expected: Vec<(String, u64, u64)> = ["prefix", "fixed"]
        .iter()
        .flat_map(|s| [(0, 0), (800, 100), (800, 1500)].map(|(d, o)| ((*s).to_owned(), d, o)))
        .collect();
    assert_eq!(order, expected, "points are in grid order");

    let doc = roxmltree::Document::parse(&svg).expect("sweep.svg is well-formed XML");
    assert!(
        doc.root_element()
            .has_tag_name(("http://www.w3.org/2000/svg", "svg")),
        "the root is an SVG element"
    );
    let with_class = |class: &str| {
        doc.descendants()
            .filter(|n| n.attribute("class") == Some(class))
            .collect::<Vec<_>>()
    };
    // One line per subject in each of the two panels.
    let lines = with_class("series-line");
    assert_eq!(lines.len(), 4);
    assert!(lines.iter().all(|n| n.has_tag_name("polyline")));
    let subjects: BTreeSet<&str> = with_class("series")
        .iter()
        .filter_map(|n| n.attribute("data-subject"))
        .collect();
    assert_eq!(subjects, BTreeSet::from(["prefix", "fixed"]));
    // The reconnect delay, marked in both panels and named.
    assert_eq!(with_class("delay-marker").len(), 2);
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    assert!(texts.contains(&"reconnect delay 800 ms"), "{texts:?}");
    assert!(texts.iter().any(|t| t.contains("offset")), "{texts:?}");
    assert_eq!(with_class("legend").len(), 1);
}

/// The JSON of `report`.
fn json_of(report: &SweepReport) -> Value {
    serde_json::from_str(&report.to_json()).expect("the report is JSON")
}

/// Subject, delay, offset and outcome counts of each point of a library
/// sweep.
fn counts(jobs: usize) -> Vec<Value> {
    let cmd = WrapperCommand::this_workspace();
    let cfg = SweepConfig {
        subjects: Subject::modes(&cmd, &[BridgeMode::Prefix, BridgeMode::Fixed]),
        delay_ms: 800,
        from_ms: 50,
        to_ms: Some(1400),
        step_ms: 1350,
        production_point: false,
        runs: 1,
        jobs,
        seed: 7,
        ..SweepConfig::default()
    };
    let report = run_sweep(&cfg, &AtomicBool::new(false), &mut ()).expect("the sweep runs");
    assert!(!report.partial);
    let fields = "subject delay_ms offset_ms ok daemon_unreachable socket_closed other_error \
                  timeout errors";
    let points = json_of(&report)["points"].as_array().cloned().unwrap();
    let point = |p: &Value| fields.split_whitespace().map(|f| p[f].clone()).collect();
    points.iter().map(point).collect()
}

#[test]
fn jobs_do_not_change_the_outcome_counts() {
    let serial = counts(1);
    let parallel = counts(4);
    assert_eq!(serial, parallel);
    assert_eq!(
        serial,
        [
            json!(["prefix", 800, 50, 0, 1, 0, 0, 0, 0]),
            json!(["prefix", 800, 1400, 1, 0, 0, 0, 0, 0]),
            json!(["fixed", 800, 50, 1, 0, 0, 0, 0, 0]),
            json!(["fixed", 800, 1400, 1, 0, 0, 0, 0, 0]),
        ]
    );
}

/// The processes whose parent is `pid` (Linux `/proc`).
#[cfg(target_os = "linux")]
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|child| {
            fs::read_to_string(format!("/proc/{child}/stat")).is_ok_and(|stat| {
                // `pid (comm) state ppid ...`; comm may contain spaces.
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(pid)
            })
        })
        .collect()
}

#[test]
fn sigint_stops_the_sweep_reaps_its_children_and_writes_a_partial_report() {
    let dir = out_dir("sigint");
    let mut sweep = ChildGuard::spawn(
        harness_sweep("sweep --delay-ms 1000 --runs 3 --jobs 2", &dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .expect("harness starts");
    let stderr = sweep.child_mut().stderr.take().expect("piped");
    let (tx, lines) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    let mut seen: Vec<String> = Vec::new();
    while !seen
        .last()
        .is_some_and(|line| line.starts_with("sweep [1/"))
    {
        let line = lines
            .recv_timeout(SAFETY_TIMEOUT)
            .unwrap_or_else(|e| panic!("no first run ({e}); stderr so far: {seen:#?}"));
        seen.push(line);
    }
    // With two jobs the next runs are starting or in flight: wait until the
    // harness has children, so the test sees what it has to clean up.
    #[cfg(target_os = "linux")]
    let children = {
        let mut children = children_of(sweep.pid());
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while children.is_empty()
            && sweep.try_wait().expect("try_wait").is_none()
            && std::time::Instant::now() < deadline
        {
            // Polling /proc: there is no event for "a child was spawned".
            thread::sleep(Duration::from_millis(5));
            children = children_of(sweep.pid());
        }
        children
    };

    sweep.signal(Signal::SIGINT).expect("SIGINT is sent");
    let status = sweep.wait_exit(SAFETY_TIMEOUT).expect("the sweep stops");
    // Everything the harness wrote, up to end of file.
    let mut rest = Vec::new();
    while let Ok(line) = lines.recv_timeout(SAFETY_TIMEOUT) {
        rest.push(line);
    }
    assert_eq!(status.code(), Some(130), "stderr: {seen:#?} {rest:#?}");
    assert!(
        rest.iter().any(|l| l.contains("interrupted after")),
        "{rest:#?}"
    );

    let (json, svg) = report_files(&dir);
    assert_eq!(json["partial"], true);
    let done = json["runs_done"].as_u64().unwrap();
    let planned = json["runs_planned"].as_u64().unwrap();
    assert!(done >= 1 && done < planned, "{done} of {planned}");
    assert!(svg.contains("PARTIAL"));

    #[cfg(target_os = "linux")]
    for child in children {
        assert!(
            !Path::new(&format!("/proc/{child}")).exists(),
            "child {child} of the sweep outlived it"
        );
    }
}

#[test]
fn a_raised_stop_flag_starts_no_run_and_gives_a_partial_report() {
    let cfg = SweepConfig {
        subjects: Subject::modes(&WrapperCommand::this_workspace(), &[BridgeMode::Fixed]),
        ..SweepConfig::default()
    };
    let report = run_sweep(&cfg, &AtomicBool::new(true), &mut ()).expect("the sweep runs");
    assert!(report.partial);
    assert_eq!(report.runs_done, 0);
    assert_eq!(report.runs_planned, cfg.planned_runs());
    let points = json_of(&report)["points"].as_array().cloned().unwrap();
    assert!(
        points
            .iter()
            .all(|p| p["runs"] == 0 && p["success_rate"].is_null())
    );
    let svg = report.to_svg();
    roxmltree::Document::parse(&svg).expect("an empty chart is well-formed");
    assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
}
