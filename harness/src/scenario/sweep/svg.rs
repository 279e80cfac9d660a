//! The sweep's chart: a self-contained SVG file, drawn by this module.
//!
//! Two panels share the x axis (the racing call's offset after the drop):
//! the share of racing calls that succeeded, and the median racing-call
//! latency. Each subject is one line (its own colour, marker shape and dash
//! pattern, so equal lines stay distinguishable); the reconnect delay is a
//! dashed vertical line over a shaded window; the production point (delay
//! 0, no widener) is a hollow marker in a column of its own on the left.
//! Every marker carries a `<title>`, which browsers show on hover, with the
//! counts behind it.
//!
//! # Why no plotting crate
//!
//! The picture is two line panels with ticks, labels and a legend: a few
//! hundred lines of string building over a tiny writer ([`SvgWriter`]) that
//! escapes every text and attribute value. The plotting crates either pull
//! in a large dependency tree (font discovery and rasterisation through
//! system libraries, image codecs) for a harness that otherwise has a
//! handful of dependencies, or produce HTML that loads a JavaScript charting
//! library from the network. Hand-written SVG opens offline in any browser,
//! has no fonts to embed (text stays text, in a generic sans-serif family),
//! stays readable in a diff, and is checked in tests as plain XML.

use std::fmt::Write as _;

use super::report::{PointReport, SweepReport};
use super::shorten;
use crate::format::escape_markup as escape;

/// Formats a coordinate or length: at most two decimals, no trailing
/// zeros.
pub fn num(value: f64) -> String {
    let text = format!("{value:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".to_owned()
    } else {
        text.to_owned()
    }
}

/// A minimal SVG (XML) writer: elements with escaped attributes and text,
/// closed in order.
#[derive(Debug)]
pub struct SvgWriter {
    out: String,
    open: Vec<&'static str>,
}

impl SvgWriter {
    /// Starts a document with an `<svg>` root of `width` x `height` user
    /// units (also its size in CSS pixels).
    pub fn new(width: f64, height: f64) -> Self {
        let mut writer = Self {
            out: String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"),
            open: Vec::new(),
        };
        writer.open(
            "svg",
            &[
                ("xmlns", "http://www.w3.org/2000/svg".to_owned()),
                ("version", "1.1".to_owned()),
                ("width", num(width)),
                ("height", num(height)),
                ("viewBox", format!("0 0 {} {}", num(width), num(height))),
                (
                    "font-family",
                    "DejaVu Sans, Helvetica, Arial, sans-serif".to_owned(),
                ),
            ],
        );
        writer
    }

    fn start_tag(&mut self, tag: &str, attrs: &[(&str, String)]) {
        self.out.push_str(&"  ".repeat(self.open.len()));
        self.out.push('<');
        self.out.push_str(tag);
        for (name, value) in attrs {
            let _ = write!(self.out, " {name}=\"{}\"", escape(value));
        }
    }

    /// Opens `<tag attrs>`; [`close`](Self::close) ends it.
    pub fn open(&mut self, tag: &'static str, attrs: &[(&str, String)]) {
        self.start_tag(tag, attrs);
        self.out.push_str(">\n");
        self.open.push(tag);
    }

    /// Closes the innermost open element.
    pub fn close(&mut self) {
        if let Some(tag) = self.open.pop() {
            self.out.push_str(&"  ".repeat(self.open.len()));
            let _ = writeln!(self.out, "</{tag}>");
        }
    }

    /// Writes an empty element `<tag attrs/>`.
    pub fn leaf(&mut self, tag: &str, attrs: &[(&str, String)]) {
        self.start_tag(tag, attrs);
        self.out.push_str("/>\n");
    }

    /// Writes a `<line>` from `(x1, y1)` to `(x2, y2)` with `style`
    /// attributes (stroke, class, ...) after the coordinates.
    pub fn line(&mut self, from: (f64, f64), to: (f64, f64), style: &[(&str, String)]) {
        let mut attrs = vec![
            ("x1", num(from.0)),
            ("x2", num(to.0)),
            ("y1", num(from.1)),
            ("y2", num(to.1)),
        ];
        attrs.extend(style.iter().cloned());
        self.leaf("line", &attrs);
    }

    /// Writes `<tag attrs>text</tag>`, the text escaped.
    pub fn text(&mut self, tag: &str, attrs: &[(&str, String)], text: &str) {
        self.start_tag(tag, attrs);
        let _ = writeln!(self.out, ">{}</{tag}>", escape(text));
    }

    /// Closes every open element and returns the document.
    pub fn finish(mut self) -> String {
        while !self.open.is_empty() {
            self.close();
        }
        self.out
    }
}

/// Colours of the subjects' lines (Okabe-Ito, distinguishable with the
/// common colour-vision deficiencies), in subject order.
const PALETTE: [&str; 7] = [
    "#D55E00", "#0072B2", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
];

const WIDTH: f64 = 1000.0;
const HEIGHT: f64 = 700.0;
/// Left edge of the panels (room for tick labels and the axis title).
const LEFT: f64 = 84.0;
/// Right edge of the panels (the legend is to their right).
const RIGHT: f64 = 720.0;
/// Width of the production column at the left of each panel.
const PROD_WIDTH: f64 = 56.0;
/// Gap between the production column and the offset axis.
const PROD_GAP: f64 = 18.0;
const PANEL_HEIGHT: f64 = 226.0;
const TOP1: f64 = 106.0;
const TOP2: f64 = TOP1 + PANEL_HEIGHT + 80.0;
const GRID: &str = "#e4e4e4";
const AXIS: &str = "#444444";
const MUTED: &str = "#666666";

/// A linear map from data to pixels.
#[derive(Debug, Clone, Copy)]
struct Scale {
    d0: f64,
    d1: f64,
    p0: f64,
    p1: f64,
}

impl Scale {
    fn at(&self, value: f64) -> f64 {
        self.p0 + (value - self.d0) / (self.d1 - self.d0) * (self.p1 - self.p0)
    }
}

/// A "nice" tick step (1, 2, 2.5 or 5 times a power of ten) giving about
/// `target` ticks over `range`.
fn nice_step(range: f64, target: f64) -> f64 {
    if range <= 0.0 || !range.is_finite() {
        return 1.0;
    }
    let raw = range / target;
    let magnitude = 10f64.powf(raw.log10().floor());
    let norm = raw / magnitude;
    let nice = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 2.5 {
        2.5
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

/// Ticks at multiples of `step` from `min` to `max` inclusive.
fn ticks(min: f64, max: f64, step: f64) -> Vec<f64> {
    let first = (min / step).ceil() as i64;
    let last = (max / step + 1e-9).floor() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

/// A tick label with as many decimals as the step needs.
fn tick_label(value: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10()).ceil() as usize
    };
    format!("{value:.decimals$}")
}

/// The marker of subject `index` centred at (`x`, `y`): circle, square,
/// triangle or diamond; hollow (white fill) when `hollow`.
fn marker(svg: &mut SvgWriter, index: usize, x: f64, y: f64, colour: &str, hollow: bool) {
    let fill = if hollow { "#ffffff" } else { colour }.to_owned();
    let style = [
        ("fill", fill),
        ("stroke", colour.to_owned()),
        ("stroke-width", "1.5".to_owned()),
    ];
    let r = 4.5;
    match index % 4 {
        0 => svg.leaf(
            "circle",
            &[
                &[("cx", num(x)), ("cy", num(y)), ("r", num(r))][..],
                &style[..],
            ]
            .concat(),
        ),
        1 => svg.leaf(
            "rect",
            &[
                &[
                    ("x", num(x - r)),
                    ("y", num(y - r)),
                    ("width", num(2.0 * r)),
                    ("height", num(2.0 * r)),
                ][..],
                &style[..],
            ]
            .concat(),
        ),
        2 => svg.leaf(
            "polygon",
            &[
                &[(
                    "points",
                    format!(
                        "{},{} {},{} {},{}",
                        num(x),
                        num(y - r - 1.0),
                        num(x + r + 0.5),
                        num(y + r),
                        num(x - r - 0.5),
                        num(y + r)
                    ),
                )][..],
                &style[..],
            ]
            .concat(),
        ),
        _ => svg.leaf(
            "polygon",
            &[
                &[(
                    "points",
                    format!(
                        "{},{} {},{} {},{} {},{}",
                        num(x),
                        num(y - r - 1.0),
                        num(x + r + 1.0),
                        num(y),
                        num(x),
                        num(y + r + 1.0),
                        num(x - r - 1.0),
                        num(y)
                    ),
                )][..],
                &style[..],
            ]
            .concat(),
        ),
    }
}

/// What a panel plots for a point.
#[derive(Debug, Clone, Copy)]
enum Metric {
    /// Successful racing calls, in percent.
    SuccessPercent,
    /// Median racing-call latency, in milliseconds.
    MedianLatencyMs,
}

impl Metric {
    fn value(self, point: &PointReport) -> Option<f64> {
        match self {
            Self::SuccessPercent => point.success_rate.map(|r| r * 100.0),
            Self::MedianLatencyMs => point
                .median_racing_latency
                .map(|d| d.as_secs_f64() * 1000.0),
        }
    }
}

/// The layout shared by both panels.
struct Frame {
    x: Scale,
    prod_x: Option<f64>,
    delay_ms: f64,
    window_from: f64,
    x_ticks: Vec<f64>,
    x_step: f64,
}

/// The tooltip of a point.
fn tooltip(point: &PointReport) -> String {
    let latency = point.median_racing_latency.map_or_else(
        || "n/a".to_owned(),
        |d| format!("{:.1} ms", d.as_secs_f64() * 1000.0),
    );
    format!(
        "{}, delay {} ms, offset {} ms: {}/{} ok, {} daemon_unreachable, {} other, {} timeout, {} errors; median latency {}; conns after {}",
        point.subject,
        point.delay_ms,
        point.offset_ms,
        point.ok,
        point.runs,
        point.daemon_unreachable,
        point.other_error,
        point.timeout,
        point.errors,
        latency,
        point.conns_after
    )
}

/// One panel's own settings.
struct Panel<'a> {
    top: f64,
    title: &'a str,
    y_title: &'a str,
    metric: Metric,
    y: Scale,
    y_ticks: Vec<f64>,
    y_step: f64,
    y_suffix: &'a str,
}

/// Draws one panel: frame, grid, ticks, axis titles, window, delay marker
/// and one series per subject.
fn panel(svg: &mut SvgWriter, report: &SweepReport, frame: &Frame, spec: &Panel<'_>) {
    let Panel {
        top,
        title,
        y_title,
        metric,
        y,
        y_step,
        y_suffix,
        ..
    } = *spec;
    let bottom = top + PANEL_HEIGHT;
    svg.open("g", &[("class", format!("panel {}", panel_class(metric)))]);
    svg.text(
        "text",
        &[
            ("x", num(LEFT)),
            ("y", num(top - 22.0)),
            ("font-size", "14".to_owned()),
            ("font-weight", "bold".to_owned()),
            ("fill", AXIS.to_owned()),
        ],
        title,
    );
    svg.leaf(
        "rect",
        &[
            ("x", num(LEFT)),
            ("y", num(top)),
            ("width", num(RIGHT - LEFT)),
            ("height", num(PANEL_HEIGHT)),
            ("fill", "#ffffff".to_owned()),
            ("stroke", AXIS.to_owned()),
        ],
    );
    // The reconnect window, shaded.
    if frame.delay_ms > frame.window_from {
        let x0 = frame.x.at(frame.window_from);
        let x1 = frame.x.at(frame.delay_ms);
        svg.leaf(
            "rect",
            &[
                ("class", "window".to_owned()),
                ("x", num(x0)),
                ("y", num(top)),
                ("width", num(x1 - x0)),
                ("height", num(PANEL_HEIGHT)),
                ("fill", "#E69F00".to_owned()),
                ("fill-opacity", "0.10".to_owned()),
            ],
        );
    }
    // Horizontal grid and y ticks.
    for &value in &spec.y_ticks {
        let py = y.at(value);
        svg.line((LEFT, py), (RIGHT, py), &[("stroke", GRID.to_owned())]);
        svg.text(
            "text",
            &[
                ("x", num(LEFT - 8.0)),
                ("y", num(py + 4.0)),
                ("font-size", "11".to_owned()),
                ("text-anchor", "end".to_owned()),
                ("fill", AXIS.to_owned()),
            ],
            &format!("{}{y_suffix}", tick_label(value, y_step)),
        );
    }
    // x ticks.
    for &value in &frame.x_ticks {
        let px = frame.x.at(value);
        svg.line(
            (px, bottom),
            (px, bottom + 5.0),
            &[("stroke", AXIS.to_owned())],
        );
        svg.text(
            "text",
            &[
                ("x", num(px)),
                ("y", num(bottom + 18.0)),
                ("font-size", "11".to_owned()),
                ("text-anchor", "middle".to_owned()),
                ("fill", AXIS.to_owned()),
            ],
            &tick_label(value, frame.x_step),
        );
    }
    // The production column.
    if let Some(prod_x) = frame.prod_x {
        let edge = LEFT + PROD_WIDTH + PROD_GAP / 2.0;
        svg.line(
            (edge, top),
            (edge, bottom),
            &[
                ("stroke", AXIS.to_owned()),
                ("stroke-dasharray", "2 3".to_owned()),
            ],
        );
        svg.text(
            "text",
            &[
                ("x", num(prod_x)),
                ("y", num(bottom + 18.0)),
                ("font-size", "11".to_owned()),
                ("text-anchor", "middle".to_owned()),
                ("fill", AXIS.to_owned()),
            ],
            "delay 0",
        );
    }
    // The reconnect delay.
    let delay_x = frame.x.at(frame.delay_ms);
    svg.line(
        (delay_x, top),
        (delay_x, bottom),
        &[
            ("class", "delay-marker".to_owned()),
            ("stroke", "#333333".to_owned()),
            ("stroke-width", "1.5".to_owned()),
            ("stroke-dasharray", "6 4".to_owned()),
        ],
    );
    svg.text(
        "text",
        &[
            ("x", num(delay_x)),
            ("y", num(top - 5.0)),
            ("font-size", "11".to_owned()),
            ("text-anchor", "middle".to_owned()),
            ("fill", "#333333".to_owned()),
        ],
        &format!("reconnect delay {} ms", report.config.delay_ms),
    );
    // The y axis title, rotated.
    let mid = top + PANEL_HEIGHT / 2.0;
    svg.text(
        "text",
        &[
            ("x", num(22.0)),
            ("y", num(mid)),
            ("font-size", "12".to_owned()),
            ("text-anchor", "middle".to_owned()),
            ("fill", AXIS.to_owned()),
            ("transform", format!("rotate(-90 22 {})", num(mid))),
        ],
        y_title,
    );
    // The series.
    let subjects = report.subjects.len();
    for (index, subject) in report.subjects.iter().enumerate() {
        let colour = PALETTE[index % PALETTE.len()];
        svg.open(
            "g",
            &[
                ("class", "series".to_owned()),
                ("data-subject", subject.label.clone()),
            ],
        );
        let line: Vec<(f64, f64, &PointReport)> = report
            .points_of(&subject.label)
            .filter(|p| !p.production)
            .filter_map(|p| Some((frame.x.at(p.offset_ms as f64), y.at(metric.value(p)?), p)))
            .collect();
        let mut attrs = vec![
            ("class", "series-line".to_owned()),
            (
                "points",
                line.iter()
                    .map(|(x, y, _)| format!("{},{}", num(*x), num(*y)))
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            ("fill", "none".to_owned()),
            ("stroke", colour.to_owned()),
            ("stroke-width", "2".to_owned()),
            ("stroke-linejoin", "round".to_owned()),
        ];
        if index % 2 == 1 {
            attrs.push(("stroke-dasharray", "7 4".to_owned()));
        }
        svg.leaf("polyline", &attrs);
        for (x, y, point) in &line {
            svg.open("g", &[("class", "point".to_owned())]);
            svg.text("title", &[], &tooltip(point));
            marker(svg, index, *x, *y, colour, false);
            svg.close();
        }
        if let Some(prod_x) = frame.prod_x {
            let spread = 11.0;
            let px = prod_x + (index as f64 - (subjects as f64 - 1.0) / 2.0) * spread;
            for point in report
                .points_of(&subject.label)
                .filter(|p| p.production)
                .filter(|p| metric.value(p).is_some())
            {
                let py = y.at(metric.value(point).unwrap_or_default());
                svg.open("g", &[("class", "point production".to_owned())]);
                svg.text("title", &[], &tooltip(point));
                marker(svg, index, px, py, colour, true);
                svg.close();
            }
        }
        svg.close();
    }
    svg.close();
}

fn panel_class(metric: Metric) -> &'static str {
    match metric {
        Metric::SuccessPercent => "success",
        Metric::MedianLatencyMs => "latency",
    }
}

/// Draws the legend at (`x`, `y`).
fn legend(svg: &mut SvgWriter, report: &SweepReport, x: f64, y: f64, production: bool) {
    svg.open("g", &[("class", "legend".to_owned())]);
    let mut row = y;
    for (index, subject) in report.subjects.iter().enumerate() {
        let colour = PALETTE[index % PALETTE.len()];
        let mut attrs = vec![
            ("x1", num(x)),
            ("x2", num(x + 30.0)),
            ("y1", num(row)),
            ("y2", num(row)),
            ("stroke", colour.to_owned()),
            ("stroke-width", "2".to_owned()),
        ];
        if index % 2 == 1 {
            attrs.push(("stroke-dasharray", "7 4".to_owned()));
        }
        svg.open("g", &[("class", "legend-entry".to_owned())]);
        svg.text("title", &[], &subject.wrapper);
        svg.leaf("line", &attrs);
        marker(svg, index, x + 15.0, row, colour, false);
        svg.text(
            "text",
            &[
                ("x", num(x + 38.0)),
                ("y", num(row + 4.0)),
                ("font-size", "12".to_owned()),
                ("fill", AXIS.to_owned()),
            ],
            &shorten(&subject.label, 30),
        );
        svg.close();
        row += 22.0;
    }
    row += 8.0;
    svg.line(
        (x + 15.0, row - 9.0),
        (x + 15.0, row + 9.0),
        &[
            ("stroke", "#333333".to_owned()),
            ("stroke-width", "1.5".to_owned()),
            ("stroke-dasharray", "6 4".to_owned()),
        ],
    );
    let note = |svg: &mut SvgWriter, row: f64, text: &str| {
        svg.text(
            "text",
            &[
                ("x", num(x + 38.0)),
                ("y", num(row + 4.0)),
                ("font-size", "12".to_owned()),
                ("fill", AXIS.to_owned()),
            ],
            text,
        );
    };
    note(
        svg,
        row,
        &format!("reconnect delay ({} ms)", report.config.delay_ms),
    );
    row += 22.0;
    svg.leaf(
        "rect",
        &[
            ("x", num(x)),
            ("y", num(row - 7.0)),
            ("width", "30".to_owned()),
            ("height", "14".to_owned()),
            ("fill", "#E69F00".to_owned()),
            ("fill-opacity", "0.10".to_owned()),
            ("stroke", GRID.to_owned()),
        ],
    );
    note(svg, row, "reconnect window");
    if production {
        row += 22.0;
        marker(svg, 0, x + 15.0, row, AXIS, true);
        note(svg, row, "hollow: delay 0, offset 0");
        row += 16.0;
        note(svg, row, "(no widener: production timing)");
    }
    row += 30.0;
    for line in [
        format!("{} run(s) per point", report.config.runs),
        format!(
            "offsets {}-{} ms, step {} ms",
            report.config.from_ms, report.config.to_ms, report.config.step_ms
        ),
        format!("seed {}, {} job(s)", report.config.seed, report.config.jobs),
        "hover a marker for its counts".to_owned(),
    ] {
        svg.text(
            "text",
            &[
                ("x", num(x)),
                ("y", num(row)),
                ("font-size", "11".to_owned()),
                ("fill", MUTED.to_owned()),
            ],
            &line,
        );
        row += 16.0;
    }
    svg.close();
}

/// The chart of `report` as a complete SVG document.
pub fn chart(report: &SweepReport) -> String {
    let cfg = &report.config;
    let production = report.points.iter().any(|p| p.production && p.runs > 0)
        || (cfg.production_point && report.points.iter().any(|p| p.production));
    let x_start = if production {
        LEFT + PROD_WIDTH + PROD_GAP
    } else {
        LEFT + 16.0
    };
    let d0 = cfg.from_ms as f64;
    let mut d1 = (cfg.to_ms.max(cfg.delay_ms)) as f64;
    if d1 <= d0 {
        d1 = d0 + cfg.step_ms.max(1) as f64;
    }
    let x = Scale {
        d0,
        d1,
        p0: x_start,
        p1: RIGHT - 16.0,
    };
    let x_step = nice_step(d1 - d0, 8.0);
    let frame = Frame {
        x,
        prod_x: production.then_some(LEFT + PROD_WIDTH / 2.0),
        delay_ms: cfg.delay_ms as f64,
        window_from: d0,
        x_ticks: ticks(d0, d1, x_step),
        x_step,
    };

    let mut svg = SvgWriter::new(WIDTH, HEIGHT);
    svg.text(
        "title",
        &[],
        "V3-05 race window: racing call outcome against its offset after the DROP",
    );
    svg.leaf(
        "rect",
        &[
            ("width", num(WIDTH)),
            ("height", num(HEIGHT)),
            ("fill", "#fafafa".to_owned()),
        ],
    );
    svg.text(
        "text",
        &[
            ("x", num(LEFT)),
            ("y", "30".to_owned()),
            ("font-size", "18".to_owned()),
            ("font-weight", "bold".to_owned()),
            ("fill", "#222222".to_owned()),
        ],
        "V3-05 race window: the racing call against its offset after the DROP",
    );
    let mut subtitle = format!(
        "reconnect delay (IAI_MCP_RECONNECT_TEST_DELAY_MS) {} ms; {} of {} runs",
        cfg.delay_ms, report.runs_done, report.runs_planned
    );
    if report.partial {
        subtitle.push_str(" - PARTIAL: the sweep was interrupted");
    }
    svg.text(
        "text",
        &[
            ("x", num(LEFT)),
            ("y", "52".to_owned()),
            ("font-size", "12".to_owned()),
            (
                "fill",
                if report.partial { "#B00020" } else { MUTED }.to_owned(),
            ),
        ],
        &subtitle,
    );

    let success = Scale {
        d0: 0.0,
        d1: 100.0,
        p0: TOP1 + PANEL_HEIGHT,
        p1: TOP1,
    };
    panel(
        &mut svg,
        report,
        &frame,
        &Panel {
            top: TOP1,
            title: "Racing calls answered successfully",
            y_title: "racing calls ok (%)",
            metric: Metric::SuccessPercent,
            y: success,
            y_ticks: ticks(0.0, 100.0, 20.0),
            y_step: 20.0,
            y_suffix: "%",
        },
    );

    let max_latency = report
        .points
        .iter()
        .filter_map(|p| Metric::MedianLatencyMs.value(p))
        .fold(0.0_f64, f64::max);
    let y_step = nice_step(max_latency.max(1.0), 5.0);
    let y_max = ((max_latency / y_step).ceil() * y_step).max(y_step);
    let latency = Scale {
        d0: 0.0,
        d1: y_max,
        p0: TOP2 + PANEL_HEIGHT,
        p1: TOP2,
    };
    panel(
        &mut svg,
        report,
        &frame,
        &Panel {
            top: TOP2,
            title: "Median racing-call latency",
            y_title: "median latency (ms)",
            metric: Metric::MedianLatencyMs,
            y: latency,
            y_ticks: ticks(0.0, y_max, y_step),
            y_step,
            y_suffix: "",
        },
    );
    svg.text(
        "text",
        &[
            ("x", num((x_start + RIGHT) / 2.0)),
            ("y", num(TOP2 + PANEL_HEIGHT + 44.0)),
            ("font-size", "12".to_owned()),
            ("text-anchor", "middle".to_owned()),
            ("fill", AXIS.to_owned()),
        ],
        "offset of the racing call after the DROP (ms)",
    );
    legend(&mut svg, report, RIGHT + 28.0, TOP1 + 8.0, production);
    svg.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::sweep::report::tests::sample_report;

    #[test]
    fn escapes_markup_and_drops_invalid_control_characters() {
        assert_eq!(
            escape(r#"a<b>&"c"'d'"#),
            "a&lt;b&gt;&amp;&quot;c&quot;&apos;d&apos;"
        );
        assert_eq!(escape("x\u{1}y\tz"), "xy\tz");
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(num(12.0), "12");
        assert_eq!(num(12.345), "12.35");
        assert_eq!(num(-0.001), "0");
        assert_eq!(num(0.5), "0.5");
    }

    #[test]
    fn nice_ticks() {
        assert_eq!(nice_step(1200.0, 8.0), 200.0);
        assert_eq!(nice_step(100.0, 5.0), 20.0);
        assert_eq!(nice_step(0.9, 5.0), 0.2);
        assert_eq!(ticks(0.0, 1200.0, 200.0).len(), 7);
        assert_eq!(ticks(50.0, 700.0, 100.0)[0], 100.0);
        assert_eq!(tick_label(0.4, 0.2), "0.4");
        assert_eq!(tick_label(400.0, 200.0), "400");
    }

    #[test]
    fn writer_nests_and_escapes() {
        let mut svg = SvgWriter::new(10.0, 10.0);
        svg.open("g", &[("data-x", "a\"b".to_owned())]);
        svg.text("text", &[], "1 < 2 & 3");
        let doc = svg.finish();
        let parsed = roxmltree::Document::parse(&doc).expect("well-formed");
        let text = parsed
            .descendants()
            .find(|n| n.has_tag_name("text"))
            .unwrap();
        assert_eq!(text.text(), Some("1 < 2 & 3"));
        let g = parsed.descendants().find(|n| n.has_tag_name("g")).unwrap();
        assert_eq!(g.attribute("data-x"), Some("a\"b"));
    }

    #[test]
    fn chart_is_well_formed_with_a_line_per_subject_and_panel() {
        let mut report = sample_report();
        report.subjects[1].label = "fixed <&> 'quoted' \"label\"".to_owned();
        for point in report.points.iter_mut().filter(|p| p.subject == "fixed") {
            point.subject = report.subjects[1].label.clone();
        }
        let doc = chart(&report);
        let parsed = roxmltree::Document::parse(&doc).expect("well-formed");
        let root = parsed.root_element();
        assert!(root.has_tag_name(("http://www.w3.org/2000/svg", "svg")));
        let with_class = |class: &str| {
            parsed
                .descendants()
                .filter(|n| n.attribute("class") == Some(class))
                .count()
        };
        assert_eq!(with_class("series-line"), 4);
        assert_eq!(with_class("delay-marker"), 2);
        assert_eq!(with_class("window"), 2);
        // Four offsets plus the production point, per subject and panel
        // (one fixed point at offset 200 has one run of two: still drawn).
        assert_eq!(with_class("point"), 2 * 2 * 4);
        assert_eq!(with_class("point production"), 2 * 2);
        assert!(
            parsed
                .descendants()
                .any(|n| n.attribute("data-subject") == Some(report.subjects[1].label.as_str()))
        );
        assert!(doc.contains("PARTIAL"));
    }
}
