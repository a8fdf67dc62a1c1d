//! `tools/list`, one page at a time, from definitions converted once.
//!
//! Each tool's MCP definition is the catalog entry's cached MCP export converted to rmcp's
//! [`Tool`] on its first listing and then kept, for as long as the catalog lists the entry (a
//! rebuilt catalog carries over the conversions of the entries it kept). A page walks the
//! catalog from the cursor's position and stops one visible tool past the page, so listing all
//! of a catalog's N tools costs O(N) whatever the page size, not O(N²/page).
//!
//! The cursor is opaque to clients (MCP "Pagination": a client passes `nextCursor` back as it
//! was given, and an invalid cursor is error -32602). It holds the catalog's generation, the
//! position the next page starts at and a tag: a keyed hash (a key drawn when the gateway
//! starts) of both and of the caller's name, so that only a cursor this gateway gave this
//! caller is accepted. A cursor from before the tool list changed is refused (the client lists
//! again from the start, as `notifications/tools/list_changed` tells it to) instead of skipping
//! or repeating tools; a made-up one, which could otherwise probe where hidden tools are, gets
//! the same error as garbage.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, Mutex, OnceLock};

use rmcp::ErrorData as McpError;
use rmcp::model::{ListToolsResult, Tool};
use toolgate_runtime::catalog::Catalog;
use toolgate_runtime::{Identity, Toolset};

use super::convert;

/// The converted definitions of one catalog, one cell per entry (in catalog order).
struct Converted {
    catalog: Arc<Catalog>,
    tools: Box<[OnceLock<Option<Tool>>]>,
}

impl Converted {
    /// The cells of `catalog`, filled with what `previous` had converted for the entries both
    /// catalogs hold (an entry kept across a rebuild is the same `Arc`).
    fn new(catalog: Arc<Catalog>, previous: Option<&Converted>) -> Self {
        let carried: HashMap<*const _, &Option<Tool>> = previous
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
}

/// The gateway's `tools/list` cache: the converted definitions of the current catalog, and
/// the key of its cursors' tags.
#[derive(Default)]
pub(crate) struct ToolListing {
    current: Mutex<Option<Arc<Converted>>>,
    /// SipHash with keys drawn from the OS's randomness (std's `RandomState`).
    cursor_key: RandomState,
}

impl ToolListing {
    /// The page of `toolset`'s tools `identity` is shown, starting at `cursor` (`None`: the
    /// first page), at most `page_size` tools, and the cursor of the next page if any tool
    /// is left.
    ///
    /// # Errors
    /// `invalid_params` (-32602) for a cursor that is not one this listing gave (not a
    /// number, or past the end of the catalog).
    pub(crate) fn page(
        &self,
        toolset: &Toolset,
        identity: &Identity,
        cursor: Option<&str>,
        page_size: usize,
    ) -> Result<ListToolsResult, McpError> {
        let converted = self.converted(toolset.catalog());
        let entries = converted.catalog.entries();
        let generation = converted.catalog.generation();
        let start = match cursor {
            None => 0,
            Some(c) => self
                .position(c, generation, identity)
                .filter(|p| *p < entries.len())
                .ok_or_else(|| invalid_cursor(c))?,
        };
        let mut tools = Vec::with_capacity(page_size.min(entries.len() - start));
        let mut next = None;
        for (i, entry) in entries.iter().enumerate().skip(start) {
            if !toolset.shows(entry, identity) {
                continue;
            }
            if tools.len() == page_size.max(1) {
                next = Some(i);
                break;
            }
            if let Some(tool) = converted.tools[i].get_or_init(|| convert::tool(entry)) {
                tools.push(tool.clone());
            }
        }
        let mut result = ListToolsResult::with_all_items(tools);
        result.next_cursor = next.map(|i| self.cursor(generation, i, identity));
        Ok(result)
    }

    /// The cursor of position `at` in catalog `generation`, for `identity`.
    fn cursor(&self, generation: u64, at: usize, identity: &Identity) -> String {
        format!(
            "{generation}.{at}.{:016x}",
            self.tag(generation, at, identity)
        )
    }

    /// The position a cursor names, if this listing gave it to `identity` for catalog
    /// `generation`.
    fn position(&self, cursor: &str, generation: u64, identity: &Identity) -> Option<usize> {
        let mut parts = cursor.split('.');
        let g = parts.next()?.parse::<u64>().ok()?;
        let p = parts.next()?.parse::<usize>().ok()?;
        // The cursor must be the one given, spelled as given (no `+1`, no `01`), tag included.
        (g == generation && cursor == self.cursor(g, p, identity)).then_some(p)
    }

    fn tag(&self, generation: u64, at: usize, identity: &Identity) -> u64 {
        self.cursor_key
            .hash_one((generation, at, identity.caller.as_deref()))
    }

    /// The MCP definition of the tool called `name` (its internal or exported name), if the
    /// toolset offers it and pinning does not withhold it: what rmcp's `get_tool` asks for
    /// (the streamable HTTP transport checks `Mcp-Param-*` headers against its input schema).
    pub(crate) fn tool(&self, toolset: &Toolset, name: &str) -> Option<Tool> {
        let converted = self.converted(toolset.catalog());
        let i = converted.catalog.position(name)?;
        let entry = &converted.catalog.entries()[i];
        toolset.describe(entry.name())?;
        converted.tools[i]
            .get_or_init(|| convert::tool(entry))
            .clone()
    }

    /// The conversions of `catalog`, made (carrying over the previous catalog's) when the
    /// catalog is not the one cached.
    fn converted(&self, catalog: Arc<Catalog>) -> Arc<Converted> {
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        match current.as_ref() {
            Some(c) if Arc::ptr_eq(&c.catalog, &catalog) => Arc::clone(c),
            previous => {
                let next = Arc::new(Converted::new(catalog, previous.map(|p| &**p)));
                *current = Some(Arc::clone(&next));
                next
            }
        }
    }
}

/// The answer to a cursor this listing did not give, or gave for another list.
fn invalid_cursor(cursor: &str) -> McpError {
    McpError::invalid_params(
        format!(
            "invalid cursor `{cursor}`: pass a nextCursor as it was given, and list from the \
             start again once the tool list has changed"
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
    fn a_cursor_is_accepted_only_as_given_for_its_caller_and_generation() {
        let listing = ToolListing::default();
        let ada = caller("ada");
        let cursor = listing.cursor(3, 7, &ada);
        assert_eq!(listing.position(&cursor, 3, &ada), Some(7));
        // Another caller, another generation (the tool list changed), another position.
        assert_eq!(listing.position(&cursor, 3, &caller("bob")), None);
        assert_eq!(listing.position(&cursor, 4, &ada), None);
        let forged = cursor.replacen(".7.", ".8.", 1);
        assert_eq!(listing.position(&forged, 3, &ada), None);
        // Other spellings and garbage.
        for bad in [
            "7",
            "",
            "3.7",
            "3.07.0",
            &format!("{cursor}.1"),
            &format!("+{cursor}"),
        ] {
            assert_eq!(listing.position(bad, 3, &ada), None, "{bad}");
        }
        // Another gateway (another key) does not accept it either.
        assert_eq!(ToolListing::default().position(&cursor, 3, &ada), None);
    }
}
