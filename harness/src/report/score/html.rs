//! The scorecard as one self-contained HTML page, to attach to a pull
//! request: inline style, no script, no external resource.

use std::fmt::Write;

use devkit::format::escape_markup as escape;

use crate::score::{Cell, Scorecard};

/// The page.
pub fn page(card: &Scorecard) -> String {
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>iai-mcp wrapper scorecard</title><style>\
         body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}\
         table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:4px 8px;vertical-align:top}\
         th{background:#f4f4f4;text-align:left}.pass{background:#e6f4e6}.fail{background:#fbe3e3}\
         .none{color:#999}.kind{color:#666;font-size:12px}small{color:#555;display:block}\
         </style></head><body>\n<h1>iai-mcp wrapper scorecard</h1>\n\
         <p>Contract properties hold for any correct wrapper; policy properties are this \
         workspace's choices. A failure names its cause; each cell gives the figure behind it.</p>\n\
         <table>\n<tr><th>property</th><th>kind</th>",
    );
    for subject in &card.subjects {
        let _ = write!(out, "<th>{}</th>", escape(subject));
    }
    out.push_str("</tr>\n");
    for row in &card.rows {
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"kind\">{}</td>",
            escape(row.title),
            row.kind.label()
        );
        for cell in &row.cells {
            out.push_str(&cell_html(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n<h2>Verdicts</h2>\n<ul>\n");
    for line in card.verdicts() {
        let _ = writeln!(out, "<li>{}</li>", escape(&line));
    }
    out.push_str("</ul>\n<h2>Scenario runs</h2>\n<table>\n<tr><th>scenario</th><th>subject</th><th>seconds</th><th>checks failed</th><th>error</th></tr>\n");
    for run in &card.runs {
        let failed = run.checks.iter().filter(|c| !c.held()).count();
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{:.1}</td><td>{failed}/{}</td><td>{}</td></tr>",
            escape(&run.scenario),
            escape(&run.subject),
            run.seconds,
            run.checks.len(),
            escape(run.error.as_deref().unwrap_or(""))
        );
    }
    out.push_str("</table>\n</body></html>\n");
    out
}

fn cell_html(cell: &Cell) -> String {
    let class = match (cell.checks, cell.failure) {
        (0, _) => "none",
        (_, None) => "pass",
        (_, Some(_)) => "fail",
    };
    format!(
        "<td class=\"{class}\">{}<small>{}</small></td>",
        escape(&cell.verdict()),
        escape(&cell.figure)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::property::{Cause, Check, Prop};
    use crate::score::ScenarioRun;

    #[test]
    fn the_page_is_self_contained_and_escapes_what_it_shows() {
        let run = ScenarioRun {
            scenario: "race".into(),
            subject: "node <dist>".into(),
            checks: vec![Check {
                prop: Prop::OneConnection,
                failure: Some(Cause::Leak),
                figure: "2 daemon connection(s) at the end".into(),
            }],
            error: None,
            seconds: 1.0,
        };
        let card = Scorecard::from_runs(vec!["node <dist>".into()], vec![run]);
        let page = page(&card);
        assert!(page.contains("node &lt;dist&gt;"));
        assert!(page.contains("FAIL (leak)"));
        assert!(!page.contains("<script") && !page.contains("http"));
    }
}
