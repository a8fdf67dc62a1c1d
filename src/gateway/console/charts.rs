//! The charts page: calls per second, p50 and p99 latency, and errors by kind over the last
//! [`WINDOW_SECS`] seconds, drawn as SVG by plotters from a per-second series the call log
//! keeps ([`Series`]).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use plotters::prelude::*;

use super::render::{Chrome, page};
use super::session::Session;
use crate::gateway::Gateway;

/// How far back the charts look: 5 minutes.
pub const WINDOW_SECS: u64 = 300;

/// The most latencies kept for one second (the percentiles of a busier second are those of its
/// first calls).
const LATENCIES_PER_SECOND: usize = 2000;

/// One second's calls.
#[derive(Default)]
struct Second {
    at: u64,
    calls: u64,
    latencies_ms: Vec<f64>,
    errors: BTreeMap<String, u64>,
}

/// One second of the window: (seconds ago, calls, p50 ms, p99 ms).
type Point = (i64, u64, Option<f64>, Option<f64>);

/// One line of a chart: its label, its color, its points (seconds ago, value).
type Line<'a> = (&'a str, RGBColor, Vec<(i64, f64)>);

/// Calls per second of the last [`WINDOW_SECS`] seconds.
#[derive(Default)]
pub(crate) struct Series {
    seconds: Mutex<VecDeque<Second>>,
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Series {
    /// Counts one call that ended now with `outcome` after `latency_ms`.
    pub(crate) fn add(&self, outcome: &str, latency_ms: f64) {
        self.add_at(now_secs(), outcome, latency_ms);
    }

    fn add_at(&self, at: u64, outcome: &str, latency_ms: f64) {
        let mut seconds = self.seconds.lock().unwrap_or_else(|e| e.into_inner());
        while seconds.front().is_some_and(|s| s.at + WINDOW_SECS <= at) {
            seconds.pop_front();
        }
        if seconds.back().is_none_or(|s| s.at < at) {
            seconds.push_back(Second {
                at,
                ..Second::default()
            });
        }
        // A clock that stepped back counts in the latest second.
        let Some(second) = seconds.back_mut() else {
            return;
        };
        second.calls += 1;
        if second.latencies_ms.len() < LATENCIES_PER_SECOND {
            second.latencies_ms.push(latency_ms);
        }
        if outcome != "ok" {
            *second.errors.entry(outcome.to_string()).or_default() += 1;
        }
    }

    /// Per second of the window ending at `now` (oldest first, seconds without calls too):
    /// (seconds ago, calls, p50 ms, p99 ms); and the errors by kind over the window.
    fn summary(&self, now: u64) -> (Vec<Point>, BTreeMap<String, u64>) {
        let seconds = self.seconds.lock().unwrap_or_else(|e| e.into_inner());
        let mut errors = BTreeMap::new();
        let mut by_second = BTreeMap::new();
        for s in seconds.iter().filter(|s| s.at + WINDOW_SECS > now) {
            for (kind, n) in &s.errors {
                *errors.entry(kind.clone()).or_default() += n;
            }
            let mut sorted = s.latencies_ms.clone();
            sorted.sort_by(f64::total_cmp);
            by_second.insert(
                s.at,
                (s.calls, percentile(&sorted, 0.5), percentile(&sorted, 0.99)),
            );
        }
        let points = (0..WINDOW_SECS)
            .rev()
            .map(|ago| {
                let at = now.saturating_sub(ago);
                let (calls, p50, p99) = by_second.get(&at).copied().unwrap_or((0, None, None));
                (-(ago as i64), calls, p50, p99)
            })
            .collect();
        (points, errors)
    }
}

/// The `q` quantile of sorted values (nearest rank).
fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

/// An SVG chart of `lines` (label, color, points (seconds ago, value)) against time, or the
/// reason it could not be drawn.
fn line_chart(title: &str, unit: &str, lines: &[Line<'_>]) -> String {
    let mut svg = String::new();
    let top = lines
        .iter()
        .flat_map(|(_, _, points)| points.iter().map(|(_, v)| *v))
        .fold(1.0_f64, f64::max)
        * 1.1;
    let drawn = (|| -> Result<(), Box<dyn std::error::Error + '_>> {
        let root = SVGBackend::with_string(&mut svg, (720, 260)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(28)
            .y_label_area_size(48)
            .build_cartesian_2d(-(WINDOW_SECS as i64)..0_i64, 0.0..top)?;
        chart
            .configure_mesh()
            .x_desc("seconds ago")
            .y_desc(unit)
            .x_label_formatter(&|x| format!("{}", -x))
            .draw()?;
        for (label, color, points) in lines {
            let color = *color;
            chart
                .draw_series(LineSeries::new(
                    points.iter().copied(),
                    color.stroke_width(2),
                ))?
                .label(*label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
        }
        if lines.len() > 1 {
            chart
                .configure_series_labels()
                .border_style(BLACK)
                .background_style(WHITE)
                .draw()?;
        }
        root.present()?;
        Ok(())
    })();
    match drawn {
        Ok(()) => svg,
        Err(e) => format!("<p class=\"error\">the chart could not be drawn: {e}</p>"),
    }
}

#[derive(Template)]
#[template(path = "charts.html", config = "src/gateway/console/askama.toml")]
struct Charts {
    chrome: Option<Chrome>,
    window: u64,
    calls_svg: String,
    latency_svg: String,
    total: u64,
    errors: Vec<(String, u64)>,
}

/// `GET /console/charts`.
pub(crate) async fn page_get(State(gateway): State<Gateway>, session: Session) -> Response {
    let (points, errors) = gateway.console().log.series.summary(now_secs());
    let calls: Vec<(i64, f64)> = points.iter().map(|p| (p.0, p.1 as f64)).collect();
    let p50: Vec<(i64, f64)> = points.iter().filter_map(|p| Some((p.0, p.2?))).collect();
    let p99: Vec<(i64, f64)> = points.iter().filter_map(|p| Some((p.0, p.3?))).collect();
    page(
        &Charts {
            chrome: Some(Chrome::new(&session, "charts")),
            window: WINDOW_SECS,
            calls_svg: line_chart("Calls per second", "calls/s", &[("calls/s", BLUE, calls)]),
            latency_svg: line_chart(
                "Latency per second",
                "ms",
                &[("p50", GREEN, p50), ("p99", RED, p99)],
            ),
            total: points.iter().map(|p| p.1).sum(),
            errors: errors.into_iter().collect(),
        },
        StatusCode::OK,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_series_counts_calls_per_second_and_forgets_the_old_ones() {
        let series = Series::default();
        for (at, outcome, ms) in [
            (1000, "ok", 10.0),
            (1000, "ok", 30.0),
            (1000, "timeout", 90.0),
            (1001, "ok", 5.0),
        ] {
            series.add_at(at, outcome, ms);
        }
        let (points, errors) = series.summary(1001);
        assert_eq!(points.len(), WINDOW_SECS as usize);
        assert_eq!(points.last().unwrap(), &(0, 1, Some(5.0), Some(5.0)));
        assert_eq!(points[points.len() - 2], (-1, 3, Some(30.0), Some(90.0)));
        assert_eq!(errors.get("timeout"), Some(&1));
        // 400 s later the first seconds are out of the window.
        series.add_at(1400, "rate_limited", 1.0);
        let (points, errors) = series.summary(1400);
        assert_eq!(points.iter().map(|p| p.1).sum::<u64>(), 1);
        assert_eq!(
            errors.into_iter().collect::<Vec<_>>(),
            [("rate_limited".to_string(), 1)]
        );
    }

    #[test]
    fn a_chart_is_an_svg_document() {
        let svg = line_chart(
            "Calls",
            "calls/s",
            &[("calls/s", BLUE, vec![(-2, 1.0), (0, 3.0)])],
        );
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.contains("Calls"), "{svg}");
    }
}
