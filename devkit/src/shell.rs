//! Command lines split into words as a shell splits them, without
//! expansions: how the harness reads a `--wrapper-cmd` and
//! `IAI_WRAPPER_RUNNER`, and what a command line written for it must
//! survive.

/// A command line that ends inside a quote or an escape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unterminated {what} in {line:?}")]
pub struct Unterminated {
    /// What was left open: `single quote`, `double quote`, `backslash
    /// escape`.
    pub what: &'static str,
    /// The whole line.
    pub line: String,
}

/// A leading `NAME=value` word, as a shell reads it before the program:
/// the name and the value, when the name is one a shell accepts.
pub fn env_assignment(word: &str) -> Option<(&str, &str)> {
    let (name, value) = word.split_once('=')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    let valid = (first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then_some((name, value))
}

/// The words of `line`: split on whitespace; single quotes keep everything
/// literally, double quotes keep everything but `\"` and `\\`, and a
/// backslash outside quotes escapes the next character.
pub fn split_words(line: &str) -> Result<Vec<String>, Unterminated> {
    let unterminated = |what: &'static str| Unterminated {
        what,
        line: line.to_owned(),
    };
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c.is_whitespace() {
            words.extend(word.take());
            continue;
        }
        let word = word.get_or_insert_with(String::new);
        match c {
            '\'' => loop {
                match chars.next().ok_or_else(|| unterminated("single quote"))? {
                    '\'' => break,
                    c => word.push(c),
                }
            },
            '"' => loop {
                match chars.next().ok_or_else(|| unterminated("double quote"))? {
                    '"' => break,
                    '\\' => {
                        let c = chars.next().ok_or_else(|| unterminated("double quote"))?;
                        if !matches!(c, '"' | '\\') {
                            word.push('\\');
                        }
                        word.push(c);
                    }
                    c => word.push(c),
                }
            },
            '\\' => word.push(
                chars
                    .next()
                    .ok_or_else(|| unterminated("backslash escape"))?,
            ),
            c => word.push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        split_words(line).unwrap()
    }

    #[test]
    fn splits_words_with_quotes() {
        assert_eq!(words("node /p/dist/index.js"), ["node", "/p/dist/index.js"]);
        assert_eq!(words("  a   b\tc  "), ["a", "b", "c"]);
        assert_eq!(
            words(r#"a 'b c' "d \"e\" \\ \n" f\ g ''"#),
            ["a", "b c", r#"d "e" \ \n"#, "f g", ""]
        );
        assert_eq!(words("x'y'\"z\""), ["xyz"]);
        assert!(words("").is_empty());
        assert!(split_words("'open").is_err());
        assert!(split_words("\"open").is_err());
        assert!(split_words("trailing\\").is_err());
    }

    #[test]
    fn an_open_quote_is_named_with_its_line() {
        assert_eq!(
            split_words("a 'open").unwrap_err().to_string(),
            r#"unterminated single quote in "a 'open""#
        );
    }
}
