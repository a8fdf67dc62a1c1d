//! Whole numbers in request bodies and query strings, as JSON Schema 2020-12 defines an
//! `integer` (section 6.1.1 of its validation vocabulary: "any number with a zero fractional
//! part"): `5`, `5.0` and `5e3` are integers, `5.5` is not.
//!
//! serde reads `234.0` into a `u64` as an error, so the REST API would refuse what its own
//! OpenAPI document allows; the fields below are read with [`whole`] instead. The document
//! gives them `format: int64` (OpenAPI 3.1 section 4.2, data types): a value above
//! 9223372036854775807 is refused, whatever the field's own bound.

use serde::Deserializer;
use serde::de::{self, Visitor};

/// The longest deadline a request may set (`timeout_ms` of `POST /tools/{name}/call` and of
/// `POST /calls`), in milliseconds: one day. A longer one is a 400, not a deadline that never
/// comes.
pub const MAX_TIMEOUT_MS: u64 = 86_400_000;

/// Reads an optional whole number from a JSON body: a JSON integer, or a JSON number with a
/// zero fractional part. `null` is `None`.
///
/// # Errors
/// A negative number, one with a fractional part, or a value that is not a number (a string
/// `"5"` too: the body's schema says `integer`), each named.
pub(crate) fn whole<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    d.deserialize_any(Whole { text: false })
}

/// [`whole`] for a query string, where every value is text: `5`, `5.0`, `5e3`.
///
/// # Errors
/// As [`whole`], and text that is not a number.
pub(crate) fn whole_in_query<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    d.deserialize_any(Whole { text: true })
}

/// The largest whole number of `format: int64`.
const INT64_MAX: u64 = i64::MAX.unsigned_abs();

fn too_large<E: de::Error>(v: impl std::fmt::Display) -> E {
    E::custom(format!(
        "{v} is too large: at most {INT64_MAX} (a 64-bit integer) is accepted"
    ))
}

/// `text`: whether the number may come as text (a query string's values).
#[derive(Clone, Copy)]
struct Whole {
    text: bool,
}

impl<'de> Visitor<'de> for Whole {
    type Value = Option<u64>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a whole number at least 0 (JSON Schema `integer`: 5 or 5.0)")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        if v > INT64_MAX {
            return Err(too_large(v));
        }
        Ok(Some(v))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Self::Value, E> {
        match u64::try_from(v) {
            Ok(v) => self.visit_u64(v),
            Err(_) => Err(too_large(v)),
        }
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        u64::try_from(v).map(Some).map_err(|_| {
            E::custom(format!(
                "{v} is negative; a whole number at least 0 is expected"
            ))
        })
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Self::Value, E> {
        if v < 0 {
            return Err(E::custom(format!(
                "{v} is negative; a whole number at least 0 is expected"
            )));
        }
        self.visit_u128(v.unsigned_abs())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        if !v.is_finite() || v.fract() != 0.0 {
            return Err(E::custom(format!("{v} is not a whole number")));
        }
        if v < 0.0 {
            return Err(E::custom(format!(
                "{v} is negative; a whole number at least 0 is expected"
            )));
        }
        // 2^63 is the first f64 past int64; below it, `as` is exact for a whole number.
        if v >= 9_223_372_036_854_775_808.0 {
            return Err(too_large(v));
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Ok(Some(v as u64))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        if !self.text {
            return Err(E::invalid_type(de::Unexpected::Str(v), &self));
        }
        let text = v.trim();
        if let Ok(n) = text.parse::<u128>() {
            return self.visit_u128(n);
        }
        if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(too_large(text));
        }
        match text.parse::<f64>() {
            Ok(f) => self.visit_f64(f),
            Err(_) => Err(E::custom(format!("`{v}` is not a whole number"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    struct Body {
        #[serde(default, deserialize_with = "whole")]
        n: Option<u64>,
    }

    #[derive(Debug, Deserialize)]
    struct Query {
        #[serde(default, deserialize_with = "whole_in_query")]
        n: Option<u64>,
    }

    fn json(text: &str) -> Result<Option<u64>, String> {
        serde_json::from_str::<Body>(text)
            .map(|b| b.n)
            .map_err(|e| e.to_string())
    }

    fn query(text: &str) -> Result<Option<u64>, String> {
        let uri: axum::http::Uri = format!("/x?{text}").parse().expect("a URI");
        axum::extract::Query::<Query>::try_from_uri(&uri)
            .map(|q| q.0.n)
            .map_err(|e| e.body_text())
    }

    #[test]
    fn integers_in_json_are_whole_numbers_with_or_without_a_fraction_of_zero() {
        assert_eq!(json(r#"{"n": 234}"#), Ok(Some(234)));
        assert_eq!(json(r#"{"n": 234.0}"#), Ok(Some(234)));
        assert_eq!(json(r#"{"n": 2e3}"#), Ok(Some(2000)));
        assert_eq!(json(r#"{"n": null}"#), Ok(None));
        assert_eq!(json("{}"), Ok(None));
        assert_eq!(
            json(r#"{"n": 9223372036854775807}"#),
            Ok(Some(9_223_372_036_854_775_807))
        );
        for (bad, says) in [
            (r#"{"n": 9223372036854775808}"#, "too large"),
            (r#"{"n": 18446744073709551616}"#, "too large"),
            (r#"{"n": 1e300}"#, "too large"),
            (r#"{"n": 2.5}"#, "2.5 is not a whole number"),
            (r#"{"n": -1}"#, "-1 is negative"),
            (r#"{"n": -1.0}"#, "is negative"),
            (r#"{"n": "5"}"#, "a whole number"),
            (r#"{"n": true}"#, "a whole number"),
        ] {
            let e = json(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn integers_in_a_query_string_are_read_from_their_text() {
        assert_eq!(query("n=5000"), Ok(Some(5000)));
        assert_eq!(query("n=5000.0"), Ok(Some(5000)));
        assert_eq!(query(""), Ok(None));
        for (bad, says) in [
            ("n=99999999999999999999999999999999999999999", "too large"),
            ("n=9223372036854775808", "too large"),
            ("n=abc", "`abc` is not a whole number"),
            ("n=1.5", "not a whole number"),
            ("n=-3", "is negative"),
            ("n=", "`` is not a whole number"),
        ] {
            let e = query(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
