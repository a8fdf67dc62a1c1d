//! The catalog: one [`ToolEntry`] per tool of a toolset, and the name index every call goes
//! through once.
//!
//! A [`Catalog`] is an immutable snapshot: the entries in listing order (sources in order, each
//! source's tools in its order, the first source offering a name keeping it) and a hash index of
//! every name an entry answers to — its name inside toolgate (`github.get_repo`) and the name a
//! model sees (`github__get_repo`). A toolset swaps in a new snapshot when a source's tools
//! change (its [`tool_changes`](crate::SourceLifecycle::tool_changes) counter moved); the new
//! snapshot keeps the entries of tools listed the same way, with what they computed (policy
//! stack, validator, exports).
//!
//! The index is built for flat lookups at any size: a [`hashbrown::HashTable`] of entry
//! positions (4 bytes a slot, no key pointers), hashed with foldhash, the names compared against
//! one contiguous buffer of every name.

mod entry;
pub mod overrides;

pub(crate) use entry::Settled;
pub use entry::ToolEntry;

use std::hash::BuildHasher;
use std::sync::{Arc, OnceLock};

use hashbrown::HashTable;

use crate::{SourceTool, ToolSource};

/// One toolset's tools, as of one listing of every source (see the module docs).
pub struct Catalog {
    entries: Vec<Arc<ToolEntry>>,
    names: Names,
    /// Each watched source's change counter as it was just before this snapshot listed it.
    changes: Vec<tokio::sync::watch::Receiver<u64>>,
    generation: u64,
    /// The search index of these entries, built on the first search of this snapshot.
    search: OnceLock<crate::search::Index>,
}

/// Every name of every entry, in one buffer, and the hash index over them.
struct Names {
    text: String,
    /// `(start, end, entry)` of each name in `text`.
    spans: Vec<(u32, u32, u32)>,
    index: HashTable<u32>,
    hasher: foldhash::fast::FixedState,
}

impl Names {
    fn new(capacity: usize) -> Self {
        Self {
            text: String::new(),
            spans: Vec::with_capacity(capacity),
            index: HashTable::with_capacity(capacity),
            hasher: foldhash::fast::FixedState::with_seed(0x746f_6f6c_6761_7465),
        }
    }

    fn name(&self, span: u32) -> &str {
        let (start, end, _) = self.spans[span as usize];
        &self.text[start as usize..end as usize]
    }

    fn find(&self, name: &str) -> Option<u32> {
        let hash = self.hasher.hash_one(name);
        self.index
            .find(hash, |&span| self.name(span) == name)
            .map(|&span| self.spans[span as usize].2)
    }

    /// Adds `name` for `entry`; `false` (and nothing added) when another entry has it.
    fn insert(&mut self, name: &str, entry: u32) -> bool {
        if self.find(name).is_some() {
            return false;
        }
        let start = self.text.len();
        self.text.push_str(name);
        let span = self.spans.len() as u32;
        self.spans
            .push((start as u32, self.text.len() as u32, entry));
        let hash = self.hasher.hash_one(name);
        let Self {
            index,
            spans,
            text,
            hasher,
        } = self;
        index.insert_unique(hash, span, |&s| {
            let (start, end, _) = spans[s as usize];
            hasher.hash_one(&text[start as usize..end as usize])
        });
        true
    }
}

impl Catalog {
    /// The catalog of `sources` (in resolution order), keeping the entries of `previous` that
    /// still serve. `changes` are the watched sources' counters, marked seen before listing.
    pub(crate) fn build(
        sources: &[Arc<dyn ToolSource>],
        previous: Option<&Catalog>,
        changes: Vec<tokio::sync::watch::Receiver<u64>>,
        overrides: &overrides::Overrides,
    ) -> Self {
        Self::listed(sources, previous, previous, changes, overrides)
    }

    /// The catalog of `sources` with every entry made anew (none of `previous`'s settled
    /// policies survives: a reloaded policy), its generation following `previous`'s.
    pub(crate) fn rebuild_fresh(
        sources: &[Arc<dyn ToolSource>],
        previous: &Catalog,
        changes: Vec<tokio::sync::watch::Receiver<u64>>,
        overrides: &overrides::Overrides,
    ) -> Self {
        Self::listed(sources, None, Some(previous), changes, overrides)
    }

    /// `build` with the entries kept from `keep` and the generation following `after`'s.
    fn listed(
        sources: &[Arc<dyn ToolSource>],
        keep: Option<&Catalog>,
        after: Option<&Catalog>,
        changes: Vec<tokio::sync::watch::Receiver<u64>>,
        overrides: &overrides::Overrides,
    ) -> Self {
        let listed: Vec<(usize, Vec<SourceTool>)> = sources
            .iter()
            .enumerate()
            .map(|(i, s)| (i, s.tools()))
            .collect();
        let count = listed.iter().map(|(_, t)| t.len()).sum::<usize>();
        let mut entries = Vec::with_capacity(count);
        let mut names = Names::new(count * 2);
        let mut unmatched: Vec<&str> = overrides.keys().map(String::as_str).collect();
        for (i, tools) in listed {
            let source = &sources[i];
            if !tools.is_empty() {
                // An override of a tool this source does not list (a typo, or the server
                // dropped the tool): said at each listing, the tool names being the server's.
                let prefix = format!("{}.", source.id());
                unmatched.retain(|key| {
                    !key.starts_with(&prefix)
                        || tools.iter().any(|t| t.descriptor.name == *key)
                        || {
                            tracing::warn!(
                                tool = %key,
                                source = %source.id(),
                                "tools.overrides names a tool that source `{}` does not list",
                                source.id()
                            );
                            false
                        }
                });
            }
            for tool in tools {
                let position = entries.len() as u32;
                let o = overrides.get(&tool.descriptor.name);
                let name = o.and_then(|o| o.name.as_deref());
                let name = name.unwrap_or(&tool.descriptor.name);
                let kept = keep
                    .and_then(|p| p.get(name))
                    .filter(|e| e.serves(&tool, source))
                    .map(Arc::clone);
                let entry = match (kept, o) {
                    (Some(kept), _) => kept,
                    (None, None) => Arc::new(ToolEntry::new(tool, Arc::clone(source))),
                    (None, Some(o)) => match overrides::present(&tool.descriptor, o) {
                        Ok(presented) => Arc::new(ToolEntry::overridden(
                            tool,
                            Arc::clone(source),
                            presented,
                            o,
                        )),
                        Err(message) => {
                            // Never offered without its override: a hidden argument would
                            // become the model's to choose.
                            tracing::error!(tool = %tool.descriptor.name, "{message}; the tool is not offered");
                            continue;
                        }
                    },
                };
                if !names.insert(entry.name(), position) {
                    continue; // an earlier source (an overlay, the first listed) keeps the name
                }
                let exported = entry.exported_name();
                if exported != entry.name() {
                    names.insert(exported, position);
                }
                entries.push(entry);
            }
        }
        Self {
            entries,
            names,
            changes,
            generation: after.map_or(0, |p| p.generation + 1),
            search: OnceLock::new(),
        }
    }

    /// The entry answering to `name` (its internal or its exported name), if any.
    pub fn get(&self, name: &str) -> Option<&Arc<ToolEntry>> {
        self.names.find(name).map(|i| &self.entries[i as usize])
    }

    /// The position in [`entries`](Self::entries) of the entry answering to `name`, if any
    /// (for what a listing keeps per entry, in the same order).
    pub fn position(&self, name: &str) -> Option<usize> {
        self.names.find(name).map(|i| i as usize)
    }

    /// Whether some entry answers to `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.names.find(name).is_some()
    }

    /// Every entry, in listing order.
    pub fn entries(&self) -> &[Arc<ToolEntry>] {
        &self.entries
    }

    /// How many tools the catalog holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the catalog holds no tool.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many times the catalog was rebuilt since the toolset was built (0 for the first):
    /// what is cached from a listing (an MCP `tools/list` page) is stale once it moves.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The search index of this snapshot's entries (built on first use, then kept with the
    /// snapshot; a rebuilt catalog starts without one).
    pub(crate) fn search_index(&self) -> &crate::search::Index {
        self.search
            .get_or_init(|| crate::search::Index::build(&self.entries))
    }

    /// Whether a watched source's tools changed since this snapshot listed them.
    pub(crate) fn is_stale(&self) -> bool {
        self.changes
            .iter()
            .any(|rx| rx.has_changed().unwrap_or(false))
    }
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("tools", &self.entries.len())
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
