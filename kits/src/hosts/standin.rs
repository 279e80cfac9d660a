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
//! a short text at once. Plain HTTP/1.1, one thread per connection, one
//! response per connection: the hosts need nothing more, and a crate for
//! it would not be shorter than this.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};

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

/// The running stand-in; it stops accepting when dropped.
#[derive(Debug)]
pub struct StandIn {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl StandIn {
    /// Listens on a free loopback port; turns go to `turns`.
    pub fn start(
        turns: mpsc::Sender<Turn>,
        is_server_tool: IsServerTool,
    ) -> Result<Self, HarnessError> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .map_err(|e| HarnessError::io("binding the stand-in model API on loopback", e))?;
        let port = listener
            .local_addr()
            .map_err(|e| HarnessError::io("reading the stand-in's port", e))?
            .port();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let turns = turns.clone();
                thread::spawn(move || {
                    let _ = serve(stream, &turns, is_server_tool);
                });
            }
        });
        Ok(StandIn { port, stop })
    }

    /// The base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accepting thread so that it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// One HTTP request as read.
#[derive(Debug)]
struct Request {
    method: String,
    path: String,
    body: Vec<u8>,
}

/// Answers one request on `stream`, then closes it.
fn serve(
    stream: TcpStream,
    turns: &mpsc::Sender<Turn>,
    is_server_tool: IsServerTool,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut writer = stream.try_clone()?;
    let request = match read_request(&mut BufReader::new(stream)) {
        Ok(request) => request,
        Err(why) => return respond(&mut writer, 400, "text/plain", why.as_bytes()),
    };
    let api = if request
        .path
        .split('?')
        .next()
        .unwrap_or("")
        .ends_with("/messages")
    {
        Api::Messages
    } else if request
        .path
        .split('?')
        .next()
        .unwrap_or("")
        .ends_with("/responses")
    {
        Api::Responses
    } else {
        return respond(
            &mut writer,
            404,
            "text/plain",
            b"not served by the stand-in",
        );
    };
    if request.method != "POST" {
        return respond(&mut writer, 405, "text/plain", b"POST only");
    }
    let body: Value = match serde_json::from_slice(&request.body) {
        Ok(body) => body,
        Err(e) => {
            let why = format!("the body is not JSON: {e}");
            return respond(&mut writer, 400, "text/plain", why.as_bytes());
        }
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
            return respond(&mut writer, 503, "text/plain", b"the kit has stopped");
        }
        match rx.recv_timeout(REPLY_TIMEOUT) {
            Ok(reply) => reply,
            Err(_) => return respond(&mut writer, 500, "text/plain", b"the kit never replied"),
        }
    } else {
        Reply::Text("stand-in".to_owned())
    };
    let model = body["model"].as_str().unwrap_or("stand-in").to_owned();
    let stream = body["stream"].as_bool().unwrap_or(false);
    match (api, stream) {
        (Api::Messages, true) => respond(
            &mut writer,
            200,
            "text/event-stream",
            messages_events(&model, &reply).as_bytes(),
        ),
        (Api::Messages, false) => {
            let message = messages_message(&model, &reply).to_string();
            respond(&mut writer, 200, "application/json", message.as_bytes())
        }
        (Api::Responses, true) => respond(
            &mut writer,
            200,
            "text/event-stream",
            responses_events(&model, &reply).as_bytes(),
        ),
        (Api::Responses, false) => {
            let response = responses_response(&model, &reply).to_string();
            respond(&mut writer, 200, "application/json", response.as_bytes())
        }
    }
}

/// Reads the request line, the headers and the body (by `Content-Length`
/// or chunked); `Err` says what was wrong with it.
fn read_request(reader: &mut impl BufRead) -> Result<Request, String> {
    let mut line = String::new();
    reader.read_line(&mut line).map_err(|e| e.to_string())?;
    let mut words = line.split_whitespace();
    let (Some(method), Some(path)) = (words.next(), words.next()) else {
        return Err(format!("bad request line {line:?}"));
    };
    let (method, path) = (method.to_owned(), path.to_owned());
    let mut length = 0usize;
    let mut chunked = false;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).map_err(|e| e.to_string())? == 0 {
            return Err("the connection closed inside the headers".into());
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let Some((name, value)) = header.split_once(':') else {
            return Err(format!("bad header {header:?}"));
        };
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        match name.as_str() {
            "content-length" => {
                length = value
                    .parse()
                    .map_err(|_| format!("bad Content-Length {value:?}"))?
            }
            "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
            "content-encoding" if !value.eq_ignore_ascii_case("identity") => {
                return Err(format!("compressed request bodies ({value}) are not read"));
            }
            _ => {}
        }
    }
    let body = if chunked {
        read_chunked(reader)?
    } else {
        read_exact(reader, length)?
    };
    Ok(Request { method, path, body })
}

/// `length` bytes of body.
fn read_exact(reader: &mut impl BufRead, length: usize) -> Result<Vec<u8>, String> {
    if length > MAX_BODY {
        return Err(format!("a body of {length} bytes is too large"));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).map_err(|e| e.to_string())?;
    Ok(body)
}

/// A chunked body.
fn read_chunked(reader: &mut impl BufRead) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size).map_err(|e| e.to_string())?;
        let size = size.trim().split(';').next().unwrap_or("");
        let size =
            usize::from_str_radix(size, 16).map_err(|_| format!("bad chunk size {size:?}"))?;
        if body.len() + size > MAX_BODY {
            return Err("a chunked body is too large".into());
        }
        let mut chunk = vec![0; size + 2];
        reader.read_exact(&mut chunk).map_err(|e| e.to_string())?;
        if size == 0 {
            return Ok(body);
        }
        body.extend_from_slice(&chunk[..size]);
    }
}

/// Writes a complete response and closes the connection.
fn respond(writer: &mut TcpStream, status: u16, kind: &str, body: &[u8]) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        503 => "Service Unavailable",
        _ => "Internal Server Error",
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n",
        body.len()
    );
    writer.write_all(head.as_bytes())?;
    writer.write_all(body)?;
    writer.flush()
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

    #[test]
    fn a_chunked_body_is_read_whole() {
        let raw = b"POST /v1/messages HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n";
        let request = read_request(&mut &raw[..]).expect("parsed");
        assert_eq!(request.body, b"{\"a\":1}");
        let compressed = b"POST /v1/responses HTTP/1.1\r\nContent-Encoding: zstd\r\n\r\n";
        assert!(
            read_request(&mut &compressed[..])
                .unwrap_err()
                .contains("zstd")
        );
    }
}
