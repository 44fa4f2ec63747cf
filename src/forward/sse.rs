//! A server-sent events parser (the WHATWG event-stream format), fed with body chunks as they
//! arrive; what `hookbin forward` reads from `/api/bins/{bin}/stream`.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Event {
    /// The `id:` field of this event, if it had one.
    pub id: Option<String>,
    /// The `event:` field; `message` when absent, as the spec says.
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Splits a byte stream into events. Lines end in LF, CRLF or CR; `:` lines are comments.
#[derive(Debug, Default)]
pub struct Parser {
    /// Bytes of the line not yet terminated.
    line: Vec<u8>,
    /// The previous chunk ended in CR: a LF at the start of the next one belongs to it.
    after_cr: bool,
    id: Option<String>,
    event: Option<String>,
    data: Option<String>,
}

impl Parser {
    /// Feeds a chunk; returns the events it completed, in order.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<Event> {
        let mut events = Vec::new();
        for &b in chunk {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\r' | b'\n' => {
                    self.after_cr = b == b'\r';
                    let line = std::mem::take(&mut self.line);
                    if let Some(event) = self.line_done(&line) {
                        events.push(event);
                    }
                }
                _ => self.line.push(b),
            }
        }
        events
    }

    fn line_done(&mut self, line: &[u8]) -> Option<Event> {
        if line.is_empty() {
            let data = self.data.take();
            let event = self.event.take();
            let id = self.id.take();
            // An event with no data is not dispatched (the spec's rule).
            return data.map(|data| Event {
                id,
                event: event.unwrap_or_else(|| "message".into()),
                data,
            });
        }
        if line[0] == b':' {
            return None;
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_ref(), ""),
        };
        match field {
            "id" => self.id = Some(value.to_owned()),
            "event" => self.event = Some(value.to_owned()),
            "data" => match &mut self.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            // `retry` and unknown fields: the caller has its own reconnect policy.
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_with_any_line_ending() {
        let stream = b"retry: 2000\n: stream open\n\nid: 7\nevent: request\ndata: {\"id\":\"7\"}\n\n\
                       id: 8\r\nevent: request\r\ndata: a\r\ndata: b\r\n\r\n: keep-alive\r\rdata:x\r\r";
        // Every split point must give the same events.
        for cut in 0..stream.len() {
            let mut p = Parser::default();
            let mut events = p.feed(&stream[..cut]);
            events.extend(p.feed(&stream[cut..]));
            assert_eq!(
                events,
                vec![
                    Event {
                        id: Some("7".into()),
                        event: "request".into(),
                        data: "{\"id\":\"7\"}".into()
                    },
                    Event {
                        id: Some("8".into()),
                        event: "request".into(),
                        data: "a\nb".into()
                    },
                    Event {
                        id: None,
                        event: "message".into(),
                        data: "x".into()
                    },
                ],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn bin_deleted_event_has_empty_object_data() {
        let mut p = Parser::default();
        let events = p.feed(b"event: bin_deleted\ndata: {}\n\n");
        assert_eq!(events[0].event, "bin_deleted");
        assert_eq!(events[0].id, None);
    }
}
