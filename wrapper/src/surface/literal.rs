//! Reading the values of top-level declarations out of a JavaScript bundle,
//! without running it.
//!
//! An iai-mcp release keeps its tool surface in its bundled Node wrapper as
//! plain data: `var NAME = <literal>;` at the top level of the bundle, the
//! literals built from strings, numbers, booleans, `null`, arrays, objects
//! (keys unquoted or quoted), spreads of other declarations (`[...NAMES]`),
//! references to other declarations, `+` between strings and
//! `JSON.stringify(...)` of such a value. [`Declarations::value`] reads that
//! subset of JavaScript into a [`Value`], and nothing else: a declaration
//! built any other way (a function call, a template literal, arithmetic) is
//! a [`LiteralError`], never a guess.
//!
//! Outside bytes: every loop consumes input, recursion is bounded by
//! [`MAX_DEPTH`], references cannot run in a circle (they count towards the
//! same bound) and are at most [`MAX_REFERENCES`] per value, and a
//! declaration that is not there, or there twice, is an error.

use std::collections::HashMap;

use serde_json::{Map, Number, Value};

/// How deeply literals and references may nest (the releases' tool
/// definitions nest about ten levels).
pub const MAX_DEPTH: usize = 64;

/// Why a declaration's value could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LiteralError {
    /// No top-level declaration of that name.
    #[error("no declaration of {0}")]
    Missing(String),
    /// More than one top-level declaration of that name.
    #[error("{0} is declared more than once")]
    Ambiguous(String),
    /// The text at `offset` is not part of the subset read here.
    #[error("{what} at byte {offset}")]
    Unexpected {
        /// What was found, or expected.
        what: String,
        /// Where, from the start of the bundle.
        offset: usize,
    },
    /// Literals or references nest deeper than [`MAX_DEPTH`] (or refer to
    /// each other in a circle).
    #[error("nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// The value refers to other declarations more than
    /// [`MAX_REFERENCES`] times.
    #[error("more than {MAX_REFERENCES} references to other declarations")]
    TooManyReferences,
}

/// How many references to other declarations one value may make (the
/// releases' make three): with each literal's size bounded by the bundle,
/// what one value can amount to stays bounded too.
pub const MAX_REFERENCES: usize = 32;

/// Where a top-level declaration's value starts, or that there are several.
#[derive(Debug, Clone, Copy)]
enum Place {
    At(usize),
    Several,
}

/// A bundle's text, whose top-level declarations can be read.
#[derive(Debug, Clone)]
pub struct Declarations<'a> {
    text: &'a str,
    /// Every top-level declaration by name, found in one pass.
    places: HashMap<&'a str, Place>,
}

impl<'a> Declarations<'a> {
    /// The declarations of `text` (a whole bundle): every line that starts
    /// with `var NAME = `, `let NAME = ` or `const NAME = `.
    pub fn new(text: &'a str) -> Self {
        let mut places = HashMap::new();
        let mut line = 0;
        while line < text.len() {
            let end = text[line..].find('\n').map_or(text.len(), |n| line + n);
            if let Some((name, value)) = declaration(&text[line..end]) {
                places
                    .entry(name)
                    .and_modify(|place| *place = Place::Several)
                    .or_insert(Place::At(line + value));
            }
            line = end + 1;
        }
        Declarations { text, places }
    }

    /// The value of the top-level declaration `name`.
    pub fn value(&self, name: &str) -> Result<Value, LiteralError> {
        let mut reader = Reader {
            declarations: self,
            at: 0,
            depth: 0,
            references: 0,
        };
        reader.declared(name)
    }

    /// The body of the top-level function `name` (from just after its `{`
    /// to its closing `}` alone on a line, as esbuild writes it), for the
    /// few checks made on code rather than data.
    pub fn function_body(&self, name: &str) -> Result<&'a str, LiteralError> {
        let head = format!("\nfunction {name}(");
        let mut found = self.text.match_indices(&head);
        let (start, _) = found
            .next()
            .ok_or_else(|| LiteralError::Missing(name.to_owned()))?;
        if found.next().is_some() {
            return Err(LiteralError::Ambiguous(name.to_owned()));
        }
        let open = self.text[start..]
            .find('{')
            .ok_or_else(|| LiteralError::Missing(name.to_owned()))?;
        let body = &self.text[start + open + 1..];
        let end = body.find("\n}").unwrap_or(body.len());
        Ok(&body[..end])
    }
}

/// The name declared by one line and where its value starts in the line,
/// if the line is a declaration.
fn declaration(line: &str) -> Option<(&str, usize)> {
    let rest = ["var ", "let ", "const "]
        .iter()
        .find_map(|keyword| line.strip_prefix(keyword))?;
    let length = rest.bytes().take_while(|&b| is_identifier_byte(b)).count();
    if length == 0 || !is_identifier_start(rest.as_bytes()[0]) {
        return None;
    }
    let value = rest[length..].strip_prefix(" = ")?;
    Some((&rest[..length], line.len() - value.len()))
}

/// A cursor over the bundle, reading one value.
struct Reader<'d, 'a> {
    declarations: &'d Declarations<'a>,
    at: usize,
    /// Literals and references open around the cursor.
    depth: usize,
    /// References followed so far.
    references: usize,
}

impl Reader<'_, '_> {
    /// The value of the declaration `name`, the cursor left where it was.
    fn declared(&mut self, name: &str) -> Result<Value, LiteralError> {
        let start = match self.declarations.places.get(name) {
            Some(Place::At(start)) => *start,
            Some(Place::Several) => return Err(LiteralError::Ambiguous(name.to_owned())),
            None => return Err(LiteralError::Missing(name.to_owned())),
        };
        self.references += 1;
        if self.references > MAX_REFERENCES {
            return Err(LiteralError::TooManyReferences);
        }
        self.descend()?;
        let back = std::mem::replace(&mut self.at, start);
        let value = self.expression().and_then(|value| {
            self.skip_blank();
            match self.peek() {
                None | Some(b';') | Some(b'\n') => Ok(value),
                Some(_) => Err(self.unexpected("the end of the declaration")),
            }
        });
        self.at = back;
        self.depth -= 1;
        value
    }

    fn bytes(&self) -> &[u8] {
        self.declarations.text.as_bytes()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.at).copied()
    }

    fn unexpected(&self, expected: &str) -> LiteralError {
        let found = match self.peek() {
            None => "the end of the bundle".to_owned(),
            Some(byte) if byte.is_ascii_graphic() => format!("{:?}", char::from(byte)),
            Some(byte) => format!("byte 0x{byte:02x}"),
        };
        LiteralError::Unexpected {
            what: format!("expected {expected}, found {found}"),
            offset: self.at,
        }
    }

    /// Skips spaces, tabs, carriage returns and comments, but not line
    /// breaks (which may end a declaration).
    fn skip_blank(&mut self) {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\r') => self.at += 1,
                Some(b'/') if self.bytes().get(self.at + 1) == Some(&b'/') => {
                    while !matches!(self.peek(), None | Some(b'\n')) {
                        self.at += 1;
                    }
                }
                Some(b'/') if self.bytes().get(self.at + 1) == Some(&b'*') => {
                    match self.declarations.text[self.at + 2..].find("*/") {
                        Some(end) => self.at += 2 + end + 2,
                        None => self.at = self.bytes().len(),
                    }
                }
                _ => return,
            }
        }
    }

    /// Skips blanks and line breaks.
    fn skip_space(&mut self) {
        loop {
            self.skip_blank();
            if self.peek() == Some(b'\n') {
                self.at += 1;
            } else {
                return;
            }
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.skip_space();
        if self.peek() == Some(byte) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, byte: u8) -> Result<(), LiteralError> {
        if self.eat(byte) {
            Ok(())
        } else {
            Err(self.unexpected(&format!("{:?}", char::from(byte))))
        }
    }

    /// One level deeper, or [`LiteralError::TooDeep`].
    fn descend(&mut self) -> Result<(), LiteralError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            Err(LiteralError::TooDeep)
        } else {
            Ok(())
        }
    }

    /// `term ('+' term)*`, where `+` joins strings only.
    fn expression(&mut self) -> Result<Value, LiteralError> {
        let first = self.term()?;
        let mut joined = match first {
            Value::String(text) => text,
            other => {
                self.skip_space();
                if self.peek() == Some(b'+') {
                    return Err(self.unexpected("no `+` after a value that is not a string"));
                }
                return Ok(other);
            }
        };
        while self.eat(b'+') {
            match self.term()? {
                Value::String(text) => joined.push_str(&text),
                _ => return Err(self.unexpected("a string after `+`")),
            }
        }
        Ok(Value::String(joined))
    }

    fn term(&mut self) -> Result<Value, LiteralError> {
        self.skip_space();
        match self.peek() {
            Some(b'"' | b'\'') => self.string().map(Value::String),
            Some(b'0'..=b'9' | b'-' | b'.') => self.number(),
            Some(b'{') => {
                self.descend()?;
                let object = self.object();
                self.depth -= 1;
                object
            }
            Some(b'[') => {
                self.descend()?;
                let array = self.array();
                self.depth -= 1;
                array
            }
            Some(byte) if is_identifier_start(byte) => self.word(),
            _ => Err(self.unexpected("a value")),
        }
    }

    /// `true`, `false`, `null`, `JSON.stringify(expression)`, or the name
    /// of another top-level declaration.
    fn word(&mut self) -> Result<Value, LiteralError> {
        let name = self.identifier();
        match name {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            "null" => Ok(Value::Null),
            "JSON" => {
                let at = self.at;
                if self.declarations.text[at..].starts_with(".stringify") {
                    self.at += ".stringify".len();
                    self.expect(b'(')?;
                    self.descend()?;
                    let value = self.expression()?;
                    self.depth -= 1;
                    self.expect(b')')?;
                    Ok(Value::String(stringify(&value)))
                } else {
                    Err(self.unexpected("`.stringify` after `JSON`"))
                }
            }
            _ => {
                let name = name.to_owned();
                self.declared(&name)
            }
        }
    }

    fn identifier(&mut self) -> &str {
        let start = self.at;
        while self.peek().is_some_and(is_identifier_byte) {
            self.at += 1;
        }
        &self.declarations.text[start..self.at]
    }

    /// `{ key: expression, ... }`, keys unquoted or quoted, an optional
    /// trailing comma; members keep their order.
    fn object(&mut self) -> Result<Value, LiteralError> {
        self.expect(b'{')?;
        let mut members = Map::new();
        loop {
            if self.eat(b'}') {
                return Ok(Value::Object(members));
            }
            self.skip_space();
            let key = match self.peek() {
                Some(b'"' | b'\'') => self.string()?,
                Some(byte) if is_identifier_start(byte) => self.identifier().to_owned(),
                _ => return Err(self.unexpected("a property name")),
            };
            self.expect(b':')?;
            let value = self.expression()?;
            members.insert(key, value);
            if !self.eat(b',') {
                self.expect(b'}')?;
                return Ok(Value::Object(members));
            }
        }
    }

    /// `[ element, ... ]`, an element being an expression or `...` and an
    /// expression whose value is an array; an optional trailing comma.
    fn array(&mut self) -> Result<Value, LiteralError> {
        self.expect(b'[')?;
        let mut items = Vec::new();
        loop {
            if self.eat(b']') {
                return Ok(Value::Array(items));
            }
            self.skip_space();
            if self.declarations.text[self.at..].starts_with("...") {
                self.at += 3;
                match self.expression()? {
                    Value::Array(spread) => items.extend(spread),
                    _ => return Err(self.unexpected("an array after `...`")),
                }
            } else {
                items.push(self.expression()?);
            }
            if !self.eat(b',') {
                self.expect(b']')?;
                return Ok(Value::Array(items));
            }
        }
    }

    /// A decimal number (`-` allowed in front, as the unary minus):
    /// integral values within a double's exact range as integers (`3e4` is
    /// `30000`, as JavaScript writes it), others as doubles.
    fn number(&mut self) -> Result<Value, LiteralError> {
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E'))
            || (matches!(self.peek(), Some(b'+' | b'-'))
                && matches!(self.bytes()[self.at - 1], b'e' | b'E'))
        {
            self.at += 1;
        }
        let text = &self.declarations.text[start..self.at];
        let number: f64 = text.parse().map_err(|_| LiteralError::Unexpected {
            what: format!("expected a number, found {text:?}"),
            offset: start,
        })?;
        const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
        if number.fract() == 0.0 && number.abs() <= EXACT {
            // Exact: the value is an integer a double holds exactly.
            Ok(Value::from(number as i64))
        } else {
            Number::from_f64(number)
                .map(Value::Number)
                .ok_or(LiteralError::Unexpected {
                    what: format!("expected a finite number, found {text:?}"),
                    offset: start,
                })
        }
    }

    /// A string literal in single or double quotes, its escapes decoded.
    fn string(&mut self) -> Result<String, LiteralError> {
        let quote = self.peek().unwrap_or(b'"');
        let start = self.at;
        self.at += 1;
        let mut text = String::new();
        loop {
            let rest = &self.declarations.text[self.at..];
            let Some(stop) = rest.find(|c| c == char::from(quote) || c == '\\' || c == '\n') else {
                self.at = self.bytes().len();
                return Err(LiteralError::Unexpected {
                    what: "a string that does not end".to_owned(),
                    offset: start,
                });
            };
            text.push_str(&rest[..stop]);
            self.at += stop;
            match self.peek() {
                Some(b'\\') => {
                    self.at += 1;
                    self.escape(&mut text)?;
                }
                Some(b'\n') => return Err(self.unexpected("the string's closing quote")),
                _ => {
                    self.at += 1;
                    return Ok(text);
                }
            }
        }
    }

    /// One escape, just after its backslash, appended to `text`.
    fn escape(&mut self, text: &mut String) -> Result<(), LiteralError> {
        let Some(c) = self.declarations.text[self.at..].chars().next() else {
            return Err(self.unexpected("an escape"));
        };
        self.at += c.len_utf8();
        match c {
            'n' => text.push('\n'),
            't' => text.push('\t'),
            'r' => text.push('\r'),
            'b' => text.push('\u{8}'),
            'f' => text.push('\u{c}'),
            'v' => text.push('\u{b}'),
            '0' if !self.peek().is_some_and(|b| b.is_ascii_digit()) => text.push('\0'),
            'x' => {
                let code = self.hex(2)?;
                text.push(char::from_u32(code).ok_or_else(|| self.unexpected("a character"))?);
            }
            'u' => {
                let code = self.code_unit()?;
                let c = match code {
                    0xD800..=0xDBFF => {
                        // A pair's low half must follow: a lone half is no
                        // character a Rust string (or a strict client) has.
                        if !self.declarations.text[self.at..].starts_with("\\u") {
                            return Err(self.unexpected("the low half of a surrogate pair"));
                        }
                        self.at += 2;
                        let low = self.code_unit()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return Err(self.unexpected("the low half of a surrogate pair"));
                        }
                        char::from_u32(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00))
                    }
                    _ => char::from_u32(code),
                };
                text.push(c.ok_or_else(|| self.unexpected("a character, not half of one"))?);
            }
            // A line continuation: nothing.
            '\n' => {}
            '\r' => {
                if self.peek() == Some(b'\n') {
                    self.at += 1;
                }
            }
            '1'..='9' => return Err(self.unexpected("no octal escape")),
            // Any other escaped character is itself (`\"`, `\\`, `\/`).
            other => text.push(other),
        }
        Ok(())
    }

    /// The code of `\uXXXX` or `\u{X...}`, just after the `u`.
    fn code_unit(&mut self) -> Result<u32, LiteralError> {
        if self.peek() == Some(b'{') {
            self.at += 1;
            let start = self.at;
            while self.peek().is_some_and(|b| b.is_ascii_hexdigit()) && self.at - start < 6 {
                self.at += 1;
            }
            let code = u32::from_str_radix(&self.declarations.text[start..self.at], 16)
                .map_err(|_| self.unexpected("hexadecimal digits"))?;
            self.expect(b'}')?;
            Ok(code)
        } else {
            self.hex(4)
        }
    }

    /// Exactly `digits` hexadecimal digits.
    fn hex(&mut self, digits: usize) -> Result<u32, LiteralError> {
        let end = self.at + digits;
        let text = self
            .declarations
            .text
            .get(self.at..end)
            .filter(|t| t.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| self.unexpected(&format!("{digits} hexadecimal digits")))?;
        let code = u32::from_str_radix(text, 16).map_err(|_| self.unexpected("hexadecimal"))?;
        self.at = end;
        Ok(code)
    }
}

fn is_identifier_start(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || byte == b'_' || byte == b'$'
}

fn is_identifier_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'$'
}

/// `JSON.stringify` of a value read here: compact, members in order,
/// characters as themselves but for `"`, `\` and control characters.
fn stringify(value: &Value) -> String {
    // A `Value` always serialises.
    serde_json::to_string(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn value(text: &str, name: &str) -> Result<Value, LiteralError> {
        Declarations::new(text).value(name)
    }

    #[test]
    fn literals_of_every_kind() {
        let bundle = concat!(
            "// a comment\n",
            "import { x } from \"y\";\n",
            "var LIST = [\n  \"a\",\n  'b\\'s',\n  \"caf\\u00e9 \\u2014 \\ud83d\\ude00\"\n];\n",
            "var CONFIG = {\n  type: \"t\",\n  \"quoted key\": -1.5,\n  value: 3e4,\n  on: true,\n  off: false,\n  none: null,\n  nested: { deep: [1, 2e3, 0.25] }\n};\n",
        );
        assert_eq!(value(bundle, "LIST"), Ok(json!(["a", "b's", "café — 😀"])));
        assert_eq!(
            value(bundle, "CONFIG"),
            Ok(json!({
                "type": "t", "quoted key": -1.5, "value": 30000, "on": true,
                "off": false, "none": null, "nested": {"deep": [1, 2000, 0.25]}
            }))
        );
        let text = serde_json::to_string(&value(bundle, "CONFIG").expect("read")).expect("json");
        assert!(text.starts_with(r#"{"type":"t","quoted key":-1.5,"value":30000,"#));
    }

    #[test]
    fn references_spreads_joins_and_stringify() {
        let bundle = concat!(
            "var NAMES = [\"a\", \"b\"];\n",
            "var HOT = [...NAMES];\n",
            "var CFG = {\n  n: 3e4\n};\n",
            "var TEXT = \"Line one.\\n\\nconfig: \" + JSON.stringify({\n  cfg: CFG,\n  hot: HOT\n});\n",
            "function f() {\n  return 1;\n}\n",
        );
        assert_eq!(value(bundle, "HOT"), Ok(json!(["a", "b"])));
        assert_eq!(
            value(bundle, "TEXT"),
            Ok(json!(
                "Line one.\n\nconfig: {\"cfg\":{\"n\":30000},\"hot\":[\"a\",\"b\"]}"
            ))
        );
        assert_eq!(
            Declarations::new(bundle).function_body("f").map(str::trim),
            Ok("return 1;")
        );
    }

    #[test]
    fn what_is_not_data_is_refused() {
        for (bundle, name) in [
            ("var A = f();\n", "A"),
            ("var A = `template`;\n", "A"),
            ("var A = 1 + 2;\n", "A"),
            ("var A = \"x\" + 1;\n", "A"),
            ("var A = { b };\n", "A"),
            ("var A = [...\"s\"];\n", "A"),
            ("var A = \"open\n\";\n", "A"),
            ("var A = \"never closed", "A"),
            ("var A = \"\\ud800\";\n", "A"),
            ("var A = \"\\1\";\n", "A"),
            ("var A = JSON.parse(\"1\");\n", "A"),
            ("var A = [1 2];\n", "A"),
            ("var A = 1e999;\n", "A"),
            ("var A = B;\nvar B = A;\n", "A"),
            ("var A = {\n", "A"),
            ("var A = [", "A"),
            ("var A = ", "A"),
            ("var A = 1 2;\n", "A"),
        ] {
            assert!(value(bundle, name).is_err(), "{bundle:?} read as data");
        }
        assert_eq!(
            value("var A = 1;\nvar A = 2;\n", "A"),
            Err(LiteralError::Ambiguous("A".into()))
        );
        assert_eq!(
            value("  var A = 1;\n", "A"),
            Err(LiteralError::Missing("A".into())),
            "only declarations at the start of a line are top-level"
        );
        assert!(matches!(
            value("var A = B;\nvar B = A;\n", "A"),
            Err(LiteralError::TooDeep | LiteralError::TooManyReferences)
        ));
        let blowup = "var A = [1];\nvar B = [...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A, ...A];\n";
        assert_eq!(value(blowup, "B"), Err(LiteralError::TooManyReferences));
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = format!("var A = {}1{};\n", "[".repeat(200), "]".repeat(200));
        assert_eq!(value(&deep, "A"), Err(LiteralError::TooDeep));
        let fine = format!("var A = {}1{};\n", "[".repeat(20), "]".repeat(20));
        assert!(value(&fine, "A").is_ok());
    }
}
