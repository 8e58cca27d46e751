//! Server-Sent Events read from a byte stream that arrives in arbitrary pieces (the
//! `text/event-stream` format of the WHATWG HTML standard: `field: value` lines, a blank line
//! ends an event, `:` starts a comment, `\n`, `\r\n` or `\r` ends a line).

/// One event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Event {
    /// The `id:` (the last one seen, as the standard says, when this event has none).
    pub id: Option<String>,
    /// The `event:` type (`message` when absent).
    pub kind: String,
    /// The `data:` lines joined by `\n`.
    pub data: String,
}

/// The parser's state between pieces.
#[derive(Debug, Default)]
pub struct Parser {
    line: Vec<u8>,
    after_cr: bool,
    last_id: Option<String>,
    kind: Option<String>,
    data: Option<String>,
}

impl Parser {
    /// Feeds a piece; returns the events it completed.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Event> {
        let mut out = Vec::new();
        for &b in bytes {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' => self.end_line(&mut out),
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(&mut out);
                }
                _ => self.line.push(b),
            }
        }
        out
    }

    /// The id a reconnection resumes from (`Last-Event-ID`).
    pub fn last_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    fn end_line(&mut self, out: &mut Vec<Event>) {
        let line = String::from_utf8_lossy(&std::mem::take(&mut self.line)).into_owned();
        if line.is_empty() {
            if let Some(data) = self.data.take() {
                out.push(Event {
                    id: self.last_id.clone(),
                    kind: self.kind.take().unwrap_or_else(|| "message".to_owned()),
                    data,
                });
            }
            self.kind = None;
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_str(), ""),
        };
        match field {
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            "event" => self.kind = Some(value.to_owned()),
            "id" if !value.contains('\0') => self.last_id = Some(value.to_owned()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const STREAM: &str = ": hello\n\nid: 7\nevent: job\ndata: {\"a\":1}\n\n:heartbeat\r\n\r\nid: 8\r\nevent: job\r\ndata: x\r\ndata: y\r\n\r\ndata: plain\n\n";

    fn expected() -> Vec<Event> {
        vec![
            Event {
                id: Some("7".into()),
                kind: "job".into(),
                data: "{\"a\":1}".into(),
            },
            Event {
                id: Some("8".into()),
                kind: "job".into(),
                data: "x\ny".into(),
            },
            Event {
                id: Some("8".into()),
                kind: "message".into(),
                data: "plain".into(),
            },
        ]
    }

    #[test]
    fn events_comments_and_line_endings() {
        let mut p = Parser::default();
        assert_eq!(p.feed(STREAM.as_bytes()), expected());
        assert_eq!(p.last_id(), Some("8"));
    }

    #[test]
    fn an_unfinished_event_waits_for_its_blank_line() {
        let mut p = Parser::default();
        assert!(p.feed(b"id: 1\ndata: a\n").is_empty());
        assert_eq!(p.feed(b"\n").len(), 1);
    }

    proptest! {
        /// However the bytes are cut (even between `\r` and `\n`), the same events come out.
        #[test]
        fn pieces_do_not_matter(cuts in proptest::collection::vec(0..STREAM.len(), 0..12)) {
            let bytes = STREAM.as_bytes();
            let mut cuts = cuts;
            cuts.sort_unstable();
            let mut p = Parser::default();
            let mut events = Vec::new();
            let mut from = 0;
            for cut in cuts.into_iter().chain([bytes.len()]) {
                events.extend(p.feed(&bytes[from..cut]));
                from = cut;
            }
            prop_assert_eq!(events, expected());
        }
    }
}
