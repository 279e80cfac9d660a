//! Reading JSON objects with serde, exactly: the small pieces both message
//! directions share.
//!
//! serde's derive reads a struct from a JSON array as well as from an
//! object (members by position), and reads `null` as an absent `Option`.
//! Messages on either side of the wrapper must be objects, and a member
//! given as `null` is not a member left out, so every envelope is read
//! through [`read_object`] and marks such members [`present`]. Lines reach
//! these readers as `&str`: [`read_object`] is given text already checked to
//! be UTF-8, so a skipped member can never hide bytes that are not.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// What a JSON text turned out to hold.
#[derive(Debug)]
pub enum Shape<T> {
    /// An object, read as `T`.
    Object(T),
    /// An array (its elements skipped).
    Array,
    /// `null`.
    Null,
    /// A string, number or boolean.
    Scalar,
}

/// Reads `text`, one JSON value, as `T` when it is an object; says what it
/// was otherwise. Errors are the JSON's own (syntax, a member of the wrong
/// type for `T`, a member `T` names given twice) or serde_json's nesting
/// limit, which applies to every value `T` keeps (values it skips are only
/// checked for syntax).
///
/// A text that is not JSON always gives a syntax error, even when reading
/// `T` stopped earlier on a data error (a member given twice before the
/// broken part): "not JSON" comes before "not the right JSON". As for `T`,
/// the names of a top-level object's members must decode (a broken escape
/// in any of them is a syntax error).
pub fn read_object<'a, T: Deserialize<'a>>(text: &'a str) -> serde_json::Result<Shape<T>> {
    serde_json::from_str(text).map_err(|error: serde_json::Error| {
        if !error.is_data() {
            return error;
        }
        match serde_json::from_str::<Shape<Names>>(text) {
            Err(syntax) => syntax,
            Ok(_) => error,
        }
    })
}

/// The names of an object's members, decoded (a broken escape in one is a
/// syntax error, as when a struct reads them), their values skipped.
struct Names;

impl<'de> Deserialize<'de> for Names {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(NamesVisitor)
    }
}

struct NamesVisitor;

impl<'de> Visitor<'de> for NamesVisitor {
    type Value = Names;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Names, A::Error> {
        while members.next_entry::<Cow<'de, str>, IgnoredAny>()?.is_some() {}
        Ok(Names)
    }
}

/// Whether `text` is one JSON value, by the grammar alone (values are
/// checked for syntax, not read: a number too large for any type counts).
pub fn is_json(text: &str) -> bool {
    serde_json::from_str::<IgnoredAny>(text).is_ok()
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Shape<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ShapeVisitor(PhantomData))
    }
}

struct ShapeVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ShapeVisitor<T> {
    type Value = Shape<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, members: A) -> Result<Shape<T>, A::Error> {
        T::deserialize(MapAccessDeserializer::new(members)).map(Shape::Object)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut elements: A) -> Result<Shape<T>, A::Error> {
        while elements.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Shape::Array)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Shape<T>, E> {
        Ok(Shape::Scalar)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Shape<T>, E> {
        Ok(Shape::Scalar)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Shape<T>, E> {
        Ok(Shape::Scalar)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Shape<T>, E> {
        Ok(Shape::Scalar)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Shape<T>, E> {
        Ok(Shape::Scalar)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Shape<T>, E> {
        Ok(Shape::Null)
    }
}

/// For `#[serde(default, deserialize_with = "object")]`: a member that must
/// be an object (read as `T`) or `null` (`None`, as when it is left out).
pub fn object<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    match Shape::<T>::deserialize(deserializer)? {
        Shape::Object(value) => Ok(Some(value)),
        Shape::Null => Ok(None),
        Shape::Array | Shape::Scalar => Err(de::Error::custom("expected an object")),
    }
}

/// For `#[serde(default, deserialize_with = "present")]`: a member that is
/// there is `Some`, `null` included (`"result": null` is a result, `"id":
/// null` an id of the wrong type), and a member left out is `None`.
pub fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// A member that should be a string, as it was given: the string (borrowed
/// from the line unless it had escapes), or a note that it was some other
/// JSON value. Reading it never fails on the value's type, so a message
/// with, say, a numeric `method` can still be answered with its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Text<'a> {
    /// A JSON string.
    Str(Cow<'a, str>),
    /// Any other JSON value.
    NotStr,
}

impl Text<'_> {
    /// The string, when it was one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Text::Str(text) => Some(text),
            Text::NotStr => None,
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(TextVisitor(PhantomData))
    }
}

struct TextVisitor<'a>(PhantomData<Text<'a>>);

impl<'de: 'a, 'a> Visitor<'de> for TextVisitor<'a> {
    type Value = Text<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Text<'a>, E> {
        Ok(Text::Str(Cow::Borrowed(text)))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Text<'a>, E> {
        Ok(Text::Str(Cow::Owned(text.to_owned())))
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<Text<'a>, E> {
        Ok(Text::Str(Cow::Owned(text)))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Text<'a>, E> {
        Ok(Text::NotStr)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Text<'a>, E> {
        Ok(Text::NotStr)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Text<'a>, E> {
        Ok(Text::NotStr)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Text<'a>, E> {
        Ok(Text::NotStr)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Text<'a>, E> {
        Ok(Text::NotStr)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut elements: A) -> Result<Text<'a>, A::Error> {
        while elements.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Text::NotStr)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Text<'a>, A::Error> {
        while members.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Text::NotStr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::Value;
    use serde_json::value::RawValue;

    #[derive(Debug, Deserialize)]
    struct Sample<'a> {
        #[serde(default, borrow)]
        name: Option<Text<'a>>,
        #[serde(default, deserialize_with = "present")]
        id: Option<Value>,
        #[serde(default, borrow)]
        rest: Option<&'a RawValue>,
    }

    fn sample(text: &str) -> Sample<'_> {
        match read_object(text).expect("valid JSON") {
            Shape::Object(sample) => sample,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn a_broken_name_after_a_member_given_twice_is_a_syntax_error() {
        let text = r#"{"id": 1, "id": 2, "rest\ud800": 3}"#;
        let error = read_object::<Sample<'_>>(text).expect_err("broken name");
        assert!(error.is_syntax(), "{error}");
    }

    #[test]
    fn a_text_that_is_not_json_is_a_syntax_error_whatever_comes_first() {
        // `id` given twice stops the typed reading before the broken part.
        let broken = r#"{"id": 1, "id": 2, "rest": {"a": b}}"#;
        let error = read_object::<Sample<'_>>(broken).expect_err("not JSON");
        assert!(error.is_syntax(), "{error}");
        let duplicated = r#"{"id": 1, "id": 2, "rest": {"a": "b"}}"#;
        let error = read_object::<Sample<'_>>(duplicated).expect_err("id twice");
        assert!(error.is_data(), "{error}");
    }

    #[test]
    fn only_objects_are_read_as_structs() {
        assert!(matches!(
            read_object::<Sample<'_>>(r#"["x", 1, null]"#),
            Ok(Shape::Array)
        ));
        assert!(matches!(read_object::<Sample<'_>>("null"), Ok(Shape::Null)));
        for scalar in ["1", "\"x\"", "true", "2.5"] {
            assert!(
                matches!(read_object::<Sample<'_>>(scalar), Ok(Shape::Scalar)),
                "{scalar}"
            );
        }
        let s = sample(r#"{"name":"a","id":7,"other":[1,{"b":2}],"rest":{"k":[1, 2]}}"#);
        assert_eq!(s.name, Some(Text::Str(Cow::Borrowed("a"))));
        assert_eq!(s.id, Some(Value::from(7)));
        assert_eq!(s.rest.map(RawValue::get), Some(r#"{"k":[1, 2]}"#));
    }

    #[test]
    fn null_members_are_present_and_strings_may_be_anything() {
        let s = sample(r#"{"id":null,"name":17}"#);
        assert_eq!(s.id, Some(Value::Null));
        assert_eq!(s.name, Some(Text::NotStr));
        assert!(sample("{}").id.is_none());
        let s = sample(r#"{"name":"tools\/call"}"#);
        assert_eq!(s.name.as_ref().and_then(Text::as_str), Some("tools/call"));
        assert_eq!(sample(r#"{"name":{"a":[1]}}"#).name, Some(Text::NotStr));
    }

    #[test]
    fn a_member_given_twice_is_an_error() {
        assert!(read_object::<Sample<'_>>(r#"{"id":1,"id":2}"#).is_err());
    }

    #[test]
    fn skipped_values_are_checked_for_syntax_but_not_for_depth() {
        let deep = format!(r#"{{"other":{}{}}}"#, "[".repeat(5000), "]".repeat(5000));
        assert!(sample(&deep).id.is_none());
        assert!(read_object::<Sample<'_>>(r#"{"other":[1,}"#).is_err());
        let deep_kept = format!(r#"{{"id":{}{}}}"#, "[".repeat(200), "]".repeat(200));
        assert!(read_object::<Sample<'_>>(&deep_kept).is_err());
    }
}
