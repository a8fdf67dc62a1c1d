use std::path::Path;

use super::*;

/// Every section and every kind of entry.
pub(crate) const FULL: &str = r#"
version: 1
state: [crate::AppState, crate::db::Db]
tools:
  local:
    - fn: crate::builtin::files::read_file
      name: read_text_file
      description: Read a UTF-8 text file inside the configured root.
      category: files
      tags: [fs, read]
      timeout_ms: 5000
      dangerous: false
      requires_auth: true
      read_only: true
      idempotent: true
    - discover: src/builtin/math
    - discover: true
  skills:
    - dir: skills/
  openapi:
    - id: petstore
      spec: specs/petstore.yaml
      base_url: https://petstore.example/v1
      include: {tags: [pets]}
      exclude: {operations: [deletePet], paths: ["/admin/**"]}
      auth: {bearer: "${PETSTORE_TOKEN}"}
    - id: weather
      spec: https://api.example.com/openapi.json
      load: runtime
      auth: {api_key: {in: query, name: appid, value: "${WEATHER_KEY}"}}
    - id: intranet
      spec: specs/intranet.yaml
      auth: {basic: {username: bot, password: "${INTRANET_PASSWORD}"}}
    - id: crm
      spec: specs/crm.yaml
      auth: {headers: {X-Org: acme, X-Token: "${CRM_TOKEN}"}}
  mcp:
    - id: everything
      stdio:
        command: npx
        args: [-y, "@modelcontextprotocol/server-everything"]
        env: {API_KEY: "${EVERYTHING_KEY:-none}"}
        cwd: /tmp
      allow: [echo, "get_*"]
      deny: [get_secret]
      timeout_ms: 20000
      lazy: true
    - id: remote
      http:
        url: https://mcp.example.com/mcp
        headers: {X-Client: toolgate}
        bearer_token: ${REMOTE_TOKEN}
    - id: legacy
      sse: {url: "http://127.0.0.1:3001/sse", headers: {X-A: b}}
  a2a:
    - id: travel
      url: https://travel.example/a2a
      card_url: https://travel.example/.well-known/agent-card.json
      auth: {bearer: "${TRAVEL_TOKEN}"}
      allow: ["book_*"]
      deny: [cancel]
      skills:
        book_flight:
          input_schema:
            type: object
            properties: {from: {type: string}, to: {type: string}}
            required: [from, to]
policy:
  defaults: {timeout_ms: 30000, retries: 0}
  tools:
    read_text_file: {timeout_ms: 1000, rate_limit: 10/s, cache_ttl_ms: 60000}
    everything.echo: {concurrency: 2, cost_per_call: 0.5, roles: [admin]}
  sources:
    local: {retries: 1}
    petstore: {rate_limit: 100/m}
settings:
  fetch: {allow_hosts: [example.com], max_bytes: 1048576}
"#;

fn load(src: &str) -> Result<LoadedConfig, ConfigError> {
    ToolsConfig::from_yaml_str(src, Path::new("tools.yaml"))
}

fn errors(src: &str) -> Vec<String> {
    load(src)
        .expect_err("expected an error")
        .diagnostics()
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn one_error(src: &str) -> String {
    let e = errors(src);
    assert_eq!(e.len(), 1, "{e:#?}");
    e.into_iter().next().unwrap_or_default()
}

#[test]
fn every_section_parses() {
    let cfg = load(FULL).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cfg.state, ["crate::AppState", "crate::db::Db"]);
    let local = &cfg.tools.local;
    let f = local[0].as_function().unwrap();
    assert_eq!(f.path, "crate::builtin::files::read_file");
    assert_eq!(f.name.as_deref(), Some("read_text_file"));
    assert_eq!(
        f.tags.as_deref(),
        Some(&["fs".to_string(), "read".to_string()][..])
    );
    assert_eq!(
        (f.timeout_ms, f.read_only, f.idempotent),
        (Some(5000), Some(true), Some(true))
    );
    assert_eq!(
        local[1].as_discover(),
        Some(&Discover::Under("src/builtin/math".into()))
    );
    assert_eq!(local[2].as_discover(), Some(&Discover::All));

    assert_eq!(cfg.tools.skills[0].dir, "skills/");
    let oa = &cfg.tools.openapi;
    assert_eq!(
        (oa[0].load, oa[1].load),
        (LoadMode::Build, LoadMode::Runtime)
    );
    assert!(oa[1].spec_is_url() && !oa[0].spec_is_url());
    assert_eq!(oa[0].include.tags, ["pets"]);
    assert!(matches!(&oa[0].auth, Some(AuthConfig::Bearer(t)) if t.raw() == "${PETSTORE_TOKEN}"));
    assert!(
        matches!(&oa[1].auth, Some(AuthConfig::ApiKey(k)) if k.location == ApiKeyLocation::Query)
    );
    assert!(matches!(&oa[2].auth, Some(AuthConfig::Basic(_))));
    assert!(matches!(&oa[3].auth, Some(AuthConfig::Headers(h)) if h.len() == 2));

    let mcp = &cfg.tools.mcp;
    let McpTransport::Stdio(stdio) = &mcp[0].transport else {
        panic!("{:?}", mcp[0].transport)
    };
    assert_eq!(stdio.command, "npx");
    assert_eq!(stdio.env["API_KEY"].variables(), ["EVERYTHING_KEY"]);
    assert!(mcp[0].lazy && !mcp[1].lazy);
    assert!(matches!(&mcp[1].transport, McpTransport::Http(h) if h.bearer_token.is_some()));
    assert!(matches!(&mcp[2].transport, McpTransport::Sse(_)));

    let a2a = &cfg.tools.a2a[0];
    assert_eq!(a2a.skills["book_flight"].input_schema["required"][1], "to");
    assert_eq!(cfg.policy.defaults.timeout_ms, Some(30_000));
    assert_eq!(cfg.policy.tools["everything.echo"].roles, ["admin"]);
    assert_eq!(
        cfg.policy.sources["petstore"].rate_limit.as_deref(),
        Some("100/m")
    );
    assert_eq!(cfg.settings["fetch"]["allow_hosts"][0], "example.com");
}

#[test]
fn minimal_file_and_round_trip() {
    let cfg = load("version: 1\n").unwrap();
    assert!(cfg.tools.local.is_empty() && cfg.state.is_empty());
    let full = load(FULL).unwrap().config;
    let json = serde_json::to_value(&full).unwrap();
    let back: ToolsConfig = serde_json::from_value(json).unwrap();
    assert_eq!(back, full);
}

#[test]
fn unknown_keys_name_line_and_column() {
    let e = one_error("version: 1\ntools:\n  local:\n    - fn: crate::a\n      nmae: x\n");
    assert!(
        e.starts_with("error: tools.yaml:5:7: unknown field `nmae`"),
        "{e}"
    );
    assert!(e.contains("expected one of"), "{e}");
    let e = one_error("version: 1\ntools:\n  localz: []\n");
    assert!(
        e.starts_with("error: tools.yaml:3:3: unknown field `localz`"),
        "{e}"
    );
    let e = one_error("version: 1\npolicy:\n  defaults: {timeout: 5}\n");
    assert!(
        e.starts_with("error: tools.yaml:3:14: unknown field `timeout`"),
        "{e}"
    );
    let e =
        one_error("version: 1\ntools:\n  mcp:\n    - id: x\n      stdio: {command: a, argz: []}\n");
    assert!(
        e.starts_with("error: tools.yaml:5:27: unknown field `argz`"),
        "{e}"
    );
}

#[test]
fn bad_yaml_and_types_name_line_and_column() {
    let e = one_error("version: 1\ntools: [\n");
    assert!(e.starts_with("error: tools.yaml:2:"), "{e}");
    let e = one_error("version: one\n");
    assert!(e.starts_with("error: tools.yaml:1:10:"), "{e}");
    let e = one_error("state: []\n");
    assert!(e.contains("missing field `version`"), "{e}");
}

#[test]
fn local_entry_shape_errors() {
    let e = one_error("version: 1\ntools:\n  local:\n    - fn: crate::a\n    - name: x\n");
    assert!(e.starts_with("error: tools.yaml:5:7:"), "{e}");
    assert!(e.contains("needs `fn: crate::path::to::function`"), "{e}");
    let e = one_error("version: 1\ntools:\n  local:\n    - discover: true\n      name: x\n");
    assert!(e.contains("`name` cannot be used with `discover`"), "{e}");
    let e = one_error("version: 1\ntools:\n  local:\n    - {fn: crate::a, discover: true}\n");
    assert!(e.contains("not both"), "{e}");
    let e = one_error("version: 1\ntools:\n  local:\n    - discover: false\n");
    assert!(
        e.starts_with("error: tools.yaml:4:17:") && e.contains("discovers nothing"),
        "{e}"
    );
}

#[test]
fn mcp_needs_exactly_one_transport() {
    let e = one_error("version: 1\ntools:\n  mcp:\n    - id: x\n      lazy: true\n");
    assert!(e.starts_with("error: tools.yaml:4:7:"), "{e}");
    assert!(e.contains("exactly one transport"), "{e}");
    let src = "version: 1\ntools:\n  mcp:\n    - id: x\n      http: {url: 'http://a'}\n      sse: {url: 'http://a'}\n";
    assert!(one_error(src).contains("(found 2)"));
}

#[test]
fn interpolation_syntax_is_checked_at_load() {
    let src = "version: 1\ntools:\n  mcp:\n    - id: x\n      http: {url: 'http://a', bearer_token: '${OPEN'}\n";
    let e = one_error(src);
    assert!(e.starts_with("error: tools.yaml:5:"), "{e}");
    assert!(e.contains("unterminated `${`"), "{e}");
}

#[test]
fn semantic_rules_are_all_reported_with_locations() {
    let src = "\
version: 2
tools:
  mcp:
    - {id: a, stdio: {command: x}}
    - {id: a, http: {url: 'ftp://x'}}
    - {id: 'b.c', sse: {url: 'http://x'}}
  a2a:
    - id: local
policy:
  defaults: {rate_limit: fast}
  sources:
    nope: {concurrency: 0}
";
    let e = errors(src);
    let expect = [
        "error: tools.yaml:1:10: unsupported tools.yaml version 2",
        "error: tools.yaml:5:12: duplicate source id `a`",
        "error: tools.yaml:6:12: invalid source id: `b.c` contains '.'",
        "error: tools.yaml:8:11: invalid source id: source id `local` is reserved",
        "error: tools.yaml:5:27: MCP server `a`: `ftp://x` is not an http(s) URL",
        "error: tools.yaml:8:7: A2A agent `local` needs `url` or `card_url`",
        "error: tools.yaml:10:26: invalid rate limit `fast`",
        "error: tools.yaml:12:25: `concurrency: 0`",
    ];
    assert_eq!(e.len(), expect.len(), "{e:#?}");
    for want in expect {
        assert!(
            e.iter().any(|m| m.starts_with(want)),
            "missing {want:?} in {e:#?}"
        );
    }
    assert!(
        e.iter()
            .any(|m| m.contains("already the id of the source at line 4"))
    );
}

#[test]
fn loaded_config_locates_pointers() {
    let cfg = load(FULL).unwrap();
    assert_eq!(cfg.locate("/tools/local/0/fn"), Location::new(6, 11));
    assert_eq!(cfg.locate("/tools/local/1/discover"), Location::new(16, 17));
    assert_eq!(
        cfg.locate("/policy/tools/everything.echo/roles/0"),
        Location::new(72, 67)
    );
    let d = cfg.error_at("/tools/local/2", "boom");
    assert_eq!(d.to_string(), "error: tools.yaml:17:7: boom");
    let w = cfg
        .warning_at("/tools/local/2/discover", "hm")
        .with_hint("do x");
    assert_eq!(w.to_string(), "warning: tools.yaml:17:17: hm\n  hint: do x");
}

#[test]
fn load_reads_files_and_reports_io_errors() {
    let err = ToolsConfig::load("/nonexistent/dir/tools.yaml").unwrap_err();
    assert!(matches!(err, ConfigError::Io { .. }));
    assert!(
        err.to_string().contains("/nonexistent/dir/tools.yaml"),
        "{err}"
    );
}

#[test]
fn json_schema_describes_the_file() {
    let schema = ToolsConfig::json_schema();
    assert_eq!(schema["title"], "toolgate tools.yaml");
    assert_eq!(schema["additionalProperties"], false);
    let defs = schema["$defs"].as_object().unwrap();
    for name in [
        "LocalEntry",
        "McpServer",
        "OpenApiSource",
        "A2aAgent",
        "ToolPolicy",
        "AuthConfig",
        "SkillsDir",
    ] {
        assert!(
            defs.contains_key(name),
            "no $defs/{name}: {:?}",
            defs.keys()
        );
    }
    assert!(defs["LocalEntry"]["oneOf"].is_array());
    assert!(defs["McpServer"]["properties"]["stdio"].is_object());
    // Doc comments become descriptions.
    let timeout = &defs["ToolPolicy"]["properties"]["timeout_ms"]["description"];
    assert!(
        timeout.as_str().unwrap().contains("milliseconds"),
        "{timeout}"
    );
}

#[test]
fn json_schema_accepts_what_the_loader_accepts() {
    let schema = ToolsConfig::json_schema();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let full: Value = serde_saphyr::from_str(FULL).unwrap();
    let problems: Vec<String> = validator
        .iter_errors(&full)
        .map(|e| e.to_string())
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
    let both: Value =
        serde_saphyr::from_str("version: 1\ntools: {local: [{fn: a, discover: true}]}").unwrap();
    assert!(!validator.is_valid(&both));
    let overrides: Value =
        serde_saphyr::from_str("version: 1\ntools: {local: [{discover: true, name: x}]}").unwrap();
    assert!(!validator.is_valid(&overrides));
    let no_transport: Value =
        serde_saphyr::from_str("version: 1\ntools: {mcp: [{id: x}]}").unwrap();
    assert!(!validator.is_valid(&no_transport));
    let unknown: Value = serde_saphyr::from_str("version: 1\nnope: 1").unwrap();
    assert!(!validator.is_valid(&unknown));
}

#[test]
fn mcp_globs_and_zero_timeouts_are_refused_at_load() {
    let errs = errors(
        "version: 1\ntools:\n  deny: [\"[oops\"]\n  mcp:\n    - id: s\n      stdio: {command: x}\n      allow: [echo, \"get-[\"]\n      timeout_ms: 0\n",
    );
    let all = errs.join("\n");
    assert_eq!(errs.len(), 3, "{all}");
    assert!(
        all.contains(":3:") && all.contains("`[oops` is not a valid name or glob"),
        "{all}"
    );
    assert!(all.contains(":7:") && all.contains("`get-[`"), "{all}");
    assert!(
        all.contains(":8:") && all.contains("`timeout_ms: 0`"),
        "{all}"
    );
    let errs = errors(
        "version: 1\ntools:\n  mcp:\n    - id: s\n      stdio: {command: x}\n      connect_timeout_ms: 0\n      idle_timeout_ms: 0\n  a2a:\n    - id: a\n      url: http://127.0.0.1:1\n      connect_timeout_ms: 0\n",
    );
    let all = errs.join("\n");
    assert_eq!(errs.len(), 3, "{all}");
    for (line, key) in [
        (":6:", "MCP server `s`: `connect_timeout_ms: 0`"),
        (":7:", "MCP server `s`: `idle_timeout_ms: 0`"),
        (":11:", "A2A agent `a`: `connect_timeout_ms: 0`"),
    ] {
        assert!(all.contains(line) && all.contains(key), "{key}: {all}");
    }
}

#[test]
fn a2a_entries_need_http_urls_and_object_skill_schemas() {
    let src = "\
version: 1
tools:
  a2a:
    - id: travel
      url: 'ftp://agents.example.com'
      skills:
        book: {input_schema: {type: string}}
";
    let e = errors(src);
    assert_eq!(e.len(), 2, "{e:#?}");
    assert!(
        e[0].contains("tools.yaml:5:12")
            && e[0].contains(
                "`url` must be an http:// or https:// URL, not `ftp://agents.example.com`"
            ),
        "{e:#?}"
    );
    assert!(
        e[1].contains("tools.yaml:7:")
            && e[1].contains("skill `book`: `input_schema` must be an object schema"),
        "{e:#?}"
    );
    let ok = load("version: 1\ntools:\n  a2a:\n    - {id: t, url: 'http://x', streaming: true, blocking: false, poll_interval_ms: 50, lazy: true, timeout_ms: 900, prefix: false}\n")
        .unwrap();
    let a = &ok.config.tools.a2a[0];
    assert_eq!(
        (
            a.streaming,
            a.blocking,
            a.poll_interval_ms,
            a.lazy,
            a.prefix
        ),
        (Some(true), false, Some(50), true, false)
    );
}

#[test]
fn gateway_connection_limits_are_checked() {
    let ok = load(
        "version: 1\ngateway: {header_timeout_ms: 2000, body_timeout_ms: 5000, idle_timeout_ms: 1000, max_connections: 64}\n",
    )
    .unwrap();
    let g = &ok.config.gateway;
    assert_eq!(
        (
            g.header_timeout_ms,
            g.body_timeout_ms,
            g.idle_timeout_ms,
            g.max_connections
        ),
        (Some(2000), Some(5000), Some(1000), Some(64))
    );
    assert!(ok.warnings.is_empty(), "{:?}", ok.warnings);

    let e = errors(
        "version: 1\ngateway: {header_timeout_ms: 0, body_timeout_ms: 0, idle_timeout_ms: 0, max_connections: 0}\n",
    );
    for want in [
        "`header_timeout_ms: 0`",
        "`body_timeout_ms: 0`",
        "`idle_timeout_ms: 0`",
        "`max_connections: 0`",
    ] {
        assert!(
            e.iter().any(|m| m.contains(want)),
            "missing {want} in {e:#?}"
        );
    }

    let longer =
        load("version: 1\ngateway: {header_timeout_ms: 1000, idle_timeout_ms: 5000}\n").unwrap();
    assert_eq!(longer.warnings.len(), 1, "{:?}", longer.warnings);
    assert!(
        longer.warnings[0]
            .to_string()
            .contains("idle_timeout_ms: 5000"),
        "{}",
        longer.warnings[0]
    );
}

#[test]
fn gateway_oauth_settings_are_checked() {
    let ok = load(
        "version: 1\ngateway:\n  auth:\n    oauth:\n      resource: https://gw.example/mcp\n      issuers:\n        - {issuer: \"https://idp.example\", algorithms: [RS256, ES256], roles_claim: realm_access.roles}\n",
    )
    .unwrap();
    let oauth = ok.config.gateway.auth.oauth.as_ref().expect("oauth read");
    assert_eq!(oauth.issuers[0].algorithms, ["RS256", "ES256"]);
    assert!(ok.warnings.is_empty(), "{:?}", ok.warnings);

    // Symmetric or no signature, a resource that is no URL, an issuer twice, an unknown key.
    let e = errors(
        "version: 1\ngateway:\n  auth:\n    oauth:\n      resource: gw\n      issuers:\n        - {issuer: \"https://idp.example\", algorithms: [HS256, none, RS1]}\n        - {issuer: \"https://idp.example\"}\n        - {issuer: \"http://idp.example\"}\n        - {issuer: \"http://127.0.0.1:9\"}\n",
    );
    for want in [
        "`HS256` is never accepted",
        "`none` is never accepted",
        "`RS1` is not a signing algorithm",
        "`gw` is not an http(s) URL",
        "listed twice",
        "is plain http",
    ] {
        assert!(
            e.iter().any(|m| m.contains(want)),
            "missing {want} in {e:#?}"
        );
    }
    assert!(
        !errors("version: 1\ngateway: {auth: {oauth: {resource: \"https://gw\", issuers: []}}}\n")
            .is_empty()
    );
    assert!(
        !errors("version: 1\ngateway: {auth: {oauth: {resource: \"https://gw\", issuers: [{issuer: \"https://i\", jwks: x}]}}}\n")
            .is_empty()
    );
}

#[test]
fn virtual_servers_are_checked_for_ids_globs_prefixes_and_roles() {
    let base = "version: 1\ntools: {}\n";
    let ok = load(&format!(
        "{base}gateway:\n  api_keys: [{{name: ci, key: \"${{K}}\", roles: [reader]}}]\n  servers:\n    - {{id: read-only, tools: {{include: [{{source: github, annotations: {{readOnlyHint: true}}}}], exclude: [{{name: \"github.*_secret*\"}}]}}, roles: [reader], prefix: gh_}}\n"
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ok.gateway.servers[0].id, "read-only");
    assert!(ok.warnings.is_empty(), "{:?}", ok.warnings);

    let e = errors(&format!(
        "{base}gateway:\n  servers:\n    - {{id: a}}\n    - {{id: a}}\n    - {{id: \"a/b\"}}\n    - {{id: c, tools: {{include: [{{name: \"[x\"}}]}}}}\n    - {{id: d, prefix: \"g h\"}}\n"
    ));
    assert_eq!(e.len(), 4, "{e:#?}");
    assert!(
        e[0].contains("two virtual servers have the id `a`"),
        "{e:#?}"
    );
    assert!(e[1].contains("`a/b` is not one URL path segment"), "{e:#?}");
    assert!(e[2].contains("`[x` is not a glob"), "{e:#?}");
    assert!(e[3].contains("prefix `g h`"), "{e:#?}");

    let unknown_role = load(&format!(
        "{base}gateway:\n  api_keys: [{{name: ci, key: \"${{K}}\", roles: [reader]}}]\n  servers: [{{id: ops, roles: [opps]}}]\n"
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        unknown_role.warnings.len(),
        1,
        "{:?}",
        unknown_role.warnings
    );
    assert!(
        unknown_role.warnings[0]
            .to_string()
            .contains("no API key has the role `opps`"),
        "{}",
        unknown_role.warnings[0]
    );
    // An unknown selector field is refused, as everywhere in tools.yaml.
    let typo = errors(&format!(
        "{base}gateway:\n  servers: [{{id: x, tools: {{include: [{{sorce: github}}]}}}}]\n"
    ));
    assert!(typo[0].contains("sorce"), "{typo:#?}");
}

#[test]
fn versions_and_require_are_read_and_described_by_the_schema() {
    let yaml = "version: 1\ntools:\n  local:\n    - {fn: crate::a, version: \"1.2.0\", require: \"^1\"}\n  mcp:\n    - id: s\n      stdio: {command: x}\n      require: {greet: \"^2\"}\n    - id: t\n      stdio: {command: x}\n      require: \"^2\"\n  openapi:\n    - {id: o, spec: o.yaml, version: \"2024.5.1\", require: \">=2024\"}\n  a2a:\n    - {id: a, url: \"http://127.0.0.1:1\", require: \"~1.2\"}\n";
    let cfg = load(yaml).unwrap();
    let req = cfg.tools.mcp[0].require.as_ref().unwrap();
    assert_eq!(req.for_tool("greet").unwrap().text, "^2");
    assert!(req.for_tool("other").is_none());
    assert!(
        cfg.tools.mcp[1]
            .require
            .as_ref()
            .unwrap()
            .for_tool("any")
            .is_some()
    );
    assert_eq!(cfg.tools.openapi[0].version.as_deref(), Some("2024.5.1"));
    let validator = jsonschema::validator_for(&ToolsConfig::json_schema()).unwrap();
    let value: Value = serde_saphyr::from_str(yaml).unwrap();
    let problems: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| e.to_string())
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn malformed_versions_and_constraints_are_errors_at_their_line() {
    let all = errors(
        "version: 1\ntools:\n  mcp:\n    - id: s\n      stdio: {command: x}\n      require: {greet: \"two\"}\n",
    )
    .join("\n");
    assert!(
        all.contains(":4:") || all.contains(":6:"),
        "the entry's line: {all}"
    );
    assert!(
        all.contains("tool `greet`") && all.contains("not a semver constraint"),
        "{all}"
    );
    let all = errors(
        "version: 1\ntools:\n  openapi:\n    - id: o\n      spec: o.yaml\n      version: \"2024-05-01\"\n      require: \"^^2\"\n",
    )
    .join("\n");
    assert!(
        all.contains(":6:") && all.contains("not a semantic version"),
        "{all}"
    );
    assert!(
        all.contains(":7:") && all.contains("not a semver constraint"),
        "{all}"
    );
    let all =
        errors("version: 1\ntools:\n  local:\n    - {fn: crate::a, version: \"1.0\"}\n").join("\n");
    assert!(
        all.contains(":4:") && all.contains("not a semantic version"),
        "{all}"
    );
}
