//! The loopback stand-in for the model API a host calls: Anthropic
//! Messages (`POST .../messages`, Claude Code and opencode) and OpenAI
//! Responses (`POST .../responses`, Codex CLI), answered as server-sent
//! events when the request asks for a stream and as one JSON document
//! otherwise.
//!
//! The stand-in decides nothing about the conversation itself. A request
//! that offers the model tools of the server under test is a [`Turn`]:
//! what the host offered and the tool results it sent are handed to the
//! kit's thread, which answers with a [`Reply`] (a tool call or a final
//! text). Any other request (a title for the session, a quota probe) gets
//! a short text at once. The HTTP is `tiny_http`'s (request lines,
//! headers, chunked and sized bodies, keep-alive); each request is
//! answered on a thread of its own, so that a turn waiting for the kit
//! holds up no other request.

use std::io::Read;
use std::sync::Arc;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};
use tiny_http::{Header, Method, Request, Response, Server};

use harness::error::HarnessError;

/// The largest request body read (a host's request with its system prompt
/// and every tool schema is well under a megabyte).
const MAX_BODY: usize = 32 << 20;
/// How long a turn waits for the kit's reply before the host gets a 500.
const REPLY_TIMEOUT: Duration = Duration::from_secs(120);

/// Which wire format a request used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// Anthropic Messages.
    Messages,
    /// OpenAI Responses.
    Responses,
}

/// A tool as the host named it to the model: Anthropic and flat Responses
/// tools have a name; Codex groups a server's tools in a namespace.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ModelTool {
    /// The namespace the tool was offered in, if any.
    pub namespace: Option<String>,
    /// The tool's name within it.
    pub name: String,
}

impl ModelTool {
    /// A tool offered without a namespace.
    pub fn flat(name: impl Into<String>) -> Self {
        ModelTool {
            namespace: None,
            name: name.into(),
        }
    }
}

/// A tool result the host sent back to the model.
#[derive(Debug, Clone)]
pub struct ToolResult {
    /// The id of the call it answers.
    pub call_id: String,
    /// Its text, the parts joined.
    pub text: String,
    /// Whether the host marked it as an error (Anthropic's `is_error`;
    /// the Responses format has no such mark).
    pub is_error: bool,
}

/// A request of the main conversation, waiting for the kit's [`Reply`].
#[derive(Debug)]
pub struct Turn {
    /// The wire format.
    pub api: Api,
    /// Every tool the request offered.
    pub offered: Vec<ModelTool>,
    /// Every tool result in the conversation so far, in order.
    pub results: Vec<ToolResult>,
    /// Where the reply goes.
    pub reply: mpsc::Sender<Reply>,
}

/// What the model says next.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Call a tool.
    Call {
        /// The call's id, echoed in its result.
        id: String,
        /// The tool, as the host offered it.
        tool: ModelTool,
        /// Its arguments.
        input: Value,
    },
    /// End the turn with this text.
    Text(String),
}

/// Decides which requests are turns of the main conversation: those that
/// offer at least one of the server's tools.
pub type IsServerTool = fn(&ModelTool) -> bool;

/// The running stand-in; it stops serving when dropped.
pub struct StandIn {
    server: Arc<Server>,
    port: u16,
    serving: Option<thread::JoinHandle<()>>,
}

impl StandIn {
    /// Listens on a free loopback port; turns go to `turns`.
    pub fn start(
        turns: mpsc::Sender<Turn>,
        is_server_tool: IsServerTool,
    ) -> Result<Self, HarnessError> {
        let server = Server::http("127.0.0.1:0").map_err(|e| {
            HarnessError::Scenario(format!("binding the stand-in model API on loopback: {e}"))
        })?;
        let port = server
            .server_addr()
            .to_ip()
            .map(|address| address.port())
            .ok_or_else(|| HarnessError::Scenario("the stand-in has no TCP port".into()))?;
        let server = Arc::new(server);
        let serving = Arc::clone(&server);
        let serving = thread::Builder::new()
            .name("stand-in".into())
            .spawn(move || {
                for request in serving.incoming_requests() {
                    let turns = turns.clone();
                    thread::spawn(move || serve(request, &turns, is_server_tool));
                }
            })
            .map_err(|e| HarnessError::io("starting the stand-in's thread", e))?;
        Ok(StandIn {
            server,
            port,
            serving: Some(serving),
        })
    }

    /// The base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl std::fmt::Debug for StandIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StandIn").field("port", &self.port).finish()
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(serving) = self.serving.take() {
            let _ = serving.join();
        }
    }
}

/// A response: status, content type, body.
struct Answer {
    status: u16,
    kind: &'static str,
    body: Vec<u8>,
}

impl Answer {
    /// A plain-text answer.
    fn text(status: u16, text: &str) -> Self {
        Answer {
            status,
            kind: "text/plain",
            body: text.as_bytes().to_vec(),
        }
    }
}

/// Answers one request.
fn serve(mut request: Request, turns: &mpsc::Sender<Turn>, is_server_tool: IsServerTool) {
    let answer = answer(&mut request, turns, is_server_tool);
    let content_type =
        Header::from_bytes(&b"Content-Type"[..], answer.kind.as_bytes()).expect("a valid header");
    let no_cache =
        Header::from_bytes(&b"Cache-Control"[..], &b"no-cache"[..]).expect("a valid header");
    let response = Response::from_data(answer.body)
        .with_status_code(answer.status)
        .with_header(content_type)
        .with_header(no_cache);
    let _ = request.respond(response);
}

/// What to answer `request`: a turn's reply from the kit, a short text,
/// or why the request cannot be served.
fn answer(
    request: &mut Request,
    turns: &mpsc::Sender<Turn>,
    is_server_tool: IsServerTool,
) -> Answer {
    let path = request.url().split('?').next().unwrap_or("").to_owned();
    let api = if path.ends_with("/messages") {
        Api::Messages
    } else if path.ends_with("/responses") {
        Api::Responses
    } else {
        return Answer::text(404, "not served by the stand-in");
    };
    if *request.method() != Method::Post {
        return Answer::text(405, "POST only");
    }
    let body = match read_body(request) {
        Ok(body) => body,
        Err(answer) => return answer,
    };
    let offered = offered_tools(api, &body);
    let reply = if offered.iter().any(is_server_tool) {
        let (tx, rx) = mpsc::channel();
        let turn = Turn {
            api,
            offered,
            results: tool_results(api, &body),
            reply: tx,
        };
        if turns.send(turn).is_err() {
            return Answer::text(503, "the kit has stopped");
        }
        match rx.recv_timeout(REPLY_TIMEOUT) {
            Ok(reply) => reply,
            Err(_) => return Answer::text(500, "the kit never replied"),
        }
    } else {
        Reply::Text("stand-in".to_owned())
    };
    encode(api, &body, &reply)
}

/// The request's body as JSON, or the answer refusing it: compressed,
/// larger than [`MAX_BODY`], unreadable or not JSON.
fn read_body(request: &mut Request) -> Result<Value, Answer> {
    let encoding = request
        .headers()
        .iter()
        .find(|h| h.field.equiv("Content-Encoding"))
        .map(|h| h.value.as_str().to_owned());
    if let Some(encoding) = encoding.filter(|e| !e.eq_ignore_ascii_case("identity")) {
        let why = format!("compressed request bodies ({encoding}) are not read");
        return Err(Answer::text(415, &why));
    }
    let mut bytes = Vec::new();
    let limit = u64::try_from(MAX_BODY).unwrap_or(u64::MAX);
    let read = request.as_reader().take(limit + 1).read_to_end(&mut bytes);
    if let Err(e) = read {
        return Err(Answer::text(
            400,
            &format!("the body could not be read: {e}"),
        ));
    }
    if bytes.len() > MAX_BODY {
        return Err(Answer::text(413, "the body is too large"));
    }
    serde_json::from_slice(&bytes)
        .map_err(|e| Answer::text(400, &format!("the body is not JSON: {e}")))
}

/// `reply` in the wire format of `api`, streamed if the request asked.
fn encode(api: Api, body: &Value, reply: &Reply) -> Answer {
    let model = body["model"].as_str().unwrap_or("stand-in");
    let stream = body["stream"].as_bool().unwrap_or(false);
    let (kind, text) = match (api, stream) {
        (Api::Messages, true) => ("text/event-stream", messages_events(model, reply)),
        (Api::Messages, false) => (
            "application/json",
            messages_message(model, reply).to_string(),
        ),
        (Api::Responses, true) => ("text/event-stream", responses_events(model, reply)),
        (Api::Responses, false) => (
            "application/json",
            responses_response(model, reply).to_string(),
        ),
    };
    Answer {
        status: 200,
        kind,
        body: text.into_bytes(),
    }
}

/// The tools a request offers, namespaces opened.
pub fn offered_tools(api: Api, body: &Value) -> Vec<ModelTool> {
    let mut offered = Vec::new();
    for tool in body["tools"].as_array().into_iter().flatten() {
        let name = tool["name"].as_str().unwrap_or_default();
        match (api, tool["type"].as_str()) {
            (Api::Responses, Some("namespace")) => {
                for inner in tool["tools"].as_array().into_iter().flatten() {
                    offered.push(ModelTool {
                        namespace: Some(name.to_owned()),
                        name: inner["name"].as_str().unwrap_or_default().to_owned(),
                    });
                }
            }
            _ if !name.is_empty() => offered.push(ModelTool::flat(name)),
            _ => {}
        }
    }
    offered
}

/// Every tool result in a request's conversation, in order.
pub fn tool_results(api: Api, body: &Value) -> Vec<ToolResult> {
    let mut results = Vec::new();
    match api {
        Api::Messages => {
            let blocks = body["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|m| m["content"].as_array().into_iter().flatten());
            for block in blocks.filter(|b| b["type"] == "tool_result") {
                results.push(ToolResult {
                    call_id: block["tool_use_id"].as_str().unwrap_or_default().to_owned(),
                    text: joined_text(&block["content"]),
                    is_error: block["is_error"].as_bool().unwrap_or(false),
                });
            }
        }
        Api::Responses => {
            let items = body["input"].as_array().into_iter().flatten();
            for item in items.filter(|i| i["type"] == "function_call_output") {
                results.push(ToolResult {
                    call_id: item["call_id"].as_str().unwrap_or_default().to_owned(),
                    text: joined_text(&item["output"]),
                    is_error: false,
                });
            }
        }
    }
    results
}

/// A string, or the `text` of each part of an array, joined by newlines.
fn joined_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// One server-sent event.
fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// The Messages content block of a reply.
fn messages_block(reply: &Reply) -> Value {
    match reply {
        Reply::Call { id, tool, input } => {
            json!({"type": "tool_use", "id": id, "name": tool.name, "input": input})
        }
        Reply::Text(text) => json!({"type": "text", "text": text}),
    }
}

/// Why the Messages reply stopped.
fn stop_reason(reply: &Reply) -> &'static str {
    match reply {
        Reply::Call { .. } => "tool_use",
        Reply::Text(_) => "end_turn",
    }
}

/// A whole Messages reply, unstreamed.
fn messages_message(model: &str, reply: &Reply) -> Value {
    json!({
        "id": "msg_standin", "type": "message", "role": "assistant", "model": model,
        "content": [messages_block(reply)], "stop_reason": stop_reason(reply),
        "stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 1}
    })
}

/// A Messages reply as the stream of events the API sends.
fn messages_events(model: &str, reply: &Reply) -> String {
    let mut start = messages_message(model, reply);
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    let (open, delta) = match reply {
        Reply::Call { id, tool, input } => (
            json!({"type": "tool_use", "id": id, "name": tool.name, "input": {}}),
            json!({"type": "input_json_delta", "partial_json": input.to_string()}),
        ),
        Reply::Text(text) => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": text}),
        ),
    };
    [
        event(
            "message_start",
            &json!({"type": "message_start", "message": start}),
        ),
        event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": 0, "content_block": open}),
        ),
        event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ),
        event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": 0}),
        ),
        event(
            "message_delta",
            &json!({"type": "message_delta",
                    "delta": {"stop_reason": stop_reason(reply), "stop_sequence": null},
                    "usage": {"output_tokens": 1}}),
        ),
        event("message_stop", &json!({"type": "message_stop"})),
    ]
    .concat()
}

/// The Responses output item of a reply.
fn responses_item(reply: &Reply) -> Value {
    match reply {
        Reply::Call { id, tool, input } => {
            let mut item = json!({
                "type": "function_call", "id": format!("fc_{id}"), "call_id": id,
                "name": tool.name, "arguments": input.to_string(), "status": "completed"
            });
            if let Some(namespace) = &tool.namespace {
                item["namespace"] = json!(namespace);
            }
            item
        }
        Reply::Text(text) => json!({
            "type": "message", "id": "msg_standin", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]
        }),
    }
}

/// A whole Responses reply, unstreamed.
fn responses_response(model: &str, reply: &Reply) -> Value {
    json!({
        "id": "resp_standin", "object": "response", "status": "completed", "model": model,
        "output": [responses_item(reply)],
        "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}
    })
}

/// A Responses reply as the stream of events the API sends.
fn responses_events(model: &str, reply: &Reply) -> String {
    let mut created = responses_response(model, reply);
    created["status"] = json!("in_progress");
    created["output"] = json!([]);
    let item = responses_item(reply);
    let completed = responses_response(model, reply);
    [
        event(
            "response.created",
            &json!({"type": "response.created", "response": created}),
        ),
        event(
            "response.output_item.added",
            &json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
        ),
        event(
            "response.output_item.done",
            &json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ),
        event(
            "response.completed",
            &json!({"type": "response.completed", "response": completed}),
        ),
    ]
    .concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_namespaces_are_opened_and_results_read() {
        let body = json!({
            "tools": [
                {"type": "function", "name": "exec_command"},
                {"type": "namespace", "name": "mcp__iai_mcp", "tools": [{"name": "topology"}]}
            ],
            "input": [
                {"type": "function_call", "call_id": "c1"},
                {"type": "function_call_output", "call_id": "c1",
                 "output": [{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}]}
            ]
        });
        let offered = offered_tools(Api::Responses, &body);
        assert_eq!(
            offered[1],
            ModelTool {
                namespace: Some("mcp__iai_mcp".into()),
                name: "topology".into()
            }
        );
        let results = tool_results(Api::Responses, &body);
        assert_eq!(
            (results[0].call_id.as_str(), results[0].text.as_str()),
            ("c1", "a\nb")
        );
    }

    #[test]
    fn messages_results_carry_the_error_mark() {
        let body = json!({"messages": [
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "boom", "is_error": true}]}
        ]});
        let results = tool_results(Api::Messages, &body);
        assert!(results[0].is_error);
        assert_eq!(results[0].text, "boom");
    }
}
