//! The client's frames, read before tower-lsp sees them.
//!
//! tower-lsp reads its input through tokio-util's `FramedRead`, which ends the stream after the
//! first frame its codec cannot decode: one body that is not JSON-RPC, or one bad header, and the
//! server would stop reading for good while the editor waits on it. So the frames are read here
//! instead. Each well-formed message is passed on in a frame of its own; each malformed one is
//! replaced by a request for [`MALFORMED`] with id `null`, which [`crate::serve`] answers with the
//! JSON-RPC error the specification asks for (`-32700`, parse error, when the body is not JSON;
//! `-32600`, invalid request, when it is JSON but not a JSON-RPC message; id `null` since none can
//! be known), and reading goes on at the next frame. After garbage between frames, reading resumes
//! at the next `Content-Length` header, as tower-lsp's own codec does.
//!
//! The stand-in also carries the `method` and `textDocument` of the malformed message when its
//! body, read leniently (bytes that are not UTF-8 replaced), names them, so that a document whose
//! change could not be read is known to be lost (`dispatch.rs`).

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tower_lsp::jsonrpc::{ErrorCode, Request, Response};

/// The method of the request that stands for a malformed message.
pub(crate) const MALFORMED: &str = "nabla/malformedMessage";

/// The largest body read into memory: four times the largest source file (a document can be
/// opened in one message, its text escaped in JSON). A longer body is skipped unread.
const MAX_BODY_BYTES: usize = 1 << 30;

/// A header line longer than this is garbage; only its first bytes are kept.
const MAX_HEADER_LINE: usize = 8 * 1024;

/// Copies the client's messages from `input` to `output` (tower-lsp's input), one clean frame per
/// message, until `input` ends or `output` is closed; then closes `output`.
pub(crate) async fn forward(input: impl AsyncRead + Unpin, mut output: impl AsyncWrite + Unpin) {
    let mut reader = BufReader::new(input);
    let mut resync = false;
    loop {
        let body = match read_frame(&mut reader, &mut resync).await {
            Frame::Body(body) => match check(&body) {
                Ok(()) => body,
                Err((code, message)) => malformed(code, &message, &body),
            },
            Frame::Malformed(message) => malformed(ErrorCode::ParseError, &message, &[]),
            Frame::End => break,
        };
        let header = format!("Content-Length: {}\r\n\r\n", body.len());
        let written = async {
            output.write_all(header.as_bytes()).await?;
            output.write_all(&body).await?;
            output.flush().await
        };
        if written.await.is_err() {
            break;
        }
    }
    let _ = output.shutdown().await;
}

/// Copies tower-lsp's frames from `input` to `output` (the client), each whole, until `input`
/// ends; then flushes `output`. When the server stops at `exit`, the frame it was writing is cut
/// short at the end of `input`; it is left out rather than sent half-written.
pub(crate) async fn relay(input: impl AsyncRead + Unpin, mut output: impl AsyncWrite + Unpin) {
    let mut reader = BufReader::new(input);
    let mut resync = false;
    while let Frame::Body(body) = read_frame(&mut reader, &mut resync).await {
        let header = format!("Content-Length: {}\r\n\r\n", body.len());
        let mut frame = header.into_bytes();
        frame.extend_from_slice(&body);
        if output.write_all(&frame).await.is_err() || output.flush().await.is_err() {
            break;
        }
    }
    let _ = output.flush().await;
}

/// What [`read_frame`] found.
enum Frame {
    Body(Vec<u8>),
    /// A frame that cannot be read, and why.
    Malformed(String),
    /// The end of the input.
    End,
}

/// Reads the next frame. With `resync`, lines are skipped up to the next `Content-Length`
/// header; it is set whenever a header line is garbage.
async fn read_frame(reader: &mut (impl AsyncBufReadExt + Unpin), resync: &mut bool) -> Frame {
    let mut length = None;
    let mut headers = 0;
    let mut line = Vec::new();
    loop {
        match read_line(reader, &mut line).await {
            Ok(true) => {}
            Ok(false) | Err(_) => return Frame::End,
        }
        let text = String::from_utf8_lossy(&line);
        let mut text = text.trim_end_matches(['\r', '\n']);
        if *resync {
            // The next header may follow the garbage on the same line (a body has no newline).
            let lower = text.to_ascii_lowercase();
            let Some(at) = lower.find("content-length") else { continue };
            text = &text[at..];
            *resync = false;
        }
        let content_length = header_value(text, "content-length");
        if text.is_empty() {
            if headers == 0 {
                // Blank lines between frames are harmless.
                continue;
            }
            break;
        }
        headers += 1;
        if let Some(value) = content_length {
            match value.parse::<usize>() {
                Ok(n) => length = Some(n),
                Err(_) => {
                    *resync = true;
                    return Frame::Malformed(format!("invalid Content-Length header {value:?}"));
                }
            }
        } else if !text.contains(':') {
            *resync = true;
            return Frame::Malformed(format!("expected a header, found {:?}", clip(text)));
        }
    }
    let Some(length) = length else {
        return Frame::Malformed("a message without a Content-Length header".to_owned());
    };
    if length > MAX_BODY_BYTES {
        let skipped =
            tokio::io::copy(&mut reader.take(length as u64), &mut tokio::io::sink()).await;
        return match skipped {
            Ok(n) if n == length as u64 => Frame::Malformed(format!(
                "a message of {length} bytes; messages are limited to {MAX_BODY_BYTES} bytes"
            )),
            _ => Frame::End,
        };
    }
    let mut body = vec![0; length];
    match reader.read_exact(&mut body).await {
        Ok(_) => Frame::Body(body),
        Err(_) => Frame::End,
    }
}

/// The value of a header line named `name` (ASCII case-insensitive), if `line` is one.
fn header_value<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let (key, value) = line.split_once(':')?;
    key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
}

/// Reads one line into `line`, keeping at most [`MAX_HEADER_LINE`] bytes of it. Returns whether
/// anything was read.
async fn read_line(
    reader: &mut (impl AsyncBufReadExt + Unpin),
    line: &mut Vec<u8>,
) -> std::io::Result<bool> {
    line.clear();
    let mut any = false;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(any);
        }
        any = true;
        let (taken, done) = match buffer.iter().position(|&b| b == b'\n') {
            Some(at) => (at + 1, true),
            None => (buffer.len(), false),
        };
        let room = MAX_HEADER_LINE.saturating_sub(line.len());
        line.extend_from_slice(&buffer[..taken.min(room)]);
        reader.consume(taken);
        if done {
            return Ok(true);
        }
    }
}

/// Whether a body is a message tower-lsp can take: a JSON-RPC 2.0 request, notification or
/// response. Otherwise the error to answer with.
fn check(body: &[u8]) -> Result<(), (ErrorCode, String)> {
    if let Err(err) = std::str::from_utf8(body) {
        return Err((ErrorCode::ParseError, format!("the message is not UTF-8: {err}")));
    }
    let value: Value = serde_json::from_slice(body)
        .map_err(|err| (ErrorCode::ParseError, format!("the message is not JSON: {err}")))?;
    let request = serde_json::from_value::<Request>(value.clone()).is_ok();
    if request || serde_json::from_value::<Response>(value).is_ok() {
        Ok(())
    } else {
        Err((ErrorCode::InvalidRequest, "the message is not a JSON-RPC 2.0 message".to_owned()))
    }
}

/// The body of the request standing for a malformed message whose body is `body`.
fn malformed(code: ErrorCode, message: &str, body: &[u8]) -> Vec<u8> {
    let mut params = json!({ "code": code.code(), "message": message });
    let lenient: Value = serde_json::from_str(&String::from_utf8_lossy(body)).unwrap_or_default();
    if let Some(method) = lenient["method"].as_str() {
        params["method"] = json!(method);
    }
    if let Some(uri) = lenient["params"]["textDocument"]["uri"].as_str() {
        params["textDocument"] = json!({ "uri": uri });
    }
    json!({ "jsonrpc": "2.0", "id": null, "method": MALFORMED, "params": params })
        .to_string()
        .into_bytes()
}

/// The answer to a request for [`MALFORMED`]: the error it carries, for id `null`.
pub(crate) fn malformed_answer(request: &Request) -> Response {
    let params = request.params();
    let code = params.and_then(|p| p["code"].as_i64()).unwrap_or(ErrorCode::ParseError.code());
    let message = params.and_then(|p| p["message"].as_str()).unwrap_or("a malformed message");
    let error = tower_lsp::jsonrpc::Error {
        code: ErrorCode::from(code),
        message: message.to_owned().into(),
        data: None,
    };
    Response::from_error(tower_lsp::jsonrpc::Id::Null, error)
}

/// At most the first 60 characters of a line, for a message.
fn clip(text: &str) -> String {
    match text.char_indices().nth(60) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The frames `forward` writes for `input`, as bodies.
    fn forwarded(input: &[u8]) -> Vec<String> {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let mut output = Vec::new();
        runtime.block_on(forward(input, &mut output));
        let mut text = String::from_utf8(output).unwrap();
        let mut bodies = Vec::new();
        while let Some(rest) = text.strip_prefix("Content-Length: ") {
            let (length, rest) = rest.split_once("\r\n\r\n").unwrap();
            let length: usize = length.parse().unwrap();
            bodies.push(rest[..length].to_owned());
            text = rest[length..].to_owned();
        }
        assert!(text.is_empty(), "left over: {text:?}");
        bodies
    }

    fn frame(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    const EXIT: &str = r#"{"jsonrpc":"2.0","method":"exit"}"#;

    #[test]
    fn well_formed_messages_pass_unchanged() {
        let input = format!(
            "{}Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n{}",
            frame(r#"{"jsonrpc":"2.0","id":1,"method":"shutdown"}"#),
            frame(EXIT)
        );
        assert_eq!(
            forwarded(input.as_bytes()),
            [r#"{"jsonrpc":"2.0","id":1,"method":"shutdown"}"#, EXIT]
        );
    }

    #[test]
    fn a_body_that_is_not_json_becomes_a_parse_error_and_reading_goes_on() {
        let input = format!("{}{}", frame("{\n    return a @ b;\n}"), frame(EXIT));
        let bodies = forwarded(input.as_bytes());
        assert_eq!(bodies.len(), 2);
        let first: Value = serde_json::from_str(&bodies[0]).unwrap();
        assert_eq!(first["method"], MALFORMED);
        assert_eq!(first["id"], Value::Null);
        assert_eq!(first["params"]["code"], -32700);
        assert_eq!(bodies[1], EXIT);
    }

    #[test]
    fn a_body_that_is_not_utf8_names_the_document_it_was_about() {
        let body = b"{\"jsonrpc\":\"2.0\",\"method\":\"textDocument/didChange\",\"params\":{\"textDocument\":{\"uri\":\"file:///a.nb\",\"version\":2},\"contentChanges\":[{\"text\":\"\xff\"}]}}";
        let mut input = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        input.extend_from_slice(body);
        input.extend_from_slice(frame(EXIT).as_bytes());
        let bodies = forwarded(&input);
        let first: Value = serde_json::from_str(&bodies[0]).unwrap();
        assert_eq!(first["method"], MALFORMED);
        assert_eq!(first["params"]["code"], -32700);
        assert_eq!(first["params"]["method"], "textDocument/didChange");
        assert_eq!(first["params"]["textDocument"], json!({ "uri": "file:///a.nb" }));
        let message = first["params"]["message"].as_str().unwrap();
        assert!(message.starts_with("the message is not UTF-8"), "{message}");
        assert_eq!(bodies[1], EXIT);
    }

    #[test]
    fn json_that_is_not_json_rpc_is_an_invalid_request() {
        let input = format!("{}{}", frame(r#"{"id":1,"method":"x"}"#), frame(EXIT));
        let bodies = forwarded(input.as_bytes());
        let first: Value = serde_json::from_str(&bodies[0]).unwrap();
        assert_eq!(first["params"]["code"], -32600);
        assert_eq!(bodies[1], EXIT);
    }

    #[test]
    fn garbage_between_frames_is_skipped_up_to_the_next_content_length() {
        let input = format!("garbage\r\nmore garbage {{\r\n{}", frame(EXIT));
        let bodies = forwarded(input.as_bytes());
        assert_eq!(bodies.len(), 2);
        assert!(bodies[0].contains("expected a header, found \\\"garbage\\\""), "{}", bodies[0]);
        assert_eq!(bodies[1], EXIT);
    }

    #[test]
    fn a_header_right_after_a_body_is_found_again() {
        let input = format!("Content-Length: x\r\n\r\n{{}}{}", frame(EXIT));
        let bodies = forwarded(input.as_bytes());
        assert_eq!(bodies.len(), 2);
        assert_eq!(bodies[1], EXIT);
    }

    #[test]
    fn bad_lengths_and_missing_lengths_are_errors() {
        let input = format!("Content-Length: -3\r\n\r\n{}", frame(EXIT));
        let bodies = forwarded(input.as_bytes());
        assert!(bodies[0].contains("invalid Content-Length header"), "{}", bodies[0]);
        assert_eq!(bodies[1], EXIT);
        let bodies = forwarded(format!("X-Other: 1\r\n\r\n{}", frame(EXIT)).as_bytes());
        assert!(bodies[0].contains("without a Content-Length"), "{}", bodies[0]);
        assert_eq!(bodies[1], EXIT);
    }

    #[test]
    fn a_body_cut_short_ends_the_input_and_a_long_line_is_clipped() {
        assert_eq!(forwarded(b"Content-Length: 100\r\n\r\n{\"jsonrpc\""), Vec::<String>::new());
        let long = "x".repeat(100_000);
        let bodies = forwarded(format!("{long}\r\n{}", frame(EXIT)).as_bytes());
        assert!(bodies[0].len() < 400, "{}", bodies[0]);
        assert_eq!(bodies[1], EXIT);
    }

    #[test]
    fn the_relay_passes_whole_frames_and_drops_one_cut_short() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let input = format!("{}Content-Length: 40\r\n\r\n{{\"jsonrpc\"", frame(EXIT));
        let mut output = Vec::new();
        runtime.block_on(relay(input.as_bytes(), &mut output));
        assert_eq!(String::from_utf8(output).unwrap(), frame(EXIT));
    }

    #[test]
    fn the_answer_carries_the_error() {
        let request: Request =
            serde_json::from_slice(&malformed(ErrorCode::ParseError, "bad", &[])).unwrap();
        let answer = serde_json::to_value(malformed_answer(&request)).unwrap();
        assert_eq!(
            answer,
            json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32700, "message": "bad" } })
        );
    }
}
