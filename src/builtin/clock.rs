//! `clock`: the current date and time in an IANA time zone.
//!
//! Built on `jiff`: time zones come from the system's `/usr/share/zoneinfo` when it exists and
//! from the copy of the IANA Time Zone Database bundled into the binary (`tzdb-bundle-always`)
//! otherwise, so the tool works in minimal containers too.

use jiff::{Timestamp, ZonedDateTime, tz::TimeZone};
use serde::{Deserialize, Serialize};

/// Arguments of `clock`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClockArgs {
    /// IANA time zone name, e.g. "Europe/Paris", "America/New_York", "Asia/Tokyo" or "UTC".
    /// Defaults to "UTC" when omitted. Abbreviations such as "CET" or "PST" are not zone names.
    #[serde(default)]
    pub time_zone: Option<String>,
}

/// The current date and time, as seen in one time zone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClockResult {
    /// The time zone used, e.g. "Europe/Paris".
    pub time_zone: String,
    /// The local date and time as RFC 3339 / ISO 8601 with milliseconds and UTC offset,
    /// e.g. "2025-03-14T15:09:26.535+01:00".
    pub iso8601: String,
    /// Milliseconds since the Unix epoch (1970-01-01T00:00:00Z); the same in every time zone.
    pub unix_ms: i64,
    /// Offset of the local time from UTC at this instant, as "+HH:MM" or "-HH:MM"
    /// (daylight saving time included), e.g. "+01:00".
    pub utc_offset: String,
    /// Local day of the week in English, e.g. "Friday".
    pub weekday: String,
}

/// Why `clock` failed.
#[derive(Debug, thiserror::Error)]
pub enum ClockError {
    /// The time zone name is not in the IANA Time Zone Database.
    #[error(
        "unknown time zone {name:?}: use an IANA name such as \"UTC\", \"Europe/Paris\" or \"America/New_York\""
    )]
    UnknownTimeZone {
        /// The name as given.
        name: String,
    },
}

/// The current time in `args.time_zone` (default UTC).
pub fn clock(args: ClockArgs) -> Result<ClockResult, ClockError> {
    clock_at(args, Timestamp::now())
}

/// Like [`clock`], at a given instant instead of now (deterministic, for tests and replays).
pub fn clock_at(args: ClockArgs, now: Timestamp) -> Result<ClockResult, ClockError> {
    let name = args.time_zone.unwrap_or_else(|| "UTC".to_owned());
    let name = name.trim();
    let tz = lookup(name)?;
    let time_zone = tz.iana_name().unwrap_or(name).to_owned();
    let zoned = now.to_zoned_datetime(tz);
    Ok(ClockResult {
        time_zone,
        iso8601: zoned.strftime("%Y-%m-%dT%H:%M:%S%.3f%:z").to_string(),
        unix_ms: now.as_millisecond(),
        utc_offset: zoned.strftime("%:z").to_string(),
        weekday: weekday(&zoned).to_owned(),
    })
}

fn lookup(name: &str) -> Result<TimeZone, ClockError> {
    let unknown = || ClockError::UnknownTimeZone {
        name: name.to_owned(),
    };
    // IANA names are short ASCII identifiers; refuse anything else before the lookup.
    let plausible = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/_+-".contains(&b))
        && !name.starts_with('/')
        && !name.split('/').any(|part| part.is_empty() || part == "..");
    if !plausible {
        return Err(unknown());
    }
    TimeZone::get(name).map_err(|_| unknown())
}

fn weekday(zoned: &ZonedDateTime) -> &'static str {
    use jiff::civil::Weekday::*;
    match zoned.weekday() {
        Monday => "Monday",
        Tuesday => "Tuesday",
        Wednesday => "Wednesday",
        Thursday => "Thursday",
        Friday => "Friday",
        Saturday => "Saturday",
        Sunday => "Sunday",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(tz: Option<&str>, ts: &str) -> Result<ClockResult, ClockError> {
        let args = ClockArgs {
            time_zone: tz.map(str::to_owned),
        };
        clock_at(args, ts.parse().unwrap())
    }

    #[test]
    fn defaults_to_utc() {
        let r = at(None, "2025-03-14T15:09:26.535Z").unwrap();
        assert_eq!(r.time_zone, "UTC");
        assert_eq!(r.iso8601, "2025-03-14T15:09:26.535+00:00");
        assert_eq!(r.unix_ms, 1_741_964_966_535);
        assert_eq!(r.utc_offset, "+00:00");
        assert_eq!(r.weekday, "Friday");
    }

    #[test]
    fn zones_and_daylight_saving() {
        let winter = at(Some("Europe/Paris"), "2025-01-15T23:30:00Z").unwrap();
        assert_eq!(winter.iso8601, "2025-01-16T00:30:00.000+01:00");
        assert_eq!(winter.utc_offset, "+01:00");
        assert_eq!(winter.weekday, "Thursday");
        let summer = at(Some("Europe/Paris"), "2025-07-15T12:00:00Z").unwrap();
        assert_eq!(summer.utc_offset, "+02:00");
        let ny = at(Some("America/New_York"), "2025-07-15T02:00:00Z").unwrap();
        assert_eq!(ny.iso8601, "2025-07-14T22:00:00.000-04:00");
        assert_eq!(ny.weekday, "Monday");
        assert_eq!(ny.unix_ms, 1_752_544_800_000);
        let kolkata = at(Some("Asia/Kolkata"), "2025-07-15T00:00:00Z").unwrap();
        assert_eq!(kolkata.utc_offset, "+05:30");
    }

    #[test]
    fn now_is_now() {
        let before = Timestamp::now().as_millisecond();
        let r = clock(ClockArgs::default()).unwrap();
        let after = Timestamp::now().as_millisecond();
        assert!(before <= r.unix_ms && r.unix_ms <= after);
    }

    #[test]
    fn unknown_zones_are_named() {
        for bad in [
            "Mars/Olympus_Mons",
            "",
            "../../etc/passwd",
            "/etc/localtime",
            "Europe//Paris",
            "x".repeat(200).as_str(),
        ] {
            let err = at(Some(bad), "2025-01-01T00:00:00Z").unwrap_err();
            let ClockError::UnknownTimeZone { name } = &err;
            assert_eq!(name, bad);
            assert!(err.to_string().contains("unknown time zone"), "{err}");
        }
    }

    #[test]
    fn bundled_database_has_zones() {
        // The bundled copy is the fallback on machines without /usr/share/zoneinfo.
        let db = jiff::tz::TimeZoneDatabase::bundled();
        assert!(db.get("Europe/Paris").is_ok());
        assert!(db.get("Australia/Lord_Howe").is_ok());
    }

    #[test]
    fn args_schema_and_strictness() {
        let args: ClockArgs = serde_json::from_str("{}").unwrap();
        assert_eq!(args.time_zone, None);
        assert!(serde_json::from_str::<ClockArgs>(r#"{"tz":"UTC"}"#).is_err());
        let schema = serde_json::to_value(schemars::schema_for!(ClockArgs)).unwrap();
        let desc = schema["properties"]["time_zone"]["description"].as_str();
        assert!(desc.unwrap().contains("IANA"));
    }
}
