//! The WebSocket binding's frames (AEP-0003 §2, §3.5, §4, §6.5; the
//! command-path error frame of AEP-0004 §4), as one typed vocabulary.
//!
//! On the WebSocket binding every text frame carries one JSON object: an
//! **event**, whose `type` contains a dot, or a **frame**, a
//! connection-scoped message whose `type` has none. [`decode`] tells the
//! two apart and types the frame; [`Frame::encode`] writes one. Both sides
//! of the binding (the relay, and every client: consumers, emitters,
//! control senders) speak through this module, so a frame's members are
//! named once.
//!
//! An endpoint reads the requests it serves (`subscribe`, `unsubscribe`,
//! `roster`, `ping`) with [`Request::read`], which types each member on its
//! own and keeps a malformed one as its error, to be refused by name; the
//! `hello` a connecting party opens with, likewise, with
//! [`HelloRequest::read`].
//!
//! Forward compatibility, as the spec asks: a frame type this revision does
//! not define decodes as [`Decoded::Unknown`] (to be ignored), members a
//! frame does not define are ignored, and an error code outside the known
//! set is kept as [`ErrorCode::Other`].
//!
//! ```
//! use aep::frame::{decode, Decoded, ErrorCode, Frame};
//!
//! let text = r#"{"type":"error","id":"sub-1","code":"limit-exceeded","detail":"--max-subscriptions (64)"}"#;
//! let Ok(Decoded::Frame(Frame::Error(error))) = decode(text) else { panic!() };
//! assert_eq!(error.code, ErrorCode::LimitExceeded);
//! assert_eq!(error.id.as_ref().and_then(|id| id.as_str()), Some("sub-1"));
//!
//! assert!(matches!(decode(r#"{"type":"session.started"}"#), Ok(Decoded::Event(_))));
//! assert!(matches!(decode(r#"{"type":"whisper"}"#), Ok(Decoded::Unknown(kind)) if kind == "whisper"));
//!
//! let ping = Frame::Ping(aep::frame::Ping { t: Some(7.into()) });
//! assert_eq!(ping.encode(), r#"{"type":"ping","t":7}"#);
//! ```

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// One frame of the WebSocket binding (AEP-0003 §2 lists the 0.1 types).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Frame {
    /// The first frame in each direction (AEP-0003 §4).
    Hello(Hello),
    /// A consumer opens a subscription (AEP-0003 §6.5).
    Subscribe(Subscribe),
    /// The endpoint accepted a subscription.
    Subscribed(Id),
    /// A consumer ends a subscription.
    Unsubscribe(Id),
    /// The endpoint ended a subscription.
    Unsubscribed(Id),
    /// A roster request (`id` alone) or its reply (with `entries`)
    /// (AEP-0003 §4.1).
    Roster(Roster),
    /// A refusal: of a frame (with the request's `id`), of an event or a
    /// command (with its `cause`), or of the connection.
    Error(ErrorFrame),
    /// A resume position predates what the endpoint still holds
    /// (AEP-0003 §5).
    ReplayExhausted(ReplayExhausted),
    /// The sender is about to close, with the positions it delivered
    /// (AEP-0003 §3.5 rule 4).
    Closing(Closing),
    /// Liveness: answered by a `pong` echoing `t`.
    Ping(Ping),
    /// The answer to a `ping`.
    Pong(Ping),
}

/// What one text frame of the binding carries.
#[derive(Debug, Clone, PartialEq)]
pub enum Decoded {
    /// An event (its `type` contains a dot), left as JSON for the event
    /// layer to validate.
    Event(Value),
    /// A frame of this revision.
    Frame(Frame),
    /// A frame type this revision does not define: the spec says to
    /// ignore it (AEP-0003 §2).
    Unknown(String),
}

/// Why a text frame is not one the binding can use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// The text is not JSON.
    Json(String),
    /// The JSON is not an object with a string `type`.
    NotAFrame,
    /// A frame of a known type with a member of the wrong shape.
    Malformed {
        /// The frame's type.
        kind: String,
        /// What is wrong, in serde's words.
        detail: String,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Json(e) => write!(f, "the frame is not JSON: {e}"),
            FrameError::NotAFrame => f.write_str("a frame is a JSON object with a string type"),
            FrameError::Malformed { kind, detail } => {
                write!(f, "a {kind} frame that does not parse: {detail}")
            }
        }
    }
}

impl std::error::Error for FrameError {}

/// Decodes one text frame: an event, a typed frame, or an unknown frame.
pub fn decode(text: &str) -> Result<Decoded, FrameError> {
    let value: Value = serde_json::from_str(text).map_err(|e| FrameError::Json(e.to_string()))?;
    decode_value(value)
}

/// [`decode`] for JSON already parsed.
pub fn decode_value(value: Value) -> Result<Decoded, FrameError> {
    let Some(kind) = value.get("type").and_then(Value::as_str) else {
        return Err(FrameError::NotAFrame);
    };
    if kind.contains('.') {
        return Ok(Decoded::Event(value));
    }
    if !KNOWN.contains(&kind) {
        return Ok(Decoded::Unknown(kind.to_owned()));
    }
    let kind = kind.to_owned();
    serde_json::from_value(value)
        .map(Decoded::Frame)
        .map_err(|e| FrameError::Malformed {
            kind,
            detail: e.to_string(),
        })
}

/// A request frame as an endpoint reads it: what a peer asks of the
/// endpoint that serves it (`subscribe`, `unsubscribe`, `roster`, `ping`).
///
/// Unlike [`decode`], reading never fails on a member: each one is typed
/// on its own, and a malformed member is kept as its error
/// ([`SubscribeRequest`]), so the endpoint refuses it in its own order
/// among its own limits. As in [`decode`], members a frame does not define
/// are ignored; a member sent twice counts once, with its last value.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// A consumer opens a subscription (AEP-0003 §6.5).
    Subscribe(SubscribeRequest),
    /// A consumer ends a subscription.
    Unsubscribe(Id),
    /// A roster request (AEP-0003 §4.1): its `id` alone is read.
    Roster(Id),
    /// Liveness: to be answered by a `pong` echoing `t`.
    Ping(Ping),
}

impl Request {
    /// Reads a request frame's text. `None` when the frame is not a
    /// request (an event, a reply, an unknown frame type).
    pub fn read(text: &str) -> Result<Option<Request>, FrameError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| FrameError::Json(e.to_string()))?;
        let Value::Object(mut members) = value else {
            return Err(FrameError::NotAFrame);
        };
        let kind = match members.remove("type") {
            Some(Value::String(kind)) => kind,
            _ => return Err(FrameError::NotAFrame),
        };
        let mut id = || Id {
            id: RequestId(members.remove("id").unwrap_or(Value::Null)),
        };
        Ok(Some(match kind.as_str() {
            "subscribe" => Request::Subscribe(SubscribeRequest::from_members(members)),
            "unsubscribe" => Request::Unsubscribe(id()),
            "roster" => Request::Roster(id()),
            "ping" => Request::Ping(Ping {
                t: members.remove("t").filter(|t| !t.is_null()),
            }),
            _ => return Ok(None),
        }))
    }
}

/// A `hello` as the endpoint that answers it reads it (AEP-0003 §4): the
/// first frame a connecting party sends.
///
/// As with [`Request::read`], reading never fails on a member: each one
/// is typed on its own, and a malformed one is kept as its error
/// ([`HelloError`]), for the endpoint to refuse (or overlook) by name.
/// Members a `hello` does not define are ignored; a member sent twice
/// counts once, with its last value. `identity` and `capabilities` are
/// kept as sent: an endpoint echoes declarations verbatim (a roster
/// entry's `agent`, `control`, …).
#[derive(Debug, Clone, PartialEq)]
pub struct HelloRequest {
    /// The `versions` the peer speaks, in its order: its strings (entries
    /// that are not strings are skipped); empty when absent or `null`.
    pub versions: Result<Vec<String>, HelloError>,
    /// The declared `role`; `None` when absent (a `null` role is
    /// malformed, as is any string but the three roles).
    pub role: Result<Option<Role>, HelloError>,
    /// `identity`'s members as sent; empty when absent or `null`.
    pub identity: Result<Map<String, Value>, HelloError>,
    /// `capabilities` as sent; empty when absent or `null`.
    pub capabilities: Result<Map<String, Value>, HelloError>,
}

impl HelloRequest {
    /// Reads a first frame's text. `None` when it is a frame but not a
    /// `hello` (another frame type, an event).
    pub fn read(text: &str) -> Result<Option<HelloRequest>, FrameError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| FrameError::Json(e.to_string()))?;
        let Value::Object(mut members) = value else {
            return Err(FrameError::NotAFrame);
        };
        match members.remove("type") {
            Some(Value::String(kind)) if kind == "hello" => {}
            Some(Value::String(_)) => return Ok(None),
            _ => return Err(FrameError::NotAFrame),
        }
        let versions = match members.remove("versions") {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(versions)) => Ok(versions
                .into_iter()
                .filter_map(|v| match v {
                    Value::String(v) => Some(v),
                    _ => None,
                })
                .collect()),
            Some(_) => Err(HelloError::Versions),
        };
        let role = match members.remove("role") {
            None => Ok(None),
            Some(Value::String(role)) => Role::parse(&role).map(Some).ok_or(HelloError::Role),
            Some(_) => Err(HelloError::Role),
        };
        let mut object = |name: &str, error: HelloError| match members.remove(name) {
            None | Some(Value::Null) => Ok(Map::new()),
            Some(Value::Object(members)) => Ok(members),
            Some(_) => Err(error),
        };
        let identity = object("identity", HelloError::Identity);
        let capabilities = object("capabilities", HelloError::Capabilities);
        Ok(Some(HelloRequest {
            versions,
            role,
            identity,
            capabilities,
        }))
    }

    /// Whether the peer speaks `version` (`"0.1"`): listed in a
    /// well-formed `versions`.
    pub fn speaks(&self, version: &str) -> bool {
        self.versions
            .as_ref()
            .is_ok_and(|versions| versions.iter().any(|v| v == version))
    }
}

/// A `hello` member of the wrong shape, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HelloError {
    /// `versions` is not an array.
    Versions,
    /// `role` is not one of `emitter`, `consumer`, `both`.
    Role,
    /// `identity` is not an object.
    Identity,
    /// `capabilities` is not an object.
    Capabilities,
}

impl fmt::Display for HelloError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HelloError::Versions => "versions must be an array of version strings",
            HelloError::Role => "role must be emitter, consumer or both",
            HelloError::Identity => "identity must be an object",
            HelloError::Capabilities => "capabilities must be an object",
        })
    }
}

impl std::error::Error for HelloError {}

/// A `subscribe` frame as an endpoint reads it, each member typed on its
/// own (AEP-0003 §6.5: a malformed `filter` or `from` is `invalid-filter`,
/// as is a capture ceiling that names no capture level).
#[derive(Debug, Clone, PartialEq)]
pub struct SubscribeRequest {
    /// The subscription's id, any JSON (`null` when absent, which the
    /// endpoint refuses: an answer could not name it).
    pub id: RequestId,
    /// The `attr-match` filter ([`crate::filter`] parses it); `None` when
    /// absent or `null`.
    pub filter: Option<Value>,
    /// The capture ceiling; `None` when absent or `null`.
    pub capture: Result<Option<crate::Capture>, CaptureError>,
    /// Where replay starts; `None` when absent or `null`.
    pub from: Result<Option<Resume>, FromError>,
}

impl SubscribeRequest {
    fn from_members(mut members: Map<String, Value>) -> SubscribeRequest {
        let id = RequestId(members.remove("id").unwrap_or(Value::Null));
        let mut member = |name: &str| members.remove(name).filter(|v| !v.is_null());
        let filter = member("filter");
        let capture = member("capture")
            .map(|capture| {
                let text = match capture {
                    Value::String(text) => text,
                    other => other.to_string(),
                };
                text.parse::<crate::Capture>()
                    .map_err(|_| CaptureError(text))
            })
            .transpose();
        let from = member("from")
            .map(|from| Resume::from_value(&from))
            .transpose();
        SubscribeRequest {
            id,
            filter,
            capture,
            from,
        }
    }
}

/// A `capture` member that names no capture level: its text (a JSON
/// value other than a string, as JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureError(pub String);

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "capture {:?} is not one of none, metadata, redacted, full",
            self.0
        )
    }
}

impl std::error::Error for CaptureError {}

/// The frame types of AEP 0.1 (AEP-0003 §2).
pub const KNOWN: [&str; 11] = [
    "hello",
    "subscribe",
    "subscribed",
    "unsubscribe",
    "unsubscribed",
    "roster",
    "error",
    "replay-exhausted",
    "closing",
    "ping",
    "pong",
];

impl Frame {
    /// The frame as the JSON text of one WebSocket text frame.
    pub fn encode(&self) -> String {
        // Every member is a string, a number, a map with string keys or a
        // JSON value: serialisation cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The frame's `type`.
    pub fn kind(&self) -> &'static str {
        match self {
            Frame::Hello(_) => "hello",
            Frame::Subscribe(_) => "subscribe",
            Frame::Subscribed(_) => "subscribed",
            Frame::Unsubscribe(_) => "unsubscribe",
            Frame::Unsubscribed(_) => "unsubscribed",
            Frame::Roster(_) => "roster",
            Frame::Error(_) => "error",
            Frame::ReplayExhausted(_) => "replay-exhausted",
            Frame::Closing(_) => "closing",
            Frame::Ping(_) => "ping",
            Frame::Pong(_) => "pong",
        }
    }

    /// The `pong` that answers this frame, when it is a `ping`.
    pub fn pong(&self) -> Option<Frame> {
        match self {
            Frame::Ping(ping) => Some(Frame::Pong(ping.clone())),
            _ => None,
        }
    }
}

/// A frame whose only member is a request's `id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Id {
    /// The subscription's id.
    #[serde(default)]
    pub id: RequestId,
}

/// A request's `id` (`subscribe`, `roster`), echoed by the answer. The
/// spec's examples are strings, and clients send strings; a peer may send
/// any JSON, which is kept and echoed as sent.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RequestId(pub Value);

impl RequestId {
    /// The id, when it is a string.
    pub fn as_str(&self) -> Option<&str> {
        self.0.as_str()
    }
}

impl From<&str> for RequestId {
    fn from(id: &str) -> Self {
        RequestId(Value::from(id))
    }
}

impl From<String> for RequestId {
    fn from(id: String) -> Self {
        RequestId(Value::from(id))
    }
}

impl PartialEq<str> for RequestId {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == Some(other)
    }
}

impl PartialEq<&str> for RequestId {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == Some(*other)
    }
}

impl fmt::Display for RequestId {
    /// The string, or the JSON text of any other id.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Value::String(id) => f.write_str(id),
            other => write!(f, "{other}"),
        }
    }
}

/// The `hello` frame (AEP-0003 §4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    /// Versions, newest first; the responder's has exactly one (absent
    /// decodes as none in common).
    #[serde(default)]
    pub versions: Vec<String>,
    /// What the connection does: REQUIRED of a connecting party; a peer
    /// that leaves it out of its answer is still understood.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// Who speaks (REQUIRED `agent` for emitters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<Identity>,
    /// Declarations (unknown keys are kept and ignored, AEP-0003 §4 rule 4).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub capabilities: Map<String, Value>,
}

impl Hello {
    /// `capabilities.control.accepts`, the commands a target takes
    /// (authoritative, AEP-0004); empty when not declared.
    pub fn accepts(&self) -> Vec<&str> {
        self.capabilities
            .get("control")
            .and_then(|c| c.get("accepts"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// Whether the peer declares a capability (`roster`, `filters`, …).
    pub fn declares(&self, capability: &str) -> bool {
        self.capabilities.contains_key(capability)
    }
}

/// A connection's role (AEP-0003 §4 rule 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Sends events.
    Emitter,
    /// Subscribes.
    Consumer,
    /// Both.
    Both,
}

impl Role {
    /// The role as the wire spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Emitter => "emitter",
            Role::Consumer => "consumer",
            Role::Both => "both",
        }
    }

    /// The role the wire spells `role`; `None` for any other text.
    pub fn parse(role: &str) -> Option<Role> {
        match role {
            "emitter" => Some(Role::Emitter),
            "consumer" => Some(Role::Consumer),
            "both" => Some(Role::Both),
            _ => None,
        }
    }
}

/// `hello.identity` (AEP-0003 §4 rule 3).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Identity {
    /// The agent (the envelope `agent` of what an emitter sends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The process, among the agent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// The identity document (AEP-0003 §8.3), when sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card: Option<Value>,
}

/// The `subscribe` frame (AEP-0003 §6.5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Subscribe {
    /// The subscription's id, echoed by the answer.
    pub id: RequestId,
    /// The `attr-match` filter ([`crate::filter`] parses it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<Value>,
    /// Where replay starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Resume>,
    /// The capture ceiling asked for (AEP-0003 §6.4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture: Option<String>,
}

/// `subscribe.from`: resume positions, or the literal `"all"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    /// Everything buffered (`"all"`).
    All,
    /// After each of these positions.
    Positions(Vec<Position>),
}

impl Serialize for Resume {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Resume::All => serializer.serialize_str("all"),
            Resume::Positions(positions) => positions.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Resume {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Resume::from_value(&value).map_err(serde::de::Error::custom)
    }
}

impl Resume {
    /// `from` as JSON: `"all"`, or an array of positions, each read by
    /// [`Position::from_value`]. The first malformed position is named
    /// with its index, and the array's length is kept (an endpoint may
    /// refuse that many positions before it looks at them).
    pub fn from_value(value: &Value) -> Result<Resume, FromError> {
        match value {
            Value::String(word) if word == "all" => Ok(Resume::All),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(index, item)| {
                    Position::from_value(item).map_err(|error| FromError::Position {
                        index,
                        of: items.len(),
                        error,
                    })
                })
                .collect::<Result<_, _>>()
                .map(Resume::Positions),
            _ => Err(FromError::NotPositions),
        }
    }
}

/// Why a `from` member is malformed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FromError {
    /// Neither an array nor the string `"all"`.
    NotPositions,
    /// A position of the array is malformed.
    Position {
        /// Its index.
        index: usize,
        /// How many positions the array holds.
        of: usize,
        /// What is wrong with it.
        error: PositionError,
    },
}

impl fmt::Display for FromError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FromError::NotPositions => f.write_str(
                "from must be an array of {session, epoch, seq} positions or the string \"all\"",
            ),
            FromError::Position { index, error, .. } => write!(f, "from[{index}]: {error}"),
        }
    }
}

impl std::error::Error for FromError {}

/// A resume position: replay what follows it (AEP-0003 §7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Position {
    /// The session (not empty).
    pub session: String,
    /// Its epoch (0 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<u64>,
    /// The last sequence number seen (absent: [`Seq::Start`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
}

impl<'de> Deserialize<'de> for Position {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Position::from_value(&value).map_err(serde::de::Error::custom)
    }
}

impl Position {
    /// A position as JSON: `{session, epoch?, seq?}`, with a non-empty
    /// `session`, an `epoch` >= 0 and a `seq` >= -1 when present (a
    /// `null` is not an absent member). Other members are ignored.
    pub fn from_value(value: &Value) -> Result<Position, PositionError> {
        let session = match value.get("session") {
            Some(Value::String(session)) if !session.is_empty() => session.clone(),
            _ => return Err(PositionError::Session),
        };
        let epoch = value
            .get("epoch")
            .map(|epoch| epoch.as_u64().ok_or(PositionError::Epoch))
            .transpose()?;
        let seq = value
            .get("seq")
            .map(|seq| Seq::from_value(seq).ok_or(PositionError::Seq))
            .transpose()?;
        Ok(Position {
            session,
            epoch,
            seq,
        })
    }
}

/// Why a resume position is malformed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PositionError {
    /// `session` is absent, empty or not a string (or the position is not
    /// an object).
    Session,
    /// `epoch` is not an integer >= 0.
    Epoch,
    /// `seq` is not an integer >= -1.
    Seq,
}

impl fmt::Display for PositionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PositionError::Session => "session must be a non-empty string",
            PositionError::Epoch => "epoch must be an integer >= 0",
            PositionError::Seq => "seq must be an integer >= -1",
        })
    }
}

impl std::error::Error for PositionError {}

/// A resume position's `seq`: the last sequence number seen, or `-1`,
/// none yet: the position before the epoch's first event, so replay
/// starts at its beginning (sequence numbers start at 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Seq {
    /// `-1`: nothing seen of the epoch.
    Start,
    /// The last sequence number seen.
    Seen(u64),
}

impl Seq {
    /// The `seq` a JSON value spells: an integer >= -1.
    pub fn from_value(value: &Value) -> Option<Seq> {
        match (value.as_u64(), value.as_i64()) {
            (Some(seq), _) => Some(Seq::Seen(seq)),
            (None, Some(-1)) => Some(Seq::Start),
            _ => None,
        }
    }

    /// The number: -1 for [`Seq::Start`].
    pub fn get(self) -> i128 {
        match self {
            Seq::Start => -1,
            Seq::Seen(seq) => i128::from(seq),
        }
    }
}

impl From<u64> for Seq {
    fn from(seq: u64) -> Self {
        Seq::Seen(seq)
    }
}

impl Serialize for Seq {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Seq::Start => serializer.serialize_i64(-1),
            Seq::Seen(seq) => serializer.serialize_u64(*seq),
        }
    }
}

impl<'de> Deserialize<'de> for Seq {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Seq::from_value(&value).ok_or_else(|| serde::de::Error::custom(PositionError::Seq))
    }
}

/// The `roster` frame: a request, or its reply with `entries`
/// (AEP-0003 §4.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Roster {
    /// The request's id, echoed by the reply.
    pub id: RequestId,
    /// The reply's live claims; absent on the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries: Option<Vec<RosterEntry>>,
}

/// One live (connection, claimed session) pair of a roster reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RosterEntry {
    /// The claimed session.
    pub session: String,
    /// The claiming connection's `hello.identity.agent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<Value>,
    /// Its `hello.identity.instance`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<Value>,
    /// Its `capabilities.control`, verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<Value>,
    /// Its `capabilities.emits`, verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emits: Option<Value>,
}

/// The `error` frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorFrame {
    /// The refused request's id (`subscribe`, `roster`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<RequestId>,
    /// The refused event's or command's id (AEP-0004 §4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// Why (a frame without one decodes as an empty [`ErrorCode::Other`]:
    /// a refusal is a refusal).
    #[serde(default)]
    pub code: ErrorCode,
    /// In words; SHOULD name the limit a `limit-exceeded` hit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// With `version-unsupported`: the versions the endpoint speaks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versions: Option<Vec<String>>,
}

impl ErrorFrame {
    /// An error frame with a code and a detail, answering nothing in
    /// particular (add `id` or `cause` to say what it refuses).
    pub fn new(code: ErrorCode, detail: impl Into<String>) -> Self {
        ErrorFrame {
            id: None,
            cause: None,
            code,
            detail: Some(detail.into()),
            versions: None,
        }
    }
}

impl fmt::Display for ErrorFrame {
    /// `code: detail`, with the refused request or event when named.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code.as_str())?;
        if let Some(detail) = &self.detail {
            write!(f, ": {detail}")?;
        }
        match (&self.id, &self.cause) {
            (Some(id), _) => write!(f, " (request {id})"),
            (None, Some(cause)) => write!(f, " (event {cause:?})"),
            (None, None) => Ok(()),
        }
    }
}

/// An `error` frame's `code`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// The first frame was not `hello` (AEP-0003 §3.5).
    HelloRequired,
    /// No version in common (AEP-0003 §4 rule 1).
    VersionUnsupported,
    /// A `hello` that does not parse.
    InvalidHello,
    /// A binary frame (reserved in 0.1).
    BinaryUnsupported,
    /// A frame of a known type that does not parse.
    BadFrame,
    /// A text frame that is not JSON.
    BadJson,
    /// An event whose bytes are not UTF-8.
    InvalidUtf8,
    /// An event that is not JSON.
    InvalidJson,
    /// An event that breaks the envelope's rules.
    InvalidEvent,
    /// Not allowed on this connection (AEP-0003 §8, AEP-0004 §4.1).
    Unauthorized,
    /// A `subscribe` that is malformed or names an illegal key.
    InvalidFilter,
    /// A filter dialect the endpoint does not advertise.
    UnknownDialect,
    /// A resource limit of the endpoint.
    LimitExceeded,
    /// No live connection owns the command's session (AEP-0004 §4).
    NoRoute,
    /// Several claimants; a command goes to at most one.
    Ambiguous,
    /// The target does not declare the command in `control.accepts`.
    Unsupported,
    /// The target, or the endpoint, cannot take the command now.
    Busy,
    /// A code this revision does not define, kept as sent.
    Other(String),
}

impl ErrorCode {
    /// The code as the wire spells it.
    pub fn as_str(&self) -> &str {
        match self {
            ErrorCode::HelloRequired => "hello-required",
            ErrorCode::VersionUnsupported => "version-unsupported",
            ErrorCode::InvalidHello => "invalid-hello",
            ErrorCode::BinaryUnsupported => "binary-unsupported",
            ErrorCode::BadFrame => "bad-frame",
            ErrorCode::BadJson => "bad-json",
            ErrorCode::InvalidUtf8 => "invalid-utf8",
            ErrorCode::InvalidJson => "invalid-json",
            ErrorCode::InvalidEvent => "invalid-event",
            ErrorCode::Unauthorized => "unauthorized",
            ErrorCode::InvalidFilter => "invalid-filter",
            ErrorCode::UnknownDialect => "unknown-dialect",
            ErrorCode::LimitExceeded => "limit-exceeded",
            ErrorCode::NoRoute => "no-route",
            ErrorCode::Ambiguous => "ambiguous",
            ErrorCode::Unsupported => "unsupported",
            ErrorCode::Busy => "busy",
            ErrorCode::Other(code) => code,
        }
    }

    /// The code a wire string names ([`ErrorCode::Other`] when unknown).
    pub fn parse(code: &str) -> Self {
        match code {
            "hello-required" => ErrorCode::HelloRequired,
            "version-unsupported" => ErrorCode::VersionUnsupported,
            "invalid-hello" => ErrorCode::InvalidHello,
            "binary-unsupported" => ErrorCode::BinaryUnsupported,
            "bad-frame" => ErrorCode::BadFrame,
            "bad-json" => ErrorCode::BadJson,
            "invalid-utf8" => ErrorCode::InvalidUtf8,
            "invalid-json" => ErrorCode::InvalidJson,
            "invalid-event" => ErrorCode::InvalidEvent,
            "unauthorized" => ErrorCode::Unauthorized,
            "invalid-filter" => ErrorCode::InvalidFilter,
            "unknown-dialect" => ErrorCode::UnknownDialect,
            "limit-exceeded" => ErrorCode::LimitExceeded,
            "no-route" => ErrorCode::NoRoute,
            "ambiguous" => ErrorCode::Ambiguous,
            "unsupported" => ErrorCode::Unsupported,
            "busy" => ErrorCode::Busy,
            other => ErrorCode::Other(other.to_owned()),
        }
    }
}

impl Default for ErrorCode {
    /// No code: an empty [`ErrorCode::Other`].
    fn default() -> Self {
        ErrorCode::Other(String::new())
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let code = String::deserialize(deserializer)?;
        Ok(ErrorCode::parse(&code))
    }
}

/// The `replay-exhausted` frame (AEP-0003 §5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayExhausted {
    /// The subscription whose resume position is gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub: Option<RequestId>,
    /// The session.
    pub session: String,
    /// The earliest position still held.
    pub earliest: Earliest,
}

/// The earliest position a `replay-exhausted` frame says is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Earliest {
    /// Its epoch (0 when absent).
    #[serde(default)]
    pub epoch: u64,
    /// Its sequence number.
    pub seq: u64,
}

/// The `closing` frame (AEP-0003 §3.5 rule 4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Closing {
    /// Why the sender closes.
    pub reason: String,
    /// The last position delivered per subscription and session.
    #[serde(default)]
    pub delivered: Vec<Delivered>,
    /// How many positions were left out of `delivered` (an addition of
    /// this implementation; absent when none were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted: Option<u64>,
}

/// One delivered position of a `closing` frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivered {
    /// The subscription.
    pub sub: RequestId,
    /// The session.
    pub session: String,
    /// Its epoch.
    pub epoch: u64,
    /// The last sequence number delivered.
    pub seq: u64,
}

/// The `ping` and `pong` frames: `t` is echoed as sent.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Ping {
    /// The sender's stamp (any JSON; milliseconds by convention).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t: Option<Value>,
}

#[cfg(test)]
mod tests;
