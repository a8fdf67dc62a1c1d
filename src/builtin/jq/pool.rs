//! The parent's pool of worker processes: slots, warm workers, one call from start to end.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::process::{self, Failure, StartLimits, Worker, WorkerCommand};
use super::wire::{self, Request};
use super::{
    JqArgs, JqError, JqResult, JqSettings, MAX_DEPTH, MAX_FILTER_CHARS, MAX_OUTPUT_BYTES,
    MAX_RESULTS,
};

/// A worker whose resident memory is above this after a run is not kept for the next one (its
/// allocator may hold on to pages the run used; a new worker starts small).
const RETIRE_RSS_BYTES: u64 = 64 * 1024 * 1024;

/// Worker processes that run jq filters, at most [`JqSettings::workers`] at once.
///
/// Cheap to create (no process starts before the first call) and to clone (clones share the
/// workers). Dropping the last clone kills the idle workers.
#[derive(Clone)]
pub struct JqPool {
    shared: Arc<Shared>,
}

struct Shared {
    settings: JqSettings,
    /// This pool's own worker command; else the process's ([`process::worker_command`]).
    command: Option<WorkerCommand>,
    busy: AtomicUsize,
    /// Warm workers, most recently used last.
    idle: Mutex<Vec<Worker>>,
}

impl std::fmt::Debug for JqPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JqPool")
            .field("settings", &self.shared.settings)
            .field("busy", &self.shared.busy.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// A slot: one of the [`JqSettings::workers`] filters that may run at once. Freed on drop.
pub(super) struct Slot(Arc<Shared>);

impl Slot {
    fn acquire(shared: &Arc<Shared>) -> Option<Self> {
        let max = shared.settings.workers;
        shared
            .busy
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(Arc::clone(shared)))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

impl JqPool {
    /// A pool under `settings` (see [`JqSettings::validate`]; values out of range are clamped
    /// into it here).
    pub fn new(settings: &JqSettings) -> Self {
        Self::build(settings, None)
    }

    /// A pool under `settings` whose workers are started with `command` (instead of the
    /// process-wide one, see [`set_worker_command`](super::set_worker_command)).
    pub fn with_command(settings: &JqSettings, command: WorkerCommand) -> Self {
        Self::build(settings, Some(command))
    }

    fn build(settings: &JqSettings, command: Option<WorkerCommand>) -> Self {
        let settings = settings.clamped();
        Self {
            shared: Arc::new(Shared {
                settings,
                command,
                busy: AtomicUsize::new(0),
                idle: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The process-wide pool with default settings, used by [`jq`](super::jq).
    pub fn global() -> &'static JqPool {
        static GLOBAL: OnceLock<JqPool> = OnceLock::new();
        GLOBAL.get_or_init(|| JqPool::new(&JqSettings::default()))
    }

    /// The settings in force.
    pub fn settings(&self) -> &JqSettings {
        &self.shared.settings
    }

    /// Filters running now.
    pub fn busy(&self) -> usize {
        self.shared.busy.load(Ordering::Acquire)
    }

    /// Process ids of the idle (warm) workers.
    pub fn idle_pids(&self) -> Vec<u32> {
        self.idle().iter().map(Worker::pid).collect()
    }

    pub(super) fn slot(&self) -> Option<Slot> {
        Slot::acquire(&self.shared)
    }

    /// Runs `args.filter` on `args.input` in a worker. Blocks for at most the timeout (plus
    /// the moment it takes to kill a worker): call it from a blocking context
    /// (`tokio::task::spawn_blocking`) in async code.
    ///
    /// # Errors
    /// Every [`JqError`]; [`JqError::Busy`] at once when all workers are running filters.
    pub fn run(&self, args: JqArgs) -> Result<JqResult, JqError> {
        self.run_cancellable(args, &|| false)
    }

    /// [`run`](Self::run), giving up (and killing the worker) soon after `cancelled()` turns
    /// true: it is asked every 50 ms while the filter runs.
    ///
    /// # Errors
    /// As [`run`](Self::run), and [`JqError::Cancelled`].
    pub fn run_cancellable(
        &self,
        args: JqArgs,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<JqResult, JqError> {
        let JqArgs { filter, input } = args;
        let chars = filter.chars().count();
        if chars > MAX_FILTER_CHARS {
            return Err(JqError::Rejected {
                reason: format!("{chars} characters, more than the limit of {MAX_FILTER_CHARS}"),
            });
        }
        if value_deeper_than(&input, MAX_DEPTH) {
            dispose_value(input);
            return Err(JqError::Rejected {
                reason: format!("the input is nested deeper than {MAX_DEPTH} levels"),
            });
        }
        let settings = &self.shared.settings;
        let timeout = Duration::from_millis(settings.timeout_ms);
        let request = wire::encode(&Request {
            filter,
            input,
            max_results: MAX_RESULTS,
            max_output_bytes: MAX_OUTPUT_BYTES,
            cpu_seconds: settings.timeout_ms.div_ceil(1000) + 1,
            memory_mb: settings.memory_mb,
        })
        .map_err(|e| JqError::Rejected {
            reason: format!("the input cannot be encoded: {e}"),
        })?;
        let _slot = self.slot().ok_or(JqError::Busy)?;
        // One deadline for the whole call, starting a worker included.
        let deadline = Instant::now() + timeout;
        let (mut worker, reused) = match self.take_idle() {
            Some(worker) => (worker, true),
            None => (self.start(deadline, cancelled)?, false),
        };
        let mut outcome = worker.exchange(&request, deadline, cancelled);
        if reused && matches!(outcome, Err(Failure::Ended { sent: false })) {
            // The warm worker had died before it read anything: not this filter's doing.
            drop(worker);
            worker = self.start(deadline, cancelled)?;
            outcome = worker.exchange(&request, deadline, cancelled);
        }
        match outcome {
            Ok(response) => {
                if !response.retire && response.rss_bytes <= RETIRE_RSS_BYTES {
                    self.put_idle(worker);
                }
                response.result
            }
            // Dropping the worker kills it (SIGKILL) and reaps it before the slot is freed.
            Err(Failure::Timeout) => {
                drop(worker);
                Err(JqError::Timeout { timeout })
            }
            Err(Failure::Cancelled) => {
                drop(worker);
                Err(JqError::Cancelled)
            }
            Err(Failure::Ended { .. }) => Err(worker.crash_error(settings.memory_mb, timeout)),
            Err(Failure::Protocol(detail)) => {
                drop(worker);
                Err(JqError::Crashed {
                    detail: format!("the worker broke the protocol: {detail}"),
                })
            }
        }
    }

    fn start(&self, deadline: Instant, cancelled: &dyn Fn() -> bool) -> Result<Worker, JqError> {
        let settings = &self.shared.settings;
        let limits = StartLimits {
            memory_bytes: settings.memory_mb.saturating_mul(1024 * 1024),
            cpu_seconds: settings.timeout_ms.div_ceil(1000) + 10,
        };
        let command = match &self.shared.command {
            Some(command) => command.clone(),
            None => process::worker_command()?,
        };
        Worker::start(&command, limits, deadline, cancelled)
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Worker>> {
        self.shared.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A warm worker that is still alive, if any.
    fn take_idle(&self) -> Option<Worker> {
        loop {
            let mut worker = self.idle().pop()?;
            if !worker.has_ended() {
                return Some(worker);
            }
        }
    }

    fn put_idle(&self, worker: Worker) {
        let mut idle = self.idle();
        if idle.len() < self.shared.settings.workers {
            idle.push(worker);
        }
    }
}

/// Whether `v` has arrays or objects nested more than `limit` levels deep. Without recursion
/// (the value may come from a library caller, with any depth).
fn value_deeper_than(v: &Value, limit: usize) -> bool {
    let mut stack = vec![(v, 0_usize)];
    while let Some((v, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        if depth >= limit {
            return true;
        }
        stack.extend(children.map(|c| (c, depth + 1)));
    }
    false
}

/// Drops `v` without recursion (serde_json's drop recurses once per level).
fn dispose_value(v: Value) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}
