//! The example's tools: ordinary Rust functions marked `#[tool]`.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolgate::{State, ToolContext, ToolError, tool};

/// A temperature unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Degrees Celsius.
    Celsius,
    /// Degrees Fahrenheit.
    Fahrenheit,
}

/// The weather stations the forecasts come from (shared state).
#[derive(Debug)]
pub struct Stations {
    /// Mean temperature per city, in °C.
    pub mean_celsius: BTreeMap<String, f64>,
}

impl Stations {
    /// A few cities with made-up climates.
    pub fn demo() -> Self {
        let mean_celsius = [
            ("oslo", 6.0),
            ("lisbon", 17.5),
            ("cairo", 22.0),
            ("reykjavik", 4.5),
        ]
        .into_iter()
        .map(|(c, t)| (c.to_string(), t))
        .collect();
        Self { mean_celsius }
    }
}

/// One day of a forecast.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Day {
    /// Days from today (0 = today).
    pub offset: u8,
    /// Expected temperature in the requested unit.
    pub temperature: f64,
    /// Sky condition.
    pub sky: String,
}

/// A forecast for one city.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Forecast {
    /// The city, as asked.
    pub city: String,
    /// The unit of every temperature.
    pub unit: Unit,
    /// One entry per day.
    pub days: Vec<Day>,
}

/// Why a forecast failed.
#[derive(Debug)]
pub enum WeatherError {
    /// No station for the city.
    UnknownCity(String),
}

impl From<WeatherError> for ToolError {
    fn from(e: WeatherError) -> Self {
        match e {
            WeatherError::UnknownCity(c) => ToolError::new(
                toolgate::ErrorKind::NotFound,
                format!(
                    "no weather station for `{c}`; known cities: oslo, lisbon, cairo, reykjavik"
                ),
            ),
        }
    }
}

fn to_unit(celsius: f64, unit: Unit) -> f64 {
    match unit {
        Unit::Celsius => celsius,
        Unit::Fahrenheit => celsius * 9.0 / 5.0 + 32.0,
    }
}

/// Forecast the weather of a city for the next days.
///
/// Temperatures are daily means from the local weather stations.
#[tool(read_only, tags = ["weather"], version = "1.0.0")]
pub fn forecast(
    State(stations): State<Stations>,
    /// City name, e.g. "Oslo" (case-insensitive).
    city: String,
    /// How many days, 1 to 7.
    #[tool(default = 3)]
    days: u8,
    /// Unit of the temperatures (default celsius).
    unit: Option<Unit>,
) -> Result<Forecast, WeatherError> {
    let mean = *stations
        .mean_celsius
        .get(&city.to_lowercase())
        .ok_or_else(|| WeatherError::UnknownCity(city.clone()))?;
    let unit = unit.unwrap_or(Unit::Celsius);
    let days = (0..days.clamp(1, 7))
        .map(|offset| Day {
            offset,
            temperature: to_unit(mean + f64::from(offset % 3) - 1.0, unit),
            sky: ["sunny", "cloudy", "rain"][usize::from(offset) % 3].to_string(),
        })
        .collect();
    Ok(Forecast { city, unit, days })
}

/// Convert a temperature between Celsius and Fahrenheit.
#[tool(read_only, idempotent)]
pub fn convert_temperature(
    /// The temperature to convert.
    value: f64,
    /// Its unit.
    from: Unit,
    /// The unit wanted.
    to: Unit,
) -> f64 {
    let celsius = match from {
        Unit::Celsius => value,
        Unit::Fahrenheit => (value - 32.0) * 5.0 / 9.0,
    };
    to_unit(celsius, to)
}

/// Arguments of `plan_trip`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TripArgs {
    /// Where the trip starts.
    pub from: String,
    /// The destination.
    pub to: String,
}

/// Compare the weather at both ends of a trip and suggest what to pack.
///
/// Calls `forecast` for each city through the toolset, under the caller's identity.
#[tool]
pub async fn plan_trip(ctx: &ToolContext, args: TripArgs) -> Result<String, ToolError> {
    let mut lines = Vec::new();
    for city in [&args.from, &args.to] {
        let out = ctx
            .call_tool("forecast", json!({ "city": city, "days": 1 }))
            .await?;
        let temp = out
            .structured
            .as_ref()
            .and_then(|s| s["days"][0]["temperature"].as_f64())
            .ok_or_else(|| ToolError::internal("forecast returned no temperature"))?;
        lines.push((city.clone(), temp));
    }
    let (from_t, to_t) = (lines[0].1, lines[1].1);
    let advice = if to_t < from_t - 5.0 {
        "pack warm clothes"
    } else if to_t > from_t + 5.0 {
        "pack light clothes"
    } else {
        "pack as at home"
    };
    Ok(format!(
        "{} {from_t:.1}°C -> {} {to_t:.1}°C: {advice}",
        lines[0].0, lines[1].0
    ))
}

/// The notes saved by the agent (shared state).
#[derive(Debug, Default)]
pub struct Notebook {
    notes: Mutex<Vec<Note>>,
}

/// A saved note.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Note {
    /// Its title.
    pub title: String,
    /// Its text.
    pub body: String,
    /// Who saved it (the caller of the tool call).
    pub saved_by: Option<String>,
}

/// Save a note for later.
#[tool(tags = ["notes"])]
pub fn save_note(
    ctx: &ToolContext,
    State(book): State<Notebook>,
    /// A short title.
    title: String,
    /// The note's text.
    body: String,
) -> String {
    let mut notes = book
        .notes
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    notes.push(Note {
        title: title.clone(),
        body,
        saved_by: ctx.caller().map(str::to_owned),
    });
    format!("saved note `{title}` ({} notes in total)", notes.len())
}

/// List every saved note.
#[tool(read_only)]
pub fn list_notes(State(book): State<Notebook>) -> Vec<Note> {
    book.notes
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

/// Produce a report slowly.
#[tool(timeout = "2s")]
pub async fn slow_report(
    ctx: &ToolContext,
    /// How many seconds the report takes.
    seconds: u64,
) -> Result<String, ToolError> {
    for step in 0..seconds {
        ctx.progress()
            .report(step as f64, Some(seconds as f64), Some("writing"));
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
            () = ctx.cancellation().cancelled() => return Err(ToolError::cancelled("slow_report")),
        }
    }
    Ok(format!("report done after {seconds} s"))
}
