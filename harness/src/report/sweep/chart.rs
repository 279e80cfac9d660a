//! The sweep's chart: a self-contained SVG file, written by hand (no
//! plotting crate, fonts or JavaScript; it opens offline and reads as XML).
//!
//! Why by hand, not with `plotters`: its SVG backend writes only drawing
//! primitives (lines, rectangles, polygons, circles, text) and offers no
//! way to give one of them a child element or attributes of its own. The
//! hover counts need a `<title>` inside each marker's group, and the
//! chart's groups carry classes (`series`, `point`, `window`,
//! `delay-marker`) and `data-subject` that tests and readers select by;
//! plotters could keep the picture but not those.
//!
//! Two panels share the x axis (the racing call's offset after the drop):
//! the share of racing calls that succeeded, and the median latency. Each
//! subject is one line (colour, marker shape and dash of its own); the
//! reconnect delay is a dashed line over a shaded window; the production
//! point (delay 0) is a hollow marker in a column on the left. Every marker
//! has a `<title>` with its counts, which browsers show on hover.

use std::fmt::{self, Display, Write as _};

use devkit::format::{escape_markup as escape, shorten};

use crate::scenario::sweep::{PointReport, SweepReport};

/// Attributes of an element: names and values, escaped when written.
type Attrs<'a> = [(&'a str, &'a dyn Display)];

/// A coordinate or length: at most two decimals, no trailing zeros.
struct N(f64);

impl Display for N {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = format!("{:.2}", self.0);
        let text = text.trim_end_matches('0').trim_end_matches('.');
        f.write_str(if text == "-0" { "0" } else { text })
    }
}

/// A minimal SVG (XML) writer: elements with escaped attributes and text,
/// closed in order.
struct SvgWriter {
    out: String,
    open: Vec<&'static str>,
}

impl SvgWriter {
    /// A document with an `<svg>` root of `width` x `height` user units
    /// (also its size in CSS pixels).
    fn new(width: f64, height: f64) -> Self {
        let mut svg = Self {
            out: String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"),
            open: Vec::new(),
        };
        let view_box = format!("0 0 {} {}", N(width), N(height));
        svg.open(
            "svg",
            &[
                ("xmlns", &"http://www.w3.org/2000/svg"),
                ("version", &"1.1"),
                ("width", &N(width)),
                ("height", &N(height)),
                ("viewBox", &view_box),
                ("font-family", &"DejaVu Sans, Helvetica, Arial, sans-serif"),
            ],
        );
        svg
    }

    /// `<tag` and the attributes of every group in order, unclosed.
    fn start_tag(&mut self, tag: &str, groups: &[&Attrs<'_>]) {
        let _ = write!(self.out, "{}<{tag}", "  ".repeat(self.open.len()));
        for (name, value) in groups.iter().copied().flatten() {
            let _ = write!(self.out, " {name}=\"{}\"", escape(&value.to_string()));
        }
    }

    /// Opens `<tag attrs>`, until [`close`](Self::close).
    fn open(&mut self, tag: &'static str, attrs: &Attrs<'_>) {
        self.start_tag(tag, &[attrs]);
        self.out.push_str(">\n");
        self.open.push(tag);
    }

    fn close(&mut self) {
        if let Some(tag) = self.open.pop() {
            let _ = writeln!(self.out, "{}</{tag}>", "  ".repeat(self.open.len()));
        }
    }

    /// An empty element `<tag attrs/>`, the attributes of `groups` in order.
    fn leaf(&mut self, tag: &str, groups: &[&Attrs<'_>]) {
        self.start_tag(tag, groups);
        self.out.push_str("/>\n");
    }

    /// A `<line>` from `from` to `to`, `style` after the coordinates.
    fn line(&mut self, from: (f64, f64), to: (f64, f64), style: &Attrs<'_>) {
        let (x1, x2, y1, y2) = (&N(from.0), &N(to.0), &N(from.1), &N(to.1));
        let ends: &Attrs<'_> = &[("x1", x1), ("x2", x2), ("y1", y1), ("y2", y2)];
        self.leaf("line", &[ends, style]);
    }

    /// `<tag attrs>text</tag>`, the attributes of `groups` in order, the
    /// text escaped.
    fn text(&mut self, tag: &str, groups: &[&Attrs<'_>], text: &str) {
        self.start_tag(tag, groups);
        let _ = writeln!(self.out, ">{}</{tag}>", escape(text));
    }

    /// Writes `text` at `at` in `size` px and `fill`, with `extra`
    /// attributes (anchor, weight) before the fill.
    fn label(&mut self, at: (f64, f64), size: u32, extra: &Attrs<'_>, fill: &str, text: &str) {
        let place: &Attrs<'_> = &[("x", &N(at.0)), ("y", &N(at.1)), ("font-size", &size)];
        self.text("text", &[place, extra, &[("fill", &fill)]], text);
    }

    fn finish(mut self) -> String {
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
const MIDDLE: &Attrs<'static> = &[("text-anchor", &"middle")];
const BOLD: &Attrs<'static> = &[("font-weight", &"bold")];
/// The shading of the reconnect window.
const WINDOW: &Attrs<'static> = &[("fill", &"#E69F00"), ("fill-opacity", &"0.10")];
/// The stroke of the reconnect delay's line.
const DELAY: &Attrs<'static> = &[
    ("stroke", &"#333333"),
    ("stroke-width", &1.5),
    ("stroke-dasharray", &"6 4"),
];

/// The dash pattern of subject `index`'s line: every other one dashed,
/// the others solid (no attribute).
fn dash(index: usize) -> &'static Attrs<'static> {
    const DASHED: &Attrs<'static> = &[("stroke-dasharray", &"7 4")];
    const SOLID: &Attrs<'static> = &[];
    if index % 2 == 1 { DASHED } else { SOLID }
}

/// `x,y x,y ...`, as `points` attributes take them.
fn points(at: impl IntoIterator<Item = (f64, f64)>) -> String {
    let pairs: Vec<String> = at
        .into_iter()
        .map(|(x, y)| format!("{},{}", N(x), N(y)))
        .collect();
    pairs.join(" ")
}

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
    let nice = [1.0, 2.0, 2.5, 5.0].into_iter().find(|&n| norm <= n);
    nice.unwrap_or(10.0) * magnitude
}

/// Ticks at multiples of `step` from `min` to `max` inclusive.
fn ticks(min: f64, max: f64, step: f64) -> Vec<f64> {
    let first = (min / step).ceil() as i64;
    let last = (max / step + 1e-9).floor() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

/// A tick label with as many decimals as the step needs.
fn tick_label(value: f64, step: f64) -> String {
    let decimals = (-step.log10()).ceil().max(0.0) as usize;
    format!("{value:.decimals$}")
}

/// Where a rectangle goes: its top left corner and its size.
#[derive(Debug, Clone, Copy)]
struct Rect {
    x: f64,
    y: f64,
    width: f64,
    height: f64,
}

/// A `<rect>` at `at`, `style` after the geometry.
fn rect(svg: &mut SvgWriter, at: Rect, style: &Attrs<'_>) {
    let place: &Attrs<'_> = &[
        ("x", &N(at.x)),
        ("y", &N(at.y)),
        ("width", &N(at.width)),
        ("height", &N(at.height)),
    ];
    svg.leaf("rect", &[place, style]);
}

/// The marker of subject `index` centred at `at`: circle, square, triangle
/// or diamond; hollow (white fill) when `hollow`.
fn marker(svg: &mut SvgWriter, index: usize, at: (f64, f64), colour: &str, hollow: bool) {
    let (x, y) = at;
    // The circle's and the square's half width; the triangle's and the
    // diamond's reach from the centre.
    let (r, d) = (4.5, 5.5);
    let fill = if hollow { "#ffffff" } else { colour };
    let style: &Attrs<'_> = &[("fill", &fill), ("stroke", &colour), ("stroke-width", &1.5)];
    match index % 4 {
        0 => {
            let centre: &Attrs<'_> = &[("cx", &N(x)), ("cy", &N(y)), ("r", &N(r))];
            svg.leaf("circle", &[centre, style]);
        }
        1 => {
            let square = Rect {
                x: x - r,
                y: y - r,
                width: 2.0 * r,
                height: 2.0 * r,
            };
            rect(svg, square, style);
        }
        2 => {
            let corners = points([(x, y - d), (x + r + 0.5, y + r), (x - r - 0.5, y + r)]);
            svg.leaf("polygon", &[&[("points", &corners)], style]);
        }
        _ => {
            let corners = points([(x, y - d), (x + d, y), (x, y + d), (x - d, y)]);
            svg.leaf("polygon", &[&[("points", &corners)], style]);
        }
    }
}

/// Median racing-call latency of a point, in milliseconds.
fn latency_ms(point: &PointReport) -> Option<f64> {
    let latency = point.summary.median_racing_latency;
    latency.map(|d| d.as_secs_f64() * 1000.0)
}

/// The tooltip of a point.
fn tooltip(point: &PointReport) -> String {
    let latency = latency_ms(point).map_or_else(|| "n/a".to_owned(), |ms| format!("{ms:.1} ms"));
    let (s, t) = (&point.summary, &point.summary.tally);
    let failures: Vec<String> = t
        .failure_kinds()
        .map(|failed| format!("{} {}", failed.runs, failed.kind))
        .to_vec();
    format!(
        "{}, delay {} ms, offset {} ms: {}/{} ok, {}; median latency {latency}; conns after {}",
        point.subject,
        point.delay_ms,
        point.offset_ms,
        t.ok,
        s.runs,
        failures.join(", "),
        s.conns_after
    )
}

/// One panel: what it plots and how its y axis reads.
struct Panel {
    top: f64,
    class: &'static str,
    title: &'static str,
    y_title: &'static str,
    value: fn(&PointReport) -> Option<f64>,
    /// The top of the y axis; `None`: the largest value, rounded up.
    full: Option<f64>,
    y_suffix: &'static str,
}

/// The panels, top to bottom.
const PANELS: [Panel; 2] = [
    Panel {
        top: TOP1,
        class: "success",
        title: "Racing calls answered successfully",
        y_title: "racing calls ok (%)",
        value: |p| p.success_rate.map(|r| r * 100.0),
        full: Some(100.0),
        y_suffix: "%",
    },
    Panel {
        top: TOP2,
        class: "latency",
        title: "Median racing-call latency",
        y_title: "median latency (ms)",
        value: latency_ms,
        full: None,
        y_suffix: "",
    },
];

/// The layout both panels share: the offset axis and the production column.
struct Chart<'a> {
    report: &'a SweepReport,
    x: Scale,
    x_step: f64,
    /// The centre of the production column, when there is one.
    prod_x: Option<f64>,
}

impl Chart<'_> {
    /// Draws one panel: frame, grid, ticks, axis titles, window, delay
    /// marker and one series per subject.
    fn panel(&self, svg: &mut SvgWriter, spec: &Panel) {
        let area = self.area(spec);
        svg.open("g", &[("class", &format!("panel {}", spec.class))]);
        svg.label((LEFT, area.top - 22.0), 14, BOLD, AXIS, spec.title);
        self.frame(svg, &area);
        y_grid(svg, spec, &area);
        self.x_ticks(svg, &area);
        self.production_column(svg, &area);
        self.delay_marker(svg, &area);
        y_title(svg, spec, &area);
        for (index, subject) in self.report.subjects.iter().enumerate() {
            self.series(svg, spec, &area, index, &subject.label);
        }
        svg.close();
    }

    /// Where `spec` is drawn, and its y axis: from 0 to its full value (or
    /// the largest, rounded up to a tick).
    fn area(&self, spec: &Panel) -> PanelArea {
        let top = spec.top;
        let bottom = top + PANEL_HEIGHT;
        let values = self.report.points.iter().filter_map(spec.value);
        let full = spec.full.unwrap_or_else(|| values.fold(0.0, f64::max));
        let y_step = nice_step(full.max(1.0), 5.0);
        let y_max = ((full / y_step).ceil() * y_step).max(y_step);
        PanelArea {
            top,
            bottom,
            y: Scale {
                d0: 0.0,
                d1: y_max,
                p0: bottom,
                p1: top,
            },
            y_max,
            y_step,
        }
    }

    /// The panel's white frame, and the reconnect window shaded from the
    /// first offset to the reconnect delay.
    fn frame(&self, svg: &mut SvgWriter, area: &PanelArea) {
        let delay_ms = self.report.config.delay_ms as f64;
        let frame: &Attrs<'_> = &[("fill", &"#ffffff"), ("stroke", &AXIS)];
        rect(
            svg,
            Rect {
                x: LEFT,
                y: area.top,
                width: RIGHT - LEFT,
                height: PANEL_HEIGHT,
            },
            frame,
        );
        if delay_ms > self.x.d0 {
            let (x0, x1) = (self.x.at(self.x.d0), self.x.at(delay_ms));
            let window = [&[("class", &"window" as &dyn Display)], WINDOW].concat();
            rect(
                svg,
                Rect {
                    x: x0,
                    y: area.top,
                    width: x1 - x0,
                    height: PANEL_HEIGHT,
                },
                &window,
            );
        }
    }

    /// The offset axis's ticks and their labels under the panel.
    fn x_ticks(&self, svg: &mut SvgWriter, area: &PanelArea) {
        let bottom = area.bottom;
        for value in ticks(self.x.d0, self.x.d1, self.x_step) {
            let px = self.x.at(value);
            svg.line((px, bottom), (px, bottom + 5.0), &[("stroke", &AXIS)]);
            let text = tick_label(value, self.x_step);
            svg.label((px, bottom + 18.0), 11, MIDDLE, AXIS, &text);
        }
    }

    /// When there is a production column: its dashed edge and its label.
    fn production_column(&self, svg: &mut SvgWriter, area: &PanelArea) {
        if let Some(prod_x) = self.prod_x {
            let edge = LEFT + PROD_WIDTH + PROD_GAP / 2.0;
            let style: &Attrs<'_> = &[("stroke", &AXIS), ("stroke-dasharray", &"2 3")];
            svg.line((edge, area.top), (edge, area.bottom), style);
            svg.label((prod_x, area.bottom + 18.0), 11, MIDDLE, AXIS, "delay 0");
        }
    }

    /// The vertical line at the reconnect delay, with its label.
    fn delay_marker(&self, svg: &mut SvgWriter, area: &PanelArea) {
        let delay_ms = self.report.config.delay_ms as f64;
        let delay_x = self.x.at(delay_ms);
        let class: &Attrs<'_> = &[("class", &"delay-marker")];
        svg.line(
            (delay_x, area.top),
            (delay_x, area.bottom),
            &[class, DELAY].concat(),
        );
        let text = format!("reconnect delay {} ms", self.report.config.delay_ms);
        svg.label((delay_x, area.top - 5.0), 11, MIDDLE, "#333333", &text);
    }

    /// One subject's series: its line over the offsets with a marker per
    /// point, and its hollow markers in the production column.
    fn series(
        &self,
        svg: &mut SvgWriter,
        spec: &Panel,
        area: &PanelArea,
        index: usize,
        label: &str,
    ) {
        let report = self.report;
        let y = area.y;
        let colour = PALETTE[index % PALETTE.len()];
        svg.open("g", &[("class", &"series"), ("data-subject", &label)]);
        let line: Vec<((f64, f64), &PointReport)> = report
            .points_of(label)
            .filter(|p| !p.production)
            .filter_map(|p| Some(((self.x.at(p.offset_ms as f64), y.at((spec.value)(p)?)), p)))
            .collect();
        let at = points(line.iter().map(|(at, _)| *at));
        let stroke: &Attrs<'_> = &[
            ("class", &"series-line"),
            ("points", &at),
            ("fill", &"none"),
            ("stroke", &colour),
            ("stroke-width", &2),
            ("stroke-linejoin", &"round"),
        ];
        svg.leaf("polyline", &[stroke, dash(index)]);
        for (at, point) in &line {
            point_marker(svg, point, index, *at, false);
        }
        if let Some(prod_x) = self.prod_x {
            let spread = report.subjects.len() as f64 - 1.0;
            let px = prod_x + (index as f64 - spread / 2.0) * 11.0;
            for point in report.points_of(label).filter(|p| p.production) {
                if let Some(value) = (spec.value)(point) {
                    point_marker(svg, point, index, (px, y.at(value)), true);
                }
            }
        }
        svg.close();
    }

    /// Draws the legend at (`x`, `y`).
    fn legend(&self, svg: &mut SvgWriter, x: f64, y: f64) {
        let cfg = &self.report.config;
        let note = |svg: &mut SvgWriter, row: f64, text: &str| {
            svg.label((x + 38.0, row + 4.0), 12, &[], AXIS, text);
        };
        svg.open("g", &[("class", &"legend")]);
        let mut row = y;
        for (index, subject) in self.report.subjects.iter().enumerate() {
            let colour = PALETTE[index % PALETTE.len()];
            svg.open("g", &[("class", &"legend-entry")]);
            svg.text("title", &[], &subject.wrapper);
            let stroke: &Attrs<'_> = &[("stroke", &colour), ("stroke-width", &2)];
            svg.line((x, row), (x + 30.0, row), &[stroke, dash(index)].concat());
            marker(svg, index, (x + 15.0, row), colour, false);
            note(svg, row, &shorten(&subject.label, 30));
            svg.close();
            row += 22.0;
        }
        row += 8.0;
        svg.line((x + 15.0, row - 9.0), (x + 15.0, row + 9.0), DELAY);
        note(svg, row, &format!("reconnect delay ({} ms)", cfg.delay_ms));
        row += 22.0;
        let swatch = [WINDOW, &[("stroke", &GRID)]].concat();
        rect(
            svg,
            Rect {
                x,
                y: row - 7.0,
                width: 30.0,
                height: 14.0,
            },
            &swatch,
        );
        note(svg, row, "reconnect window");
        if self.prod_x.is_some() {
            row += 22.0;
            marker(svg, 0, (x + 15.0, row), AXIS, true);
            note(svg, row, "hollow: delay 0, offset 0");
            row += 16.0;
            note(svg, row, "(no widener: production timing)");
        }
        row += 30.0;
        for line in [
            format!("{} run(s) per point", cfg.runs),
            format!(
                "offsets {}-{} ms, step {} ms",
                cfg.from_ms, cfg.to_ms, cfg.step_ms
            ),
            format!("seed {}, {} job(s)", cfg.seed, cfg.jobs),
            "hover a marker for its counts".to_owned(),
        ] {
            svg.label((x, row), 11, &[], MUTED, &line);
            row += 16.0;
        }
        svg.close();
    }
}

/// Where a panel is drawn, and its y axis.
struct PanelArea {
    top: f64,
    bottom: f64,
    y: Scale,
    /// The axis's top value.
    y_max: f64,
    /// The value between two grid lines.
    y_step: f64,
}

/// The panel's horizontal grid lines, each labelled with its value.
fn y_grid(svg: &mut SvgWriter, spec: &Panel, area: &PanelArea) {
    for value in ticks(0.0, area.y_max, area.y_step) {
        let py = area.y.at(value);
        svg.line((LEFT, py), (RIGHT, py), &[("stroke", &GRID)]);
        let text = format!("{}{}", tick_label(value, area.y_step), spec.y_suffix);
        let end: &Attrs<'_> = &[("text-anchor", &"end")];
        svg.label((LEFT - 8.0, py + 4.0), 11, end, AXIS, &text);
    }
}

/// The y axis's title, turned to read upwards beside the panel.
fn y_title(svg: &mut SvgWriter, spec: &Panel, area: &PanelArea) {
    let mid = area.top + PANEL_HEIGHT / 2.0;
    let rotate = format!("rotate(-90 22 {})", N(mid));
    let turned = [MIDDLE, &[("transform", &rotate)]].concat();
    svg.label((22.0, mid), 12, &turned, AXIS, spec.y_title);
}

/// A point's marker with its tooltip: hollow in the production column.
fn point_marker(
    svg: &mut SvgWriter,
    point: &PointReport,
    index: usize,
    at: (f64, f64),
    hollow: bool,
) {
    let class = if hollow { "point production" } else { "point" };
    svg.open("g", &[("class", &class)]);
    svg.text("title", &[], &tooltip(point));
    marker(svg, index, at, PALETTE[index % PALETTE.len()], hollow);
    svg.close();
}

/// The chart of `report` as a complete SVG document.
pub(super) fn chart(report: &SweepReport) -> String {
    let cfg = &report.config;
    let production = report.points.iter().any(|p| p.production);
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
    let chart = Chart {
        report,
        x: Scale {
            d0,
            d1,
            p0: x_start,
            p1: RIGHT - 16.0,
        },
        x_step: nice_step(d1 - d0, 8.0),
        prod_x: production.then_some(LEFT + PROD_WIDTH / 2.0),
    };

    let mut svg = SvgWriter::new(WIDTH, HEIGHT);
    svg.text(
        "title",
        &[],
        "V3-05 race window: racing call outcome against its offset after the DROP",
    );
    let background: &Attrs<'_> = &[("width", &N(WIDTH)), ("height", &N(HEIGHT))];
    svg.leaf("rect", &[background, &[("fill", &"#fafafa")]]);
    let title = "V3-05 race window: the racing call against its offset after the DROP";
    svg.label((LEFT, 30.0), 18, BOLD, "#222222", title);
    let mut subtitle = format!(
        "reconnect delay (IAI_MCP_RECONNECT_TEST_DELAY_MS) {} ms; {} of {} runs",
        cfg.delay_ms, report.runs_done, report.runs_planned
    );
    if report.partial {
        subtitle.push_str(" - PARTIAL: the sweep was interrupted");
    }
    let fill = if report.partial { "#B00020" } else { MUTED };
    svg.label((LEFT, 52.0), 12, &[], fill, &subtitle);
    for panel in &PANELS {
        chart.panel(&mut svg, panel);
    }
    let at = ((x_start + RIGHT) / 2.0, TOP2 + PANEL_HEIGHT + 44.0);
    let text = "offset of the racing call after the DROP (ms)";
    svg.label(at, 12, MIDDLE, AXIS, text);
    chart.legend(&mut svg, RIGHT + 28.0, TOP1 + 8.0);
    svg.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::sweep::results::tests::sample_report;

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
        for (value, text) in [(12.0, "12"), (12.345, "12.35"), (-0.001, "0"), (0.5, "0.5")] {
            assert_eq!(N(value).to_string(), text);
        }
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
    fn chart_is_well_formed_with_a_line_per_subject_and_panel() {
        let mut report = sample_report();
        let label = "fixed <&> 'quoted' \"label\"";
        report.subjects[1].label = label.to_owned();
        for point in report.points.iter_mut().filter(|p| p.subject == "fixed") {
            point.subject = label.to_owned();
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
        // Markup in a label survives as an attribute and as text.
        let nodes = || parsed.descendants();
        assert!(nodes().any(|n| n.attribute("data-subject") == Some(label)));
        assert!(nodes().any(|n| n.has_tag_name("text") && n.text() == Some(label)));
        assert!(doc.contains("PARTIAL"));
    }
}
