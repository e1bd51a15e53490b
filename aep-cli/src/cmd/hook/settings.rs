//! `--install` and `--uninstall`: the vendor's hook configuration edited
//! in place. Claude Code's settings and Codex's `hooks.json` share one
//! shape:
//!
//! ```json
//! {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
//!     {"type": "command", "command": "...", "timeout": 65}]}]}}
//! ```
//!
//! Only what is ours changes: a hook whose command runs `aep hook AGENT`.
//! The file is parsed (with `serde_json`) to decide what changes, then
//! edited as text: a small scanner ([`Scanner`]) finds the byte spans of the
//! root object, of `hooks`, of each event's array and of its matcher groups,
//! and only our entries are spliced in or cut out, indented like their
//! siblings. Every other byte (member order, indentation, spacing, escapes,
//! other hooks, the trailing newline, CRLF line endings, which new lines
//! also get) stays as it was, and `--install` then `--uninstall` gives the
//! original bytes back: a `hooks` member or an event array that we added
//! goes again with our last entry, and one that was there, empty, before
//! we added to it stays, empty. Which of the two it was is read from the
//! text: of the ways to take ours out, the one that `--install` turns
//! back into the text as it is wins.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::common::error::{Context, Error, Result};

/// What to install: the command and its timeout, for these hooks.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    /// The command line the vendor runs.
    pub command: String,
    /// The vendor's timeout for it, in seconds.
    pub timeout_s: u64,
    /// The hook names.
    pub hooks: &'a [&'a str],
    /// The agent name in `aep hook AGENT`.
    pub agent: &'a str,
}

/// The settings text with our hooks installed (any older entry of ours
/// replaced), or `None` when it already says exactly that.
pub fn install(text: &str, entry: &Entry<'_>) -> Result<Option<String>> {
    edit(text, entry.agent, Some(entry), Emptied::Drop)
}

/// The settings text with our hooks removed, or `None` when it holds none.
/// A `hooks` object or an event array left empty goes, unless it was
/// there, empty, before `--install` added ours: of the texts without ours
/// (each emptied container dropped, `hooks` kept, or all kept), the first
/// that installing ours again turns back into `text` is the answer; the
/// first when none does (the file was edited since). When two of them
/// install to the same text (an empty `hooks` last in a file of several
/// lines, which installs as a new one would), the emptied one goes.
pub fn uninstall(text: &str, agent: &str) -> Result<Option<String>> {
    let Some(dropped) = edit(text, agent, None, Emptied::Drop)? else {
        return Ok(None);
    };
    let Some((command, timeout_s, events)) = installed(text, agent) else {
        return Ok(Some(dropped));
    };
    let hooks: Vec<&str> = events.iter().map(String::as_str).collect();
    let entry = Entry {
        command,
        timeout_s,
        hooks: &hooks,
        agent,
    };
    let reinstalled = |candidate: &str| {
        install(candidate, &entry)
            .ok()
            .flatten()
            .is_some_and(|again| again == text)
    };
    if reinstalled(&dropped) {
        return Ok(Some(dropped));
    }
    for emptied in [Emptied::KeepHooks, Emptied::KeepAll] {
        if let Some(kept) = edit(text, agent, None, emptied)? {
            if reinstalled(&kept) {
                return Ok(Some(kept));
            }
        }
    }
    Ok(Some(dropped))
}

/// What becomes of a container that uninstalling leaves empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Emptied {
    /// `hooks` and event arrays go.
    Drop,
    /// `hooks` stays (`{}`); event arrays go.
    KeepHooks,
    /// `hooks` and event arrays stay (`{}`, `[]`).
    KeepAll,
}

/// Our entry as installed in `text`: its command, its timeout, and the
/// events that hold it, in the file's order; `None` when there is none, or
/// one without a timeout.
fn installed(text: &str, agent: &str) -> Option<(String, u64, Vec<String>)> {
    let root = Scanner::document(text).ok()?;
    let Kind::Object(members) = &root.kind else {
        return None;
    };
    let hooks = members.iter().find(|m| m.key == "hooks")?;
    let Kind::Object(events) = &hooks.value.kind else {
        return None;
    };
    let mut found = None;
    let mut names = Vec::new();
    for event in events {
        let value: Value = serde_json::from_str(&text[event.value.start..event.value.end]).ok()?;
        let ours = value
            .as_array()?
            .iter()
            .filter_map(|g| g.get("hooks")?.as_array())
            .flatten()
            .find(|hook| is_ours(hook, agent));
        if let Some(hook) = ours {
            if found.is_none() {
                let command = hook.get("command")?.as_str()?.to_owned();
                found = Some((command, hook.get("timeout")?.as_u64()?));
            }
            names.push(event.key.clone());
        }
    }
    let (command, timeout_s) = found?;
    Some((command, timeout_s, names))
}

/// Installs (`entry` given) or uninstalls our hooks: the edited text, or
/// `None` when nothing changes.
fn edit(
    text: &str,
    agent: &str,
    entry: Option<&Entry<'_>>,
    emptied: Emptied,
) -> Result<Option<String>> {
    if text.trim().is_empty() {
        // Nothing of anyone else's to keep: the whole file is ours to write.
        let Some(entry) = entry else {
            return Ok(None);
        };
        let root = NewObject(vec![("hooks", NewHooks::of(entry, entry.hooks))]);
        let mut out = pretty(&root, "  ")?;
        out.push('\n');
        return Ok(Some(out));
    }
    // The parser's words say where; the advice ends the sentence.
    serde_json::from_str::<Value>(text)
        .map_err(|e| Error::msg(format_args!("not JSON ({e}); fix it by hand")))?;
    let root = Scanner::document(text)?;
    let Kind::Object(members) = &root.kind else {
        return Err(Error::msg(
            "not a JSON object; make it one (`{}` for none) and run again",
        ));
    };
    let hooks = unique(members, "hooks", "the settings")?;
    let events: &[Member] = match hooks.map(|m| &m.value.kind) {
        None => &[],
        Some(Kind::Object(events)) => events,
        Some(_) => {
            return Err(Error::msg(
                "`hooks` is not an object of hook events; fix or remove it and run again",
            ))
        }
    };
    let mut actions = Vec::with_capacity(events.len());
    for event in events {
        unique(events, &event.key, "`hooks`")?;
        let wanted = entry.filter(|e| e.hooks.contains(&event.key.as_str()));
        actions.push(event_action(
            text,
            event,
            agent,
            wanted,
            emptied == Emptied::KeepAll,
        )?);
    }
    let new_events: Vec<&str> = entry.map_or_else(Vec::new, |entry| {
        let present = |name: &&str| events.iter().any(|m| m.key == *name);
        entry
            .hooks
            .iter()
            .copied()
            .filter(|n| !present(n))
            .collect()
    });
    if new_events.is_empty() && actions.iter().all(|a| matches!(a, Action::Keep)) {
        return Ok(None);
    }
    let root_actions: Vec<Action>;
    let mut appended = Vec::new();
    match (hooks, entry) {
        (Some(hooks), _) => {
            let gone = new_events.is_empty()
                && actions.iter().all(|a| matches!(a, Action::Drop))
                && emptied == Emptied::Drop;
            let action = if gone {
                Action::Drop
            } else {
                let layout = Layout::of(text, &hooks.value);
                let mut added = Vec::with_capacity(new_events.len());
                if let Some(entry) = entry {
                    for name in &new_events {
                        added.push(layout.member(name, &[group(entry)])?);
                    }
                }
                let value = render(text, &hooks.value, &layout, &actions, &added);
                Action::Replace(format!("{}{value}", &text[hooks.start..hooks.value.start]))
            };
            root_actions = members
                .iter()
                .map(|m| {
                    if m.key == "hooks" {
                        action.clone()
                    } else {
                        Action::Keep
                    }
                })
                .collect();
        }
        (None, Some(entry)) => {
            root_actions = vec![Action::Keep; members.len()];
            let layout = Layout::of(text, &root);
            appended.push(layout.member("hooks", &NewHooks::of(entry, &new_events))?);
        }
        // Without `hooks` there is nothing of ours to remove.
        (None, None) => return Ok(None),
    }
    let layout = Layout::of(text, &root);
    let body = render(text, &root, &layout, &root_actions, &appended);
    Ok(Some(format!(
        "{}{body}{}",
        &text[..root.start],
        &text[root.end..]
    )))
}

/// What becomes of one element of an array or member of an object.
#[derive(Debug, Clone)]
enum Action {
    /// Its bytes stay.
    Keep,
    /// It goes, with the separator before it (or after it, for the first).
    Drop,
    /// Its bytes become these (for a member, key and value).
    Replace(String),
}

/// What becomes of one event's member in `hooks`: ours taken out of its
/// matcher groups and, when `wanted`, our group appended last; `Keep` when
/// that is what it already says. Left empty, it goes, unless `keep`.
fn event_action(
    text: &str,
    event: &Member,
    agent: &str,
    wanted: Option<&Entry<'_>>,
    keep: bool,
) -> Result<Action> {
    let name = &event.key;
    let Kind::Array(groups) = &event.value.kind else {
        return Err(Error::msg(format_args!(
            "`hooks.{name}` is not an array of matcher groups; fix or remove it and run again"
        )));
    };
    let old = groups
        .iter()
        .map(|g| serde_json::from_str(&text[g.start..g.end]))
        .collect::<Result<Vec<Value>, _>>()
        .with_context(|| format!("`hooks.{name}`"))?;
    let mut expected = without_ours(&old, agent);
    if let Some(entry) = wanted {
        expected.push(serde_json::to_value(group(entry))?);
    }
    if expected == old {
        return Ok(Action::Keep);
    }
    let actions = groups
        .iter()
        .zip(&old)
        .map(|(node, value)| group_action(text, node, value, agent, name))
        .collect::<Result<Vec<Action>>>()?;
    let layout = Layout::of(text, &event.value);
    let added = match wanted {
        Some(entry) => vec![layout.render(&group(entry))?],
        None => Vec::new(),
    };
    if !keep && added.is_empty() && actions.iter().all(|a| matches!(a, Action::Drop)) {
        return Ok(Action::Drop);
    }
    let value = render(text, &event.value, &layout, &actions, &added);
    Ok(Action::Replace(format!(
        "{}{value}",
        &text[event.start..event.value.start]
    )))
}

/// What becomes of one matcher group: kept when no hook in it is ours,
/// dropped when every one is, else ours cut out of its `hooks` array.
fn group_action(
    text: &str,
    node: &Node,
    value: &Value,
    agent: &str,
    event: &str,
) -> Result<Action> {
    let Some(list) = value.get("hooks").and_then(Value::as_array) else {
        return Ok(Action::Keep);
    };
    let ours: Vec<bool> = list.iter().map(|hook| is_ours(hook, agent)).collect();
    if !ours.contains(&true) {
        return Ok(Action::Keep);
    }
    if !ours.contains(&false) {
        return Ok(Action::Drop);
    }
    let where_ = format!("a matcher group of `hooks.{event}`");
    let Kind::Object(members) = &node.kind else {
        return Ok(Action::Keep);
    };
    let Some(hooks) = unique(members, "hooks", &where_)? else {
        return Ok(Action::Keep);
    };
    let Kind::Array(items) = &hooks.value.kind else {
        return Ok(Action::Keep);
    };
    if items.len() != ours.len() {
        return Err(Error::msg(format_args!(
            "{where_} could not be edited safely; remove `aep hook {agent}` from it by hand"
        )));
    }
    let inner: Vec<Action> = ours
        .iter()
        .map(|&o| if o { Action::Drop } else { Action::Keep })
        .collect();
    let list = render(
        text,
        &hooks.value,
        &Layout::of(text, &hooks.value),
        &inner,
        &[],
    );
    let member = format!("{}{list}", &text[hooks.start..hooks.value.start]);
    let outer: Vec<Action> = members
        .iter()
        .map(|m| {
            if std::ptr::eq(m, hooks) {
                Action::Replace(member.clone())
            } else {
                Action::Keep
            }
        })
        .collect();
    let layout = Layout::of(text, node);
    Ok(Action::Replace(render(text, node, &layout, &outer, &[])))
}

/// The member named `key`, if any; an error naming `container` when there
/// are two (which one the vendor reads is not ours to guess).
fn unique<'m>(members: &'m [Member], key: &str, container: &str) -> Result<Option<&'m Member>> {
    let mut found = members.iter().filter(|m| m.key == key);
    let first = found.next();
    if found.next().is_some() {
        return Err(Error::msg(format_args!(
            "{container} has `{key}` twice; merge them into one and run again"
        )));
    }
    Ok(first)
}

/// The text of an array or object (`node`) with `actions` applied to its
/// elements in order and `added` (already rendered) appended after them.
/// Separators come from the text: a kept element keeps the one before it,
/// the first kept element the text after the opening bracket, and an
/// appended element gets `layout.sep`, so appending then dropping the last
/// element gives the original bytes back.
fn render(
    text: &str,
    node: &Node,
    layout: &Layout,
    actions: &[Action],
    added: &[String],
) -> String {
    let items = node.items();
    let (open, close) = (
        &text[node.start..node.start + 1],
        &text[node.end - 1..node.end],
    );
    let (lead, trail) = match (items.first(), items.last()) {
        (Some(first), Some(last)) => (&text[node.start + 1..first.0], &text[last.1..node.end - 1]),
        _ => (layout.lead.as_str(), layout.trail.as_str()),
    };
    let mut body = String::new();
    let mut empty = true;
    for (i, (&(start, end), action)) in items.iter().zip(actions).enumerate() {
        let piece = match action {
            Action::Keep => &text[start..end],
            Action::Drop => continue,
            Action::Replace(piece) => piece.as_str(),
        };
        if !empty {
            body.push_str(&text[items[i - 1].1..start]);
        }
        body.push_str(piece);
        empty = false;
    }
    for piece in added {
        if !empty {
            body.push_str(&layout.sep);
        }
        body.push_str(piece);
        empty = false;
    }
    if empty {
        if items.is_empty() {
            return text[node.start..node.end].to_owned();
        }
        return format!("{open}{close}");
    }
    format!("{open}{lead}{body}{trail}{close}")
}

/// How an element appended to a container is laid out, learnt from its
/// siblings (or, for an empty container, from the file).
#[derive(Debug)]
struct Layout {
    /// Between the last element and an appended one.
    sep: String,
    /// The indentation of a new element's lines; `None` for one line.
    indent: Option<String>,
    /// One level of indentation inside a new element.
    unit: String,
    /// After the opening bracket of an empty container, before the first.
    lead: String,
    /// After the last element of an empty container, before its closing.
    trail: String,
    /// The file's line ending, for the lines of a new element.
    eol: &'static str,
}

impl Layout {
    /// The layout of `node`, an array or object in `text`.
    fn of(text: &str, node: &Node) -> Layout {
        let items = node.items();
        let base = line_indent(text, node.start);
        let eol = line_ending(text);
        let (sep, lead, trail) = match items.as_slice() {
            [] if text.contains('\n') => {
                let indent = format!("{base}{}", file_unit(text));
                (
                    format!(",{eol}{indent}"),
                    format!("{eol}{indent}"),
                    format!("{eol}{base}"),
                )
            }
            [] => (", ".to_owned(), String::new(), String::new()),
            [first] => {
                let lead = &text[node.start + 1..first.0];
                let sep = if lead.is_empty() {
                    ", ".to_owned()
                } else {
                    format!(",{lead}")
                };
                (sep, String::new(), String::new())
            }
            [.., before, last] => (
                text[before.1..last.0].to_owned(),
                String::new(),
                String::new(),
            ),
        };
        let indent = sep.rfind('\n').map(|i| {
            let line = &sep[i + 1..];
            let width = line.len() - line.trim_start_matches([' ', '\t']).len();
            line[..width].to_owned()
        });
        let unit = match &indent {
            Some(indent) if indent.len() > base.len() && indent.starts_with(base) => {
                indent[base.len()..].to_owned()
            }
            _ => file_unit(text).to_owned(),
        };
        Layout {
            sep,
            indent,
            unit,
            lead,
            trail,
            eol,
        }
    }

    /// `value` as the text of a new element: pretty, one `unit` a level and
    /// every line after the first at `indent`; on one line when the
    /// siblings are.
    fn render<T: Serialize>(&self, value: &T) -> Result<String> {
        match &self.indent {
            None => Ok(serde_json::to_string(value)?),
            Some(indent) => {
                Ok(pretty(value, &self.unit)?.replace('\n', &format!("{}{indent}", self.eol)))
            }
        }
    }

    /// `"key": value` as the text of a new member.
    fn member<T: Serialize>(&self, key: &str, value: &T) -> Result<String> {
        let key = serde_json::to_string(key)?;
        Ok(format!("{key}: {}", self.render(value)?))
    }
}

/// `value` pretty-printed with `unit` a level.
fn pretty<T: Serialize>(value: &T, unit: &str) -> Result<String> {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    value.serialize(&mut serializer)?;
    String::from_utf8(out).map_err(Error::from_source)
}

/// The file's line ending: CRLF when its first line ends so, else LF.
fn line_ending(text: &str) -> &'static str {
    match text.find('\n') {
        Some(at) if text[..at].ends_with('\r') => "\r\n",
        _ => "\n",
    }
}

/// The spaces and tabs that start the line holding byte `at`.
fn line_indent(text: &str, at: usize) -> &str {
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[start..at];
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// The file's first indentation (of its first indented line), for a level
/// inside a container that has no element to learn it from; two spaces in
/// a file with none.
fn file_unit(text: &str) -> &str {
    text.split('\n')
        .skip(1)
        .map(|line| &line[..line.len() - line.trim_start_matches([' ', '\t']).len()])
        .find(|indent| !indent.is_empty())
        .unwrap_or("  ")
}

/// One command hook of ours, in the vendor's member order.
#[derive(Debug, Serialize)]
struct Command<'a> {
    /// Always `command`.
    #[serde(rename = "type")]
    kind: &'static str,
    /// The command line.
    command: &'a str,
    /// The vendor's timeout, in seconds.
    timeout: u64,
}

/// Our matcher group: no matcher (every tool), our one hook.
#[derive(Debug, Serialize)]
struct Group<'a> {
    /// The group's hooks.
    hooks: [Command<'a>; 1],
}

/// Our matcher group for `entry`.
fn group<'a>(entry: &'a Entry<'_>) -> Group<'a> {
    Group {
        hooks: [Command {
            kind: "command",
            command: &entry.command,
            timeout: entry.timeout_s,
        }],
    }
}

/// A new object's members, written in this order.
struct NewObject<'k, T>(Vec<(&'k str, T)>);

impl<T: Serialize> Serialize for NewObject<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in &self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// A new `hooks` object: each event's array holding our group.
type NewHooks<'k, 'a> = NewObject<'k, [Group<'a>; 1]>;

impl<'k, 'a> NewHooks<'k, 'a> {
    /// Our group under each of `events`.
    fn of(entry: &'a Entry<'_>, events: &[&'k str]) -> NewHooks<'k, 'a> {
        NewObject(events.iter().map(|e| (*e, [group(entry)])).collect())
    }
}

/// Nesting deeper than this is refused (`serde_json` refuses it first).
const MAX_DEPTH: usize = 256;

/// A JSON value's place in the text: `start..end`, and its parts.
#[derive(Debug)]
struct Node {
    /// The byte of its first character.
    start: usize,
    /// The byte after its last character.
    end: usize,
    /// What it is.
    kind: Kind,
}

/// The parts of a [`Node`].
#[derive(Debug)]
enum Kind {
    /// An object's members, in order.
    Object(Vec<Member>),
    /// An array's elements, in order.
    Array(Vec<Node>),
    /// A string, number, `true`, `false` or `null`.
    Scalar,
}

/// An object member: its key (unescaped) and where it starts.
#[derive(Debug)]
struct Member {
    /// The key, unescaped.
    key: String,
    /// The byte of the key's opening quote.
    start: usize,
    /// The value.
    value: Node,
}

impl Node {
    /// The byte spans of its elements (of a member: key to end of value).
    fn items(&self) -> Vec<(usize, usize)> {
        match &self.kind {
            Kind::Object(members) => members.iter().map(|m| (m.start, m.value.end)).collect(),
            Kind::Array(items) => items.iter().map(|n| (n.start, n.end)).collect(),
            Kind::Scalar => Vec::new(),
        }
    }
}

/// A span-aware reader of JSON text (already checked by `serde_json`).
/// Every position it records is that of an ASCII byte (a bracket, a quote,
/// the first byte of a scalar) or the end of the text, so slicing the text
/// at them is always at a character boundary.
struct Scanner<'a> {
    /// The text.
    text: &'a str,
    /// The next byte to read.
    pos: usize,
}

impl<'a> Scanner<'a> {
    /// The one value that `text` holds, with its parts.
    fn document(text: &'a str) -> Result<Node> {
        let mut scanner = Scanner { text, pos: 0 };
        let node = scanner.value(0)?;
        scanner.skip_space();
        if scanner.pos != text.len() {
            return Err(scanner.unexpected());
        }
        Ok(node)
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn unexpected(&self) -> Error {
        Error::msg(format_args!(
            "unexpected text at byte {}; fix it by hand",
            self.pos
        ))
    }

    /// Reads `byte` (after any white space) or fails.
    fn expect(&mut self, byte: u8) -> Result<()> {
        self.skip_space();
        if self.peek() != Some(byte) {
            return Err(self.unexpected());
        }
        self.pos += 1;
        Ok(())
    }

    /// Reads one value after any white space.
    fn value(&mut self, depth: usize) -> Result<Node> {
        if depth > MAX_DEPTH {
            return Err(Error::msg("nested too deeply to edit; edit it by hand"));
        }
        self.skip_space();
        let start = self.pos;
        let kind = match self.peek() {
            Some(b'{') => Kind::Object(self.members(depth)?),
            Some(b'[') => Kind::Array(self.elements(depth)?),
            Some(b'"') => {
                self.string()?;
                Kind::Scalar
            }
            _ => {
                while matches!(self.peek(), Some(b) if !b" \t\n\r,:[]{}\"".contains(&b)) {
                    self.pos += 1;
                }
                if self.pos == start {
                    return Err(self.unexpected());
                }
                Kind::Scalar
            }
        };
        Ok(Node {
            start,
            end: self.pos,
            kind,
        })
    }

    /// Reads an object from its `{`.
    fn members(&mut self, depth: usize) -> Result<Vec<Member>> {
        self.pos += 1;
        let mut members = Vec::new();
        self.skip_space();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(members);
        }
        loop {
            self.skip_space();
            let start = self.pos;
            self.string()?;
            let key = serde_json::from_str(&self.text[start..self.pos])
                .with_context(|| format!("a key at byte {start}"))?;
            self.expect(b':')?;
            let value = self.value(depth + 1)?;
            members.push(Member { key, start, value });
            self.skip_space();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(members);
                }
                _ => return Err(self.unexpected()),
            }
        }
    }

    /// Reads an array from its `[`.
    fn elements(&mut self, depth: usize) -> Result<Vec<Node>> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_space();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(items);
        }
        loop {
            items.push(self.value(depth + 1)?);
            self.skip_space();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(items);
                }
                _ => return Err(self.unexpected()),
            }
        }
    }

    /// Reads a string from its `"` to its closing `"`, over escapes.
    fn string(&mut self) -> Result<()> {
        if self.peek() != Some(b'"') {
            return Err(self.unexpected());
        }
        self.pos += 1;
        loop {
            match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(b'\\') => self.pos += 2,
                Some(_) => self.pos += 1,
                None => {
                    return Err(Error::msg(
                        "a string runs to the end of the file; fix it by hand",
                    ))
                }
            }
        }
    }
}

/// The matcher groups with our hooks taken out, a group left empty by
/// that dropped; groups and hooks not ours are kept as they are.
fn without_ours(groups: &[Value], agent: &str) -> Vec<Value> {
    let mut kept = Vec::with_capacity(groups.len());
    for group in groups {
        let Some(list) = group.get("hooks").and_then(Value::as_array) else {
            kept.push(group.clone());
            continue;
        };
        let others: Vec<Value> = list
            .iter()
            .filter(|hook| !is_ours(hook, agent))
            .cloned()
            .collect();
        if others.len() == list.len() {
            kept.push(group.clone());
        } else if !others.is_empty() {
            let mut group = group.clone();
            group["hooks"] = Value::Array(others);
            kept.push(group);
        }
    }
    kept
}

/// Whether a hook runs `aep hook AGENT` (by any path to `aep`).
fn is_ours(hook: &Value, agent: &str) -> bool {
    let Some(command) = hook.get("command").and_then(Value::as_str) else {
        return false;
    };
    let Some(program) = command.trim().strip_suffix(&format!(" hook {agent}")) else {
        return false;
    };
    let program = program.trim().trim_matches('\'').trim_matches('"');
    program == "aep" || program.ends_with("/aep")
}

/// A command line running `program` (a path) with `args`: the path quoted
/// for a POSIX shell when it holds anything but plain path characters.
pub fn command_line(program: &str, args: &str) -> String {
    let plain = !program.is_empty()
        && program
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+".contains(&b));
    if plain {
        format!("{program} {args}")
    } else {
        format!("'{}' {args}", program.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const HOOKS: &[&str] = &["PreToolUse", "Stop"];

    fn entry(command: &str) -> Entry<'static> {
        Entry {
            command: command.to_owned(),
            timeout_s: 65,
            hooks: HOOKS,
            agent: "claude-code",
        }
    }

    const OTHERS: &str = r#"{
  "permissions": {"allow": ["Bash(ls:*)"]},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}
    ],
    "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}]
  },
  "model": "opus"
}"#;

    /// Unusual but valid: mixed indentation, keys out of order, `$schema`
    /// first, another hook with a matcher on an event of ours, escapes and
    /// non-ASCII text, an inline event, no trailing newline.
    const ODD: &str = "{\n    \"$schema\": \"https://json.schemastore.org/claude-code-settings.json\",\n  \"model\":\"opus\",\n    \"env\": {\"GREETING\": \"h\\u00e9llo \\\"w\u{f6}rld\\\" \\\\ \u{2713}\"},\n  \"hooks\" : {\n      \"Stop\": [ { \"hooks\": [ {\"type\":\"command\",\"command\":\"say '\u{e9}t\u{e9}' \\\"done\\\"\"} ] } ],\n    \"PreToolUse\": [\n        {\n          \"matcher\": \"Bash|Write\",\n          \"hooks\": [{ \"type\": \"command\", \"command\": \"./guard.sh\" }]\n        }\n    ]\n  },\n  \"permissions\":{\"allow\":[\"Bash(ls:*)\"]}\n}";

    /// Hooks for two events the file has and one it has not.
    const ODD_HOOKS: &[&str] = &["PreToolUse", "Stop", "SessionStart"];

    #[test]
    fn an_oddly_formatted_file_keeps_every_byte_but_ours_and_comes_back_exactly() {
        let entry = Entry {
            hooks: ODD_HOOKS,
            ..entry("/usr/bin/aep hook claude-code")
        };
        let out = install(ODD, &entry).unwrap().unwrap();
        // Our three entries, each indented like its siblings, and nothing
        // else: the file minus them is the original.
        let ours = r#"{"type":"command","command":"/usr/bin/aep hook claude-code","timeout":65}"#;
        let inline = format!(r#", {{"hooks":[{ours}]}}"#);
        let pre = "
        {
            \"hooks\": [
                {
                    \"type\": \"command\",
                    \"command\": \"/usr/bin/aep hook claude-code\",
                    \"timeout\": 65
                }
            ]
        }";
        let session = "
    \"SessionStart\": [
      {
        \"hooks\": [
          {
            \"type\": \"command\",
            \"command\": \"/usr/bin/aep hook claude-code\",
            \"timeout\": 65
          }
        ]
      }
    ]";
        let at = |anchor: &str| ODD.find(anchor).unwrap() + anchor.len();
        let (stop, pre_at, session_at) = (
            at("\\\"done\\\"\"} ] }"),
            at("./guard.sh\" }]\n        }"),
            at("        }\n    ]"),
        );
        let expected = [
            &ODD[..stop],
            &inline,
            &ODD[stop..pre_at],
            ",",
            pre,
            &ODD[pre_at..session_at],
            ",",
            session,
            &ODD[session_at..],
        ]
        .concat();
        assert_eq!(out, expected);
        assert_eq!(install(&out, &entry).unwrap(), None, "idempotent");
        assert_eq!(uninstall(&out, "claude-code").unwrap().unwrap(), ODD);
    }

    #[test]
    fn install_adds_ours_and_keeps_every_other_member_in_its_place() {
        let out = install(OTHERS, &entry("/usr/bin/aep hook claude-code"))
            .unwrap()
            .unwrap();
        let value: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(value["permissions"]["allow"][0], "Bash(ls:*)");
        assert_eq!(value["model"], "opus");
        let pre = value["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(pre.len(), 2);
        assert_eq!(pre[0]["hooks"][0]["command"], "./guard.sh");
        assert_eq!(
            pre[1]["hooks"][0]["command"],
            "/usr/bin/aep hook claude-code"
        );
        assert_eq!(pre[1]["hooks"][0]["timeout"], 65);
        assert_eq!(value["hooks"]["Stop"].as_array().unwrap().len(), 1);
        assert_eq!(
            value["hooks"]["Notification"][0]["hooks"][0]["command"],
            "notify-send hi"
        );
        // Member order is the file's, ours last.
        let order: Vec<usize> = ["\"permissions\"", "\"hooks\"", "\"model\""]
            .iter()
            .map(|k| out.find(k).unwrap())
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{out}");
        let events: Vec<usize> = ["\"PreToolUse\"", "\"Notification\"", "\"Stop\""]
            .iter()
            .map(|k| out.find(k).unwrap())
            .collect();
        assert!(events.windows(2).all(|w| w[0] < w[1]), "{out}");
    }

    #[test]
    fn install_is_idempotent_and_replaces_an_older_entry_of_ours() {
        let once = install(OTHERS, &entry("aep hook claude-code"))
            .unwrap()
            .unwrap();
        assert_eq!(
            install(&once, &entry("aep hook claude-code")).unwrap(),
            None
        );
        let moved = install(&once, &entry("'/opt/my tools/aep' hook claude-code"))
            .unwrap()
            .unwrap();
        let value: Value = serde_json::from_str(&moved).unwrap();
        let pre = value["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(pre.len(), 2, "{moved}");
        assert_eq!(
            pre[1]["hooks"][0]["command"],
            "'/opt/my tools/aep' hook claude-code"
        );
    }

    #[test]
    fn uninstall_takes_ours_out_and_only_ours() {
        let installed = install(OTHERS, &entry("aep hook claude-code"))
            .unwrap()
            .unwrap();
        let out = uninstall(&installed, "claude-code").unwrap().unwrap();
        let back: Value = serde_json::from_str(&out).unwrap();
        let original: Value = serde_json::from_str(OTHERS).unwrap();
        assert_eq!(back, original);
        assert_eq!(uninstall(&out, "claude-code").unwrap(), None);
        // Another agent's entry is not ours to remove.
        assert_eq!(uninstall(&installed, "codex").unwrap(), None);
    }

    #[test]
    fn a_hook_sharing_a_group_with_ours_stays() {
        let text = r#"{"hooks": {"Stop": [{"hooks": [
            {"type": "command", "command": "aep hook claude-code"},
            {"type": "command", "command": "say done"}]}]}}"#;
        let out = uninstall(text, "claude-code").unwrap().unwrap();
        assert_eq!(
            out,
            r#"{"hooks": {"Stop": [{"hooks": [
            {"type": "command", "command": "say done"}]}]}}"#
        );
        let value: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            value["hooks"]["Stop"][0]["hooks"],
            json!([{"type": "command", "command": "say done"}])
        );
    }

    #[test]
    fn an_empty_file_gets_our_hooks_and_loses_them_cleanly() {
        let out = install("", &entry("aep hook claude-code"))
            .unwrap()
            .unwrap();
        let value: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(value["hooks"]["Stop"][0]["hooks"][0]["type"], "command");
        assert_eq!(
            uninstall(&out, "claude-code").unwrap().unwrap().trim(),
            "{}"
        );
    }

    #[test]
    fn a_file_of_another_shape_is_refused_not_rewritten() {
        for text in [
            "[1]",
            "{\"hooks\": []}",
            "{\"hooks\": {\"Stop\": {}}}",
            "{",
            // Which of two `hooks` the vendor reads is not ours to guess.
            "{\"hooks\": {}, \"hooks\": {}}",
            "{\"hooks\": {\"Stop\": [], \"Stop\": []}}",
        ] {
            assert!(
                install(text, &entry("aep hook claude-code")).is_err(),
                "{text}"
            );
        }
    }

    #[test]
    fn a_file_that_is_not_json_is_refused_saying_where_then_what_to_do() {
        let refused = install("{\"hooks\": [", &entry("aep hook claude-code"))
            .unwrap_err()
            .to_string();
        assert!(refused.starts_with("not JSON ("), "{refused}");
        assert!(refused.contains("line 1 column"), "{refused}");
        assert!(refused.ends_with("); fix it by hand"), "{refused}");
    }

    #[test]
    fn only_aep_hook_agent_commands_are_ours() {
        let ours = |c: &str| is_ours(&json!({"command": c}), "claude-code");
        assert!(ours("aep hook claude-code"));
        assert!(ours("/home/u/.cargo/bin/aep hook claude-code"));
        assert!(ours("'/opt/my tools/aep' hook claude-code"));
        assert!(!ours("notaep hook claude-code"));
        assert!(!ours("aep hook codex"));
        assert!(!ours("aep hook claude-code --verbose"));
        assert_eq!(
            command_line("/opt/my tools/aep", "hook codex"),
            "'/opt/my tools/aep' hook codex"
        );
        assert_eq!(
            command_line("/usr/bin/aep", "hook codex"),
            "/usr/bin/aep hook codex"
        );
    }

    /// Every LF that does not end a CRLF.
    fn bare_lfs(text: &str) -> usize {
        text.match_indices('\n')
            .filter(|(at, _)| !text[..*at].ends_with('\r'))
            .count()
    }

    #[test]
    fn an_empty_hooks_object_is_given_back_as_it_was() {
        for text in [
            "{\"hooks\": {}}",
            "{\"hooks\":{}}\n",
            "{\"hooks\": {}, \"model\": \"opus\"}",
            "{\n  \"hooks\": {},\n  \"model\": \"opus\"\n}\n",
        ] {
            let out = install(text, &entry("aep hook claude-code"))
                .unwrap()
                .unwrap();
            assert_eq!(uninstall(&out, "claude-code").unwrap().unwrap(), text);
        }
        // A `hooks` we added still goes with our last entry.
        for text in ["{}", "{\n  \"model\": \"opus\"\n}\n"] {
            let out = install(text, &entry("aep hook claude-code"))
                .unwrap()
                .unwrap();
            assert_eq!(uninstall(&out, "claude-code").unwrap().unwrap(), text);
        }
    }

    #[test]
    fn a_crlf_file_gets_crlf_lines() {
        let text = "{\r\n  \"model\": \"opus\",\r\n  \"hooks\": {\r\n    \"Stop\": [\r\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}\r\n    ]\r\n  }\r\n}\r\n";
        let entry = Entry {
            hooks: ODD_HOOKS,
            ..entry("aep hook claude-code")
        };
        let out = install(text, &entry).unwrap().unwrap();
        assert_eq!(bare_lfs(&out), 0, "{out:?}");
        assert!(out.contains("\"SessionStart\": [\r\n"), "{out:?}");
        assert_eq!(uninstall(&out, "claude-code").unwrap().unwrap(), text);
        for text in [
            "{\r\n  \"model\": \"opus\"\r\n}\r\n",
            "{\r\n  \"hooks\": {},\r\n  \"model\": \"opus\"\r\n}\r\n",
        ] {
            let out = install(text, &entry).unwrap().unwrap();
            assert_eq!(bare_lfs(&out), 0, "{out:?}");
            assert_eq!(uninstall(&out, "claude-code").unwrap().unwrap(), text);
        }
    }

    #[test]
    fn install_then_uninstall_gives_back_every_byte() {
        let inputs = [
            "{}".to_owned(),
            "{}\n".to_owned(),
            "{\"hooks\": {}}".to_owned(),
            "{\"hooks\":{}}\n".to_owned(),
            "{\t\"hooks\": {},\t\"model\": \"opus\"}\r\n".to_owned(),
            "{\n\t\"hooks\": {},\n\t\"model\": \"opus\"\n}\n".to_owned(),
            "{\n\t\"model\": \"opus\",\n\t\"hooks\": {\n\t\t\"Notification\": [{\"hooks\": []}]\n\t}\n}\n"
                .to_owned(),
            "{\r\n\t\"env\": {\"A\": \"b\"}\r\n}".to_owned(),
            "{\r\n\t\"hooks\": {},\r\n\t\"env\": {\"A\": \"b\"}\r\n}".to_owned(),
            "{\r\n    \"permissions\": {\"allow\": []}\r\n}\r\n".to_owned(),
            "  {\"model\": \"opus\", \"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"say\"}]}]}}  ".to_owned(),
            OTHERS.to_owned(),
            OTHERS.replace('\n', "\r\n"),
            OTHERS.replace("  ", "\t"),
            ODD.to_owned(),
            ODD.replace('\n', "\r\n"),
        ];
        for hooks in [HOOKS, ODD_HOOKS] {
            for text in &inputs {
                let entry = Entry {
                    hooks,
                    ..entry("/usr/bin/aep hook claude-code")
                };
                let out = install(text, &entry).unwrap().unwrap();
                if !text.contains('\n') || text.contains("\r\n") {
                    assert_eq!(bare_lfs(&out), bare_lfs(text), "{out:?}");
                }
                assert_eq!(
                    uninstall(&out, "claude-code").unwrap().as_deref(),
                    Some(text.as_str()),
                    "{out:?}"
                );
            }
        }
    }
}
