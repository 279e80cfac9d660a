//! Plain-text tables for people.

/// How [`table_lines`] aligns its columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// The first column left, the others right (figures).
    FirstLeft,
    /// Every column left, trailing spaces trimmed (text).
    Left,
}

/// A plain-text table for people: the header line, a rule (`---|---`), then
/// a line per row; columns as wide as their widest cell (but the last of a
/// [`Align::Left`] table), separated by ` | `.
pub fn table_lines<R, S>(header: &[&str], rows: &[R], align: Align) -> Vec<String>
where
    R: AsRef<[S]>,
    S: AsRef<str>,
{
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .map(|r| r.as_ref()[i].as_ref().len())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let text = cells
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, w))| {
                if i == 0 || align == Align::Left {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect::<Vec<_>>()
            .join(" | ");
        match align {
            Align::FirstLeft => text,
            Align::Left => text.trim_end().to_owned(),
        }
    };
    let mut lines = vec![
        line(&mut header.iter().copied()),
        // A text table's last column is ragged: its rule stops at its header.
        widths
            .iter()
            .enumerate()
            .map(|(i, w)| match align {
                Align::Left if i + 1 == widths.len() => "-".repeat(header[i].len()),
                _ => "-".repeat(*w),
            })
            .collect::<Vec<_>>()
            .join("-|-"),
    ];
    lines.extend(
        rows.iter()
            .map(|r| line(&mut r.as_ref().iter().map(AsRef::as_ref))),
    );
    lines
}
