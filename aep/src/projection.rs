//! The state projection: a fold of events into per-session state.
//!
//! (Skeleton: the fold rules are being filled in.)

use serde::Serialize;

use aep_types::Event;

/// An incremental fold of events into per-session state.
#[derive(Debug, Default)]
pub struct Projection {
    violations: Vec<Violation>,
}

impl Projection {
    /// An empty projection.
    pub fn new() -> Self {
        Projection::default()
    }

    /// Folds one event, in arrival order.
    pub fn apply(&mut self, event: &Event) {
        let _ = event;
    }

    /// The projected state so far.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            sessions: Vec::new(),
            violations: self.violations.clone(),
        }
    }
}

/// The batch projection of a complete capture.
pub fn project<'a>(events: impl IntoIterator<Item = &'a Event>) -> Snapshot {
    let mut projection = Projection::new();
    for event in events {
        projection.apply(event);
    }
    projection.snapshot()
}

/// The projected state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Snapshot {
    /// One entry per `(source, session)`, sorted by that pair.
    pub sessions: Vec<SessionState>,
    /// The violations, in fold order.
    pub violations: Vec<Violation>,
}

/// One session's projected state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionState {
    /// The emitter's `source`.
    pub source: String,
    /// The `session` attribute.
    pub session: String,
}

/// A protocol violation the fold surfaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "rule", rename_all = "kebab-case")]
pub enum Violation {
    /// The same `(source, id)` named two different events.
    IdCollision {
        /// The emitter.
        source: String,
        /// The reused id.
        id: String,
    },
}
