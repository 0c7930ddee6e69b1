//! Incoming frames: splitting a multipart ZeroMQ message into routing identities, signature and
//! JSON parts, checking the HMAC-SHA256 signature with the connection key, refusing replays, and
//! decoding the message.
//!
//! Outgoing messages are signed by [`jupyter_zmq_client::Connection::send`] with the same key.

use bytes::Bytes;
use jupyter_protocol::{Header, JupyterMessage, JupyterMessageContent, UnknownMessage};
use ring::hmac;
use serde_json::Value;
use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::sync::Mutex;

/// The ZeroMQ frame separating routing identities from the message.
pub const DELIMITER: &[u8] = b"<IDS|MSG>";

/// How many signatures the replay guard remembers; the oldest are forgotten first.
pub const REPLAY_MEMORY: usize = 1 << 16;

/// A message that verified and decoded.
#[derive(Clone, Debug)]
pub struct Request {
    /// The message, with its content typed where `jupyter-protocol` knows the type; a content
    /// that does not fit the typed form (optional fields left out by a client) is kept as an
    /// [`UnknownMessage`].
    pub msg: JupyterMessage,
    /// The content exactly as sent.
    pub content: Value,
}

impl Request {
    pub fn msg_type(&self) -> &str {
        &self.msg.header.msg_type
    }
}

/// Why an incoming message was dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejected {
    /// No `<IDS|MSG>` frame, no signature frame, or fewer than four JSON frames.
    Malformed(String),
    /// The signature is missing, not hex, or does not match the content.
    BadSignature,
    /// The same signature was seen before.
    Replayed,
    /// The header or another JSON frame does not decode.
    BadJson(String),
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejected::Malformed(why) => write!(f, "malformed message ({why})"),
            Rejected::BadSignature => write!(f, "signature does not verify"),
            Rejected::Replayed => write!(f, "replayed message (signature seen before)"),
            Rejected::BadJson(why) => write!(f, "undecodable message ({why})"),
        }
    }
}

/// Verifies and decodes incoming messages; one is shared by the shell and control readers.
pub struct Verifier {
    /// `None` when the connection key is empty: Jupyter's way of turning signatures off.
    key: Option<hmac::Key>,
    seen: Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    set: HashSet<Bytes>,
    order: VecDeque<Bytes>,
}

impl Verifier {
    pub fn new(key: &str) -> Verifier {
        Verifier {
            key: (!key.is_empty()).then(|| hmac::Key::new(hmac::HMAC_SHA256, key.as_bytes())),
            seen: Mutex::new(Seen::default()),
        }
    }

    /// Checks and decodes one multipart message as received on a ROUTER socket.
    pub fn accept(&self, frames: Vec<Bytes>) -> Result<Request, Rejected> {
        let delim = frames
            .iter()
            .position(|f| f.as_ref() == DELIMITER)
            .ok_or_else(|| Rejected::Malformed("no <IDS|MSG> delimiter".into()))?;
        let identities = frames[..delim].to_vec();
        let signature = frames
            .get(delim + 1)
            .ok_or_else(|| Rejected::Malformed("no signature frame".into()))?;
        let parts = &frames[(delim + 2).min(frames.len())..];
        if parts.len() < 4 {
            return Err(Rejected::Malformed(format!(
                "{} JSON frames, expected at least 4",
                parts.len()
            )));
        }
        if let Some(key) = &self.key {
            let sig = decode_hex(signature).ok_or(Rejected::BadSignature)?;
            let mut signed = Vec::with_capacity(parts[..4].iter().map(|p| p.len()).sum());
            for p in &parts[..4] {
                signed.extend_from_slice(p);
            }
            hmac::verify(key, &signed, &sig).map_err(|_| Rejected::BadSignature)?;
            self.remember(signature.clone())?;
        }
        decode(identities, parts)
    }

    /// Refuses a signature seen before (ipykernel's digest history).
    fn remember(&self, sig: Bytes) -> Result<(), Rejected> {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if !seen.set.insert(sig.clone()) {
            return Err(Rejected::Replayed);
        }
        seen.order.push_back(sig);
        if seen.order.len() > REPLAY_MEMORY {
            if let Some(old) = seen.order.pop_front() {
                seen.set.remove(&old);
            }
        }
        Ok(())
    }

    /// The hex HMAC of four JSON parts (used by tests and by clients built on this crate).
    pub fn sign(&self, parts: &[&[u8]]) -> String {
        match &self.key {
            None => String::new(),
            Some(key) => {
                let mut ctx = hmac::Context::with_key(key);
                for p in parts {
                    ctx.update(p);
                }
                ctx.sign()
                    .as_ref()
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect()
            }
        }
    }
}

fn decode_hex(s: &[u8]) -> Option<Vec<u8>> {
    if s.is_empty() || !s.len().is_multiple_of(2) {
        return None;
    }
    let nib = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    s.chunks(2)
        .map(|p| Some(nib(p[0])? << 4 | nib(p[1])?))
        .collect()
}

fn decode(identities: Vec<Bytes>, parts: &[Bytes]) -> Result<Request, Rejected> {
    let bad = |what: &str, e: serde_json::Error| Rejected::BadJson(format!("{what}: {e}"));
    let header: Header = serde_json::from_slice(&parts[0]).map_err(|e| bad("header", e))?;
    // An empty parent header is `{}`, which is not a header.
    let parent_header: Option<Header> = serde_json::from_slice(&parts[1]).ok();
    let metadata: Value = serde_json::from_slice(&parts[2]).map_err(|e| bad("metadata", e))?;
    let content: Value = serde_json::from_slice(&parts[3]).map_err(|e| bad("content", e))?;
    if !content.is_object() {
        return Err(Rejected::BadJson("content is not an object".into()));
    }
    let typed = JupyterMessageContent::from_type_and_content(&header.msg_type, content.clone())
        .unwrap_or_else(|_| {
            JupyterMessageContent::UnknownMessage(UnknownMessage {
                msg_type: header.msg_type.clone(),
                content: content.clone(),
            })
        });
    let msg = JupyterMessage {
        zmq_identities: identities,
        header,
        parent_header,
        metadata,
        content: typed,
        buffers: parts[4..].to_vec(),
        channel: None,
    };
    Ok(Request { msg, content })
}

/// The frames of a signed message, as a client sends it (for tests).
pub fn frames(
    verifier: &Verifier,
    identities: &[&[u8]],
    header: &Value,
    content: &Value,
) -> Vec<Bytes> {
    let parts: Vec<Vec<u8>> = [
        header,
        &Value::Object(Default::default()),
        &json_object(),
        content,
    ]
    .iter()
    .map(|v| serde_json::to_vec(v).unwrap_or_default())
    .collect();
    let refs: Vec<&[u8]> = parts.iter().map(|p| p.as_slice()).collect();
    let sig = verifier.sign(&refs);
    let mut out: Vec<Bytes> = identities
        .iter()
        .map(|i| Bytes::copy_from_slice(i))
        .collect();
    out.push(Bytes::from_static(DELIMITER));
    out.push(Bytes::from(sig.into_bytes()));
    out.extend(parts.into_iter().map(Bytes::from));
    out
}

fn json_object() -> Value {
    Value::Object(Default::default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn header(id: &str, msg_type: &str) -> Value {
        json!({
            "msg_id": id, "username": "u", "session": "s",
            "date": "2026-01-01T00:00:00Z", "msg_type": msg_type, "version": "5.3"
        })
    }

    #[test]
    fn signed_message_is_accepted_and_decoded() {
        let v = Verifier::new("secret");
        let f = frames(
            &v,
            &[b"peer"],
            &header("a", "execute_request"),
            &json!({"code": "1 + 1", "silent": false, "store_history": true,
                    "user_expressions": {}, "allow_stdin": false, "stop_on_error": true}),
        );
        let req = v.accept(f).expect("accepted");
        assert_eq!(req.msg_type(), "execute_request");
        assert_eq!(req.msg.zmq_identities, vec![Bytes::from_static(b"peer")]);
        assert!(req.msg.parent_header.is_none());
        match req.msg.content {
            JupyterMessageContent::ExecuteRequest(r) => assert_eq!(r.code, "1 + 1"),
            other => panic!("expected an execute request, got {other:?}"),
        }
    }

    #[test]
    fn wrong_key_missing_or_garbled_signature_is_rejected() {
        let good = Verifier::new("secret");
        let forger = Verifier::new("not the secret");
        let h = header("b", "execute_request");
        let c = json!({"code": "1"});
        assert_eq!(
            good.accept(frames(&forger, &[], &h, &c)).unwrap_err(),
            Rejected::BadSignature
        );

        let mut unsigned = frames(&good, &[], &h, &c);
        unsigned[1] = Bytes::new();
        assert_eq!(good.accept(unsigned).unwrap_err(), Rejected::BadSignature);

        let mut garbled = frames(&good, &[], &h, &c);
        garbled[1] = Bytes::from_static(b"zz");
        assert_eq!(good.accept(garbled).unwrap_err(), Rejected::BadSignature);

        // Signed, then the content changed on the way.
        let mut tampered = frames(&good, &[], &h, &c);
        tampered[5] = Bytes::from_static(br#"{"code": "2"}"#);
        assert_eq!(good.accept(tampered).unwrap_err(), Rejected::BadSignature);
    }

    #[test]
    fn replayed_signature_is_rejected() {
        let v = Verifier::new("secret");
        let f = frames(&v, &[], &header("c", "kernel_info_request"), &json!({}));
        assert!(v.accept(f.clone()).is_ok());
        assert_eq!(v.accept(f).unwrap_err(), Rejected::Replayed);
    }

    #[test]
    fn empty_key_turns_signatures_off() {
        let v = Verifier::new("");
        let mut f = frames(&v, &[], &header("d", "kernel_info_request"), &json!({}));
        f[1] = Bytes::new();
        assert!(v.accept(f.clone()).is_ok());
        // Without signatures there is nothing to tell a replay by.
        assert!(v.accept(f).is_ok());
    }

    #[test]
    fn malformed_frames_are_rejected_not_fatal() {
        let v = Verifier::new("k");
        assert!(matches!(
            v.accept(vec![Bytes::from_static(b"x")]),
            Err(Rejected::Malformed(_))
        ));
        assert!(matches!(
            v.accept(vec![Bytes::from_static(DELIMITER)]),
            Err(Rejected::Malformed(_))
        ));
        let mut short = frames(&v, &[], &header("e", "kernel_info_request"), &json!({}));
        short.truncate(4);
        assert!(matches!(v.accept(short), Err(Rejected::Malformed(_))));
        let mut f = frames(&v, &[], &header("f", "kernel_info_request"), &json!({}));
        f[2] = Bytes::from_static(b"{not json");
        let refs: Vec<&[u8]> = f[2..6].iter().map(|b| b.as_ref()).collect();
        f[1] = Bytes::from(v.sign(&refs).into_bytes());
        assert!(matches!(v.accept(f), Err(Rejected::BadJson(_))));
    }

    #[test]
    fn content_outside_the_typed_form_is_kept() {
        // jupyter_client leaves `unique` and `n` out of a history search.
        let v = Verifier::new("k");
        let c =
            json!({"hist_access_type": "search", "pattern": "1*", "raw": true, "output": false});
        let req = v
            .accept(frames(&v, &[], &header("g", "history_request"), &c))
            .unwrap();
        assert_eq!(req.content, c);
        assert!(matches!(
            req.msg.content,
            JupyterMessageContent::UnknownMessage(_)
        ));
    }
}
