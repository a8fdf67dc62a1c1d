//! Prism (npm `@stoplight/prism-cli`, installed by `scripts/install-peers.sh`) mocking one
//! OpenAPI document on 127.0.0.1, for one test.
//!
//! What prism does with a request (checked by `prism_flags_requests_that_break_the_spec`):
//!
//! * it serves the document's paths at the root: the path of the server URL is *not* a prefix
//!   (`/api/v3/pet/1` is a 404 for the petstore, `/pet/1` is served), so a source's `base_url`
//!   is `http://127.0.0.1:PORT` with no path;
//! * it checks the security requirement first: no credentials → 401;
//! * a request that breaks the document (path, query, header, body) gets a `sl-violations`
//!   header listing the violations, with status 422, or the operation's own `400` response when
//!   it declares one (with or without `--errors`, which only concerns response violations) —
//!   so the header, not the status, says whether a request was right.
//!
//! Each [`Prism`] serves one document; several run in parallel on distinct ports. It runs in its
//! own process group, killed (SIGKILL) and reaped on drop; its output goes to a log file whose
//! tail is in every failure message.

use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

#[path = "../../runtime/tests/support/peers.rs"]
mod peers;

/// The pinned prism-cli version (`scripts/install-peers.sh`).
pub const PRISM_VERSION: &str = "5.14.2";
/// How long prism gets to load a document and listen. The largest document used here (GitHub,
/// as a request view) loads in a few seconds alone; a loaded 2-core CI machine gets margin.
pub const READY_TIMEOUT: Duration = Duration::from_secs(150);

/// `.peers/node_modules/@stoplight/prism-cli/dist/index.js` (run with the system `node`).
pub fn prism_js() -> PathBuf {
    let path = peers::peers_root().join("node_modules/@stoplight/prism-cli/dist/index.js");
    peers::require_installed(path, &format!("@stoplight/prism-cli {PRISM_VERSION}"))
}

/// A running `prism mock`.
pub struct Prism {
    child: Option<Child>,
    pid: u32,
    port: u16,
    log_path: PathBuf,
    /// The document it serves.
    pub spec: PathBuf,
    /// How long it took from spawn to listening.
    pub load_time: Duration,
}

impl Prism {
    /// Starts `prism mock SPEC --host 127.0.0.1 --port <free port>` and waits until it listens
    /// (tries another port when the first is taken). Panics with the log's tail when it does not
    /// come up within [`READY_TIMEOUT`].
    pub fn start(spec: &Path) -> Prism {
        let mut errors = Vec::new();
        for _ in 0..3 {
            match Self::try_start(spec, peers::free_port()) {
                Ok(prism) => return prism,
                Err(e) => errors.push(e),
            }
        }
        panic!(
            "prism did not start on {}:\n\n{}",
            spec.display(),
            errors.join("\n\n")
        );
    }

    fn try_start(spec: &Path, port: u16) -> Result<Prism, String> {
        let node = peers::node();
        let js = prism_js();
        let log_path =
            std::env::temp_dir().join(format!("toolgate-prism-{}-{port}.log", std::process::id()));
        let log = File::create(&log_path).map_err(|e| format!("create {log_path:?}: {e}"))?;
        let log_err = log.try_clone().map_err(|e| e.to_string())?;
        let port_text = port.to_string();
        let started = Instant::now();
        let child = Command::new(node)
            .arg(js)
            .arg("mock")
            .arg(spec)
            .args(["--host", "127.0.0.1", "--port", &port_text])
            // Violations come back in the `sl-violations` header; the log keeps warnings only.
            .args(["--verboseLevel", "warn"])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start prism: {e}"))?;
        let mut prism = Prism {
            pid: child.id(),
            child: Some(child),
            port,
            log_path,
            spec: spec.to_path_buf(),
            load_time: Duration::ZERO,
        };
        let deadline = started + READY_TIMEOUT;
        loop {
            if let Some(Ok(Some(status))) = prism.child.as_mut().map(Child::try_wait) {
                let tail = prism.log_tail();
                prism.kill();
                return Err(format!(
                    "prism on port {port} exited before it listened ({status}); its log:\n{tail}"
                ));
            }
            if peers::port_accepts(port) {
                prism.load_time = started.elapsed();
                return Ok(prism);
            }
            if Instant::now() >= deadline {
                let tail = prism.log_tail();
                prism.kill();
                return Err(format!(
                    "prism did not listen on 127.0.0.1:{port} within {READY_TIMEOUT:?}; its log:\n{tail}"
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether prism still runs (it crashes on some valid requests: see `acceptance.rs`).
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// The first line of the JavaScript error prism died of, if its log has one.
    pub fn crash_reason(&self) -> String {
        let tail = self.log_tail();
        tail.lines()
            .find(|l| l.contains("Error"))
            .unwrap_or("exited")
            .trim()
            .to_string()
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The last 4000 bytes of prism's output.
    pub fn log_tail(&self) -> String {
        let Ok(mut file) = File::open(&self.log_path) else {
            return String::new();
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let _ = file.seek(SeekFrom::Start(len.saturating_sub(4000)));
        let mut bytes = Vec::new();
        let _ = file.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    }

    fn kill(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = Command::new("kill")
            .args(["-s", "KILL", "--", &format!("-{}", self.pid)])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Prism {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!(
                "prism for {} (port {}) log kept at {}",
                self.spec.display(),
                self.port,
                self.log_path.display()
            );
        } else {
            let _ = fs::remove_file(&self.log_path);
        }
    }
}

/// The violations prism reports in a response's `sl-violations` header, split into the
/// security ones (`code` 401/403: missing credentials, which a test may accept) and the rest
/// (the request breaks the document).
#[derive(Debug, Default, Clone)]
pub struct Violations {
    pub security: Vec<Value>,
    pub request: Vec<Value>,
}

impl Violations {
    /// From an `sl-violations` header.
    pub fn parse(header: Option<&str>) -> Violations {
        let list = header
            .and_then(|h| serde_json::from_str::<Value>(h).ok())
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default();
        Self::from_list(list)
    }

    /// From the body of prism's own 422 (`{"validation": [...]}`, locations without the
    /// leading `request`, which is added).
    pub fn from_problem(body: &[u8]) -> Violations {
        let list = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| v.get("validation").and_then(Value::as_array).cloned())
            .unwrap_or_default()
            .into_iter()
            .map(|mut v| {
                if let Some(Value::Array(location)) = v.get_mut("location")
                    && location.first().and_then(Value::as_str) != Some("request")
                {
                    location.insert(0, Value::from("request"));
                }
                v
            })
            .collect();
        Self::from_list(list)
    }

    fn from_list(list: Vec<Value>) -> Violations {
        let mut out = Violations::default();
        for v in list {
            let security = matches!(v.get("code").and_then(Value::as_u64), Some(401 | 403));
            let error = v.get("severity").and_then(Value::as_str) == Some("Error");
            if security {
                out.security.push(v);
            } else if error {
                out.request.push(v);
            }
        }
        out
    }
}

/// A view of an OpenAPI document that keeps what prism validates requests against (paths,
/// parameters, request bodies, security) and replaces every operation's responses with one
/// empty `200`: the components only responses use are dropped.
///
/// Prism 5 cannot load the Stripe document in reasonable time (measured: still "Starting
/// Prism…" after 11 minutes at 100% of a core; its response schemas are large and deeply
/// circular); the view of it loads in ~5 s. The view changes nothing prism checks about a
/// request.
pub fn request_view(root: &Value) -> Value {
    let mut view = root.clone();
    if let Some(paths) = view.get_mut("paths").and_then(Value::as_object_mut) {
        for item in paths.values_mut() {
            let Some(item) = item.as_object_mut() else {
                continue;
            };
            for (method, op) in item.iter_mut() {
                if !is_method(method) {
                    continue;
                }
                if let Some(op) = op.as_object_mut() {
                    op.insert(
                        "responses".into(),
                        serde_json::json!({"200": {"description": "ok"}}),
                    );
                    op.remove("callbacks");
                }
            }
        }
    }
    view.as_object_mut().map(|v| v.remove("webhooks"));
    // Keep only the components still referenced (transitively) from the rest.
    let Some(components) = view.get("components").and_then(Value::as_object).cloned() else {
        return view;
    };
    let mut without_components = view.clone();
    if let Some(v) = without_components.as_object_mut() {
        v.remove("components");
    }
    let mut keep: std::collections::BTreeSet<String> = Default::default();
    let mut queue: Vec<String> = Vec::new();
    collect_refs(&without_components, &mut queue);
    while let Some(r) = queue.pop() {
        if !keep.insert(r.clone()) {
            continue;
        }
        if let Some(target) = r.strip_prefix('#').and_then(|p| root.pointer(p)) {
            collect_refs(target, &mut queue);
        }
    }
    let mut kept = serde_json::Map::new();
    for (kind, entries) in &components {
        if kind == "securitySchemes" {
            kept.insert(kind.clone(), entries.clone());
            continue;
        }
        let Some(entries) = entries.as_object() else {
            continue;
        };
        let used: serde_json::Map<String, Value> = entries
            .iter()
            .filter(|(name, _)| keep.contains(&format!("#/components/{kind}/{}", escape(name))))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !used.is_empty() {
            kept.insert(kind.clone(), Value::Object(used));
        }
    }
    view["components"] = Value::Object(kept);
    view
}

fn is_method(key: &str) -> bool {
    matches!(
        key,
        "get" | "put" | "post" | "delete" | "options" | "head" | "patch" | "trace" | "query"
    )
}

fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

fn collect_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(obj) => {
            for (k, v) in obj {
                if k == "$ref" {
                    if let Some(r) = v.as_str() {
                        out.push(r.to_string());
                    }
                } else {
                    collect_refs(v, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}
