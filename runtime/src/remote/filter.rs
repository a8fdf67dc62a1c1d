//! [`ToolFilter`]: allow and deny lists of tool names and globs.

use glob::Pattern;

use crate::BuildError;

/// Which tools of a remote source are offered: a name passes when it matches an `allow` entry
/// (or `allow` is empty) and no `deny` entry. Entries are exact names or globs (`*`, `?`,
/// `[abc]`, as the `glob` crate reads them); deny wins over allow.
///
/// The same filter applies to every transport and protocol, before a tool reaches the toolset,
/// a listing or an export.
#[derive(Debug, Clone, Default)]
pub struct ToolFilter {
    allow: Vec<Pattern>,
    deny: Vec<Pattern>,
}

impl ToolFilter {
    /// A filter that lets everything through.
    pub fn all() -> Self {
        Self::default()
    }

    /// A filter from allow and deny entries.
    ///
    /// # Errors
    /// [`BuildError::Source`] naming `source` and the entry when an entry is not a valid glob.
    pub fn new<A, D>(source: &str, allow: A, deny: D) -> Result<Self, BuildError>
    where
        A: IntoIterator,
        A::Item: AsRef<str>,
        D: IntoIterator,
        D::Item: AsRef<str>,
    {
        let compile = |list: &str, entry: &str| {
            Pattern::new(entry).map_err(|e| BuildError::Source {
                source_id: source.to_string(),
                message: format!("`{list}` entry `{entry}` is not a valid name or glob: {e}"),
            })
        };
        Ok(Self {
            allow: allow
                .into_iter()
                .map(|a| compile("allow", a.as_ref()))
                .collect::<Result<_, _>>()?,
            deny: deny
                .into_iter()
                .map(|d| compile("deny", d.as_ref()))
                .collect::<Result<_, _>>()?,
        })
    }

    /// Whether the tool `name` is offered.
    pub fn allows(&self, name: &str) -> bool {
        (self.allow.is_empty() || self.allow.iter().any(|p| p.matches(name)))
            && !self.deny.iter().any(|p| p.matches(name))
    }

    /// Whether a tool known under several `names` is offered (a remote tool renamed to a
    /// provider-safe name is matched under its remote name and its new one): some name matches an
    /// `allow` entry (or `allow` is empty) and none matches a `deny` entry.
    pub fn allows_any(&self, names: &[&str]) -> bool {
        (self.allow.is_empty()
            || names
                .iter()
                .any(|n| self.allow.iter().any(|p| p.matches(n))))
            && !names.iter().any(|n| self.deny.iter().any(|p| p.matches(n)))
    }

    /// Whether the filter lets everything through.
    pub fn is_all(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_deny_and_globs() {
        let f = ToolFilter::new("s", ["echo", "get-*"], ["get-env"]).unwrap();
        assert!(f.allows("echo"));
        assert!(f.allows("get-sum"));
        assert!(!f.allows("get-env"), "deny wins over allow");
        assert!(!f.allows("trigger-long-running-operation"));
        let all = ToolFilter::all();
        assert!(all.is_all() && all.allows("anything"));
        let deny_only = ToolFilter::new("s", Vec::<&str>::new(), ["*delete*"]).unwrap();
        assert!(deny_only.allows("read") && !deny_only.allows("delete_entities"));
    }

    #[test]
    fn any_of_several_names() {
        let f = ToolFilter::new("s", ["admin_tools_list", "Report builder"], ["*secret*"]).unwrap();
        assert!(f.allows_any(&["admin.tools.list", "admin_tools_list"]));
        assert!(f.allows_any(&["Report builder", "Report_builder"]));
        assert!(!f.allows_any(&["other.tool", "other_tool"]));
        assert!(
            !f.allows_any(&["admin_tools_list", "my secret"]),
            "a deny of either name wins"
        );
        assert!(ToolFilter::all().allows_any(&["x.y", "x_y"]));
    }

    #[test]
    fn bad_glob_names_source_and_entry() {
        let e = ToolFilter::new("fs", ["[oops"], Vec::<&str>::new()).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("fs") && msg.contains("[oops"), "{msg}");
    }
}
