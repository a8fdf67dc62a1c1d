//! `$ref` resolution: JSON pointers into the document (RFC 6901, as URI fragments: `~0`, `~1`
//! and percent-decoding, RFC 3986 §2.1), and the bundling of relative-file references into the
//! root document ([`Document::from_file`](super::Document::from_file)).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::OpenApiError;

/// Where bundled files are placed in the root document: `#/x-toolgate-bundled/{key}` holds the
/// whole of one referenced file.
pub(crate) const BUNDLED: &str = "x-toolgate-bundled";

/// The most `$ref`s followed in a chain (a ref to a ref ...) before it counts as circular.
pub(crate) const MAX_REF_CHAIN: usize = 32;

/// Escapes one JSON-pointer segment (`~` → `~0`, `/` → `~1`).
pub(crate) fn escape(segment: &str) -> String {
    if segment.contains(['~', '/']) {
        segment.replace('~', "~0").replace('/', "~1")
    } else {
        segment.to_string()
    }
}

/// Decodes `%XX` sequences (invalid ones are kept as written).
fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_string();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes.get(i).copied().unwrap_or(0);
        if b == b'%'
            && let (Some(h), Some(l)) = (bytes.get(i + 1), bytes.get(i + 2))
            && let (Some(h), Some(l)) = ((*h as char).to_digit(16), (*l as char).to_digit(16))
        {
            out.push(u8::try_from(h * 16 + l).unwrap_or(b'?'));
            i += 3;
            continue;
        }
        out.push(b);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The segments of a local reference `#/a/b~1c` (unescaped), or `None` when it is not local.
pub(crate) fn segments(reference: &str) -> Option<Vec<String>> {
    let frag = reference.strip_prefix('#')?;
    if frag.is_empty() {
        return Some(Vec::new());
    }
    let frag = frag.strip_prefix('/')?;
    Some(
        frag.split('/')
            .map(|s| percent_decode(s).replace("~1", "/").replace("~0", "~"))
            .collect(),
    )
}

/// The value a local reference points to.
pub(crate) fn lookup<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let mut v = root;
    for seg in segments(reference)? {
        v = match v {
            Value::Object(m) => m.get(&seg)?,
            Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(v)
}

/// Why a reference cannot be followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RefError {
    /// Not a local `#...` reference (another file or a URL).
    External(String),
    /// Points to nothing in the document (or is circular, or not a string).
    Unresolved(String),
}

/// Follows `value`'s `$ref` chain (if any) to a non-reference value; returns it and its pointer
/// (`at` when `value` is not a reference).
pub(crate) fn follow<'a>(
    root: &'a Value,
    mut value: &'a Value,
    at: &str,
) -> Result<(&'a Value, String), RefError> {
    let mut ptr = at.to_string();
    for _ in 0..MAX_REF_CHAIN {
        let Some(r) = value.as_object().and_then(|m| m.get("$ref")) else {
            return Ok((value, ptr));
        };
        let Some(r) = r.as_str() else {
            return Err(RefError::Unresolved(format!("`$ref` is not a string: {r}")));
        };
        if !r.starts_with('#') {
            return Err(RefError::External(r.to_string()));
        }
        value = lookup(root, r)
            .ok_or_else(|| RefError::Unresolved(format!("`$ref: {r}` points to nothing")))?;
        ptr = r.to_string();
    }
    Err(RefError::Unresolved(format!(
        "more than {MAX_REF_CHAIN} chained `$ref`s (circular?) from {at}"
    )))
}

/// Bundles every relative-file `$ref` reachable from `root` (read from `path`): each referenced
/// file is placed whole under `#/x-toolgate-bundled/{key}` and the references are rewritten to
/// point there (also inside the bundled files, transitively). URLs are left as they are.
///
/// # Errors
/// [`OpenApiError::Ref`] for a referenced file that cannot be read or parsed.
pub(crate) fn bundle(
    root: &mut Value,
    path: &Path,
    origin: &str,
) -> Result<Vec<PathBuf>, OpenApiError> {
    let mut b = Bundler {
        origin: origin.to_string(),
        keys: HashMap::new(),
        queue: Vec::new(),
        done: Map::new(),
        files: Vec::new(),
    };
    let base = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    b.rewrite(root, &base, None, "#")?;
    while let Some((file, key)) = b.queue.pop() {
        let text = std::fs::read_to_string(&file).map_err(|e| OpenApiError::Ref {
            origin: origin.to_string(),
            pointer: format!("#/{BUNDLED}/{key}"),
            message: format!("cannot read `{}`: {e}", file.display()),
        })?;
        let mut value = super::parse::parse_text(&text, &file.display().to_string())?;
        let dir = file.parent().unwrap_or(Path::new(".")).to_path_buf();
        b.rewrite(&mut value, &dir, Some(&key), &format!("#/{BUNDLED}/{key}"))?;
        b.done.insert(key, value);
    }
    if !b.done.is_empty()
        && let Value::Object(m) = root
    {
        m.insert(
            BUNDLED.to_string(),
            Value::Object(std::mem::take(&mut b.done)),
        );
    }
    Ok(b.files)
}

struct Bundler {
    origin: String,
    /// Canonical file → its key under `x-toolgate-bundled`.
    keys: HashMap<PathBuf, String>,
    queue: Vec<(PathBuf, String)>,
    done: Map<String, Value>,
    files: Vec<PathBuf>,
}

impl Bundler {
    /// Rewrites the `$ref`s in `v` (a file whose directory is `dir`, bundled under `key`, or the
    /// root when `None`).
    fn rewrite(
        &mut self,
        v: &mut Value,
        dir: &Path,
        key: Option<&str>,
        at: &str,
    ) -> Result<(), OpenApiError> {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get_mut("$ref")
                    && let Some(new) = self.target(r, dir, key, at)?
                {
                    *r = new;
                }
                for (k, c) in m.iter_mut() {
                    if k != "$ref" {
                        self.rewrite(c, dir, key, &format!("{at}/{}", escape(k)))?;
                    }
                }
            }
            Value::Array(a) => {
                for (i, c) in a.iter_mut().enumerate() {
                    self.rewrite(c, dir, key, &format!("{at}/{i}"))?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The rewritten reference, or `None` to keep it.
    fn target(
        &mut self,
        r: &str,
        dir: &Path,
        key: Option<&str>,
        at: &str,
    ) -> Result<Option<String>, OpenApiError> {
        let (file, frag) = match r.split_once('#') {
            Some((f, frag)) => (f, frag),
            None => (r, ""),
        };
        if file.is_empty() {
            // Local to the file it is in.
            return Ok(key.map(|k| format!("#/{BUNDLED}/{k}{frag}")));
        }
        if file.contains("://") {
            return Ok(None);
        }
        let joined = dir.join(percent_decode(file));
        let canonical = joined.canonicalize().map_err(|e| OpenApiError::Ref {
            origin: self.origin.clone(),
            pointer: at.to_string(),
            message: format!("cannot read `{}` (from `$ref: {r}`): {e}", joined.display()),
        })?;
        let k = match self.keys.get(&canonical) {
            Some(k) => k.clone(),
            None => {
                let stem = canonical
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let mut base: String = stem
                    .chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                            c
                        } else {
                            '_'
                        }
                    })
                    .collect();
                if base.is_empty() {
                    base = "file".to_string();
                }
                let mut k = base.clone();
                let mut n = 2;
                while self.keys.values().any(|v| *v == k) {
                    k = format!("{base}_{n}");
                    n += 1;
                }
                self.keys.insert(canonical.clone(), k.clone());
                self.files.push(canonical.clone());
                self.queue.push((canonical, k.clone()));
                k
            }
        };
        Ok(Some(format!("#/{BUNDLED}/{k}{frag}")))
    }
}
