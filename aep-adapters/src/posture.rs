//! The capture posture a mapping runs at: the ceiling per event type, the
//! deltas opt-in, and the channel mode.

use std::fmt;
use std::str::FromStr;

use aep::{Capture, Category};

/// How a channel that a hook adapter may also observe behaves (the
/// OpenTelemetry sidecars, the OpenCode and Kilo Code SSE channels, the
/// Kimi web channel).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    /// Beside a hook adapter, which stays the only source of core types:
    /// the channel emits its own `x.{vendor}.*` family only.
    #[default]
    Companion,
    /// The only observer: the channel maps onto core types itself.
    Primary,
}

impl Mode {
    /// The mode's name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Companion => "companion",
            Mode::Primary => "primary",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Mode, String> {
        match s {
            "companion" => Ok(Mode::Companion),
            "primary" => Ok(Mode::Primary),
            other => Err(format!(
                "unknown mode `{other}` (expected companion or primary)"
            )),
        }
    }
}

/// The capture posture: the highest capture level each event may carry,
/// whether stream deltas are emitted, and the channel mode.
///
/// The default is the posture every reference adapter starts from:
/// `metadata` for every type, `redacted` for `attention.*` (whose prompt
/// and labels are what a human must read), deltas off, companion mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Posture {
    /// The ceiling of every type no override names (vendor `x.*` types
    /// included).
    pub ceiling: Capture,
    /// Ceilings for whole categories, overriding `ceiling`.
    pub overrides: Vec<(Category, Capture)>,
    /// Whether stream deltas (token chunks, partial results) are emitted.
    pub deltas: bool,
    /// The channel mode.
    pub mode: Mode,
}

impl Default for Posture {
    fn default() -> Self {
        Posture {
            ceiling: Capture::Metadata,
            overrides: vec![(Category::Attention, Capture::Redacted)],
            deltas: false,
            mode: Mode::Companion,
        }
    }
}

impl Posture {
    /// One ceiling for every type, no override.
    pub fn uniform(ceiling: Capture) -> Posture {
        Posture {
            ceiling,
            overrides: Vec::new(),
            ..Posture::default()
        }
    }

    /// The same posture with deltas switched on or off.
    pub fn deltas(mut self, on: bool) -> Posture {
        self.deltas = on;
        self
    }

    /// The same posture in another mode.
    pub fn mode(mut self, mode: Mode) -> Posture {
        self.mode = mode;
        self
    }

    /// A posture written as `AEP_CAPTURE` takes it: comma-separated items,
    /// each a bare level (`none`, `metadata`, `redacted`, `full`), which
    /// sets the ceiling of every type and drops the default overrides, or
    /// `CATEGORY=LEVEL`, which overrides one category. Items apply left to
    /// right over [`Posture::default`]; the empty string is the default.
    ///
    /// ```
    /// use aep::Capture;
    /// use aep_adapters::Posture;
    ///
    /// let posture = Posture::parse_spec("full")?;
    /// assert_eq!(posture.ceiling_for("attention.requested"), Capture::Full);
    /// let posture = Posture::parse_spec("tool=redacted")?;
    /// assert_eq!(posture.ceiling_for("tool.requested"), Capture::Redacted);
    /// assert_eq!(posture.ceiling_for("attention.requested"), Capture::Redacted);
    /// assert_eq!(posture.ceiling_for("run.started"), Capture::Metadata);
    /// # Ok::<(), String>(())
    /// ```
    pub fn parse_spec(spec: &str) -> Result<Posture, String> {
        let mut posture = Posture::default();
        for item in spec.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let level = |s: &str| {
                s.trim().parse::<Capture>().map_err(|_| {
                    format!("`{s}` is not a capture level (none, metadata, redacted or full)")
                })
            };
            match item.split_once('=') {
                None => {
                    posture.ceiling = level(item)?;
                    posture.overrides.clear();
                }
                Some((category, value)) => {
                    let category = category
                        .trim()
                        .parse::<Category>()
                        .map_err(|_| format!("`{}` is not an event category", category.trim()))?;
                    posture.overrides.push((category, level(value)?));
                }
            }
        }
        Ok(posture)
    }

    /// The ceiling of events of type `event_type`: the override of its
    /// category, else [`Posture::ceiling`].
    pub fn ceiling_for(&self, event_type: &str) -> Capture {
        let category = event_type
            .split('.')
            .next()
            .and_then(|c| c.parse::<Category>().ok());
        category
            .and_then(|c| {
                self.overrides
                    .iter()
                    .rev()
                    .find(|(o, _)| *o == c)
                    .map(|(_, level)| *level)
            })
            .unwrap_or(self.ceiling)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attention_rides_higher_than_the_rest_by_default() {
        let posture = Posture::default();
        assert_eq!(
            posture.ceiling_for("attention.requested"),
            Capture::Redacted
        );
        assert_eq!(posture.ceiling_for("tool.requested"), Capture::Metadata);
        assert_eq!(
            posture.ceiling_for("x.codex.session.hook"),
            Capture::Metadata
        );
        assert!(!posture.deltas);
        assert_eq!(posture.mode, Mode::Companion);
    }

    #[test]
    fn a_uniform_posture_has_one_ceiling() {
        let posture = Posture::uniform(Capture::Full);
        assert_eq!(posture.ceiling_for("attention.requested"), Capture::Full);
        assert_eq!(
            posture.ceiling_for("x.acp.agent.message.chunk"),
            Capture::Full
        );
        let none = Posture::uniform(Capture::None);
        assert_eq!(none.ceiling_for("attention.answered"), Capture::None);
    }

    #[test]
    fn the_last_override_of_a_category_wins() {
        let mut posture = Posture::default();
        posture
            .overrides
            .push((Category::Attention, Capture::Metadata));
        assert_eq!(
            posture.ceiling_for("attention.requested"),
            Capture::Metadata
        );
    }

    #[test]
    fn a_spec_reads_left_to_right_over_the_default() {
        assert_eq!(Posture::parse_spec("").unwrap(), Posture::default());
        let posture = Posture::parse_spec("none, attention=metadata").unwrap();
        assert_eq!(posture.ceiling_for("tool.requested"), Capture::None);
        assert_eq!(
            posture.ceiling_for("attention.requested"),
            Capture::Metadata
        );
        let posture = Posture::parse_spec("attention=full,metadata").unwrap();
        assert_eq!(
            posture.ceiling_for("attention.requested"),
            Capture::Metadata
        );
        for bad in ["loud", "tool=loud", "tools=full", "=full"] {
            assert!(Posture::parse_spec(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn modes_read_their_names_only() {
        assert_eq!("primary".parse::<Mode>(), Ok(Mode::Primary));
        assert_eq!("companion".parse::<Mode>(), Ok(Mode::Companion));
        assert!("Primary".parse::<Mode>().is_err());
    }
}
