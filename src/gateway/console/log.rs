//! The live call log: the last [`CAPACITY`] calls made through the gateway (every front:
//! MCP, REST, the console's own form), without their arguments, and a broadcast of each new
//! one for the console's SSE stream.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::broadcast;
use toolgate_runtime::policy::CallReport;
use toolgate_runtime::{ToolError, ToolOutput};

use crate::gateway::Caller;

/// How many calls the log keeps.
pub const CAPACITY: usize = 200;

/// One call as the log shows it. Its arguments and result are never kept.
#[derive(Debug, Clone, Serialize)]
pub struct CallRecord {
    /// Counts up from 1 in the order calls ended.
    pub id: u64,
    /// When the call ended (RFC 3339, UTC, milliseconds).
    pub time: String,
    /// The caller's name (`anonymous` without one).
    pub caller: String,
    /// The tool, as the caller named it.
    pub tool: String,
    /// `ok`, `tool_error` (the tool reported a failure), or the error's kind
    /// (`permission_denied`, `timeout`, ...).
    pub outcome: String,
    /// How long the call took, in milliseconds.
    pub latency_ms: f64,
    /// What it cost, in the budget's unit (`None` when nothing was charged).
    pub cost: Option<f64>,
    /// How many times it was tried again.
    pub retries: u32,
    /// Whether the result came from the cache.
    pub cache_hit: bool,
}

/// The log (see the module docs).
pub(crate) struct CallLog {
    /// Calls per second, for the charts.
    pub(crate) series: super::charts::Series,
    recent: Mutex<VecDeque<Arc<CallRecord>>>,
    next_id: AtomicU64,
    sender: broadcast::Sender<Arc<CallRecord>>,
}

impl Default for CallLog {
    fn default() -> Self {
        Self {
            series: super::charts::Series::default(),
            recent: Mutex::new(VecDeque::with_capacity(CAPACITY)),
            next_id: AtomicU64::new(1),
            sender: broadcast::channel(256).0,
        }
    }
}

impl CallLog {
    /// Records one call that ended with `result` after `elapsed`.
    pub(crate) fn record(
        &self,
        caller: &Caller,
        tool: &str,
        result: &Result<ToolOutput, ToolError>,
        elapsed: Duration,
        report: &CallReport,
    ) {
        let outcome = match result {
            Ok(out) if out.is_error => "tool_error".to_string(),
            Ok(_) => "ok".to_string(),
            Err(e) => e.kind().as_str().to_string(),
        };
        let cost_micros = report.cost_micros.load(Ordering::Relaxed);
        let record = Arc::new(CallRecord {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            time: jiff::Timestamp::now()
                .round(jiff::Unit::Millisecond)
                .unwrap_or_else(|_| jiff::Timestamp::now())
                .to_string(),
            caller: caller
                .name
                .clone()
                .unwrap_or_else(|| "anonymous".to_string()),
            tool: tool.to_string(),
            outcome,
            latency_ms: (elapsed.as_secs_f64() * 10_000.0).round() / 10.0,
            cost: (cost_micros > 0).then(|| cost_micros as f64 / 1_000_000.0),
            retries: report.retries(),
            cache_hit: report.cache_hit(),
        });
        self.series.add(&record.outcome, record.latency_ms);
        {
            let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
            if recent.len() == CAPACITY {
                recent.pop_front();
            }
            recent.push_back(Arc::clone(&record));
        }
        // No receiver (nobody watching) is not an error.
        let _ = self.sender.send(record);
    }

    /// The calls kept, newest first.
    pub(crate) fn recent(&self) -> Vec<Arc<CallRecord>> {
        let recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        recent.iter().rev().cloned().collect()
    }

    /// Every call recorded from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Arc<CallRecord>> {
        self.sender.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_keeps_the_last_calls_newest_first_and_tells_subscribers() {
        let log = CallLog::default();
        let mut rx = log.subscribe();
        let caller = Caller {
            name: Some("ann".into()),
            ..Caller::default()
        };
        let report = CallReport::default();
        report.retries.store(2, Ordering::Relaxed);
        report.cost_micros.store(10_000, Ordering::Relaxed);
        for i in 0..CAPACITY + 5 {
            let result = if i % 2 == 0 {
                Ok(ToolOutput::text("x"))
            } else {
                Err(ToolError::not_found("t"))
            };
            log.record(
                &caller,
                "calc",
                &result,
                Duration::from_micros(1500),
                &report,
            );
        }
        let recent = log.recent();
        assert_eq!(recent.len(), CAPACITY);
        assert_eq!(recent[0].id, (CAPACITY + 5) as u64);
        assert_eq!(recent[0].outcome, "ok");
        assert_eq!(recent[1].outcome, "not_found");
        assert_eq!(recent[0].caller, "ann");
        assert_eq!(recent[0].latency_ms, 1.5);
        assert_eq!(recent[0].cost, Some(0.01));
        assert_eq!(recent[0].retries, 2);
        assert_eq!(rx.try_recv().unwrap().id, 1);
    }
}
