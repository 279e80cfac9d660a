//! Waking a daemon that does not answer, as iai-mcp 3.3.0 does it, on
//! every platform's rules: the probes, the wake file, and on macOS the
//! check of the daemon's own process (`ps`) before `launchctl kickstart`.
//!
//! `launchctl` and `ps` are stand-in shell scripts written into a
//! temporary directory; each records its arguments in `<name>.args`. One
//! test asks the real `/bin/ps` about a real process titled as the daemon.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use iai_mcp_wrapper::bridge::LinkStatus;
use iai_mcp_wrapper::lifecycle::daemon_process::NotRunning;
use iai_mcp_wrapper::lifecycle::wake::{
    self, Kickstart, ProbeRule, SystemPrograms, WakeFile, WakeReport, WakeSettings,
};
use iai_mcp_wrapper::platform::Platform;
use iai_mcp_wrapper::transport::Endpoint;
use tokio::sync::watch;
use uuid::Uuid;

/// Stand-in scripts are written while other tests of this binary may be
/// starting processes; a child forked while a script is still open for
/// writing would make running it fail with "text file busy". One test at
/// a time here.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const UID: u32 = 501;
const KICKSTART: [&str; 2] = ["kickstart", "gui/501/com.iai-mcp.daemon"];
/// A short bound for stand-ins that hang (they are killed at it).
const HANG_LIMIT: Duration = Duration::from_millis(300);

/// A temporary home for one test: the store, the state directory, a
/// socket path nothing listens on, and the stand-in programs.
struct Bench {
    dir: tempfile::TempDir,
}

impl Bench {
    fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("iai")
            .tempdir_in("/tmp")
            .expect("tempdir");
        std::fs::create_dir(dir.path().join("store")).expect("store");
        Bench { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn store(&self) -> PathBuf {
        self.path("store")
    }

    fn state_dir(&self) -> PathBuf {
        self.path("state")
    }

    fn socket(&self) -> PathBuf {
        self.path("d.sock")
    }

    /// Writes the stand-in `name`: it records its arguments, one a line,
    /// and its pid, then runs `body`.
    fn stand_in(&self, name: &str, body: &str) -> PathBuf {
        let path = self.path(name);
        let args = self.path(&format!("{name}.args"));
        let pid = self.path(&format!("{name}.pid"));
        let script = format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\necho $$ > '{}'\n{body}\n",
            args.display(),
            pid.display()
        );
        std::fs::write(&path, script).expect("write stand-in");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    /// The arguments `name` was run with, or `None` if it never ran.
    fn args(&self, name: &str) -> Option<Vec<String>> {
        let text = std::fs::read_to_string(self.path(&format!("{name}.args"))).ok()?;
        Some(text.lines().map(str::to_owned).collect())
    }

    fn pid_of(&self, name: &str) -> u32 {
        std::fs::read_to_string(self.path(&format!("{name}.pid")))
            .expect("the stand-in ran")
            .trim()
            .parse()
            .expect("pid")
    }

    fn write_state(&self, text: &str) {
        std::fs::write(self.store().join(".daemon-state.json"), text).expect("state file");
    }

    /// A title naming this bench's store, as the daemon sets it.
    fn daemon_title(&self) -> String {
        let store = std::fs::canonicalize(self.store()).expect("store");
        format!("iai lilli (iai_mcp.daemon) store={}", store.display())
    }

    /// macOS settings with `ps` and `launchctl` as given.
    fn macos(&self, ps: PathBuf, launchctl: PathBuf) -> WakeSettings {
        WakeSettings {
            platform: Platform::MacOs,
            programs: SystemPrograms {
                launchctl,
                launchctl_limit: HANG_LIMIT,
                ps,
                ps_limit: HANG_LIMIT,
            },
            probes: ProbeRule {
                attempts: 3,
                timeout: Duration::from_secs(1),
                delay: Duration::from_millis(1),
            },
            store: Some(self.store()),
            uid: UID,
        }
    }

    /// A `launchctl` that succeeds.
    fn launchctl_ok(&self) -> PathBuf {
        self.stand_in("launchctl", "exit 0")
    }

    /// A `ps` that prints `title` for any pid.
    fn ps_printing(&self, title: &str) -> PathBuf {
        self.stand_in("ps", &format!("printf '%s\\n' '{title}'"))
    }

    async fn wake(&self, settings: &WakeSettings) -> WakeReport {
        wake::wake(settings, &self.state_dir(), 4242, Uuid::nil()).await
    }

    /// The whole sequence as the wrapper runs it: the bridge's first
    /// connect attempt failed, then the probes, then the wake-up.
    async fn after_failed_connect(&self, settings: WakeSettings) -> Option<WakeReport> {
        let (_publish, status) = watch::channel(LinkStatus {
            connected: false,
            connects: 0,
            failed_attempts: 1,
            awaiting_endpoint: false,
        });
        wake::wake_when_down(
            settings,
            Endpoint::Unix(self.socket()),
            status,
            self.state_dir(),
            4242,
            Uuid::nil(),
        )
        .await
    }

    fn wake_file(&self) -> PathBuf {
        wake::signal_path(&self.state_dir())
    }

    /// Asserts the wake file was written, with the wrapper's pid in it.
    fn assert_wake_file(&self, report: &WakeReport) {
        assert_eq!(report.wake_file, WakeFile::Written(self.wake_file()));
        let body: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(self.wake_file()).expect("wake file"))
                .expect("JSON");
        assert_eq!(body["wrapper_pid"], 4242);
    }
}

/// A real process whose title (`ps -o command=`) is `title`, killed and
/// reaped when dropped.
struct Titled(Child);

impl Titled {
    fn spawn(title: &str) -> Self {
        let child = Command::new("bash")
            .args(["-c", "exec -a \"$0\" sleep 60", title])
            .spawn()
            .expect("bash");
        Titled(child)
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Titled {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether `pid` still runs (a zombie does not), as `/bin/ps` tells on
/// Linux and macOS alike: no line for a process that is gone, a state
/// beginning with `Z` for a zombie.
fn running(pid: u32) -> bool {
    let out = Command::new("/bin/ps")
        .args(["-o", "stat=", "-p", &pid.to_string()])
        .output()
        .expect("ps");
    let state = String::from_utf8_lossy(&out.stdout);
    let state = state.trim();
    !state.is_empty() && !state.starts_with('Z')
}

async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    SERIAL.lock().await
}

/// Waits until `pid` has stopped running (a killed process dies shortly
/// after the signal is sent); panics if it is still running after 10 s.
fn assert_stops(pid: u32, what: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while running(pid) {
        assert!(
            std::time::Instant::now() < deadline,
            "{what} was not killed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[tokio::test]
async fn a_daemon_whose_process_is_alive_but_whose_socket_is_not_bound_is_not_kicked() {
    let _serial = serial().await;
    let bench = Bench::new();
    let daemon = Titled::spawn(&bench.daemon_title());
    bench.write_state(&format!("{{\"daemon_pid\": {}}}", daemon.pid()));
    // The real ps, asked about a real process.
    assert!(Path::new("/bin/ps").exists(), "this test needs /bin/ps");
    let settings = bench.macos("/bin/ps".into(), bench.launchctl_ok());
    // `ps` must see the new title before it is asked: bash sets it at exec.
    let title = bench.daemon_title();
    for _ in 0..1000 {
        let out = Command::new("/bin/ps")
            .args(["-o", "command=", "-p", &daemon.pid().to_string()])
            .output()
            .expect("ps");
        if String::from_utf8_lossy(&out.stdout).contains(&title) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }

    let report = bench
        .after_failed_connect(settings)
        .await
        .expect("the socket is not bound: the daemon counts as down");

    bench.assert_wake_file(&report);
    assert_eq!(
        report.kickstart,
        Kickstart::DaemonAlive { pid: daemon.pid() }
    );
    assert_eq!(bench.args("launchctl"), None, "launchctl must not run");
    assert!(running(daemon.pid()), "the daemon's process is untouched");
}

#[tokio::test]
async fn a_missing_daemon_gets_the_wake_file_and_a_kickstart_without_k() {
    let _serial = serial().await;
    let bench = Bench::new();
    let settings = bench.macos(bench.ps_printing("unused"), bench.launchctl_ok());

    let report = bench
        .after_failed_connect(settings)
        .await
        .expect("nothing listens: the daemon counts as down");

    bench.assert_wake_file(&report);
    assert!(
        matches!(
            report.kickstart,
            Kickstart::Sent {
                because: NotRunning::StateFileUnreadable { .. }
            }
        ),
        "{report:?}"
    );
    assert_eq!(bench.args("launchctl").expect("launchctl ran"), KICKSTART);
    assert_eq!(bench.args("ps"), None, "no pid, nothing to ask ps");
}

#[tokio::test]
async fn a_successful_kickstart_still_writes_the_wake_file() {
    let _serial = serial().await;
    let bench = Bench::new();
    // A stale pid: ps finds no such process.
    bench.write_state(r#"{"daemon_pid": 77777}"#);
    let settings = bench.macos(bench.stand_in("ps", "exit 1"), bench.launchctl_ok());

    let report = bench.wake(&settings).await;

    bench.assert_wake_file(&report);
    assert!(
        matches!(
            report.kickstart,
            Kickstart::Sent {
                because: NotRunning::PsFailed { pid: 77777, .. }
            }
        ),
        "{report:?}"
    );
    assert_eq!(
        bench.args("ps").expect("ps ran"),
        ["-o", "command=", "-p", "77777"]
    );
    assert_eq!(bench.args("launchctl").expect("launchctl ran"), KICKSTART);
}

#[tokio::test]
async fn a_pid_of_another_store_or_another_program_is_kicked() {
    let _serial = serial().await;
    for (title, expect_store) in [
        ("iai lilli (iai_mcp.daemon) store=/elsewhere", true),
        ("/usr/bin/vim notes.txt", false),
    ] {
        let bench = Bench::new();
        bench.write_state(r#"{"daemon_pid": 321}"#);
        let settings = bench.macos(bench.ps_printing(title), bench.launchctl_ok());

        let report = bench.wake(&settings).await;

        bench.assert_wake_file(&report);
        let Kickstart::Sent { because } = &report.kickstart else {
            panic!("expected a kickstart: {report:?}");
        };
        let expected = if expect_store {
            NotRunning::AnotherStore {
                pid: 321,
                title: title.to_owned(),
            }
        } else {
            NotRunning::NotTheDaemon {
                pid: 321,
                title: title.to_owned(),
            }
        };
        assert_eq!(because, &expected);
        assert_eq!(bench.args("launchctl").expect("launchctl ran"), KICKSTART);
    }
}

#[tokio::test]
async fn the_daemon_of_this_store_found_by_ps_is_left_alone() {
    let _serial = serial().await;
    let bench = Bench::new();
    bench.write_state(r#"{"daemon_pid": 321, "other": [1, 2]}"#);
    let settings = bench.macos(
        bench.ps_printing(&bench.daemon_title()),
        bench.launchctl_ok(),
    );

    let report = bench.wake(&settings).await;

    bench.assert_wake_file(&report);
    assert_eq!(report.kickstart, Kickstart::DaemonAlive { pid: 321 });
    assert_eq!(bench.args("launchctl"), None);
}

#[tokio::test]
async fn a_missing_failing_or_hanging_ps_counts_as_no_daemon() {
    let _serial = serial().await;
    let cases: [(&str, Option<&str>); 3] = [
        ("missing", None),
        ("failing", Some("echo 'ps: bad option' >&2; exit 2")),
        ("hanging", Some("exec sleep 30")),
    ];
    for (case, body) in cases {
        let bench = Bench::new();
        bench.write_state(r#"{"daemon_pid": 321}"#);
        let ps = match body {
            Some(body) => bench.stand_in("ps", body),
            None => bench.path("no-such-ps"),
        };
        let settings = bench.macos(ps, bench.launchctl_ok());

        let report = bench.wake(&settings).await;

        bench.assert_wake_file(&report);
        assert!(
            matches!(
                report.kickstart,
                Kickstart::Sent {
                    because: NotRunning::PsFailed { pid: 321, .. }
                }
            ),
            "{case}: {report:?}"
        );
        assert_eq!(
            bench.args("launchctl").expect("launchctl ran"),
            KICKSTART,
            "{case}"
        );
        if case == "hanging" {
            assert_stops(bench.pid_of("ps"), "the hanging ps");
        }
    }
}

#[tokio::test]
async fn a_missing_or_garbage_state_file_counts_as_no_daemon() {
    let _serial = serial().await;
    for state in [
        None,
        Some("not json"),
        Some(r#"{"daemon_pid": "12"}"#),
        Some("{}"),
    ] {
        let bench = Bench::new();
        if let Some(text) = state {
            bench.write_state(text);
        }
        let settings = bench.macos(bench.ps_printing("unused"), bench.launchctl_ok());

        let report = bench.wake(&settings).await;

        bench.assert_wake_file(&report);
        let Kickstart::Sent { because } = &report.kickstart else {
            panic!("expected a kickstart: {report:?}");
        };
        match state {
            None => assert!(
                matches!(because, NotRunning::StateFileUnreadable { .. }),
                "{because:?}"
            ),
            Some(_) => assert!(matches!(because, NotRunning::NoPid { .. }), "{because:?}"),
        }
        assert_eq!(bench.args("ps"), None, "{state:?}");
        assert_eq!(bench.args("launchctl").expect("launchctl ran"), KICKSTART);
    }
}

#[tokio::test]
async fn a_fifo_at_the_state_file_is_not_waited_on() {
    let _serial = serial().await;
    let bench = Bench::new();
    let path = bench.store().join(".daemon-state.json");
    nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    let settings = bench.macos(bench.ps_printing("unused"), bench.launchctl_ok());

    // Opening the FIFO would wait for a writer that never comes.
    let report = bench.wake(&settings).await;

    bench.assert_wake_file(&report);
    let Kickstart::Sent { because } = &report.kickstart else {
        panic!("expected a kickstart: {report:?}");
    };
    assert!(
        matches!(because, NotRunning::StateFileUnreadable { .. }),
        "{because:?}"
    );
    assert_eq!(bench.args("launchctl").expect("launchctl ran"), KICKSTART);
}

#[tokio::test]
async fn no_known_store_counts_as_no_daemon() {
    let _serial = serial().await;
    let bench = Bench::new();
    let mut settings = bench.macos(bench.ps_printing("unused"), bench.launchctl_ok());
    settings.store = None;

    let report = bench.wake(&settings).await;

    bench.assert_wake_file(&report);
    assert_eq!(
        report.kickstart,
        Kickstart::Sent {
            because: NotRunning::NoStore
        }
    );
}

#[tokio::test]
async fn a_failing_or_hanging_launchctl_is_bounded_and_reported() {
    let _serial = serial().await;
    for (case, body) in [
        ("failing", "echo 'Could not find service' >&2; exit 113"),
        ("hanging", "exec sleep 30"),
    ] {
        let bench = Bench::new();
        let settings = bench.macos(
            bench.ps_printing("unused"),
            bench.stand_in("launchctl", body),
        );

        let report = bench.wake(&settings).await;

        bench.assert_wake_file(&report);
        let Kickstart::Failed { error, .. } = &report.kickstart else {
            panic!("{case}: expected a failure: {report:?}");
        };
        assert_eq!(bench.args("launchctl").expect("launchctl ran"), KICKSTART);
        if case == "failing" {
            assert!(error.contains("Could not find service"), "{error}");
        } else {
            assert!(error.contains("did not finish"), "{error}");
            assert_stops(bench.pid_of("launchctl"), "the hanging launchctl");
        }
    }
}

#[tokio::test]
async fn launchctl_runs_even_when_the_wake_file_cannot_be_written() {
    let _serial = serial().await;
    let bench = Bench::new();
    // The state directory is a file: nothing can be written under it.
    std::fs::write(bench.state_dir(), "").expect("file");
    let settings = bench.macos(bench.ps_printing("unused"), bench.launchctl_ok());

    let report = bench.wake(&settings).await;

    assert!(
        matches!(report.wake_file, WakeFile::Failed(_)),
        "{report:?}"
    );
    assert!(
        matches!(report.kickstart, Kickstart::Sent { .. }),
        "{report:?}"
    );
}

#[tokio::test]
async fn linux_and_windows_write_the_wake_file_and_run_nothing() {
    let _serial = serial().await;
    for platform in [Platform::Linux, Platform::Windows] {
        let bench = Bench::new();
        let mut settings = bench.macos(bench.ps_printing("unused"), bench.launchctl_ok());
        settings.platform = platform;

        let report = bench
            .after_failed_connect(settings)
            .await
            .expect("nothing listens: the daemon counts as down");

        bench.assert_wake_file(&report);
        assert_eq!(report.kickstart, Kickstart::NotInPlan, "{platform}");
        assert_eq!(bench.args("ps"), None, "{platform}");
        assert_eq!(bench.args("launchctl"), None, "{platform}");
    }
}

#[tokio::test]
async fn a_daemon_that_answers_a_probe_is_not_woken() {
    let _serial = serial().await;
    let bench = Bench::new();
    // The bridge's first attempt failed, but the socket answers now.
    let _listener = std::os::unix::net::UnixListener::bind(bench.socket()).expect("bind");
    let settings = bench.macos(bench.ps_printing("unused"), bench.launchctl_ok());

    assert_eq!(bench.after_failed_connect(settings).await, None);
    assert!(!bench.wake_file().exists());
    assert_eq!(bench.args("ps"), None);
    assert_eq!(bench.args("launchctl"), None);
}

#[tokio::test]
async fn a_first_connect_that_succeeded_means_no_probe_and_no_wake() {
    let _serial = serial().await;
    let bench = Bench::new();
    let settings = bench.macos(bench.ps_printing("unused"), bench.launchctl_ok());
    let (_publish, status) = watch::channel(LinkStatus {
        connected: true,
        connects: 1,
        failed_attempts: 0,
        awaiting_endpoint: false,
    });
    let report = wake::wake_when_down(
        settings,
        Endpoint::Unix(bench.socket()),
        status,
        bench.state_dir(),
        4242,
        Uuid::nil(),
    )
    .await;
    assert_eq!(report, None);
    assert!(!bench.wake_file().exists());
}

/// 3.3.0's rule on the runtime's paused clock: the daemon is down after
/// three probes, two seconds apart, each cut off at three seconds.
#[tokio::test(start_paused = true)]
async fn the_daemon_is_down_after_three_failed_probes_two_seconds_apart() {
    let rule = ProbeRule::default();
    assert_eq!(
        (rule.attempts, rule.timeout, rule.delay),
        (3, Duration::from_secs(3), Duration::from_secs(2))
    );

    let started = tokio::time::Instant::now();
    let mut probes = Vec::new();
    let answered = wake::daemon_answers(rule, |limit| {
        probes.push((started.elapsed(), limit));
        async { false }
    })
    .await;
    assert!(!answered);
    let secs = |s| Duration::from_secs(s);
    assert_eq!(
        probes,
        [(secs(0), secs(3)), (secs(2), secs(3)), (secs(4), secs(3))]
    );

    // A probe that never completes is cut off at the timeout.
    let started = tokio::time::Instant::now();
    let answered = wake::daemon_answers(rule, |_| std::future::pending::<bool>()).await;
    assert!(!answered);
    assert_eq!(started.elapsed(), secs(3 + 2 + 3 + 2 + 3));

    // The second probe answers: no third.
    let mut count = 0;
    let answered = wake::daemon_answers(rule, |_| {
        count += 1;
        let answer = count == 2;
        async move { answer }
    })
    .await;
    assert!(answered);
    assert_eq!(count, 2);
}
