//! The `text/event-stream` parser: the WHATWG HTML "event stream interpretation" rules
//! (§9.2.6), fed with whatever chunks the connection delivers.
//!
//! Lines end with CRLF, LF or CR (a CRLF split across two chunks is one end); a
//! leading byte-order mark is dropped once; `:` starts a comment; `field: value` drops
//! one space after the colon; a line without a colon is a field with an empty value.
//! Fields: `event` (the type), `data` (appended with a line feed), `id` (ignored when
//! it holds a NUL), `retry` (ASCII digits only, in milliseconds); others are ignored.
//! A blank line dispatches the event when its data is not empty (the trailing line
//! feed removed); an event cut off by the end of the stream is never dispatched.
//!
//! Bounded: a line longer than [`Limits::max_line`] or an event whose data grows past
//! [`Limits::max_event`] is an error, so the parser never holds more than
//! `3 × max_line + max_event` bytes (the partial line, the type, the id and the data).

/// How much one stream may make the parser hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest line, without its end (so also the longest type, id or data line).
    pub max_line: usize,
    /// Largest data of one event (its data lines joined).
    pub max_event: usize,
}

impl Default for Limits {
    /// 1 MiB lines and events: far above what event streams carry (a JSON document
    /// per event), small enough that a thousand hostile streams cannot exhaust memory.
    fn default() -> Self {
        Limits {
            max_line: 1 << 20,
            max_event: 1 << 20,
        }
    }
}

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The `event:` type; `None` when absent or empty (a `message`).
    pub event: Option<String>,
    /// The data lines joined by line feeds.
    pub data: String,
    /// The stream's last event id when this event was dispatched (what a reconnect
    /// sends as `Last-Event-ID`); `None` while no `id:` was seen.
    pub id: Option<String>,
    /// Bytes on the wire since the previous dispatch (comments, `retry:` and
    /// ignored lines before it included): the event's size for bytes/s. (The LF of a
    /// CRLF split across two reads is counted toward the next event.)
    pub wire_bytes: usize,
}

/// Why a stream cannot be parsed further.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// A line went past [`Limits::max_line`] without ending.
    #[error("an event-stream line is longer than {limit} bytes")]
    LineTooLong {
        /// The limit.
        limit: usize,
    },
    /// An event's data went past [`Limits::max_event`] before a blank line.
    #[error("an event's data is larger than {limit} bytes")]
    EventTooLarge {
        /// The limit.
        limit: usize,
    },
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The parser state of one stream (kept across reconnects only for its last event id
/// and retry; make a new one per connection with [`Parser::resume`]).
#[derive(Debug)]
pub struct Parser {
    limits: Limits,
    /// The start of the stream, while it may still be (part of) a byte-order mark.
    head: Option<Vec<u8>>,
    /// A line begun in an earlier chunk.
    line: Vec<u8>,
    /// The previous chunk ended with CR: a LF starting this one ends nothing.
    after_cr: bool,
    data: String,
    event: String,
    last_id: Option<String>,
    retry: Option<u64>,
    /// Wire bytes of the lines since the last dispatch.
    since_dispatch: usize,
}

impl Parser {
    /// A parser for a new stream.
    pub fn new(limits: Limits) -> Parser {
        Parser {
            limits,
            head: Some(Vec::new()),
            line: Vec::new(),
            after_cr: false,
            data: String::new(),
            event: String::new(),
            last_id: None,
            retry: None,
            since_dispatch: 0,
        }
    }

    /// A parser for the next connection of the same stream: fresh buffers, the last
    /// event id and retry carried over (the spec keeps both on the EventSource).
    pub fn resume(&self) -> Parser {
        let mut next = Parser::new(self.limits);
        next.last_id = self.last_id.clone();
        next.retry = self.retry;
        next
    }

    /// The last event id set by a dispatch (or a blank line after an `id:`).
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The reconnection time the server asked for with `retry:`, in milliseconds.
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry
    }

    /// Bytes held right now (partial line, type, id, data): what the limits bound.
    pub fn buffered(&self) -> usize {
        self.line.len()
            + self.data.len()
            + self.event.len()
            + self.last_id.as_ref().map_or(0, String::len)
            + self.head.as_ref().map_or(0, Vec::len)
    }

    /// Feeds the next chunk of the body; `dispatch` gets each complete event in order.
    /// After an error the stream must be dropped (the parser's state is undefined).
    pub fn feed(&mut self, chunk: &[u8], dispatch: impl FnMut(Event)) -> Result<(), ParseError> {
        let mut dispatch = dispatch;
        let mut chunk = chunk;
        if let Some(head) = &mut self.head {
            let take = (BOM.len() - head.len()).min(chunk.len());
            head.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
            if BOM.starts_with(head) && head.len() < BOM.len() {
                return Ok(()); // maybe a BOM: wait for its other bytes
            }
            let head = self.head.take().unwrap_or_default();
            if head == BOM {
                self.since_dispatch += BOM.len();
            } else {
                self.scan(&head, &mut dispatch)?;
            }
        }
        self.scan(chunk, &mut dispatch)
    }

    fn scan(
        &mut self,
        mut bytes: &[u8],
        dispatch: &mut impl FnMut(Event),
    ) -> Result<(), ParseError> {
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if bytes[0] == b'\n' {
                self.since_dispatch += 1;
                bytes = &bytes[1..];
            }
        }
        while !bytes.is_empty() {
            let Some(end) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') else {
                if self.line.len() + bytes.len() > self.limits.max_line {
                    return Err(ParseError::LineTooLong {
                        limit: self.limits.max_line,
                    });
                }
                self.line.extend_from_slice(bytes);
                return Ok(());
            };
            let mut used = end + 1;
            if bytes[end] == b'\r' {
                match bytes.get(end + 1) {
                    Some(b'\n') => used += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            if self.line.len() + end > self.limits.max_line {
                return Err(ParseError::LineTooLong {
                    limit: self.limits.max_line,
                });
            }
            self.since_dispatch += self.line.len() + used;
            if self.line.is_empty() {
                self.line_done(&bytes[..end], dispatch)?;
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&bytes[..end]);
                let result = self.line_done(&line, dispatch);
                line.clear();
                self.line = line; // keep the allocation for the next long line
                result?;
            }
            bytes = &bytes[used..];
        }
        Ok(())
    }

    fn line_done(
        &mut self,
        line: &[u8],
        dispatch: &mut impl FnMut(Event),
    ) -> Result<(), ParseError> {
        if line.is_empty() {
            self.dispatch(dispatch);
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(()); // a comment (keep-alives are sent this way)
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"event" => self.event = String::from_utf8_lossy(value).into_owned(),
            b"data" => {
                if self.data.len() + value.len() + 1 > self.limits.max_event {
                    return Err(ParseError::EventTooLarge {
                        limit: self.limits.max_event,
                    });
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.data.push('\n');
            }
            b"id" if !value.contains(&0) => {
                self.last_id = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // Digits past u64 are no sane delay: saturate (the caller caps it).
                let ms = std::str::from_utf8(value)
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(u64::MAX);
                self.retry = Some(ms);
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, dispatch: &mut impl FnMut(Event)) {
        let event = std::mem::take(&mut self.event);
        if self.data.is_empty() {
            return; // nothing to dispatch; its bytes count toward the next event
        }
        let wire_bytes = std::mem::take(&mut self.since_dispatch);
        let mut data = std::mem::take(&mut self.data);
        data.pop(); // the line feed after the last data line
        dispatch(Event {
            event: (!event.is_empty()).then_some(event),
            data,
            id: self.last_id.clone(),
            wire_bytes,
        });
    }
}
