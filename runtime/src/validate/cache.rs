//! [`ValidatorCache`]: one compiled validator per tool.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use serde_json::Value;

use super::{ArgumentPolicy, ArgumentValidator, Validated};
use crate::{ToolDescriptor, ToolError};

/// One compiled [`ArgumentValidator`] per tool, compiled on first use and reused.
///
/// Keyed by tool name; an entry is reused while the tool's descriptor is the same `Arc` (or an
/// equal input schema), and recompiled when a source replaced the tool with a different schema.
/// A schema that fails to compile is remembered too (its `internal` error is returned again,
/// not recompiled on every call).
#[derive(Default)]
pub struct ValidatorCache {
    entries: RwLock<HashMap<String, Entry>>,
    compilations: AtomicUsize,
}

type Compiled = Result<Arc<ArgumentValidator>, ToolError>;

struct Entry {
    descriptor: Arc<ToolDescriptor>,
    compiled: Compiled,
}

impl Entry {
    fn serves(&self, descriptor: &Arc<ToolDescriptor>) -> bool {
        Arc::ptr_eq(&self.descriptor, descriptor)
            || self.descriptor.input_schema == descriptor.input_schema
    }
}

impl std::fmt::Debug for ValidatorCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValidatorCache")
            .field("tools", &self.len())
            .field("compilations", &self.compilations())
            .finish()
    }
}

impl ValidatorCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The validator of `descriptor`'s tool, compiled on first use.
    ///
    /// # Errors
    /// `internal`, naming the tool, when its input schema cannot be compiled.
    pub fn get(
        &self,
        descriptor: &Arc<ToolDescriptor>,
    ) -> Result<Arc<ArgumentValidator>, ToolError> {
        {
            let entries = self.entries.read().unwrap_or_else(|p| p.into_inner());
            if let Some(entry) = entries.get(&descriptor.name)
                && entry.serves(descriptor)
            {
                return entry.compiled.clone();
            }
        }
        let mut entries = self.entries.write().unwrap_or_else(|p| p.into_inner());
        // Another caller may have compiled it while this one waited for the lock.
        if let Some(entry) = entries.get(&descriptor.name)
            && entry.serves(descriptor)
        {
            return entry.compiled.clone();
        }
        self.compilations.fetch_add(1, Ordering::Relaxed);
        let compiled =
            ArgumentValidator::compile(&descriptor.name, &descriptor.input_schema).map(Arc::new);
        entries.insert(
            descriptor.name.clone(),
            Entry {
                descriptor: Arc::clone(descriptor),
                compiled: compiled.clone(),
            },
        );
        compiled
    }

    /// Checks `args` for `descriptor`'s tool under `policy` (see [`ArgumentValidator::check`]).
    ///
    /// # Errors
    /// `invalid_arguments` listing every violation; `internal` when the schema cannot be
    /// compiled.
    pub fn check(
        &self,
        descriptor: &Arc<ToolDescriptor>,
        args: Value,
        policy: impl Into<ArgumentPolicy>,
    ) -> Result<Validated, ToolError> {
        self.get(descriptor)?.check(&descriptor.name, args, policy)
    }

    /// How many schemas were compiled so far (a recompiled tool counts again).
    pub fn compilations(&self) -> usize {
        self.compilations.load(Ordering::Relaxed)
    }

    /// How many tools have an entry.
    pub fn len(&self) -> usize {
        self.entries.read().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Whether no tool has an entry yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
