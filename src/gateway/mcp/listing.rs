//! `tools/list`, one page at a time, from definitions converted once.
//!
//! Each tool's MCP definition is the catalog entry's cached MCP export converted to rmcp's
//! [`Tool`] when it is first listed (or asked for by `get_tool`), then kept for as long as the
//! catalog lists the entry (a rebuilt catalog carries over the conversions of the entries it
//! kept). A page walks the catalog from the cursor's tool and stops one visible tool past the
//! page, so listing all of a catalog's N tools costs O(N) whatever the page size, not
//! O(N²/page).
//!
//! The cursor is opaque to clients (MCP "Pagination": a client passes `nextCursor` back as it
//! was given, and an invalid cursor is error -32602). It names the first tool of the next page
//! (by its exported name, which that page shows the caller anyway) with a tag: a keyed hash (a
//! key drawn when the gateway starts, or HMAC-SHA-256 with a key derived from
//! `gateway.session_key`, so that every replica sharing it accepts the others' cursors) of the
//! name and the caller's name, so that only a cursor this gateway gave this caller is accepted. A cursor says nothing of the tools hidden from
//! the caller (a position would: how many lie before it), and it survives a change of the
//! tool list: the walk goes on from the tool it names, so tools that were there before and
//! after the change are neither skipped nor repeated (the client, told by
//! `notifications/tools/list_changed`, lists again for the new ones). A cursor whose tool is
//! gone, or that was made up, is -32602.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, Mutex, OnceLock};

use rmcp::ErrorData as McpError;
use rmcp::model::{ListToolsResult, Tool};
use toolgate_runtime::catalog::{Catalog, ToolEntry};
use toolgate_runtime::{Identity, Toolset};

use super::convert;
use crate::gateway::servers::VirtualServer;

/// The longest cursor text quoted back in an error.
const QUOTED_CURSOR_CHARS: usize = 64;

/// A tool's converted definition (`None`: the MCP dialect cannot express it).
type Cell = OnceLock<Option<Arc<Tool>>>;

/// The converted definitions of one catalog, one cell per entry (in catalog order).
struct Converted {
    catalog: Arc<Catalog>,
    tools: Box<[Cell]>,
}

impl Converted {
    /// The cells of `catalog`, filled with what `previous` had converted for the entries both
    /// catalogs hold (an entry kept across a rebuild is the same `Arc`).
    fn new(catalog: Arc<Catalog>, previous: Option<&Converted>) -> Self {
        let carried: HashMap<*const ToolEntry, &Option<Arc<Tool>>> = previous
            .map(|p| {
                p.catalog
                    .entries()
                    .iter()
                    .zip(p.tools.iter())
                    .filter_map(|(e, cell)| Some((Arc::as_ptr(e), cell.get()?)))
                    .collect()
            })
            .unwrap_or_default();
        let tools = catalog
            .entries()
            .iter()
            .map(|e| {
                let cell = OnceLock::new();
                if let Some(tool) = carried.get(&Arc::as_ptr(e)) {
                    let _ = cell.set((*tool).clone());
                }
                cell
            })
            .collect();
        Self { catalog, tools }
    }

    /// Entry `i`'s definition, converted on first need.
    fn tool(&self, i: usize) -> Option<&Arc<Tool>> {
        self.tools[i]
            .get_or_init(|| convert::tool(&self.catalog.entries()[i]).map(Arc::new))
            .as_ref()
    }
}

/// The gateway's `tools/list` cache: the converted definitions of the current catalog, and
/// the key of its cursors' tags.
#[derive(Default)]
pub(crate) struct ToolListing {
    current: Mutex<Option<Arc<Converted>>>,
    cursor_key: CursorKey,
}

/// The key of cursor tags.
enum CursorKey {
    /// SipHash keyed from the OS's randomness (std's `RandomState`, drawn once per listing).
    Random(RandomState),
    /// HMAC-SHA-256 with a key the replicas share (derived from `gateway.session_key`).
    Shared(Box<aws_lc_rs::hmac::Key>),
}

impl Default for CursorKey {
    fn default() -> Self {
        Self::Random(RandomState::new())
    }
}

impl ToolListing {
    /// A listing whose cursors are tagged with `key`: any listing with the same key accepts
    /// them (replicas behind one load balancer).
    pub(crate) fn keyed(key: [u8; 32]) -> Self {
        Self {
            current: Mutex::default(),
            cursor_key: CursorKey::Shared(Box::new(aws_lc_rs::hmac::Key::new(
                aws_lc_rs::hmac::HMAC_SHA256,
                &key,
            ))),
        }
    }
}

impl ToolListing {
    /// The page of `toolset`'s tools `identity` is shown, starting at `cursor` (`None`: the
    /// first page), at most `page_size` tools (at least 1), and the cursor of the next page
    /// if any tool is left.
    ///
    /// # Errors
    /// `invalid_params` (-32602) for a cursor this listing did not give `identity`, or whose
    /// tool is no longer listed.
    pub(crate) fn page(
        &self,
        toolset: &Toolset,
        identity: &Identity,
        cursor: Option<&str>,
        page_size: usize,
    ) -> Result<ListToolsResult, McpError> {
        self.page_of(toolset, identity, cursor, page_size, None)
    }

    /// [`page`](Self::page) of the tools virtual server `server` selects, under the names it
    /// shows them by (`None`: every tool, as the default server lists them).
    ///
    /// # Errors
    /// As [`page`](Self::page).
    pub(crate) fn page_of(
        &self,
        toolset: &Toolset,
        identity: &Identity,
        cursor: Option<&str>,
        page_size: usize,
        server: Option<&VirtualServer>,
    ) -> Result<ListToolsResult, McpError> {
        let converted = self.converted(toolset.catalog());
        let entries = converted.catalog.entries();
        let start = match cursor {
            None => 0,
            Some(c) => self
                .resume_at(c, identity)
                .and_then(|name| converted.catalog.position(name))
                .ok_or_else(|| invalid_cursor(c))?,
        };
        let page_size = page_size.max(1);
        let mut tools = Vec::with_capacity(page_size.min(entries.len() - start));
        let mut next = None;
        for (i, entry) in entries.iter().enumerate().skip(start) {
            if !toolset.shows(entry, identity) || server.is_some_and(|s| !s.selects(entry)) {
                continue;
            }
            if tools.len() == page_size {
                next = Some(entry);
                break;
            }
            if let Some(tool) = converted.tool(i) {
                let mut tool = Tool::clone(tool);
                if let Some(server) = server {
                    tool.name = server.shown_name(&tool.name).into();
                }
                tools.push(tool);
            }
        }
        let mut result = ListToolsResult::with_all_items(tools);
        result.next_cursor = next.map(|e| self.cursor(e.exported_name(), identity));
        Ok(result)
    }

    /// The cursor of a page starting at the tool exported as `name`, for `identity`.
    fn cursor(&self, name: &str, identity: &Identity) -> String {
        format!("{:016x}.{name}", self.tag(name, identity))
    }

    /// The exported name of the tool `cursor` starts at, if this listing gave it to `identity`.
    fn resume_at<'c>(&self, cursor: &'c str, identity: &Identity) -> Option<&'c str> {
        let (_, name) = cursor.split_once('.')?;
        // The cursor must be the one given, spelled as given, tag included.
        (cursor == self.cursor(name, identity)).then_some(name)
    }

    fn tag(&self, name: &str, identity: &Identity) -> u64 {
        match &self.cursor_key {
            CursorKey::Random(state) => state.hash_one((name, identity.caller.as_deref())),
            CursorKey::Shared(key) => {
                let mut context = aws_lc_rs::hmac::Context::with_key(key);
                context.update(name.as_bytes());
                // The separator cannot occur in a tool name; absent and empty callers differ.
                match identity.caller.as_deref() {
                    Some(caller) => {
                        context.update(b"\0caller\0");
                        context.update(caller.as_bytes());
                    }
                    None => context.update(b"\0anonymous"),
                }
                let tag = context.sign();
                let mut first = [0u8; 8];
                first.copy_from_slice(&tag.as_ref()[..8]);
                u64::from_le_bytes(first)
            }
        }
    }

    /// The MCP definition of the tool called `name` (its internal or exported name), if the
    /// toolset offers it and pinning does not withhold it: what rmcp's `get_tool` asks for
    /// (the streamable HTTP transport checks `Mcp-Param-*` headers against its input schema).
    /// Uses the cached conversions when they are of the current catalog, and never builds them
    /// (this is on the call path).
    pub(crate) fn tool(&self, toolset: &Toolset, name: &str) -> Option<Tool> {
        let catalog = toolset.catalog();
        let i = catalog.position(name)?;
        let entry = &catalog.entries()[i];
        toolset.describe(entry.name())?;
        let current = self
            .current
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        match current {
            Some(c) if Arc::ptr_eq(&c.catalog, &catalog) => c.tool(i).map(|t| Tool::clone(t)),
            _ => convert::tool(entry),
        }
    }

    /// The conversions of `catalog`: the cached ones when they are of it, else new ones
    /// (carrying over the cached ones), made outside the lock and cached unless a newer
    /// catalog's are cached meanwhile.
    fn converted(&self, catalog: Arc<Catalog>) -> Arc<Converted> {
        let cached = self
            .current
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(c) = &cached
            && Arc::ptr_eq(&c.catalog, &catalog)
        {
            return Arc::clone(c);
        }
        let next = Arc::new(Converted::new(catalog, cached.as_deref()));
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        if current
            .as_ref()
            .is_none_or(|c| c.catalog.generation() <= next.catalog.generation())
        {
            *current = Some(Arc::clone(&next));
        }
        next
    }
}

/// The answer to a cursor this listing did not give, or whose tool is gone.
fn invalid_cursor(cursor: &str) -> McpError {
    let quoted: String = cursor.chars().take(QUOTED_CURSOR_CHARS).collect();
    let cut = if quoted.len() < cursor.len() {
        "…"
    } else {
        ""
    };
    McpError::invalid_params(
        format!(
            "invalid cursor `{quoted}{cut}`: pass a nextCursor as it was given; if the tool \
             list changed, list from the start again"
        ),
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::ToolListing;
    use toolgate_runtime::Identity;

    fn caller(name: &str) -> Identity {
        Identity {
            caller: Some(name.into()),
            ..Identity::default()
        }
    }

    #[test]
    fn a_cursor_is_accepted_only_as_given_for_its_caller() {
        let listing = ToolListing::default();
        let ada = caller("ada");
        let cursor = listing.cursor("gh__get_repo", &ada);
        assert_eq!(listing.resume_at(&cursor, &ada), Some("gh__get_repo"));
        // Another caller, another tool, another gateway (another key).
        assert_eq!(listing.resume_at(&cursor, &caller("bob")), None);
        let forged = cursor.replace("get_repo", "delete_repo");
        assert_eq!(listing.resume_at(&forged, &ada), None);
        assert_eq!(ToolListing::default().resume_at(&cursor, &ada), None);
        // Other spellings and garbage.
        for bad in [
            "7",
            "",
            ".",
            "gh__get_repo",
            &format!("0{cursor}"),
            &format!("{cursor} "),
        ] {
            assert_eq!(listing.resume_at(bad, &ada), None, "{bad}");
        }
    }

    #[test]
    fn replicas_with_one_key_accept_each_other_s_cursors() {
        let a = ToolListing::keyed([3; 32]);
        let b = ToolListing::keyed([3; 32]);
        let ada = caller("ada");
        let cursor = a.cursor("gh__get_repo", &ada);
        assert_eq!(b.resume_at(&cursor, &ada), Some("gh__get_repo"));
        assert_eq!(b.resume_at(&cursor, &caller("bob")), None);
        assert_eq!(b.resume_at(&cursor, &Identity::default()), None);
        assert_eq!(ToolListing::keyed([4; 32]).resume_at(&cursor, &ada), None);
        assert_eq!(ToolListing::default().resume_at(&cursor, &ada), None);
    }

    #[test]
    fn an_invalid_cursor_is_quoted_short() {
        let long = "x".repeat(1000);
        let e = super::invalid_cursor(&long);
        assert!(e.message.len() < 200, "{}", e.message);
        assert!(
            e.message.contains("list from the start again"),
            "{}",
            e.message
        );
    }
}
