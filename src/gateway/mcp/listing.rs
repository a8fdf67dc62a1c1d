//! `tools/list`, one page at a time, from definitions converted once.
//!
//! Each tool's MCP definition is the catalog entry's cached MCP export converted to rmcp's
//! [`Tool`] on its first listing and then kept, for as long as the catalog lists the entry (a
//! rebuilt catalog carries over the conversions of the entries it kept). A page walks the
//! catalog from the cursor's position and stops one visible tool past the page, so listing all
//! of a catalog's N tools costs O(N) whatever the page size, not O(N²/page).
//!
//! The cursor is opaque to clients (MCP "Pagination": a client passes `nextCursor` back as it
//! was given); it holds the catalog position the next page starts at.

use std::collections::HashMap;
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

/// The gateway's `tools/list` cache: the converted definitions of the current catalog.
#[derive(Default)]
pub(crate) struct ToolListing {
    current: Mutex<Option<Arc<Converted>>>,
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
        let start = position(cursor, entries.len())?;
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
        result.next_cursor = next.map(|i| i.to_string());
        Ok(result)
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

/// The catalog position `cursor` names, checked against the catalog's `len`.
fn position(cursor: Option<&str>, len: usize) -> Result<usize, McpError> {
    let Some(c) = cursor else { return Ok(0) };
    match c.parse::<usize>() {
        Ok(p) if p <= len => Ok(p),
        Ok(_) => Err(McpError::invalid_params(
            format!("invalid cursor `{c}`: past the end of the list"),
            None,
        )),
        Err(_) => Err(McpError::invalid_params(
            format!("invalid cursor `{c}`: pass a nextCursor as it was given"),
            None,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::position;

    #[test]
    fn a_cursor_is_a_position_inside_the_catalog() {
        assert_eq!(position(None, 0).unwrap(), 0);
        assert_eq!(position(Some("3"), 3).unwrap(), 3);
        let past = position(Some("4"), 3).unwrap_err();
        assert!(past.message.contains("past the end"), "{past:?}");
        let garbled = position(Some("x1"), 3).unwrap_err();
        assert!(garbled.message.contains("as it was given"), "{garbled:?}");
    }
}
