//! The MCP side: the server's tools, served on standard input and output
//! with the official Rust SDK (`rmcp`), or over HTTP (`http`).

use std::sync::Arc;
use std::time::Duration;

use aep::{Answer, FieldSpec};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeRequestParams, InitializeResult, JsonObject, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::model::{
    CancelledNotificationParam, ClientResult, ElicitRequestParams, ElicitationAction, Request,
    RequestId, ServerRequest,
};
use rmcp::service::{Peer, PeerRequestOptions, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use tokio::sync::OnceCell;

use super::link::{Answered, Elsewhere, Link, Question, Settings};
use crate::cmd::Status;
use crate::common::error::{Context, Error};
use crate::diag;

/// `ask_human`'s wait when `timeout_s` is not given, and its bound.
const DEFAULT_TIMEOUT_S: f64 = 300.0;
const MAX_TIMEOUT_S: f64 = 3600.0;
/// How long `notify` waits for the relay's connection.
const NOTIFY_WAIT: Duration = Duration::from_secs(10);
/// A bound on the options of one choice.
const MAX_OPTIONS: usize = 64;
/// How often a waiting `ask_human` whose call carries a progress token
/// tells the client it still waits (`notifications/progress`), the first
/// time as it starts: clients whose request timeout restarts on progress
/// keep waiting for the person.
const PROGRESS_EVERY: Duration = Duration::from_secs(20);
/// A bound on the agent name taken from the MCP client's name.
const MAX_AGENT_CHARS: usize = 64;
/// A bound on a tool call's arguments, as JSON: what the person reads,
/// well within a relay's frame (4 MiB by default), which an event larger
/// than it would cost the session its connection.
const MAX_ARGUMENTS_BYTES: usize = 256 << 10;

/// The server of one MCP connection.
#[derive(Clone)]
pub(super) struct Server {
    settings: Arc<Settings>,
    link: Arc<OnceCell<Link>>,
    /// Kept as long as the server is (over HTTP: what ends its session
    /// when the transport lets the server go).
    _held: Option<Arc<dyn std::any::Any + Send + Sync>>,
    /// The agent name the session took.
    agent: Arc<OnceCell<String>>,
}

/// Serves MCP on standard input and output until it closes (or a stop
/// signal), then ends the session.
pub async fn serve(settings: Settings) -> Status {
    let server = Server::new(settings, Arc::default(), None);
    let link = server.link.clone();
    let status = match server.serve(rmcp::transport::stdio()).await {
        Ok(running) => {
            tokio::select! {
                _ = running.waiting() => {}
                _ = crate::live::stop_signal() => {}
            }
            Status::Clean
        }
        Err(e) => {
            diag!("aep mcp: error: the MCP connection did not start: {e}");
            Status::Failure
        }
    };
    if let Some(link) = link.get() {
        link.end().await;
    }
    status
}

impl Server {
    /// A server whose session, once started, is in `link`.
    pub(super) fn new(
        settings: Settings,
        link: Arc<OnceCell<Link>>,
        held: Option<Arc<dyn std::any::Any + Send + Sync>>,
    ) -> Server {
        Server {
            settings: Arc::new(settings),
            link,
            _held: held,
            agent: Arc::default(),
        }
    }

    /// The session, started at the first need (`initialize` names the
    /// client).
    async fn link(&self, client: Option<&str>) -> &Link {
        self.link
            .get_or_init(|| async {
                let agent = self
                    .settings
                    .agent
                    .clone()
                    .unwrap_or_else(|| agent_name(client));
                let _ = self.agent.set(agent.clone());
                Link::start(&self.settings, &agent).await
            })
            .await
    }

    async fn ask_human(&self, arguments: &JsonObject, peer: &Peer<RoleServer>) -> CallToolResult {
        let question = match question(arguments) {
            Ok(question) => question,
            Err(message) => return failure(format!("invalid arguments: {message}")),
        };
        let link = self.link(None).await;
        let elsewhere = self.elicitation(peer, &question);
        match link.ask(question, elsewhere).await {
            Ok(answered) => answer_result(link.session(), &answered),
            Err(message) => failure(message),
        }
    }

    /// The question asked through MCP elicitation too, when `--elicit`
    /// is on, the client declared it can take it, and the question fits
    /// its schema.
    fn elicitation(&self, peer: &Peer<RoleServer>, question: &Question) -> Option<Elsewhere> {
        if !self.settings.elicit {
            return None;
        }
        peer.peer_info()?.capabilities.elicitation.as_ref()?;
        let (schema, shape) = elicit_schema(question)?;
        let params: ElicitRequestParams = match serde_json::from_value(json!({
            "mode": "form",
            "message": question.prompt,
            "requestedSchema": schema,
        })) {
            Ok(params) => params,
            Err(e) => {
                diag!("aep mcp: cannot ask through elicitation: {e}");
                return None;
            }
        };
        let peer = peer.clone();
        let answer = async move {
            let request = ServerRequest::ElicitRequest(Request::new(params));
            let handle = match peer
                .send_request_with_option(request, PeerRequestOptions::no_options())
                .await
            {
                Ok(handle) => handle,
                Err(e) => {
                    diag!("aep mcp: cannot ask through elicitation: {e}");
                    return std::future::pending().await;
                }
            };
            let mut asked = Elicited {
                peer: peer.clone(),
                id: Some(handle.id.clone()),
            };
            let result = handle.await_response().await;
            asked.id = None;
            let why = match result {
                Ok(ClientResult::ElicitResult(result)) => match result.action {
                    ElicitationAction::Accept => match shape.answer(result.content) {
                        Ok(answer) => return answer,
                        Err(why) => format!("an answer that does not fit: {why}"),
                    },
                    ElicitationAction::Decline => "declined".to_owned(),
                    _ => "cancelled".to_owned(),
                },
                Ok(_) => "not an elicitation result".to_owned(),
                Err(e) => e.to_string(),
            };
            diag!("aep mcp: elicitation: {why}; the relay's answer is awaited");
            std::future::pending().await
        };
        let by = format!(
            "{} (MCP elicitation)",
            self.agent.get().map_or("mcp", String::as_str)
        );
        Some(Elsewhere {
            answer: Box::pin(answer),
            by,
        })
    }

    async fn notify(&self, arguments: &JsonObject) -> CallToolResult {
        let message = arguments.get("message").and_then(Value::as_str);
        let Some(message) = message.filter(|m| !m.trim().is_empty()) else {
            return failure(
                "invalid arguments: `message` (a non-empty string) is required".to_owned(),
            );
        };
        let link = self.link(None).await;
        match link.notify(message.to_owned(), NOTIFY_WAIT).await {
            Ok(id) => {
                let mut result = CallToolResult::structured(json!({"event": id}));
                result.content = vec![ContentBlock::text("Sent.")];
                result
            }
            Err(message) => failure(message),
        }
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("aep", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Ask a person through an AEP relay: ask_human waits for their answer \
                 (free text, a choice or a form); notify tells them something without waiting.",
            )
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        self.link(Some(&request.client_info.name)).await;
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let arguments = request.arguments.unwrap_or_default();
        let size = serde_json::to_vec(&arguments).map_or(usize::MAX, |json| json.len());
        if size > MAX_ARGUMENTS_BYTES {
            return Ok(failure(format!(
                "invalid arguments: {size} bytes of JSON, at most {MAX_ARGUMENTS_BYTES}: \
                 the prompt, options, fields or message are for a person to read"
            ))
            .into());
        }
        let call = async {
            match request.name.as_ref() {
                "ask_human" => {
                    let ask = self.ask_human(&arguments, &context.peer);
                    Ok(match context.meta.get_progress_token() {
                        Some(token) => waiting(ask, &context.peer, token).await,
                        None => ask.await,
                    })
                }
                "notify" => Ok(self.notify(&arguments).await),
                other => Err(McpError::invalid_params(
                    format!("no tool {other:?}: the tools are ask_human and notify"),
                    None,
                )),
            }
        };
        // A call the client cancels stops here: a question it asked is
        // dismissed.
        let result = tokio::select! {
            result = call => result?,
            _ = context.ct.cancelled() => failure("cancelled by the MCP client".to_owned()),
        };
        Ok(result.into())
    }
}

/// Runs `work` (a call that waits for a person), telling the client that
/// it waits through progress notifications for `token`: one at once, then
/// one every [`PROGRESS_EVERY`], until `work` is done.
async fn waiting<T>(
    work: impl std::future::Future<Output = T>,
    peer: &Peer<RoleServer>,
    token: ProgressToken,
) -> T {
    let ticks = async {
        let mut every = tokio::time::interval(PROGRESS_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The longest wait, reaching the relay included, and some.
        let bound = (MAX_TIMEOUT_S / PROGRESS_EVERY.as_secs_f64()) as u32 + 4;
        for tick in 1..=bound {
            every.tick().await;
            let progress = ProgressNotificationParam::new(token.clone(), f64::from(tick))
                .with_message("waiting for a person to answer");
            if let Err(e) = peer.notify_progress(progress).await {
                diag!("aep mcp: cannot send progress: {e}");
                break;
            }
        }
        std::future::pending::<std::convert::Infallible>().await
    };
    tokio::select! {
        done = work => done,
        never = ticks => match never {},
    }
}

/// An elicitation request still waiting for the client: cancelled
/// (`notifications/cancelled`) when dropped, as the answer came through
/// the relay first, or the call ended.
struct Elicited {
    peer: Peer<RoleServer>,
    id: Option<RequestId>,
}

impl Drop for Elicited {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let peer = self.peer.clone();
        let Ok(params) = serde_json::from_value::<CancelledNotificationParam>(json!({
            "requestId": id,
            "reason": "answered through the relay, or no longer asked",
        })) else {
            return;
        };
        tokio::spawn(async move {
            if let Err(e) = peer.notify_cancelled(params).await {
                diag!("aep mcp: cannot cancel an elicitation: {e}");
            }
        });
    }
}

/// How an elicitation's content becomes an answer.
enum Shape {
    /// `{option}`, one of these.
    Choice(Vec<String>),
    /// `{text}`.
    Text,
    /// The form's values, checked against its fields.
    Form(Vec<FieldSpec>),
}

impl Shape {
    fn answer(&self, content: Option<Value>) -> crate::common::error::Result<Answer> {
        let Some(Value::Object(content)) = content else {
            return Err(Error::msg("no content"));
        };
        let mut answer = Answer::new();
        match self {
            Shape::Choice(options) => match content.get("option") {
                Some(Value::String(option)) if options.contains(option) => {
                    answer.option = Some(option.clone());
                }
                _ => {
                    return Err(Error::msg(format_args!(
                        "`option` is not one of {options:?}"
                    )))
                }
            },
            Shape::Text => match content.get("text") {
                Some(Value::String(text)) => answer.text = Some(text.clone()),
                _ => return Err(Error::msg("`text` is not a string")),
            },
            Shape::Form(fields) => {
                let values = aep::Object::from_iter(content);
                aep::aep_types::form::validate_values(fields, &values)
                    .context("the answer breaks the form")?;
                answer.values = Some(values);
            }
        }
        Ok(answer)
    }
}

/// The elicitation schema of `question` (MCP's flat object of primitive
/// properties) and how its content becomes an answer; none for a form
/// whose fields it cannot express (a `select` with `multi` or `other`).
fn elicit_schema(question: &Question) -> Option<(Value, Shape)> {
    if let Some(fields) = &question.fields {
        let mut properties = JsonObject::new();
        let mut required = Vec::new();
        for field in fields {
            let mut property = match field.type_ {
                aep::FieldSpecType::String => json!({"type": "string"}),
                aep::FieldSpecType::Boolean => json!({"type": "boolean"}),
                aep::FieldSpecType::Number => {
                    let mut number = json!({"type": "number"});
                    if let Some(min) = field.min {
                        number["minimum"] = json!(min);
                    }
                    if let Some(max) = field.max {
                        number["maximum"] = json!(max);
                    }
                    number
                }
                aep::FieldSpecType::Select => {
                    if field.multi == Some(true) || field.other == Some(true) {
                        return None;
                    }
                    let choices = field.choices.as_ref()?;
                    let ids: Vec<&str> = choices.iter().map(|c| c.id.as_str()).collect();
                    json!({"type": "string", "enum": ids})
                }
                _ => return None,
            };
            property["title"] = json!(field.label);
            if properties.insert(field.id.clone(), property).is_some() {
                return None;
            }
            if field.required == Some(true) {
                required.push(field.id.clone());
            }
        }
        let schema = json!({"type": "object", "properties": properties, "required": required});
        return Some((schema, Shape::Form(fields.clone())));
    }
    if question.options.is_empty() {
        let schema = json!({
            "type": "object",
            "properties": {"text": {"type": "string", "title": "Answer"}},
            "required": ["text"],
        });
        return Some((schema, Shape::Text));
    }
    let schema = json!({
        "type": "object",
        "properties": {"option": {"type": "string", "title": "Choice", "enum": question.options}},
        "required": ["option"],
    });
    Some((schema, Shape::Choice(question.options.clone())))
}

/// The tools and their input schemas.
fn tools() -> Vec<Tool> {
    let ask = json!({
        "type": "object",
        "properties": {
            "prompt": {
                "type": "string",
                "minLength": 1,
                "description": "The question, as the person will read it."
            },
            "options": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "minItems": 1,
                "maxItems": MAX_OPTIONS,
                "uniqueItems": true,
                "description": "A choice: the person picks one of these (the result's `option`). \
                                Leave out for a free-text answer (the result's `text`)."
            },
            "fields": {
                "type": "array",
                "minItems": 1,
                "description": "A form (AEP-0006) instead of options: the person fills these \
                                fields and the result's `values` maps each field id to its value.",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "The key of the field's value."},
                        "type": {"type": "string", "enum": ["string", "number", "boolean", "select"]},
                        "label": {"type": "string", "description": "What the person reads."},
                        "required": {"type": "boolean"},
                        "choices": {
                            "type": "array",
                            "description": "For `select`: the choices, each an id and a label.",
                            "items": {
                                "type": "object",
                                "properties": {"id": {"type": "string"}, "label": {"type": "string"}},
                                "required": ["id", "label"]
                            }
                        },
                        "multi": {"type": "boolean", "description": "For `select`: several choices (an array of ids)."},
                        "other": {"type": "boolean", "description": "For `select`: free text allowed besides the choices."},
                        "min": {"type": "number", "description": "For `number`: the least value."},
                        "max": {"type": "number", "description": "For `number`: the greatest value."}
                    },
                    "required": ["id", "type", "label"]
                }
            },
            "timeout_s": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": MAX_TIMEOUT_S,
                "default": DEFAULT_TIMEOUT_S,
                "description": "How long to wait for the answer, in seconds (at most 3600); \
                                then the tool fails saying so."
            }
        },
        "required": ["prompt"],
        "additionalProperties": false
    });
    let notify = json!({
        "type": "object",
        "properties": {
            "message": {
                "type": "string",
                "minLength": 1,
                "description": "What to tell the person."
            }
        },
        "required": ["message"],
        "additionalProperties": false
    });
    let answered = json!({
        "type": "object",
        "properties": {
            "option": {"type": "string", "description": "The option the person chose."},
            "text": {"type": "string", "description": "The person's free-text answer."},
            "values": {"type": "object", "description": "The form's answers, by field id."},
            "request": {"type": "string", "description": "The request's AEP event id."},
            "session": {"type": "string", "description": "The AEP session's id."},
            "answered_by": {"type": "string", "description": "Who answered (their agent name)."}
        },
        "required": ["request", "session", "answered_by"]
    });
    let sent = json!({
        "type": "object",
        "properties": {"event": {"type": "string", "description": "The notice's AEP event id."}},
        "required": ["event"]
    });
    vec![
        Tool::new(
            "ask_human",
            "Ask a person a question and wait for their answer, through an AEP relay \
             (they answer in the relay's page or with `aep respond`). Give `options` for a \
             choice, `fields` for a form, or neither for free text. Returns the answer as \
             structured content: `option`, `text` or `values`.",
            object(ask),
        )
        .with_raw_output_schema(Arc::new(object(answered))),
        Tool::new(
            "notify",
            "Tell the person something (progress, a result) through the AEP relay, without \
             waiting for an answer.",
            object(notify),
        )
        .with_raw_output_schema(Arc::new(object(sent))),
    ]
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        _ => JsonObject::new(),
    }
}

/// `ask_human`'s arguments, checked.
fn question(arguments: &JsonObject) -> Result<Question, String> {
    let prompt = match arguments.get("prompt") {
        Some(Value::String(prompt)) if !prompt.trim().is_empty() => prompt.clone(),
        _ => return Err("`prompt` (a non-empty string) is required".to_owned()),
    };
    let options: Vec<String> = match arguments.get("options") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(s) if !s.is_empty() => Ok(s.clone()),
                _ => Err("`options` holds only non-empty strings".to_owned()),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("`options` is an array of strings".to_owned()),
    };
    if options.len() > MAX_OPTIONS {
        return Err(format!("`options` holds at most {MAX_OPTIONS} choices"));
    }
    if (1..options.len()).any(|i| options[..i].contains(&options[i])) {
        return Err("`options` names a choice twice".to_owned());
    }
    let fields = match arguments.get("fields") {
        None | Some(Value::Null) => None,
        Some(fields) => {
            let fields: Vec<FieldSpec> = serde_json::from_value(fields.clone())
                .map_err(|e| format!("`fields` is not an AEP-0006 form: {e}"))?;
            if fields.is_empty() {
                return Err("`fields` holds at least one field".to_owned());
            }
            answerable(&fields)?;
            Some(fields)
        }
    };
    if fields.is_some() && !options.is_empty() {
        return Err("give `options` or `fields`, not both".to_owned());
    }
    let timeout_s = match arguments.get("timeout_s") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT_S,
        Some(value) => match value.as_f64() {
            Some(t) if t > 0.0 => t.min(MAX_TIMEOUT_S),
            _ => return Err("`timeout_s` is a positive number of seconds".to_owned()),
        },
    };
    Ok(Question {
        prompt,
        options,
        fields,
        timeout: Duration::from_secs_f64(timeout_s),
    })
}

/// Whether a person could answer the form: each field id once, a select
/// with choices (or `other`), a number's `min` at most its `max`.
fn answerable(fields: &[FieldSpec]) -> Result<(), String> {
    for (i, field) in fields.iter().enumerate() {
        let id = &field.id;
        if fields[..i].iter().any(|f| f.id == *id) {
            return Err(format!("`fields` names the id {id:?} twice"));
        }
        let no_choices = field.choices.as_ref().is_none_or(Vec::is_empty);
        if matches!(field.type_, aep::FieldSpecType::Select)
            && no_choices
            && field.other != Some(true)
        {
            return Err(format!("the select field {id:?} has no `choices`"));
        }
        if let (Some(min), Some(max)) = (field.min, field.max) {
            if min > max {
                return Err(format!("the field {id:?} has its `min` above its `max`"));
            }
        }
    }
    Ok(())
}

/// The answer as the tool's result: structured, and said in words.
fn answer_result(session: &str, answered: &Answered) -> CallToolResult {
    let answer = &answered.answer;
    let mut structured = json!({
        "request": answered.request,
        "session": session,
        "answered_by": answered.by,
    });
    let mut said = Vec::new();
    if let Some(option) = &answer.option {
        structured["option"] = json!(option);
        said.push(format!("The person chose {option:?}."));
    }
    if let Some(text) = &answer.text {
        structured["text"] = json!(text);
        said.push(format!("The person answered: {text}"));
    }
    if let Some(values) = &answer.values {
        structured["values"] = json!(values);
        said.push(format!(
            "The person filled in the form: {}",
            Value::Object(values.clone())
        ));
    }
    let mut result = CallToolResult::structured(structured);
    result.content = vec![ContentBlock::text(said.join("\n"))];
    result
}

/// The AEP agent name for an MCP client named `client` (as it says in
/// `initialize`, so anything): control characters and bidirectional
/// overrides dropped, whitespace trimmed and collapsed to single spaces,
/// at most [`MAX_AGENT_CHARS`] characters; "mcp" when nothing is left.
fn agent_name(client: Option<&str>) -> String {
    let bidi = |c: char| matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    let cleaned: String = client
        .unwrap_or_default()
        .chars()
        .filter(|c| !bidi(*c) && (c.is_whitespace() || !c.is_control()))
        .collect();
    let mut name = String::new();
    for word in cleaned.split_whitespace() {
        if name.chars().count() >= MAX_AGENT_CHARS {
            break;
        }
        if !name.is_empty() {
            name.push(' ');
        }
        name.push_str(word);
    }
    let name: String = name.chars().take(MAX_AGENT_CHARS).collect();
    match name.trim_end() {
        "" => "mcp".to_owned(),
        name => name.to_owned(),
    }
}

/// A tool error the agent reads.
fn failure(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(arguments: Value) -> Result<Question, String> {
        question(&object(arguments))
    }

    #[test]
    fn a_question_takes_a_prompt_and_options_or_fields() {
        let free = ask(json!({"prompt": "Why?"})).unwrap();
        assert!(free.options.is_empty() && free.fields.is_none());
        assert_eq!(free.timeout, Duration::from_secs(300));
        let choice =
            ask(json!({"prompt": "Go?", "options": ["yes", "no"], "timeout_s": 5})).unwrap();
        assert_eq!(choice.options, ["yes", "no"]);
        assert_eq!(choice.timeout, Duration::from_secs(5));
        let form = ask(
            json!({"prompt": "Form", "fields": [{"id": "a", "type": "boolean", "label": "A"}]}),
        )
        .unwrap();
        assert_eq!(form.fields.unwrap().len(), 1);
        let long = ask(json!({"prompt": "Later", "timeout_s": 1e9})).unwrap();
        assert_eq!(long.timeout, Duration::from_secs(3600));
    }

    #[test]
    fn a_bad_question_says_what_is_wrong() {
        let wrong = |arguments: Value, says: &str| {
            let message = ask(arguments).err().expect("refused");
            assert!(message.contains(says), "{message}");
        };
        wrong(json!({}), "prompt");
        wrong(json!({"prompt": " "}), "prompt");
        wrong(json!({"prompt": "p", "options": "yes"}), "options");
        wrong(json!({"prompt": "p", "options": ["a", "a"]}), "twice");
        wrong(json!({"prompt": "p", "options": [""]}), "non-empty");
        wrong(json!({"prompt": "p", "fields": []}), "at least one");
        wrong(json!({"prompt": "p", "fields": [{"id": "a"}]}), "AEP-0006");
        wrong(
            json!({"prompt": "p", "options": ["a"], "fields": [{"id": "a", "type": "boolean", "label": "A"}]}),
            "not both",
        );
        // Forms no one could answer.
        let field = |f: Value| json!({"prompt": "p", "fields": [f]});
        wrong(
            field(json!({"id": "s", "type": "select", "label": "S", "required": true})),
            "choices",
        );
        wrong(
            field(json!({"id": "s", "type": "select", "label": "S", "choices": []})),
            "choices",
        );
        wrong(
            field(json!({"id": "n", "type": "number", "label": "N", "min": 5, "max": 1})),
            "min",
        );
        wrong(
            json!({"prompt": "p", "fields": [
                {"id": "a", "type": "boolean", "label": "A"},
                {"id": "a", "type": "string", "label": "B"}
            ]}),
            "twice",
        );
        wrong(json!({"prompt": "p", "timeout_s": 0}), "timeout_s");
        wrong(json!({"prompt": "p", "timeout_s": "10"}), "timeout_s");
    }

    #[test]
    fn the_client_name_is_cleaned_into_an_agent_name() {
        assert_eq!(agent_name(Some("claude-code")), "claude-code");
        assert_eq!(agent_name(Some("  My  Client\t1.0 ")), "My Client 1.0");
        assert_eq!(
            agent_name(Some("evil\nagent: admin\r\n")),
            "evil agent: admin"
        );
        // ANSI escapes lose their ESC: what is left is printable text.
        let ansi = agent_name(Some("\u{1b}[31mred\u{1b}[0m\u{7}"));
        assert!(!ansi.chars().any(char::is_control), "{ansi:?}");
        assert_eq!(ansi, "[31mred[0m");
        assert_eq!(agent_name(Some("a\u{85}b\u{2028}c")), "a b c");
        assert_eq!(agent_name(Some("ab\u{202e}cd\u{2066}")), "abcd");
        // Only control characters or whitespace, or nothing: "mcp".
        assert_eq!(agent_name(Some("\u{0}\u{1b}\u{7f}\n\t ")), "mcp");
        assert_eq!(agent_name(Some("")), "mcp");
        assert_eq!(agent_name(None), "mcp");
        // Long names are cut on a character boundary, with no space at
        // the end.
        let long = agent_name(Some(&"é".repeat(10 * 1024)));
        assert_eq!(long.chars().count(), MAX_AGENT_CHARS);
        assert!(long.chars().all(|c| c == 'é'));
        let words = agent_name(Some(&"ab ".repeat(5000)));
        assert!(words.chars().count() <= MAX_AGENT_CHARS, "{words:?}");
        assert!(!words.ends_with(' ') && words.starts_with("ab ab"));
        let emoji = agent_name(Some(&"👩‍💻\n".repeat(4000)));
        assert!(emoji.chars().count() <= MAX_AGENT_CHARS);
        assert!(!emoji.contains('\n'));
    }

    #[test]
    fn an_elicitation_schema_is_made_only_for_what_mcp_can_say() {
        let schema = |arguments: Value| elicit_schema(&ask(arguments).unwrap()).map(|(s, _)| s);
        let choice = schema(json!({"prompt": "Go?", "options": ["yes", "no"]})).unwrap();
        assert_eq!(choice["properties"]["option"]["enum"], json!(["yes", "no"]));
        let text = schema(json!({"prompt": "Why?"})).unwrap();
        assert_eq!(text["properties"]["text"]["type"], "string");
        let form = schema(json!({"prompt": "Form", "fields": [
            {"id": "a", "type": "boolean", "label": "A", "required": true},
            {"id": "n", "type": "number", "label": "N", "min": 0},
            {"id": "s", "type": "select", "label": "S", "choices": [{"id": "x", "label": "X"}]}
        ]}))
        .unwrap();
        assert_eq!(
            form["properties"]["a"],
            json!({"type": "boolean", "title": "A"})
        );
        assert_eq!(form["properties"]["n"]["minimum"], 0.0);
        assert_eq!(form["properties"]["s"]["enum"], json!(["x"]));
        assert_eq!(form["required"], json!(["a"]));
        for field in [
            json!({"id": "m", "type": "select", "label": "M", "multi": true, "choices": [{"id": "x", "label": "X"}]}),
            json!({"id": "o", "type": "select", "label": "O", "other": true, "choices": [{"id": "x", "label": "X"}]}),
        ] {
            assert!(schema(json!({"prompt": "F", "fields": [field]})).is_none());
        }
    }

    #[test]
    fn an_elicitation_answer_is_checked_like_a_relay_one() {
        let shape = |arguments: Value| elicit_schema(&ask(arguments).unwrap()).unwrap().1;
        let choice = shape(json!({"prompt": "Go?", "options": ["yes", "no"]}));
        assert_eq!(
            choice
                .answer(Some(json!({"option": "yes"})))
                .unwrap()
                .option
                .unwrap(),
            "yes"
        );
        assert!(choice.answer(Some(json!({"option": "maybe"}))).is_err());
        assert!(choice.answer(None).is_err());
        let form = shape(json!({"prompt": "F", "fields": [
            {"id": "n", "type": "number", "label": "N", "required": true, "max": 3}
        ]}));
        assert!(form.answer(Some(json!({"n": 2}))).is_ok());
        assert!(form.answer(Some(json!({"n": 9}))).is_err());
        assert!(form.answer(Some(json!({}))).is_err());
    }

    #[test]
    fn the_tools_schemas_are_objects() {
        for tool in tools() {
            assert_eq!(tool.input_schema["type"], "object");
            assert!(tool.description.is_some());
        }
    }
}
