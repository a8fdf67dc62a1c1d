//! `policy.guardrails`: named guardrails on what goes into a tool and what comes out of it
//! (masking of PII and secrets, deny rules on arguments, a webhook), applied to the tools whose
//! effective `guardrails:` list names them (per tool, per source, defaults).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Interpolated;

/// One named guardrail (`policy.guardrails.<name>`). A tool runs under the guardrails its
/// effective policy lists (`guardrails: [name, ...]` under `policy.tools.<tool>`, else
/// `policy.sources.<id>`, else `policy.defaults`; `guardrails: []` turns them off), in that
/// order. Within one guardrail: deny rules first (arguments), then masking, then the webhook.
///
/// ```yaml
/// policy:
///   guardrails:
///     pii:
///       mask: {detectors: [email, phone, iban, card, secrets]}
///     no_drop:
///       deny: [{name: drop_table, pattern: "(?i)\\bdrop\\s+table\\b", argument: query}]
///     review:
///       webhook: {url: "https://guard.example.com/check", timeout_ms: 2000, fail: closed}
///   defaults: {guardrails: [pii]}
///   tools:
///     db.query: {guardrails: [pii, no_drop, review]}
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GuardrailConfig {
    /// Masking of PII and secrets in results (and optionally arguments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mask: Option<MaskConfig>,
    /// Rules refusing a call whose arguments match a pattern (`policy_denied`, nothing sent).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<DenyRule>,
    /// An HTTP service of the operator's that allows, refuses or changes arguments and results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<WebhookGuardrail>,
}

/// What is masked, where, and with what.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MaskConfig {
    /// The built-in detectors to run (default: all of them).
    #[serde(default = "all_detectors")]
    pub detectors: Vec<Detector>,
    /// The operator's own patterns, masked like the detectors' matches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<MaskPattern>,
    /// What a match is replaced by; `{kind}` stands for the detector's or pattern's name.
    /// Default `[{kind}]` (`[email]`, `[card]`, `[aws_access_key]`).
    #[serde(default = "default_replacement")]
    pub replacement: String,
    /// Mask results: text parts, embedded text resources, `structuredContent` and `_meta`
    /// (every string at any depth). Default `true`.
    #[serde(default = "yes")]
    pub results: bool,
    /// Mask the arguments too, before the call (every string at any depth). Default `false`.
    #[serde(default)]
    pub arguments: bool,
}

impl Default for MaskConfig {
    fn default() -> Self {
        Self {
            detectors: all_detectors(),
            patterns: Vec::new(),
            replacement: default_replacement(),
            results: true,
            arguments: false,
        }
    }
}

fn all_detectors() -> Vec<Detector> {
    Detector::ALL.to_vec()
}

fn default_replacement() -> String {
    "[{kind}]".to_string()
}

fn yes() -> bool {
    true
}

/// A built-in detector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Detector {
    /// E-mail addresses (`name@example.com`).
    Email,
    /// Phone numbers in international form (`+41 44 668 18 00`, `+1-202-555-0173`).
    Phone,
    /// IBANs whose mod-97 check holds (`DE89 3704 0044 0532 0130 00`).
    Iban,
    /// Payment card numbers of 13 to 19 digits (spaces or dashes between groups) whose Luhn
    /// check holds: a random 16-digit number is left alone.
    Card,
    /// Credentials by shape: AWS access key ids, GitHub tokens (`ghp_…`, `github_pat_…`),
    /// Slack tokens (`xox…`), Stripe keys (`sk_live_…`), JWTs, PEM private key blocks and
    /// `Bearer …` values.
    Secrets,
}

impl Detector {
    /// Every detector.
    pub const ALL: [Detector; 5] = [
        Detector::Email,
        Detector::Phone,
        Detector::Iban,
        Detector::Card,
        Detector::Secrets,
    ];
}

/// An operator's pattern to mask.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MaskPattern {
    /// The pattern's name: the `{kind}` of its replacement, its metric label.
    pub name: String,
    /// A regular expression (Rust `regex` syntax: no look-around, no back-references).
    pub regex: String,
    /// What a match is replaced by (default: the mask's `replacement`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
}

/// A rule refusing calls whose arguments match a pattern. The refusal (`policy_denied`) names
/// the guardrail, the rule and the argument's pointer, never the value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DenyRule {
    /// The rule's name, shown in the refusal and the metrics.
    pub name: String,
    /// A regular expression (Rust `regex` syntax) searched in the value (anywhere in it:
    /// anchor it with `^…$` to match whole values).
    pub pattern: String,
    /// The argument checked: a top-level name (`query`) or a JSON pointer (`/filter/sql`);
    /// every string inside it, at any depth. Absent: every string of the arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument: Option<String>,
}

/// A webhook guardrail: toolgate POSTs `{"direction": "arguments"|"result", "tool", "caller",
/// "arguments"|"result"}` (JSON) to `url` and reads the answer: `{"action": "allow"}`,
/// `{"action": "deny", "reason": "…"}` or `{"action": "modify", "arguments"|"result": …}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookGuardrail {
    /// The service's URL (`http://` or `https://`; `${ENV}` allowed).
    pub url: Interpolated,
    /// Headers sent with each request (e.g. `Authorization: Bearer ${GUARD_TOKEN}`); values
    /// may reference secrets, which are never logged.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, Interpolated>,
    /// The longest the service may take to answer, in milliseconds (default 2000; never past
    /// the call's own deadline).
    #[serde(default = "default_webhook_timeout_ms")]
    pub timeout_ms: u64,
    /// What happens when the service times out, cannot be reached or answers something
    /// unreadable: `closed` (default: the call is refused) or `open` (it goes on unchecked).
    #[serde(default)]
    pub fail: WebhookFailMode,
    /// What the service is asked about: `arguments`, `result` or both (default both).
    #[serde(default = "both_directions")]
    pub on: Vec<GuardDirection>,
}

fn default_webhook_timeout_ms() -> u64 {
    2000
}

fn both_directions() -> Vec<GuardDirection> {
    vec![GuardDirection::Arguments, GuardDirection::Result]
}

/// What a webhook guardrail does when its service does not give a usable answer in time.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum WebhookFailMode {
    /// The call is refused (`policy_denied`) before the tool runs, or its result is withheld.
    #[default]
    Closed,
    /// The call goes on as if the service had allowed it (logged and counted).
    Open,
}

/// Which way a guardrail looks: at the arguments on the way in, or the result on the way out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GuardDirection {
    /// The arguments, before the call.
    Arguments,
    /// The result, after the call.
    Result,
}

impl GuardDirection {
    /// `arguments` or `result`: the name on the wire and in metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Arguments => "arguments",
            Self::Result => "result",
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::config::ToolsConfig;

    use super::*;

    const GOOD: &str = r#"version: 1
policy:
  guardrails:
    pii:
      mask:
        detectors: [email, card]
        patterns: [{name: ticket, regex: "TCK-[0-9]+", replacement: "<ticket>"}]
    sql:
      deny: [{name: drop, pattern: "(?i)drop\\s+table", argument: query}]
    hook:
      webhook: {url: "https://guard.example.com/check", fail: open, on: [result]}
  defaults: {guardrails: [pii]}
  tools:
    db.query: {guardrails: [pii, sql, hook]}
    free: {guardrails: []}
"#;

    #[test]
    fn guardrails_parse_with_their_defaults_and_fall_through_per_tool() {
        let cfg = ToolsConfig::from_yaml_str(GOOD, Path::new("tools.yaml")).unwrap();
        assert!(cfg.warnings.is_empty(), "{:?}", cfg.warnings);
        let p = &cfg.policy;
        let mask = p.guardrails["pii"].mask.as_ref().unwrap();
        assert_eq!(mask.detectors, [Detector::Email, Detector::Card]);
        assert_eq!((mask.results, mask.arguments), (true, false));
        assert_eq!(mask.replacement, "[{kind}]");
        let hook = p.guardrails["hook"].webhook.as_ref().unwrap();
        assert_eq!((hook.timeout_ms, hook.fail), (2000, WebhookFailMode::Open));
        assert_eq!(hook.on, [GuardDirection::Result]);
        let names = |tool: &str| p.effective(tool, "local").guardrails;
        assert_eq!(names("db.query").unwrap(), ["pii", "sql", "hook"]);
        assert_eq!(names("free").unwrap(), Vec::<String>::new());
        assert_eq!(names("other").unwrap(), ["pii"]);
    }

    #[test]
    fn bad_guardrails_are_reported_at_their_lines() {
        let src = r#"version: 1
policy:
  guardrails:
    broken:
      mask:
        patterns: [{name: bad, regex: "("}]
      deny:
        - {name: d, pattern: "[z-a]"}
    empty: {}
    hook:
      webhook: {url: "ftp://x", timeout_ms: 0}
  tools:
    t: {guardrails: [nowhere]}
"#;
        let e = ToolsConfig::from_yaml_str(src, Path::new("tools.yaml")).unwrap_err();
        let all: Vec<String> = e.diagnostics().iter().map(ToString::to_string).collect();
        let all = all.join("\n");
        for (line, what) in [
            (":6:", "`(` is not a valid regular expression"),
            (":8:", "`[z-a]` is not a valid regular expression"),
            (":9:", "has no `mask`, `deny` or `webhook`"),
            (":11:", "must be an absolute `http://` or `https://` URL"),
            (":11:", "`timeout_ms: 0`"),
        ] {
            assert!(
                all.lines().any(|l| l.contains(line) && l.contains(what)),
                "{what} at {line}: {all}"
            );
        }
        let ok = GOOD.replace("[pii, sql, hook]", "[pii, nowhere]");
        let cfg = ToolsConfig::from_yaml_str(&ok, Path::new("tools.yaml")).unwrap();
        let warnings: Vec<String> = cfg.warnings.iter().map(ToString::to_string).collect();
        assert!(
            warnings.len() == 1
                && warnings[0].contains(":14:")
                && warnings[0].contains("unknown guardrail `nowhere`"),
            "{warnings:?}"
        );
    }
}
