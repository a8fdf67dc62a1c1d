//! `toolgate serve`'s hot reload: on SIGHUP the tools.yaml is read again and its `policy:`
//! section replaces the running one ([`toolgate::Toolset::reload_policy`]). A file that does
//! not load, a policy that does not compile, or one that drops a guardrail a virtual server
//! names, is refused with its error and the running configuration stays; sections a reload
//! does not apply are named in a warning.

use std::path::PathBuf;

use toolgate::gateway::Gateway;
use toolgate::model::config::ToolsConfig;

use super::config::load_config;
use super::output;

/// Reloads on every SIGHUP until the gateway shuts down. `file` is the tools.yaml served (`None`:
/// the built-in one, which cannot change); `started` the configuration the process started with.
pub(super) async fn on_hangup(gateway: Gateway, file: Option<PathBuf>, started: ToolsConfig) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hangups) = signal(SignalKind::hangup()) else {
        output::write_err("warning: toolgate serve: SIGHUP cannot be caught: no hot reload");
        return;
    };
    let stop = gateway.shutdown_token();
    loop {
        tokio::select! {
            received = hangups.recv() => {
                if received.is_none() {
                    return;
                }
                reload(&gateway, file.as_ref(), &started);
            }
            () = stop.cancelled() => return,
        }
    }
}

/// One reload: says on stderr what it applied, refused or left for a restart.
fn reload(gateway: &Gateway, file: Option<&PathBuf>, started: &ToolsConfig) {
    let shown = file.map_or_else(
        || "the built-in tools.yaml".to_string(),
        |f| f.display().to_string(),
    );
    let loaded = match load_config(file.map(PathBuf::as_path)) {
        Ok((loaded, _)) => loaded,
        Err(failure) => {
            output::write_err(&format!(
                "toolgate serve: reload of {shown} refused, the running configuration stays:\n{}",
                failure.message
            ));
            return;
        }
    };
    let next = &loaded.config;
    // The virtual servers are the ones started with (a reload does not change them): each
    // guardrail they name must stay defined (this binary registers none in code).
    if let Some((server, name)) = started
        .gateway
        .servers
        .iter()
        .flat_map(|s| s.guardrails.iter().map(move |g| (&s.id, g)))
        .find(|(_, g)| !next.policy.guardrails.contains_key(*g))
    {
        output::write_err(&format!(
            "toolgate serve: reload of {shown} refused, the running policy stays: virtual server `{server}` names guardrail `{name}`, which the new policy.guardrails does not define"
        ));
        return;
    }
    match gateway.toolset().reload_policy(next.policy.clone()) {
        Ok(done) => {
            output::write_err(&format!(
                "toolgate serve: policy reloaded from {shown} (reload {})",
                done.generation
            ));
            for note in &done.not_applied {
                output::write_err(&format!("warning: {note}"));
            }
        }
        Err(e) => {
            output::write_err(&format!(
                "toolgate serve: reload of {shown} refused, the running policy stays: {e}"
            ));
            return;
        }
    }
    let restart = [
        ("tools", next.tools != started.tools),
        ("gateway", next.gateway != started.gateway),
        ("store", next.store != started.store),
        ("settings", next.settings != started.settings),
        ("state", next.state != started.state),
    ];
    let changed: Vec<&str> = restart
        .iter()
        .filter(|(_, changed)| *changed)
        .map(|(name, _)| *name)
        .collect();
    if !changed.is_empty() {
        output::write_err(&format!(
            "warning: changed since start-up but only applied by a restart: {}",
            changed.join(", ")
        ));
    }
}
