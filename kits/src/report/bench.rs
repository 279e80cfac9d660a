//! The bench's results as Markdown: a figures table (one column per
//! subject, ratios to the floor in parentheses), a work-per-call table, a
//! targets table (pass/miss per wrapper) and notes on anything that went
//! wrong; and the files the results are written to.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use devkit::format::{format_bytes, format_ns, format_rate, format_ratio};
use harness::error::HarnessError;

use crate::bench::results::{
    HERD_AT_ONCE, HERD_LISTEN_AFTER, HERD_LISTEN_GAP, cpu_vs_daemon, ratio, throughput_ratio,
};
use crate::bench::{
    AwayStats, BenchReport, ColdStartStats, HerdStats, OutageStats, RecoveryStats, RestartStats,
    SubjectKind, SubjectReport, Summary, Verdict,
};

/// A row's label and how the row's figure is taken from a `T`.
struct Labelled<T, U> {
    label: &'static str,
    figure: fn(&T) -> U,
}

/// A row of the work-per-call table: its label, and the figure of a
/// subject in a phase (sequential when the depth is `None`).
struct WorkFigure {
    label: &'static str,
    figure: fn(&SubjectReport, Option<usize>) -> Option<String>,
}

/// A row of the outage table: its label, the figure, and how many of the
/// calls behind it failed.
struct OutageFigure {
    label: &'static str,
    figure: fn(&OutageStats) -> Option<String>,
    failures: fn(&OutageStats) -> usize,
}

/// A phase of the bench as the tables name it: the sequential one (no
/// depth), or pipelined at a depth.
struct Phase {
    name: String,
    depth: Option<usize>,
}

impl BenchReport {
    /// The report as Markdown: a figures table (one column per subject,
    /// ratios to the floor in parentheses), a work-per-call table, a
    /// targets table (pass/miss per wrapper) and notes on anything that
    /// went wrong.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        self.write_figures(&mut out);
        self.write_work(&mut out);
        if self
            .subjects
            .iter()
            .any(|s| s.outage.is_some() || !s.herds.is_empty())
        {
            self.write_outages(&mut out);
        }
        if self.subjects.iter().any(|s| s.kind == SubjectKind::Wrapper) {
            self.write_targets(&mut out);
        }
        let notes = self.notes();
        if !notes.is_empty() {
            let _ = writeln!(out, "\nNotes:\n");
            for note in notes {
                let _ = writeln!(out, "- {note}");
            }
        }
        out
    }

    /// The title, what was run on what, and the figures table.
    fn write_figures(&self, out: &mut String) {
        let (s, n) = (&self.settings, &self.settings.amounts);
        let _ = writeln!(out, "## Wrapper benchmark\n");
        let _ = writeln!(
            out,
            "{} sequential `tools/call {}` per subject after {} warm-up calls; {} pipelined calls per depth; \
             both in {} interleaved rounds; {} cold starts; {} recoveries. Host: {} {}, {} CPUs. \
             Ratios in parentheses are subject / floor (the same client talking NDJSON straight to the fake daemon).\n",
            n.calls,
            s.tool,
            n.warmup_calls,
            n.pipelined_calls,
            n.rounds,
            n.cold_starts,
            n.recoveries,
            self.host.os,
            self.host.arch,
            self.host.cpus,
        );
        write_table(out, self.figure_rows());
    }

    /// What the work per call counts, and its table.
    fn write_work(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "\nWork per call, the same whatever the machine's load: system calls (`syscr` + `syscw` of \
             /proc/PID/io: read-like + write-like), context switches of all threads (voluntary + involuntary) \
             and CPU time (all threads' schedstat; the kernel's share from utime/stime), of the client for the \
             floor and of the wrapper process for wrappers; then the fake daemon's CPU time per call.\n"
        );
        write_table(out, self.work_rows());
    }

    /// How the outages and the herds were made, and their table.
    fn write_outages(&self, out: &mut String) {
        let n = &self.settings.amounts;
        let _ = writeln!(
            out,
            "\nOutages, each wrapper started anew with its structured log on and its heartbeat moved past the phase: \
             {} outages with no call waiting, then a call {} ms after the rebind; {} outages during which a call waits; \
             the daemon away for a window of {} s, counted after the wrapper settled, scaled to a minute. The rebind is \
             the fake daemon's socket seen bound after `UP` (polled every 20 µs; it listens at once); dials are the wrapper's \
             own `connect_attempt` events (n/a: it logs none). Herds of {} wrappers on one daemon, restarted {} times in the \
             usual start-up order and {} times bound {} ms before it listens, every wrapper's call waiting: from the listen to \
             the last answer, over the restarts; accepts from `UP` on; a wrapper's own wake-ups (its endpoint watch's looks \
             and its dials, from its log) in a window of {} s of each restart before the calls, scaled to a minute.\n",
            n.outages,
            outage_after_rebind_ms(),
            n.outages,
            n.away_ms as f64 / 1000.0,
            herd_sizes(&n.herds),
            n.herd_rounds,
            n.herd_rounds,
            HERD_LISTEN_GAP.as_millis(),
            n.herd_away_ms as f64 / 1000.0,
        );
        write_table(out, self.outage_rows());
    }

    /// The targets table: each target's limit and each wrapper's verdict.
    fn write_targets(&self, out: &mut String) {
        let header = ["target".to_owned(), "limit".to_owned()].into_iter().chain(
            self.subjects
                .iter()
                .filter(|s| s.kind == SubjectKind::Wrapper)
                .map(|s| s.name.clone()),
        );
        let rows = self.targets.iter().map(|row| {
            [row.description.clone(), row.limit.clone()]
                .into_iter()
                .chain(row.verdicts.iter().map(verdict_cell))
                .collect()
        });
        let table = std::iter::once(header.collect())
            .chain(rows)
            .map(|row: Vec<String>| row.iter().map(|c| cell_text(c)).collect())
            .collect();
        out.push('\n');
        write_table(out, table);
    }

    /// A row of a subject table: `label`, then each subject's cell (a dash
    /// where `cell` has no figure).
    fn row(&self, label: String, cell: impl Fn(&SubjectReport) -> Option<String>) -> Vec<String> {
        let cells = self.subjects.iter().map(|s| cell(s).unwrap_or(DASH.into()));
        std::iter::once(label).chain(cells).collect()
    }

    /// The figures table, header first, one section after another: cold
    /// start, sequential latency, throughput, CPU under load, peak memory,
    /// recovery and failed calls.
    fn figure_rows(&self) -> Vec<Vec<String>> {
        let mut rows = vec![self.row("figure".to_owned(), |s| Some(cell_text(&s.name)))];
        rows.extend(self.cold_start_rows());
        rows.extend(self.latency_rows());
        rows.extend(self.throughput_rows());
        rows.extend(self.cpu_rows());
        rows.push(self.peak_rss_row());
        rows.extend(self.recovery_rows());
        rows.push(self.failed_calls_row());
        rows
    }

    /// The floor to compare `s` with (the ratios in parentheses); none for
    /// the floor itself.
    fn floor_of(&self, s: &SubjectReport) -> Option<&SubjectReport> {
        let floor = self.subjects.iter().find(|s| s.kind == SubjectKind::Floor);
        floor.filter(|_| s.kind != SubjectKind::Floor)
    }

    /// The cold-start rows: how long a new subject took to answer
    /// `initialize` and `tools/list`, or how many of its starts failed.
    fn cold_start_rows(&self) -> Vec<Vec<String>> {
        let figures: [Labelled<ColdStartStats, Option<u64>>; 3] = [
            Labelled {
                label: "initialize answered, median",
                figure: |c| Some(c.initialize?.p50_ns),
            },
            Labelled {
                label: "tools/list answered, median",
                figure: |c| Some(c.tools_list?.p50_ns),
            },
            Labelled {
                label: "tools/list answered, max",
                figure: |c| Some(c.tools_list?.max_ns),
            },
        ];
        figures
            .into_iter()
            .map(|Labelled { label, figure }| {
                self.row(format!("cold start → {label}"), |s| {
                    let c = s.cold_start.as_ref()?;
                    let failed = || format!("failed {}/{}", c.failures, c.attempts);
                    Some(figure(c).map_or_else(failed, format_ns))
                })
            })
            .collect()
    }

    /// The sequential latency rows (p50, p99, max), each with its ratio to
    /// the floor's.
    fn latency_rows(&self) -> Vec<Vec<String>> {
        let latency = |s: &SubjectReport| s.sequential.as_ref()?.latency;
        let stats: [Labelled<Summary, u64>; 3] = [
            Labelled {
                label: "p50",
                figure: |s| s.p50_ns,
            },
            Labelled {
                label: "p99",
                figure: |s| s.p99_ns,
            },
            Labelled {
                label: "max",
                figure: |s| s.max_ns,
            },
        ];
        stats
            .into_iter()
            .map(|Labelled { label, figure }| {
                self.row(format!("sequential latency {label}"), |s| {
                    let value = figure(&latency(s)?);
                    let f = self.floor_of(s).and_then(latency);
                    let r = f.and_then(|f| ratio(value as f64, figure(&f) as f64));
                    Some(with_ratio(format_ns(value), r))
                })
            })
            .collect()
    }

    /// The throughput rows, one per pipelined depth, each with its ratio to
    /// the floor's.
    fn throughput_rows(&self) -> Vec<Vec<String>> {
        self.phases()
            .into_iter()
            .filter_map(|Phase { name: phase, depth }| {
                let depth = depth?;
                Some(self.row(format!("throughput, {phase}"), |s| {
                    let rate = format_rate(s.throughput_at(depth)?.calls_per_sec);
                    let r = throughput_ratio(s, self.floor_of(s), depth);
                    Some(with_ratio(rate, r))
                }))
            })
            .collect()
    }

    /// The CPU rows, one per phase: the shares of a CPU the client, the
    /// subject and the daemon used while it ran.
    fn cpu_rows(&self) -> Vec<Vec<String>> {
        self.phases()
            .into_iter()
            .map(|Phase { name: phase, depth }| {
                let at = if depth.is_some() { "at" } else { "during" };
                let label = format!("CPU {at} {phase} (client / subject / daemon)");
                self.row(label, |s| {
                    let cpu = s.load(depth)?.cpu?;
                    let pct = |p: Option<f64>| p.map_or(DASH.into(), |p| format!("{p:.0}%"));
                    let cells = [cpu.client_pct, cpu.subject_pct, cpu.daemon_pct].map(pct);
                    Some(cells.join(" / "))
                })
            })
            .collect()
    }

    /// The memory row: the subject's peak resident set once the load ran.
    fn peak_rss_row(&self) -> Vec<String> {
        self.row("peak RSS (VmHWM) after load".to_owned(), |s| {
            Some(format_bytes(s.peak_rss_kib? * 1024))
        })
    }

    /// The recovery rows: how long after the daemon dropped its connections
    /// a call succeeded again, with the attempts that failed and whether
    /// the phase gave up.
    fn recovery_rows(&self) -> Vec<Vec<String>> {
        let figures: [Labelled<RecoveryStats, Option<u64>>; 3] = [
            Labelled {
                label: "DROP → successful call, median",
                figure: |r| Some(r.from_drop?.p50_ns),
            },
            Labelled {
                label: "DROP → successful call, max",
                figure: |r| Some(r.from_drop?.max_ns),
            },
            Labelled {
                label: "DROPPED acknowledged → successful call, median",
                figure: |r| Some(r.from_dropped_ack?.p50_ns),
            },
        ];
        figures
            .into_iter()
            .map(|Labelled { label, figure }| {
                self.row(format!("recovery, {label}"), |s| {
                    let r = s.recovery.as_ref()?;
                    let mut cell = figure(r).map_or(DASH.into(), format_ns);
                    if r.failures > 0 {
                        let _ = write!(cell, "; {}/{} failed", r.failures, r.attempts);
                    }
                    if r.abandoned.is_some() {
                        cell.push_str("; gave up");
                    }
                    Some(cell)
                })
            })
            .collect()
    }

    /// The failed-calls row: the calls of the sequential and pipelined
    /// phases answered with an error.
    fn failed_calls_row(&self) -> Vec<String> {
        let label = "failed calls (sequential + pipelined)".to_owned();
        self.row(label, |s| {
            let pipelined: usize = s.pipelined.iter().map(|t| t.failures).sum();
            Some((s.sequential.as_ref().map_or(0, |q| q.failures) + pipelined).to_string())
        })
    }

    /// The outage table, header first: the outage phase's figures, then
    /// each herd's.
    fn outage_rows(&self) -> Vec<Vec<String>> {
        let mut rows = vec![self.row("outage".to_owned(), |s| Some(cell_text(&s.name)))];
        rows.extend(self.outage_call_rows());
        rows.extend(self.away_rows());
        rows.extend(self.herd_rows());
        rows
    }

    /// The outage phase's calls: the normal call, the call after the
    /// rebind, the waiting call; each with the calls that failed.
    fn outage_call_rows(&self) -> Vec<Vec<String>> {
        let after_rebind = |o: &OutageStats| o.after_rebind_failures;
        let waited = |o: &OutageStats| o.waited_failures;
        let summaries: [OutageFigure; 6] = [
            OutageFigure {
                label: "normal call, 100 ms after the previous, median",
                figure: |o| Some(format_ns(o.normal?.p50_ns)),
                failures: |_| 0,
            },
            OutageFigure {
                label: "call sent 100 ms after the rebind, median",
                figure: |o| {
                    let p50 = o.after_rebind?.p50_ns;
                    let normal = o.normal.map(|n| n.p50_ns as f64);
                    let r = normal.and_then(|n| ratio(p50 as f64, n));
                    Some(with_ratio_to(format_ns(p50), r, "normal"))
                },
                failures: after_rebind,
            },
            OutageFigure {
                label: "call sent 100 ms after the rebind, max",
                figure: |o| Some(format_ns(o.after_rebind?.max_ns)),
                failures: after_rebind,
            },
            OutageFigure {
                label: "waiting call answered after the rebind, median",
                figure: |o| Some(format_ns(o.waited?.p50_ns)),
                failures: waited,
            },
            OutageFigure {
                label: "waiting call answered after the rebind, max",
                figure: |o| Some(format_ns(o.waited?.max_ns)),
                failures: waited,
            },
            OutageFigure {
                label: "waiting call answered after UP sent, median",
                figure: |o| Some(format_ns(o.waited_from_up_sent?.p50_ns)),
                failures: waited,
            },
        ];
        summaries
            .into_iter()
            .map(
                |OutageFigure {
                     label,
                     figure,
                     failures,
                 }| {
                    self.row(label.to_owned(), |s| {
                        let o = s.outage.as_ref()?;
                        let mut cell = figure(o).unwrap_or(DASH.into());
                        let failures = failures(o);
                        if failures > 0 {
                            let _ = write!(cell, "; {failures}/{} failed", o.outages);
                        }
                        Some(cell)
                    })
                },
            )
            .collect()
    }

    /// The away window's figures: dials, wake-ups and CPU time per minute.
    fn away_rows(&self) -> Vec<Vec<String>> {
        let away: [Labelled<AwayStats, Option<String>>; 3] = [
            Labelled {
                label: "while away: dials per minute",
                figure: |a| a.dials_per_min.map(|d| format!("{d:.1}")),
            },
            Labelled {
                label: "while away: wake-ups (context switches) per minute",
                figure: |a| a.wakeups_per_min.map(|w| format!("{w:.1}")),
            },
            Labelled {
                label: "while away: CPU time per minute",
                figure: |a| a.cpu_ns_per_min.map(|c| format_ns(c.round() as u64)),
            },
        ];
        away.into_iter()
            .map(|Labelled { label, figure }| {
                self.row(label.to_owned(), |s| {
                    let away = s.outage.as_ref()?.away.as_ref()?;
                    Some(figure(away).unwrap_or("n/a".to_owned()))
                })
            })
            .collect()
    }

    /// Each herd's figures: in each start-up order, when the last wrapper
    /// was answered after the listen, what failed and what the daemon
    /// accepted; then the wrappers' own wake-ups while it was away.
    fn herd_rows(&self) -> Vec<Vec<String>> {
        let mut rows = Vec::new();
        for &size in &self.settings.amounts.herds {
            let herd =
                move |s: &SubjectReport| s.herds.iter().find(|h| h.wrappers == size).cloned();
            for (order, words) in herd_orders() {
                let restarts = move |s: &SubjectReport| herd(s)?.in_order(order).cloned();
                let figures: [Labelled<RestartStats, Option<String>>; 3] = [
                    Labelled {
                        label: "all answered after the listen, median / max",
                        figure: |r| {
                            let a = r.all_answered?;
                            Some(format!("{} / {}", format_ns(a.p50_ns), format_ns(a.max_ns)))
                        },
                    },
                    Labelled {
                        label: "failed calls / failed dials",
                        figure: |r| {
                            let dials = r.failed_dials.map_or("n/a".to_owned(), |n| n.to_string());
                            Some(format!("{} / {dials}", r.failed_calls))
                        },
                    },
                    Labelled {
                        label: "accepts per wrapper per restart",
                        figure: |r| r.accepts_per_wrapper.map(|a| format!("{a:.2}")),
                    },
                ];
                for Labelled { label, figure } in figures {
                    rows.push(self.row(format!("herd of {size}, {words}: {label}"), |s| {
                        Some(figure(&restarts(s)?).unwrap_or(DASH.into()))
                    }));
                }
            }
            let away: [Labelled<HerdStats, Option<f64>>; 2] = [
                Labelled {
                    label: "own wake-ups (looks + dials) per wrapper per minute",
                    figure: |h| h.wakeups_per_min,
                },
                Labelled {
                    label: "dials per wrapper per minute",
                    figure: |h| h.dials_per_min,
                },
            ];
            for Labelled { label, figure } in away {
                rows.push(
                    self.row(format!("herd of {size} while away: {label}"), |s| {
                        Some(figure(&herd(s)?).map_or("n/a".to_owned(), |f| format!("{f:.1}")))
                    }),
                );
            }
        }
        rows
    }

    /// The work-per-call table, header first: each figure for each phase.
    fn work_rows(&self) -> Vec<Vec<String>> {
        let figures: [WorkFigure; 4] = [
            WorkFigure {
                label: "system calls (reads + writes)",
                figure: |s, d| {
                    let w = s.own_work(d)?;
                    Some(sum_of(w.read_calls, w.write_calls))
                },
            },
            WorkFigure {
                label: "context switches (vol. + invol.)",
                figure: |s, d| {
                    let w = s.own_work(d)?;
                    Some(sum_of(w.voluntary_switches, w.involuntary_switches))
                },
            },
            WorkFigure {
                label: "CPU time (kernel share)",
                figure: |s, d| {
                    let w = s.own_work(d)?;
                    let cpu = format_ns(w.cpu_ns.round() as u64);
                    Some(match w.system_share {
                        Some(share) => format!("{cpu} ({:.0}% sys)", share * 100.0),
                        None => cpu,
                    })
                },
            },
            WorkFigure {
                label: "fake daemon CPU time",
                figure: |s, d| {
                    let cpu = format_ns(s.load(d)?.work?.daemon?.cpu_ns.round() as u64);
                    Some(match (s.kind, cpu_vs_daemon(s, d)) {
                        (SubjectKind::Wrapper, Some(r)) => {
                            format!("{cpu} (wrapper {})", format_ratio(r))
                        }
                        _ => cpu,
                    })
                },
            },
        ];
        let mut rows = vec![self.row("per call".to_owned(), |s| Some(cell_text(&s.name)))];
        for WorkFigure { label, figure } in figures {
            for Phase { name: phase, depth } in self.phases() {
                rows.push(self.row(format!("{label}, {phase}"), |s| figure(s, depth)));
            }
        }
        rows
    }

    fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        for s in &self.subjects {
            let name = &s.name;
            for error in &s.errors {
                notes.push(format!("{name}: {}", one_line(error)));
            }
            if let Some(r) = &s.recovery {
                for example in &r.failure_examples {
                    let example = one_line(example);
                    notes.push(format!("{name}: failed recovery call answered `{example}`"));
                }
                if let Some(why) = &r.abandoned {
                    notes.push(format!("{name}: recovery {}", one_line(why)));
                }
            }
            if let Some(o) = &s.outage {
                for example in &o.failure_examples {
                    let example = one_line(example);
                    notes.push(format!("{name}: failed outage call answered `{example}`"));
                }
            }
            if s.skipped_lines > 0 {
                notes.push(format!(
                    "{name}: {} output lines were not responses to pending calls",
                    s.skipped_lines
                ));
            }
            let stray: usize = s.pipelined.iter().map(|t| t.stray).sum();
            if stray > 0 {
                notes.push(format!(
                    "{name}: {stray} pipelined responses had unknown or repeated ids"
                ));
            }
        }
        notes
    }

    /// The sequential phase, then every depth measured by any subject,
    /// ascending.
    fn phases(&self) -> Vec<Phase> {
        let depths: BTreeSet<usize> = self
            .subjects
            .iter()
            .flat_map(|s| s.pipelined.iter().map(|t| t.depth))
            .collect();
        let sequential = Phase {
            name: "sequential".to_owned(),
            depth: None,
        };
        let pipelined = depths.into_iter().map(|depth| Phase {
            name: format!("{depth} in flight"),
            depth: Some(depth),
        });
        std::iter::once(sequential).chain(pipelined).collect()
    }

    /// Writes `bench.json` and `bench.md` into `dir` (created if need be).
    pub fn write_files(&self, dir: &Path) -> Result<(), HarnessError> {
        let io =
            |what: &str, path: &Path, e| HarnessError::io(format!("{what} {}", path.display()), e);
        fs::create_dir_all(dir).map_err(|e| io("creating", dir, e))?;
        let mut json = serde_json::to_vec_pretty(self).map_err(|e| {
            HarnessError::io("serialising the bench report", std::io::Error::other(e))
        })?;
        json.push(b'\n');
        for (name, text) in [
            ("bench.json", json),
            ("bench.md", self.to_markdown().into()),
        ] {
            let path = dir.join(name);
            fs::write(&path, text).map_err(|e| io("writing", &path, e))?;
        }
        Ok(())
    }
}

/// A target's cell: `pass`, `**miss**` or `n/a`, and the figure.
fn verdict_cell(verdict: &Verdict) -> String {
    let word = match verdict.pass {
        Some(true) => "pass",
        Some(false) => "**miss**",
        None => "n/a",
    };
    format!("{word} ({})", verdict.shown)
}

const DASH: &str = "–";

/// `value (1.50× what)`, or `value` alone without a ratio.
fn with_ratio_to(value: String, ratio: Option<f64>, what: &str) -> String {
    match ratio {
        Some(r) => format!("{value} ({} {what})", format_ratio(r)),
        None => value,
    }
}

/// The herd's start-up orders as the report names them, and in words.
fn herd_orders() -> [(&'static str, String); 2] {
    [
        (HERD_AT_ONCE, "usual start-up".to_owned()),
        (
            HERD_LISTEN_AFTER,
            format!("bound {} ms before listening", HERD_LISTEN_GAP.as_millis()),
        ),
    ]
}

/// The delay of the call after the rebind, in milliseconds, for the text.
fn outage_after_rebind_ms() -> u128 {
    crate::bench::OUTAGE_AFTER_REBIND.as_millis()
}

/// Herd sizes as text: `20 and 50`.
fn herd_sizes(sizes: &[usize]) -> String {
    match sizes {
        [] => "no".to_owned(),
        [one] => one.to_string(),
        [rest @ .., last] => {
            let rest: Vec<String> = rest.iter().map(ToString::to_string).collect();
            format!("{} and {last}", rest.join(", "))
        }
    }
}

fn with_ratio(value: String, ratio: Option<f64>) -> String {
    match ratio {
        Some(r) => format!("{value} ({})", format_ratio(r)),
        None => value,
    }
}

/// `a + b` and its parts: `1.25 (1.00 + 0.25)`.
fn sum_of(a: f64, b: f64) -> String {
    format!("{:.2} ({a:.2} + {b:.2})", a + b)
}

/// Writes a Markdown table, header first; the first column is
/// left-aligned, the others right-aligned, and columns are padded to line
/// up in plain text too.
fn write_table(out: &mut String, mut table: Vec<Vec<String>>) {
    let mut widths = vec![0; table[0].len()];
    for row in &table {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let dashes = |w: usize| "-".repeat(w.max(3));
    let rule = widths.iter().enumerate().map(|(k, &w)| match k {
        0 => dashes(w),
        _ => format!("{}:", &dashes(w)[1..]),
    });
    table.insert(1, rule.collect());
    for (k, cells) in table.iter().enumerate() {
        out.push('|');
        for (column, (cell, &w)) in cells.iter().zip(&widths).enumerate() {
            let _ = if column == 0 || k == 1 {
                write!(out, " {cell:<w$} |")
            } else {
                write!(out, " {cell:>w$} |")
            };
        }
        out.push('\n');
    }
}

/// Text safe inside a table cell (no pipes, no newlines).
fn cell_text(text: &str) -> String {
    one_line(text).replace('|', "\\|")
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::write_table;
    use crate::bench::CpuShare;
    use crate::bench::results::tests::sample_report;

    /// The figures table of the sample report, every section present (cold
    /// start, sequential latency, throughput, CPU, peak RSS, recovery,
    /// failed calls), byte for byte.
    #[test]
    fn figures_table_renders_every_section() {
        let mut report = sample_report();
        // CPU shares under load, and a recovery with a figure and a failure.
        let wrapper = &mut report.subjects[1];
        wrapper.pipelined[1].cpu = Some(CpuShare {
            client_pct: Some(95.0),
            subject_pct: Some(60.4),
            daemon_pct: None,
        });
        if let Some(recovery) = &mut wrapper.recovery {
            recovery.failures = 1;
        }
        let mut text = String::new();
        write_table(&mut text, report.figure_rows());
        let expected = concat!(
            "| figure                                                   |           floor |                 wrapper |               node\\|js |\n",
            "| -------------------------------------------------------- | --------------: | ----------------------: | ---------------------: |\n",
            "| cold start → initialize answered, median                 |               – |                 1.50 ms |             failed 2/2 |\n",
            "| cold start → tools/list answered, median                 |               – |                 2.00 ms |             failed 2/2 |\n",
            "| cold start → tools/list answered, max                    |               – |                 3.00 ms |             failed 2/2 |\n",
            "| sequential latency p50                                   |         10.0 µs |         15.0 µs (1.50×) |        40.0 µs (4.00×) |\n",
            "| sequential latency p99                                   |         50.0 µs |         90.0 µs (1.80×) |       100.0 µs (2.00×) |\n",
            "| sequential latency max                                   |         50.0 µs |         90.0 µs (1.80×) |       100.0 µs (2.00×) |\n",
            "| throughput, 1 in flight                                  |  50,000 calls/s |  30,000 calls/s (0.60×) |                      – |\n",
            "| throughput, 64 in flight                                 | 200,000 calls/s | 150,000 calls/s (0.75×) |                      – |\n",
            "| CPU during sequential (client / subject / daemon)        |   40% / – / 35% |                       – |                      – |\n",
            "| CPU at 1 in flight (client / subject / daemon)           |               – |                       – |                      – |\n",
            "| CPU at 64 in flight (client / subject / daemon)          |               – |           95% / 60% / – |                      – |\n",
            "| peak RSS (VmHWM) after load                              |               – |                  4.1 MB |                51.2 MB |\n",
            "| recovery, DROP → successful call, median                 |               – |    300.0 µs; 1/2 failed | –; 2/2 failed; gave up |\n",
            "| recovery, DROP → successful call, max                    |               – |    400.0 µs; 1/2 failed | –; 2/2 failed; gave up |\n",
            "| recovery, DROPPED acknowledged → successful call, median |               – |    200.0 µs; 1/2 failed | –; 2/2 failed; gave up |\n",
            "| failed calls (sequential + pipelined)                    |               0 |                       0 |                      1 |\n",
        );
        assert_eq!(text, expected, "{text}");
    }

    /// The outage table of the sample report (the calls after the rebind,
    /// the waiting call, the away window, the herds), byte for byte.
    #[test]
    fn outage_table_renders_every_figure() {
        let mut text = String::new();
        write_table(&mut text, sample_report().outage_rows());
        assert_eq!(
            text,
            r#"| outage                                                                                | floor |                wrapper |              node\|js |
| ------------------------------------------------------------------------------------- | ----: | ---------------------: | --------------------: |
| normal call, 100 ms after the previous, median                                        |     – |                20.0 µs |              200.0 µs |
| call sent 100 ms after the rebind, median                                             |     – | 30.0 µs (1.50× normal) |         –; 2/2 failed |
| call sent 100 ms after the rebind, max                                                |     – |                50.0 µs |         –; 2/2 failed |
| waiting call answered after the rebind, median                                        |     – |                1.20 ms |         –; 2/2 failed |
| waiting call answered after the rebind, max                                           |     – |                2.50 ms |         –; 2/2 failed |
| waiting call answered after UP sent, median                                           |     – |                1.40 ms |         –; 2/2 failed |
| while away: dials per minute                                                          |     – |                    0.0 |                   n/a |
| while away: wake-ups (context switches) per minute                                    |     – |                    3.0 |                 120.0 |
| while away: CPU time per minute                                                       |     – |               150.0 µs |               5.00 ms |
| herd of 50, usual start-up: all answered after the listen, median / max               |     – |    12.00 ms / 15.00 ms |                     – |
| herd of 50, usual start-up: failed calls / failed dials                               |     – |                  0 / 0 |              38 / n/a |
| herd of 50, usual start-up: accepts per wrapper per restart                           |     – |                   1.00 |                  2.00 |
| herd of 50, bound 50 ms before listening: all answered after the listen, median / max |     – |    60.00 ms / 80.00 ms | 120.00 ms / 300.00 ms |
| herd of 50, bound 50 ms before listening: failed calls / failed dials                 |     – |                0 / 150 |               0 / n/a |
| herd of 50, bound 50 ms before listening: accepts per wrapper per restart             |     – |                   1.00 |                  1.00 |
| herd of 50 while away: own wake-ups (looks + dials) per wrapper per minute            |     – |                    0.4 |                   n/a |
| herd of 50 while away: dials per wrapper per minute                                   |     – |                    0.0 |                   n/a |
"#
        );
    }

    /// The whole report of the sample, byte for byte: the texts before
    /// each table, the targets and the notes.
    #[test]
    fn markdown_reads_the_same() {
        assert_eq!(
            sample_report().to_markdown(),
            r#"## Wrapper benchmark

10 sequential `tools/call topology` per subject after 5 warm-up calls; 1000 pipelined calls per depth; both in 1 interleaved rounds; 2 cold starts; 2 recoveries. Host: linux x86_64, 2 CPUs. Ratios in parentheses are subject / floor (the same client talking NDJSON straight to the fake daemon).

| figure                                                   |           floor |                 wrapper |               node\|js |
| -------------------------------------------------------- | --------------: | ----------------------: | ---------------------: |
| cold start → initialize answered, median                 |               – |                 1.50 ms |             failed 2/2 |
| cold start → tools/list answered, median                 |               – |                 2.00 ms |             failed 2/2 |
| cold start → tools/list answered, max                    |               – |                 3.00 ms |             failed 2/2 |
| sequential latency p50                                   |         10.0 µs |         15.0 µs (1.50×) |        40.0 µs (4.00×) |
| sequential latency p99                                   |         50.0 µs |         90.0 µs (1.80×) |       100.0 µs (2.00×) |
| sequential latency max                                   |         50.0 µs |         90.0 µs (1.80×) |       100.0 µs (2.00×) |
| throughput, 1 in flight                                  |  50,000 calls/s |  30,000 calls/s (0.60×) |                      – |
| throughput, 64 in flight                                 | 200,000 calls/s | 150,000 calls/s (0.75×) |                      – |
| CPU during sequential (client / subject / daemon)        |   40% / – / 35% |                       – |                      – |
| CPU at 1 in flight (client / subject / daemon)           |               – |                       – |                      – |
| CPU at 64 in flight (client / subject / daemon)          |               – |                       – |                      – |
| peak RSS (VmHWM) after load                              |               – |                  4.1 MB |                51.2 MB |
| recovery, DROP → successful call, median                 |               – |                300.0 µs | –; 2/2 failed; gave up |
| recovery, DROP → successful call, max                    |               – |                400.0 µs | –; 2/2 failed; gave up |
| recovery, DROPPED acknowledged → successful call, median |               – |                200.0 µs | –; 2/2 failed; gave up |
| failed calls (sequential + pipelined)                    |               0 |                       0 |                      1 |

Work per call, the same whatever the machine's load: system calls (`syscr` + `syscw` of /proc/PID/io: read-like + write-like), context switches of all threads (voluntary + involuntary) and CPU time (all threads' schedstat; the kernel's share from utime/stime), of the client for the floor and of the wrapper process for wrappers; then the fake daemon's CPU time per call.

| per call                                       |              floor |                wrapper | node\|js |
| ---------------------------------------------- | -----------------: | ---------------------: | -------: |
| system calls (reads + writes), sequential      | 2.00 (1.00 + 1.00) |                      – |        – |
| system calls (reads + writes), 1 in flight     |                  – |                      – |        – |
| system calls (reads + writes), 64 in flight    |                  – |     0.50 (0.25 + 0.25) |        – |
| context switches (vol. + invol.), sequential   | 1.25 (1.00 + 0.25) |                      – |        – |
| context switches (vol. + invol.), 1 in flight  |                  – |                      – |        – |
| context switches (vol. + invol.), 64 in flight |                  – |     1.25 (1.00 + 0.25) |        – |
| CPU time (kernel share), sequential            |   4.0 µs (50% sys) |                      – |        – |
| CPU time (kernel share), 1 in flight           |                  – |                      – |        – |
| CPU time (kernel share), 64 in flight          |                  – |       5.0 µs (50% sys) |        – |
| fake daemon CPU time, sequential               |             3.0 µs |                      – |        – |
| fake daemon CPU time, 1 in flight              |                  – |                      – |        – |
| fake daemon CPU time, 64 in flight             |                  – | 2.0 µs (wrapper 2.50×) |        – |

Outages, each wrapper started anew with its structured log on and its heartbeat moved past the phase: 2 outages with no call waiting, then a call 100 ms after the rebind; 2 outages during which a call waits; the daemon away for a window of 10 s, counted after the wrapper settled, scaled to a minute. The rebind is the fake daemon's socket seen bound after `UP` (polled every 20 µs; it listens at once); dials are the wrapper's own `connect_attempt` events (n/a: it logs none). Herds of 50 wrappers on one daemon, restarted 3 times in the usual start-up order and 3 times bound 50 ms before it listens, every wrapper's call waiting: from the listen to the last answer, over the restarts; accepts from `UP` on; a wrapper's own wake-ups (its endpoint watch's looks and its dials, from its log) in a window of 3 s of each restart before the calls, scaled to a minute.

| outage                                                                                | floor |                wrapper |              node\|js |
| ------------------------------------------------------------------------------------- | ----: | ---------------------: | --------------------: |
| normal call, 100 ms after the previous, median                                        |     – |                20.0 µs |              200.0 µs |
| call sent 100 ms after the rebind, median                                             |     – | 30.0 µs (1.50× normal) |         –; 2/2 failed |
| call sent 100 ms after the rebind, max                                                |     – |                50.0 µs |         –; 2/2 failed |
| waiting call answered after the rebind, median                                        |     – |                1.20 ms |         –; 2/2 failed |
| waiting call answered after the rebind, max                                           |     – |                2.50 ms |         –; 2/2 failed |
| waiting call answered after UP sent, median                                           |     – |                1.40 ms |         –; 2/2 failed |
| while away: dials per minute                                                          |     – |                    0.0 |                   n/a |
| while away: wake-ups (context switches) per minute                                    |     – |                    3.0 |                 120.0 |
| while away: CPU time per minute                                                       |     – |               150.0 µs |               5.00 ms |
| herd of 50, usual start-up: all answered after the listen, median / max               |     – |    12.00 ms / 15.00 ms |                     – |
| herd of 50, usual start-up: failed calls / failed dials                               |     – |                  0 / 0 |              38 / n/a |
| herd of 50, usual start-up: accepts per wrapper per restart                           |     – |                   1.00 |                  2.00 |
| herd of 50, bound 50 ms before listening: all answered after the listen, median / max |     – |    60.00 ms / 80.00 ms | 120.00 ms / 300.00 ms |
| herd of 50, bound 50 ms before listening: failed calls / failed dials                 |     – |                0 / 150 |               0 / n/a |
| herd of 50, bound 50 ms before listening: accepts per wrapper per restart             |     – |                   1.00 |                  1.00 |
| herd of 50 while away: own wake-ups (looks + dials) per wrapper per minute            |     – |                    0.4 |                   n/a |
| herd of 50 while away: dials per wrapper per minute                                   |     – |                    0.0 |                   n/a |

| target                                                                                        |          limit |         wrapper |                   node\|js |
| --------------------------------------------------------------------------------------------- | -------------: | --------------: | -------------------------: |
| cold start to tools/list answered (median)                                                    |     < 10.00 ms |  pass (2.00 ms) |            n/a (no figure) |
| peak RSS (VmHWM) after load                                                                   |      < 10.0 MB |   pass (4.1 MB) |         **miss** (51.2 MB) |
| recovery from DROP (median, no failure)                                                       |      < 5.00 ms | pass (300.0 µs) |      **miss** (2/2 failed) |
| waiting call answered after the rebind (median, no failure)                                   |      ≤ 5.00 ms |  pass (1.20 ms) |      **miss** (2/2 failed) |
| dials per minute while away                                                                   |            ≤ 0 |      pass (0.0) |            n/a (no figure) |
| herd of 50: own wake-ups per wrapper per minute while away                                    |            ≤ 6 |      pass (0.4) |            n/a (no figure) |
| herd of 50, bound 50 ms before listening: all answered after the listen (median), none failed | ≤ 100.00 ms, 0 | pass (60.00 ms) |       **miss** (120.00 ms) |
| herd of 50, usual start-up: all answered after the listen (median), none failed               |  ≤ 20.00 ms, 0 | pass (12.00 ms) | **miss** (38 calls failed) |
| herd of 50: accepts per wrapper per restart                                                   |            ≤ 1 |     pass (1.00) |            **miss** (2.00) |

Notes:

- node|js: pipelined: stream closed
- node|js: failed recovery call answered `daemon_unreachable: bridge not connected`
- node|js: recovery gave up after 2 of 3 attempts
- node|js: failed outage call answered `daemon_unreachable: bridge not connected`
"#
        );
    }

    #[test]
    fn markdown_tables_line_up_with_ratios() {
        let text = sample_report().to_markdown();
        let tables: Vec<Vec<&str>> = text
            .split("\n\n")
            .map(|block| block.lines().filter(|l| l.starts_with('|')).collect())
            .filter(|lines: &Vec<&str>| !lines.is_empty())
            .collect();
        assert_eq!(tables.len(), 4, "{text}");
        for table in &tables {
            // Every row has as many cells as the header; escaped pipes in
            // names do not count.
            let cells = |l: &str| l.replace("\\|", "").matches('|').count();
            let columns = cells(table[0]);
            assert!(table.iter().all(|l| cells(l) == columns), "{text}");
            assert!(table[1].contains("---"));
        }
        for expected in [
            " floor ",
            "node\\|js",
            // Latency ratio 15 µs / 10 µs, throughput 150k / 200k.
            "15.0 µs (1.50×)",
            "150,000 calls/s (0.75×)",
            "200,000 calls/s |",
            "2.00 ms",
            "failed 2/2",
            "4.1 MB",
            "40% / – / 35%",
            // Work per call: the floor's client, the wrapper process, and
            // the daemon with the wrapper's ratio to it.
            "2.00 (1.00 + 1.00)",
            "1.25 (1.00 + 0.25)",
            "5.0 µs (50% sys)",
            "2.0 µs (wrapper 2.50×)",
            "**miss** (2/2 failed)",
            "n/a (no figure)",
            "node|js: failed recovery call answered `daemon_unreachable: bridge not connected`",
            // The outage table: the call after the rebind against a normal
            // one, the waiting call, the away window, the herd.
            "30.0 µs (1.50× normal)",
            "1.20 ms",
            "–; 2/2 failed",
            "| while away: dials per minute",
            " 0.0 |",
            " n/a |",
            "150.0 µs",
            // The herd: both start-up orders, the accepts, the wake-ups.
            "12.00 ms / 15.00 ms",
            "38 / n/a",
            "0 / 150",
            "| herd of 50 while away: own wake-ups (looks + dials) per wrapper per minute",
            "pass (1.20 ms)",
            "**miss** (2/2 failed)",
            "pass (60.00 ms)",
            "**miss** (38 calls failed)",
            "pass (12.00 ms)",
            "**miss** (120.00 ms)",
            "pass (1.00)",
            "**miss** (2.00)",
            "pass (0.4)",
            "node|js: failed outage call answered `daemon_unreachable: bridge not connected`",
        ] {
            assert!(text.contains(expected), "{expected:?} in {text}");
        }
        let json = serde_json::to_value(sample_report()).unwrap();
        assert_eq!(
            json["subjects"][1]["sequential"]["latency"]["p50_ns"],
            15_000
        );
        assert_eq!(json["targets"][0]["target"], "cold_start");
        // Retired targets are neither judged nor shown as missed.
        assert!(!text.contains("vs floor"), "{text}");
        assert!(!text.contains("**miss** (4.00×)"), "{text}");
    }
}
