//! Application state shared with tools: [`State<T>`], [`StateMap`], [`Provides`].

use std::any::{Any, TypeId, type_name};
use std::collections::HashMap;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use crate::BuildError;

/// Shared application state, injected into a `#[tool]` function that takes a `State<T>`
/// parameter (like axum's `State`). It never appears in the tool's input schema.
///
/// The value comes from the toolset builder's `.state(value)`; whether every `State<T>` a tool
/// takes is available is checked once, when the toolset is built, not on each call.
///
/// ```ignore
/// #[toolgate::tool]
/// async fn lookup(State(db): State<Db>, id: u64) -> Result<Row, DbError> { db.get(id).await }
/// ```
pub struct State<T: ?Sized>(pub Arc<T>);

impl<T: ?Sized> Deref for State<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: ?Sized> Clone for State<T> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for State<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("State").field(&&*self.0).finish()
    }
}

/// Implemented by a generated toolset's state struct for every state type it holds; the bound a
/// `#[tool]` function's generated `invoke` puts on it for each `State<T>` parameter.
pub trait Provides<T: ?Sized> {
    /// The shared value.
    fn provide(&self) -> &Arc<T>;
}

/// A map from type to one shared value of that type: what the toolset builder collects from
/// `.state(...)` calls.
#[derive(Clone, Default)]
pub struct StateMap {
    values: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl StateMap {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores `value` as the state of type `T`, replacing any earlier one.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: Arc<T>) {
        self.values.insert(TypeId::of::<T>(), value);
    }

    /// The state of type `T`, if present.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.values
            .get(&TypeId::of::<T>())
            .and_then(|v| Arc::clone(v).downcast::<T>().ok())
    }

    /// The state of type `T`, or [`BuildError::MissingState`] naming the `tools` that need it.
    ///
    /// # Errors
    /// [`BuildError::MissingState`] when no value of `T` was inserted.
    pub fn require<T: Send + Sync + 'static>(&self, tools: &[&str]) -> Result<Arc<T>, BuildError> {
        self.get::<T>().ok_or_else(|| BuildError::MissingState {
            type_name: type_name::<T>().to_string(),
            tools: tools.iter().map(|t| (*t).to_string()).collect(),
        })
    }

    /// How many values the map holds.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

impl fmt::Debug for StateMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateMap")
            .field("len", &self.values.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn require_names_type_and_tools() {
        let mut m = StateMap::new();
        m.insert(Arc::new(5u32));
        assert_eq!(*m.require::<u32>(&[]).unwrap(), 5);
        let err = m.require::<String>(&["a", "b"]).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("alloc::string::String"), "{msg}");
        assert!(msg.contains("`a`, `b`"), "{msg}");
    }
}
