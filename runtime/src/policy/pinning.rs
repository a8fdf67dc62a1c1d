//! Tool pinning (`policy.pinning`): every remote tool (source kind `mcp` or `a2a`) is hashed
//! (SHA-256 of its name, description, input and output schemas, keys sorted, and the MAJOR
//! part of its version when it has one) and compared with the hash approved for it: in the
//! approvals file (JSON `{"tool": "sha256 hex"}`, or `"sha256 hex@version"` for a versioned
//! tool: the version approved, kept as a record), relative to the tools.yaml, or, for
//! replicas sharing a store (`store.redis`), in Redis (see below). So a MAJOR version change
//! is always a definition change (withheld until approved, even with the same schemas), and a
//! minor or patch change with the same definition is not.
//!
//! * Same hash: the tool is listed and callable.
//! * No approval yet: with `approve_new` (the default; trust on first use) the hash is recorded
//!   at once; without, the tool is withheld ([`PinState::New`]).
//! * Another hash: the tool is withheld ([`PinState::Changed`]) — not listed by
//!   [`Toolset::tools`](crate::Toolset::tools), and a call is refused with `permission_denied` —
//!   until `toolgate approve` ([`Toolset::approve`](crate::Toolset::approve)) records its new
//!   hash. A withheld tool is logged once (warning) per hash.
//!
//! # Without a shared store
//! A running toolset (the gateway) sees a `toolgate approve` run from another process: the
//! approvals file is looked at again at most once every [`RECHECK`] (its modification time and
//! size), and re-read when it changed. A file that became unreadable or invalid is logged and
//! the approvals held so far are kept.
//!
//! # With a shared store (the `redis` feature)
//! The approvals are the Redis hash `{prefix}:pins`, and Redis is authoritative: each replica
//! reads it whole when its notice relay starts (the first [`Toolset::discover`](crate::Toolset::discover)),
//! on every [`Notice::PinsChanged`](crate::store::Notice::PinsChanged) from another replica,
//! and after its subscription broke; what it read replaces what it held. When the hash is
//! empty, the approvals held are seeded into it first (`HSETNX`, so the first replica's
//! entries win): on the first read these are the approvals file's, so a deployment that
//! starts sharing keeps its approvals, and after Redis lost its data the replicas put back
//! what they held. The file is read once, at start.
//!
//! * Verdicts stay local and synchronous: no listing or call waits for Redis.
//! * Trust on first use records the new tool in memory at once (not in the file) and pins it
//!   in Redis from a task of its own (`HSETNX`, then the hash Redis holds): two replicas
//!   meeting the same new tool keep the first one's hash, and on the one whose hash lost, the
//!   tool turns [`PinState::Changed`] as soon as the answer comes.
//! * [`Toolset::approve`](crate::Toolset::approve) first reads Redis' approvals, then writes
//!   the new hashes to Redis (telling the other replicas, which see them within the time a
//!   pub/sub message takes), then to the file. When Redis does not answer it is an error and
//!   nothing is approved.
//! * While Redis cannot answer, the approvals read last are kept (`pins` always fails open).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::ToolDescriptor;

/// Why a remote tool is withheld.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PinState {
    /// Never approved, and `approve_new` is off.
    New,
    /// Its name, description, schemas or MAJOR version changed since it was approved.
    Changed,
}

/// A remote tool withheld by pinning (see [`Toolset::withheld`](crate::Toolset::withheld)).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Withheld {
    /// The tool's name inside toolgate.
    pub name: String,
    /// The source that offers it.
    pub source: String,
    /// Why it is withheld.
    pub state: PinState,
}

impl std::fmt::Display for Withheld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.state {
            PinState::New => write!(
                f,
                "tool `{}` is new and not approved yet (policy.pinning.approve_new is off); run `toolgate approve {}`",
                self.name, self.name
            ),
            PinState::Changed => write!(
                f,
                "tool `{}` changed since it was approved (its description, schemas or MAJOR version differ); run `toolgate approve {}`",
                self.name, self.name
            ),
        }
    }
}

/// How often, at most, the approvals file is looked at again for changes made by another process.
pub const RECHECK: Duration = Duration::from_secs(1);

/// What the approvals file looked like when last read: its modification time, size and inode
/// (every write renames a new file into place, so the inode changes even when a hash is replaced
/// by another of the same length within the file system's timestamp granularity).
type Stamp = Option<(SystemTime, u64, u64)>;

fn stamp(file: &Path) -> Stamp {
    let meta = std::fs::metadata(file).ok()?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let inode = 0;
    Some((meta.modified().ok()?, meta.len(), inode))
}

/// When the file was last looked at, and what it looked like when last read.
struct Checked {
    at: Instant,
    stamp: Stamp,
}

/// Whether tools of a source of this kind (`ToolSource::kind`) are remote ones, which pinning
/// covers: `mcp` and `a2a`.
pub fn is_remote(kind: &str) -> bool {
    matches!(kind, "mcp" | "a2a")
}

/// A tool's verdict, with the descriptor it was made for (`None`: listed and callable).
type Verdict = (Arc<ToolDescriptor>, Option<PinState>);

/// The pins of one toolset: the approvals file (or shared store) and what it holds.
pub(crate) struct Pins {
    file: PathBuf,
    approve_new: bool,
    /// Tool → approved hash (shared with the tasks pinning new tools in the store). Locked
    /// before `verdicts`.
    approved: Arc<Mutex<BTreeMap<String, String>>>,
    /// Each tool's last verdict, for the descriptor it was made for (hashing once per listing).
    verdicts: Arc<Mutex<HashMap<String, Verdict>>>,
    /// (tool, hash) pairs already warned about.
    warned: Mutex<HashSet<(String, String)>>,
    /// The last look at the file (see [`RECHECK`]).
    checked: Mutex<Checked>,
    /// The store the approvals are shared through, if any (then the file is not looked at
    /// again after the first read).
    #[cfg(feature = "redis")]
    shared: Option<shared::Shared>,
}

/// The approvals in `file` (absent: none).
fn read(file: &Path) -> Result<BTreeMap<String, String>, String> {
    match std::fs::read_to_string(file) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| {
            format!(
                "the approvals file {} is not a JSON object of tool → hash: {e}",
                file.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
        Err(e) => Err(format!(
            "the approvals file {} cannot be read: {e}",
            file.display()
        )),
    }
}

impl Pins {
    /// Reads the approvals `file` (absent: nothing approved yet).
    ///
    /// # Errors
    /// The file exists but cannot be read or is not a JSON object of strings.
    pub(crate) fn load(file: PathBuf, approve_new: bool) -> Result<Self, String> {
        let checked = Checked {
            at: Instant::now(),
            stamp: stamp(&file),
        };
        let approved = read(&file)?;
        Ok(Self {
            file,
            approve_new,
            approved: Arc::new(Mutex::new(approved)),
            verdicts: Arc::new(Mutex::new(HashMap::new())),
            warned: Mutex::new(HashSet::new()),
            checked: Mutex::new(checked),
            #[cfg(feature = "redis")]
            shared: None,
        })
    }

    /// Re-reads the file when another process changed it (looked at once per [`RECHECK`]);
    /// never with a shared store (Redis holds the approvals then).
    fn reload_if_changed(&self) {
        #[cfg(feature = "redis")]
        if self.shared.is_some() {
            return;
        }
        {
            // Released before `approved` is locked (`verdict` and `approve` lock `approved`,
            // then this one).
            let mut checked = lock(&self.checked);
            if checked.at.elapsed() < RECHECK {
                return;
            }
            checked.at = Instant::now();
            let now = stamp(&self.file);
            if now == checked.stamp {
                return;
            }
            checked.stamp = now;
        }
        match read(&self.file) {
            Ok(on_disk) => {
                let mut approved = lock(&self.approved);
                *approved = on_disk;
                // Cleared under `approved`: a verdict made from the old approvals cannot be
                // cached after this.
                lock(&self.verdicts).clear();
                tracing::info!(file = %self.file.display(), "approvals file changed: re-read");
            }
            Err(e) => tracing::warn!("{e}; the approvals read before are kept"),
        }
    }

    /// `None` when the remote tool `d` may be listed and called; else why it is withheld. A
    /// new tool is approved (and the file written) here under `approve_new`.
    pub(crate) fn verdict(&self, d: &Arc<ToolDescriptor>) -> Option<PinState> {
        self.reload_if_changed();
        if let Some((seen, v)) = lock(&self.verdicts).get(&d.name)
            && Arc::ptr_eq(seen, d)
        {
            return *v;
        }
        let hash = hash(d);
        let verdict = {
            let mut approved = lock(&self.approved);
            let verdict = match approved.get(&d.name) {
                Some(h) if same_pin(h, &hash) => None,
                Some(_) => Some(PinState::Changed),
                #[cfg(feature = "redis")]
                None if self.approve_new && self.shared.is_some() => {
                    self.pin_first_use(&mut approved, &d.name, &hash);
                    None
                }
                None if self.approve_new => {
                    let pin = [(d.name.clone(), hash.clone())];
                    match self.write_merged(&mut approved, &pin, true) {
                        Ok(()) => {
                            tracing::info!(tool = %d.name, file = %self.file.display(), "new remote tool approved and pinned (trust on first use)")
                        }
                        Err(e) => {
                            tracing::warn!(tool = %d.name, "new remote tool approved, but {e}")
                        }
                    }
                    // Another process may have pinned it another way meanwhile.
                    match approved.get(&d.name) {
                        Some(h) if !same_pin(h, &hash) => Some(PinState::Changed),
                        _ => None,
                    }
                }
                None => Some(PinState::New),
            };
            // Cached under `approved`, so that a reload cannot clear the cache before a verdict
            // made from the approvals it replaced is put in.
            lock(&self.verdicts).insert(d.name.clone(), (Arc::clone(d), verdict));
            verdict
        };
        if let Some(state) = verdict
            && lock(&self.warned).insert((d.name.clone(), hash))
        {
            let w = Withheld {
                name: d.name.clone(),
                source: d.source.clone(),
                state,
            };
            tracing::warn!(tool = %d.name, state = ?state, "remote tool withheld: {w}");
        }
        verdict
    }

    /// Approves the tools `pick` chooses (`toolgate approve`), as they are now: with a shared
    /// store, its approvals are read first (so that `pick` sees which tools Redis withholds),
    /// and the new hashes are written to it, then to the file; without, to the file. Returns
    /// what `pick` chose.
    ///
    /// # Errors
    /// `pick`'s error; a retryable `network` error when the shared store did not answer
    /// (nothing is approved then); `internal` when the file cannot be written.
    pub(crate) async fn approve_with(
        &self,
        pick: impl FnOnce() -> Result<Vec<Arc<ToolDescriptor>>, crate::ToolError>,
    ) -> Result<Vec<Arc<ToolDescriptor>>, crate::ToolError> {
        #[cfg(feature = "redis")]
        let _serial = self.catch_up().await?;
        let tools = pick()?;
        #[cfg(feature = "redis")]
        self.share(&tools).await?;
        self.approve(&tools).map_err(crate::ToolError::internal)?;
        Ok(tools)
    }

    /// Records the current hash of each of `tools` and writes the file.
    ///
    /// # Errors
    /// The file cannot be written.
    pub(crate) fn approve(&self, tools: &[Arc<ToolDescriptor>]) -> Result<(), String> {
        let pins: Vec<(String, String)> = tools.iter().map(|d| (d.name.clone(), hash(d))).collect();
        let mut approved = lock(&self.approved);
        #[cfg(feature = "redis")]
        let written = if self.shared.is_some() {
            self.record_shared(&mut approved, &pins)
        } else {
            self.write_merged(&mut approved, &pins, false)
        };
        #[cfg(not(feature = "redis"))]
        let written = self.write_merged(&mut approved, &pins, false);
        lock(&self.verdicts).clear();
        written
    }

    /// Records `pins` (tool → hash) over what the file holds now (another process — a running
    /// gateway's trust on first use, a `toolgate approve` — may have written it since it was
    /// read), writes the result, and makes it `approved`. With `first_use`, a tool the file
    /// already pins keeps its pin. A file that cannot be read is replaced by `approved` with the
    /// pins.
    ///
    /// # Errors
    /// The file cannot be written (`approved` holds the pins all the same).
    fn write_merged(
        &self,
        approved: &mut BTreeMap<String, String>,
        pins: &[(String, String)],
        first_use: bool,
    ) -> Result<(), String> {
        if let Ok(on_disk) = read(&self.file) {
            *approved = on_disk;
        }
        for (name, hash) in pins {
            if first_use {
                approved.entry(name.clone()).or_insert_with(|| hash.clone());
            } else {
                approved.insert(name.clone(), hash.clone());
            }
        }
        write(&self.file, approved)?;
        lock(&self.checked).stamp = stamp(&self.file);
        Ok(())
    }
}

#[cfg(feature = "redis")]
mod shared;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Writes the approvals (pretty JSON, sorted), through a temporary file and a rename.
fn write(file: &Path, approved: &BTreeMap<String, String>) -> Result<(), String> {
    let text = serde_json::to_string_pretty(approved).unwrap_or_default() + "\n";
    let tmp = file.with_extension("json.tmp");
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, file))
        .map_err(|e| {
            format!(
                "the approvals file {} cannot be written: {e}",
                file.display()
            )
        })
}

/// The tool's hash: SHA-256 (hex) of its name, description and schemas as canonical JSON,
/// and of the MAJOR part of its version when it has one (so that a MAJOR change is always a
/// definition change, and a minor or patch change alone is not; an unversioned tool hashes
/// as it did before versions were read).
pub(crate) fn hash(d: &ToolDescriptor) -> String {
    let mut pinned = serde_json::json!({
        "name": d.name,
        "description": d.description,
        "input_schema": canonical(&d.input_schema),
        "output_schema": d.output_schema.as_ref().map(canonical),
    });
    if let Some(major) = toolgate_model::config::major(d.version.as_deref()) {
        pinned["major_version"] = major.into();
    }
    let digest = Sha256::digest(canonical(&pinned).to_string().as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    match &d.version {
        Some(v) => format!("{hex}@{v}"),
        None => hex,
    }
}

/// Whether two pins (`hex` or `hex@version`) pin the same definition: the version after `@`
/// is a record of the version approved, not compared (its MAJOR part is in the hash).
pub(crate) fn same_pin(a: &str, b: &str) -> bool {
    a.split('@').next() == b.split('@').next()
}

/// `value` with every object's keys sorted (the same schema hashes the same whatever order a
/// server sends its keys in).
fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), canonical(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(description: &str) -> Arc<ToolDescriptor> {
        Arc::new(ToolDescriptor {
            name: "srv.greet".into(),
            description: description.into(),
            source: "srv".into(),
            input_schema: json!({"type": "object", "properties": {"name": {"type": "string"}}}),
            ..ToolDescriptor::default()
        })
    }

    #[test]
    fn hashes_ignore_key_order_but_not_descriptions_or_schemas() {
        let a = tool("Greets.");
        let mut b = ToolDescriptor::clone(&a);
        b.input_schema = json!({"properties": {"name": {"type": "string"}}, "type": "object"});
        assert_eq!(hash(&a), hash(&b));
        assert_eq!(hash(&a).len(), 64);
        assert_ne!(hash(&a), hash(&tool("Greets, and steals your keys.")));
        b.output_schema = Some(json!({"type": "string"}));
        assert_ne!(hash(&a), hash(&b));
    }

    #[test]
    fn trust_on_first_use_then_withheld_when_changed_until_approved() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pins.json");
        let pins = Pins::load(file.clone(), true).unwrap();
        assert_eq!(pins.verdict(&tool("Greets.")), None);
        let written: BTreeMap<String, String> =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(written["srv.greet"], hash(&tool("Greets.")));

        // A later run: the file is read back; the changed tool is withheld.
        let pins = Pins::load(file.clone(), true).unwrap();
        let changed = tool("Greets, and steals your keys.");
        assert_eq!(pins.verdict(&changed), Some(PinState::Changed));
        assert_eq!(pins.verdict(&tool("Greets.")), None);
        pins.approve(std::slice::from_ref(&changed)).unwrap();
        assert_eq!(pins.verdict(&changed), None);
        assert_eq!(
            Pins::load(file, true).unwrap().verdict(&changed),
            None,
            "the approval is kept in the file"
        );
    }

    fn versioned(version: &str) -> Arc<ToolDescriptor> {
        let mut d = ToolDescriptor::clone(&tool("Greets."));
        d.version = Some(version.into());
        Arc::new(d)
    }

    #[test]
    fn a_major_version_change_is_withheld_until_approved_and_a_minor_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pins.json");
        let pins = Pins::load(file.clone(), true).unwrap();
        assert_eq!(pins.verdict(&versioned("2.0.0")), None);
        let written: BTreeMap<String, String> =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert!(
            written["srv.greet"].ends_with("@2.0.0"),
            "the pin records the version"
        );
        // Same definition, minor and patch bumps: still the approved tool.
        assert_eq!(pins.verdict(&versioned("2.1.0")), None);
        assert_eq!(pins.verdict(&versioned("2.1.7")), None);
        // Same definition, MAJOR bump: withheld until approved.
        let three = versioned("3.0.0");
        assert_eq!(pins.verdict(&three), Some(PinState::Changed));
        pins.approve(std::slice::from_ref(&three)).unwrap();
        assert_eq!(pins.verdict(&three), None);
        assert_eq!(pins.verdict(&versioned("2.1.0")), Some(PinState::Changed));
        // An unversioned tool hashes as it did before versions were read.
        assert_eq!(hash(&tool("Greets.")).len(), 64);
    }

    #[test]
    fn an_approval_written_by_another_process_is_seen_without_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pins.json");
        let changed = tool("Greets, and steals your keys.");
        Pins::load(file.clone(), true)
            .unwrap()
            .verdict(&tool("Greets."));
        let serving = Pins::load(file.clone(), true).unwrap();
        assert_eq!(serving.verdict(&changed), Some(PinState::Changed));
        // `toolgate approve` in another process.
        Pins::load(file.clone(), true)
            .unwrap()
            .approve(std::slice::from_ref(&changed))
            .unwrap();
        // Within RECHECK the verdict may be the old one; after it, the file is read again.
        std::thread::sleep(RECHECK + Duration::from_millis(50));
        assert_eq!(serving.verdict(&changed), None);
        // A file broken afterwards keeps what was read.
        std::fs::write(&file, "not json").unwrap();
        std::thread::sleep(RECHECK + Duration::from_millis(50));
        assert_eq!(serving.verdict(&changed), None);
    }

    #[test]
    fn a_first_use_pin_keeps_what_another_process_wrote_meanwhile() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pins.json");
        let changed = tool("Greets, and steals your keys.");
        Pins::load(file.clone(), true)
            .unwrap()
            .verdict(&tool("Greets."));
        let serving = Pins::load(file.clone(), true).unwrap();
        // `toolgate approve` in another process, then at once (within RECHECK) a new tool is
        // trusted on first use by the serving process: the approval survives, on disk and in
        // memory.
        Pins::load(file.clone(), true)
            .unwrap()
            .approve(std::slice::from_ref(&changed))
            .unwrap();
        let mut new_tool = ToolDescriptor::clone(&tool("Waves."));
        new_tool.name = "srv.wave".into();
        assert_eq!(serving.verdict(&Arc::new(new_tool)), None);
        assert_eq!(serving.verdict(&changed), None);
        let written: BTreeMap<String, String> =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(written["srv.greet"], hash(&changed));
        assert!(written.contains_key("srv.wave"), "{written:?}");
    }

    #[test]
    fn without_approve_new_a_new_tool_is_withheld() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pins.json");
        let pins = Pins::load(file.clone(), false).unwrap();
        assert_eq!(pins.verdict(&tool("Greets.")), Some(PinState::New));
        assert!(!file.exists());
        std::fs::write(&file, "not json").unwrap();
        let err = Pins::load(file, false).err().unwrap();
        assert!(err.contains("is not a JSON object"), "{err}");
    }
}
