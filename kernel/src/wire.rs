//! Jupyter wire protocol framing: multipart ZeroMQ frames <-> `Message`, with HMAC-SHA256
//! signatures. Nothing here knows about sockets or interpreters.

use anyhow::{anyhow, bail, Result};
use bytes::Bytes;
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

pub const DELIMITER: &[u8] = b"<IDS|MSG>";
pub const PROTOCOL_VERSION: &str = "5.4";

/// One Jupyter message. `identities` are the ROUTER routing frames that precede the delimiter.
#[derive(Debug, Clone)]
pub struct Message {
    pub identities: Vec<Bytes>,
    pub header: Value,
    pub parent_header: Value,
    pub metadata: Value,
    pub content: Value,
    pub buffers: Vec<Bytes>,
}

impl Message {
    pub fn msg_type(&self) -> &str {
        self.header["msg_type"].as_str().unwrap_or("")
    }

    pub fn session(&self) -> &str {
        self.header["session"].as_str().unwrap_or("")
    }

    /// A new message in reply to (or caused by) `parent`, routed back to the same peer. Its
    /// header's session is the parent's until `server.rs` sends it, which puts the kernel's
    /// own session id there (`stamp_session`).
    pub fn reply_to(parent: &Message, msg_type: &str, content: Value) -> Message {
        Message {
            identities: parent.identities.clone(),
            header: new_header(
                msg_type,
                parent.session(),
                parent.header["username"].as_str(),
            ),
            parent_header: parent.header.clone(),
            metadata: json!({}),
            content,
            buffers: Vec::new(),
        }
    }

    /// A message with no parent (for example `status: starting`).
    pub fn new(msg_type: &str, session: &str, content: Value) -> Message {
        Message {
            identities: Vec::new(),
            header: new_header(msg_type, session, None),
            parent_header: json!({}),
            metadata: json!({}),
            content,
            buffers: Vec::new(),
        }
    }
}

pub fn new_header(msg_type: &str, session: &str, username: Option<&str>) -> Value {
    json!({
        "msg_id": uuid::Uuid::new_v4().to_string(),
        "session": session,
        "username": username.unwrap_or("kernel"),
        "date": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "msg_type": msg_type,
        "version": PROTOCOL_VERSION,
    })
}

/// Signs and verifies messages with the connection file's key. An empty key disables signing,
/// as the protocol allows.
#[derive(Clone)]
pub struct Signer {
    key: Option<Vec<u8>>,
}

impl Signer {
    pub fn new(key: &str, scheme: &str) -> Result<Signer> {
        if key.is_empty() {
            return Ok(Signer { key: None });
        }
        if scheme != "hmac-sha256" {
            bail!("unsupported signature scheme {scheme:?} (only hmac-sha256 is implemented)");
        }
        Ok(Signer {
            key: Some(key.as_bytes().to_vec()),
        })
    }

    fn mac(&self, parts: &[&[u8]]) -> Option<Hmac<Sha256>> {
        let key = self.key.as_ref()?;
        let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
        for part in parts {
            mac.update(part);
        }
        Some(mac)
    }

    pub fn sign(&self, parts: &[&[u8]]) -> String {
        self.mac(parts)
            .map(|m| hex::encode(m.finalize().into_bytes()))
            .unwrap_or_default()
    }

    /// Constant-time check of a hex signature.
    pub fn verify(&self, parts: &[&[u8]], signature: &[u8]) -> bool {
        match self.mac(parts) {
            None => true,
            Some(mac) => match hex::decode(signature) {
                Ok(sig) => mac.verify_slice(&sig).is_ok(),
                Err(_) => false,
            },
        }
    }
}

/// Parses and verifies incoming frames. A missing or wrong signature is an error, so the caller
/// can log and drop the message without executing anything.
pub fn decode(frames: Vec<Bytes>, signer: &Signer) -> Result<Message> {
    let split = frames
        .iter()
        .position(|f| f.as_ref() == DELIMITER)
        .ok_or_else(|| anyhow!("no <IDS|MSG> delimiter in {} frames", frames.len()))?;
    let identities = frames[..split].to_vec();
    let rest = &frames[split + 1..];
    if rest.len() < 5 {
        bail!(
            "expected signature and 4 message frames after the delimiter, got {}",
            rest.len()
        );
    }
    let parts: Vec<&[u8]> = rest[1..5].iter().map(|b| b.as_ref()).collect();
    if !signer.verify(&parts, &rest[0]) {
        bail!("invalid message signature");
    }
    let parse = |i: usize, what: &str| -> Result<Value> {
        serde_json::from_slice(&rest[i]).map_err(|e| anyhow!("{what} is not JSON: {e}"))
    };
    let header = parse(1, "header")?;
    if !header.is_object() || header["msg_type"].as_str().is_none() {
        bail!("header has no msg_type");
    }
    Ok(Message {
        identities,
        header,
        parent_header: parse(2, "parent_header")?,
        metadata: parse(3, "metadata")?,
        content: parse(4, "content")?,
        buffers: rest[5..].to_vec(),
    })
}

/// Serialises and signs a message into frames. `topic` replaces the identities (for iopub).
pub fn encode(msg: &Message, signer: &Signer, topic: Option<&str>) -> Vec<Bytes> {
    let header = serde_json::to_vec(&msg.header).unwrap_or_default();
    let parent = serde_json::to_vec(&msg.parent_header).unwrap_or_default();
    let metadata = serde_json::to_vec(&msg.metadata).unwrap_or_default();
    let content = serde_json::to_vec(&msg.content).unwrap_or_default();
    let signature = signer.sign(&[&header, &parent, &metadata, &content]);
    let mut frames: Vec<Bytes> = match topic {
        Some(t) => vec![Bytes::from(t.to_owned())],
        None => msg.identities.clone(),
    };
    frames.push(Bytes::from_static(DELIMITER));
    frames.push(Bytes::from(signature));
    frames.extend([header, parent, metadata, content].map(Bytes::from));
    frames.extend(msg.buffers.iter().cloned());
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_signature_check() {
        let signer = Signer::new("secret", "hmac-sha256").unwrap();
        let mut msg = Message::new("execute_request", "s1", json!({"code": "1+1"}));
        msg.identities = vec![Bytes::from_static(b"peer")];
        let frames = encode(&msg, &signer, None);
        let back = decode(frames.clone(), &signer).unwrap();
        assert_eq!(back.msg_type(), "execute_request");
        assert_eq!(back.content["code"], "1+1");
        assert_eq!(back.identities, vec![Bytes::from_static(b"peer")]);

        let other = Signer::new("not-the-key", "hmac-sha256").unwrap();
        assert!(decode(frames.clone(), &other).is_err());

        let mut forged = frames.clone();
        forged[2] = Bytes::from_static(b"00");
        assert!(decode(forged, &signer).is_err());

        let mut missing = frames;
        missing[2] = Bytes::new();
        assert!(decode(missing, &signer).is_err());
    }

    #[test]
    fn empty_key_disables_signing() {
        let signer = Signer::new("", "hmac-sha256").unwrap();
        let msg = Message::new("kernel_info_request", "s", json!({}));
        let frames = encode(&msg, &signer, None);
        assert!(frames[1].is_empty());
        assert!(decode(frames, &signer).is_ok());
    }
}
