//! `toolgate serve`'s hot reload: on SIGHUP, when the file changes with `--watch`, or when the
//! web console's Reload button asks ([`Reloader`]), the tools.yaml is read again and applied
//! while clients stay connected:
//!
//! - `policy:` replaces the running policy ([`toolgate::Toolset::reload_policy`]);
//! - the sources (`tools.mcp`, `tools.a2a`, `tools.openapi`, `tools.overrides`)
//!   and the built-in tools' `settings:` are taken from a toolset built from the new file
//!   ([`toolgate::Toolset::reload_sources`]): an MCP server or A2A agent whose entry did not
//!   change keeps its session (and its process); a changed one gets a new session; an added
//!   one is discovered; a removed one's calls in flight finish before it is closed;
//! - `gateway.api_keys` replaces the keys ([`toolgate::gateway::Gateway::reload_api_keys`]).
//!
//! A file that does not load, a section that does not compile, or one that drops a guardrail
//! a virtual server names, is refused with its error and the running configuration stays
//! whole (everything is checked before anything is applied). Other changes (the rest of
//! `gateway:`, `store:`, `state:`, `tools.skills`) are named in a warning: they need a restart.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use toolgate::gateway::{Gateway, ReloadOutcome};
use toolgate::model::config::{LoadedConfig, ToolsConfig};

use super::config::{Purpose, build, folder_of, load_config};
use super::output;

/// The source id of the skills (`tools.skills`), which a reload keeps as they run.
const SKILLS_SOURCE: &str = "skills";

/// How often `--watch` looks at the file's modification time and size.
const WATCH_INTERVAL: Duration = Duration::from_secs(1);

/// What reloads the configuration of a running `toolgate serve`: on SIGHUP, on a change of
/// the file with `--watch`, and when the web console's Reload button asks
/// ([`Gateway::set_reload_hook`](toolgate::gateway::Gateway::set_reload_hook)). One reload
/// at a time.
pub(super) struct Reloader {
    gateway: Gateway,
    /// The tools.yaml served (`None`: the built-in one, which cannot change).
    file: Option<PathBuf>,
    /// The configuration in force: the one started with, then each applied reload's.
    running: tokio::sync::Mutex<ToolsConfig>,
}

impl Reloader {
    pub(super) fn new(gateway: Gateway, file: Option<PathBuf>, started: ToolsConfig) -> Arc<Self> {
        Arc::new(Self {
            gateway,
            file,
            running: tokio::sync::Mutex::new(started),
        })
    }

    /// One reload: what it said (also written on stderr) and whether it applied the file.
    pub(super) async fn run(&self) -> ReloadOutcome {
        let mut running = self.running.lock().await;
        let mut said = Said::default();
        let applied = reload(&self.gateway, self.file.as_deref(), &running, &mut said).await;
        let outcome = ReloadOutcome {
            applied: applied.is_some(),
            lines: said.lines,
        };
        if let Some(applied) = applied {
            *running = applied;
        }
        outcome
    }

    /// Hands the gateway a hook that runs [`run`](Self::run) (the console's Reload button).
    pub(super) fn hook_into(self: &Arc<Self>, gateway: &Gateway) {
        let me = Arc::clone(self);
        gateway.set_reload_hook(Arc::new(move || {
            let me = Arc::clone(&me);
            Box::pin(async move { me.run().await })
        }));
    }
}

/// The lines a reload says: each written on stderr as it is said, and kept for the console.
#[derive(Default)]
struct Said {
    lines: Vec<String>,
}

impl Said {
    fn say(&mut self, line: &str) {
        output::write_err(line);
        self.lines.push(line.to_string());
    }
}

/// SIGHUP, caught: [`catch_hangups`] as early as `serve` can (before it, SIGHUP's default
/// action ends the process).
pub(super) type Hangups = tokio::signal::unix::Signal;

/// Catches SIGHUP from now on (`None` when it cannot be caught).
pub(super) fn catch_hangups() -> Option<Hangups> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok()
}

/// Reloads on every SIGHUP (and, with `watch`, whenever the file changes) until the gateway
/// shuts down.
pub(super) async fn on_hangup(reloader: Arc<Reloader>, hangups: Option<Hangups>, watch: bool) {
    let Some(mut hangups) = hangups else {
        output::write_err("warning: toolgate serve: SIGHUP cannot be caught: no hot reload");
        return;
    };
    let stop = reloader.gateway.shutdown_token();
    let watched = reloader.file.as_deref().filter(|_| watch);
    let mut seen = watched.and_then(stamp);
    let mut ticks = tokio::time::interval(WATCH_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            received = hangups.recv() => {
                if received.is_none() {
                    return;
                }
            }
            _ = ticks.tick(), if watched.is_some() => {
                let now = watched.and_then(stamp);
                if now == seen {
                    continue;
                }
                seen = now;
            }
            () = stop.cancelled() => return,
        }
        reloader.run().await;
    }
}

/// The file's modification time and size: what `--watch` compares.
fn stamp(file: &Path) -> Option<(std::time::SystemTime, u64)> {
    let meta = std::fs::metadata(file).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// One reload: says on stderr what it applied, refused or left for a restart. Returns the
/// configuration now running when it applied one.
async fn reload(
    gateway: &Gateway,
    file: Option<&Path>,
    running: &ToolsConfig,
    said: &mut Said,
) -> Option<ToolsConfig> {
    let shown = file.map_or_else(
        || "the built-in tools.yaml".to_string(),
        |f| f.display().to_string(),
    );
    let refused = |said: &mut Said, why: &str| {
        said.say(&format!(
            "toolgate serve: reload of {shown} refused, the running configuration stays: {why}"
        ));
    };
    let mut loaded = match load_config(file) {
        Ok((loaded, _)) => loaded,
        Err(failure) => {
            refused(said, &format!("\n{}", failure.message));
            return None;
        }
    };
    for warning in &loaded.warnings {
        said.say(&warning.to_string());
    }
    // The skills stay those of start-up (the gateway serves the set it started with over REST
    // and as resources): a changed `tools.skills` is named as needing a restart.
    let skills_changed = loaded.config.tools.skills != running.tools.skills;
    loaded.config.tools.skills = running.tools.skills.clone();
    let next = &loaded.config;
    // The virtual servers are the ones started with (a reload does not change them): each
    // guardrail they name must stay defined (this binary registers none in code).
    if let Some((server, name)) = running
        .gateway
        .servers
        .iter()
        .flat_map(|s| s.guardrails.iter().map(move |g| (&s.id, g)))
        .find(|(_, g)| !next.policy.guardrails.contains_key(*g))
    {
        refused(
            said,
            &format!(
                "virtual server `{server}` names guardrail `{name}`, which the new policy.guardrails does not define"
            ),
        );
        return None;
    }
    // Everything is built and checked before anything is applied.
    let base = file.map_or_else(|| PathBuf::from("."), folder_of);
    let fresh = match build(&loaded, &base, file.is_some(), Purpose::Reload) {
        Ok((fresh, _)) => fresh,
        Err(failure) => {
            refused(said, &format!("\n{}", failure.message));
            return None;
        }
    };
    let keys_changed = next.gateway.api_keys != running.gateway.api_keys;
    if keys_changed && let Err(e) = gateway.reload_api_keys(&next.gateway) {
        refused(said, &e.to_string());
        return None;
    }
    let toolset = gateway.toolset();
    let unchanged = |id: &str| id == SKILLS_SOURCE || same_remote_entry(running, next, id);
    let (policy, sources) = match toolset.reload(next.policy.clone(), &fresh, unchanged) {
        Ok(done) => done,
        Err(e) => {
            // Compiled once already with the fresh toolset: not expected. The keys (if
            // changed) are applied; say so.
            let keys = if keys_changed {
                " (the new API keys are in use)"
            } else {
                ""
            };
            refused(said, &format!("{e}{keys}"));
            return None;
        }
    };
    drop(fresh);
    #[cfg(feature = "console")]
    gateway.reload_console_config(next);
    say_applied(
        &shown,
        &loaded,
        running,
        &sources,
        keys_changed,
        &policy,
        said,
    );
    if skills_changed {
        said.say("warning: changed but only applied by a restart: tools.skills");
    }
    // New sources list their tools now, as at start-up (each bounded by its own timeout), in
    // the background: the next reload (a key revoked) must not wait for a slow server.
    if !sources.added.is_empty() || !sources.replaced.is_empty() {
        let toolset = toolset.clone();
        let fresh_ids: Vec<String> = sources
            .added
            .iter()
            .chain(&sources.replaced)
            .cloned()
            .collect();
        said.say(&format!(
            "toolgate serve: listing the tools of {} in the background",
            fresh_ids
                .iter()
                .map(|id| format!("`{id}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        tokio::spawn(async move {
            let statuses = toolset.discover(8).await;
            for status in statuses.iter().filter(|s| s.error.is_some()) {
                if fresh_ids.contains(&status.id) {
                    output::write_err(&format!(
                        "warning: source `{}` is unavailable: {}",
                        status.id,
                        status.error.as_deref().unwrap_or_default()
                    ));
                }
            }
            for conflict in toolset.name_conflicts() {
                output::write_err(&format!("warning: {conflict}"));
            }
        });
    }
    Some(loaded.config)
}

/// Whether source `id` is an MCP server or A2A agent configured the same in `before` and
/// `after` (and under the same `tools.allow`/`tools.deny`): its running session is kept.
fn same_remote_entry(before: &ToolsConfig, after: &ToolsConfig, id: &str) -> bool {
    if (&before.tools.allow, &before.tools.deny) != (&after.tools.allow, &after.tools.deny) {
        return false;
    }
    let mcp = (
        before.tools.mcp.iter().find(|m| m.id == id),
        after.tools.mcp.iter().find(|m| m.id == id),
    );
    match mcp {
        (Some(a), Some(b)) => return a == b,
        (None, None) => {}
        _ => return false,
    }
    let a2a = (
        before.tools.a2a.iter().find(|a| a.id == id),
        after.tools.a2a.iter().find(|a| a.id == id),
    );
    matches!(a2a, (Some(a), Some(b)) if a == b)
}

/// The stderr lines of an applied reload: what changed, and what needs a restart.
fn say_applied(
    shown: &str,
    loaded: &LoadedConfig,
    running: &ToolsConfig,
    sources: &toolgate::SourcesReload,
    keys_changed: bool,
    policy: &toolgate::PolicyReload,
    said: &mut Said,
) {
    let next = &loaded.config;
    let remote = |id: &&String| {
        next.tools.mcp.iter().any(|m| &m.id == *id)
            || next.tools.a2a.iter().any(|a| &a.id == *id)
            || running.tools.mcp.iter().any(|m| &m.id == *id)
            || running.tools.a2a.iter().any(|a| &a.id == *id)
    };
    let list = |ids: Vec<&String>| {
        ids.iter()
            .map(|id| format!("`{id}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut parts = vec!["policy".to_string()];
    if keys_changed {
        parts.push("API keys".into());
    }
    for (what, ids) in [
        ("added", sources.added.iter().collect::<Vec<_>>()),
        (
            "restarted",
            sources.replaced.iter().filter(remote).collect::<Vec<_>>(),
        ),
        ("removed", sources.removed.iter().collect::<Vec<_>>()),
    ] {
        if !ids.is_empty() {
            parts.push(format!("sources {what}: {}", list(ids)));
        }
    }
    let kept = sources.kept.len();
    if kept > 0 {
        parts.push(format!("{kept} remote source(s) kept their sessions"));
    }
    said.say(&format!(
        "toolgate serve: reloaded {shown} (generation {}): {}",
        policy.generation,
        parts.join("; ")
    ));
    for note in &policy.not_applied {
        said.say(&format!("warning: {note}"));
    }
    let mut gateway_rest = next.gateway.clone();
    gateway_rest.api_keys = running.gateway.api_keys.clone();
    let restart = [
        (
            "gateway (other than api_keys)",
            gateway_rest != running.gateway,
        ),
        ("store", next.store != running.store),
        ("state", next.state != running.state),
    ];
    let changed: Vec<&str> = restart
        .iter()
        .filter(|(_, changed)| *changed)
        .map(|(name, _)| *name)
        .collect();
    if !changed.is_empty() {
        said.say(&format!(
            "warning: changed but only applied by a restart: {}",
            changed.join(", ")
        ));
    }
}
