//! Server-sent events as chat completion endpoints send them: `data:` lines, blank-line separated.

/// The most bytes one event may hold; a server that sends more without a line end is broken.
pub const MAX_EVENT_BYTES: usize = 4 << 20;

/// Why the stream could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseError {
    /// A line or event grew past [`MAX_EVENT_BYTES`].
    TooLarge,
}

/// Splits a byte stream into the `data` payloads of its events, whatever the chunk boundaries.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    data: String,
    has_data: bool,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        SseParser::default()
    }

    /// Feeds one chunk; returns the payloads of the events it completed, in order.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<String>, SseError> {
        let mut out = Vec::new();
        let mut rest = chunk;
        while let Some(i) = rest.iter().position(|&b| b == b'\n') {
            self.push(&rest[..i])?;
            rest = &rest[i + 1..];
            let mut line = std::mem::take(&mut self.line);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if let Some(payload) = self.line_done(&line)? {
                out.push(payload);
            }
        }
        self.push(rest)?;
        Ok(out)
    }

    /// Ends the stream: an event that was not followed by a blank line is still delivered.
    pub fn finish(&mut self) -> Option<String> {
        let line = std::mem::take(&mut self.line);
        if !line.is_empty() {
            let _ = self.line_done(&line);
        }
        self.take_event()
    }

    fn push(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        if self.line.len() + bytes.len() > MAX_EVENT_BYTES {
            return Err(SseError::TooLarge);
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn line_done(&mut self, line: &[u8]) -> Result<Option<String>, SseError> {
        if line.is_empty() {
            return Ok(self.take_event());
        }
        // Comments (`: keep-alive`) and fields other than `data` (event, id, retry) carry nothing we use.
        let Some(value) = line.strip_prefix(b"data:") else {
            return Ok(None);
        };
        let value = value.strip_prefix(b" ").unwrap_or(value);
        if self.has_data {
            self.data.push('\n');
        }
        self.data.push_str(&String::from_utf8_lossy(value));
        self.has_data = true;
        if self.data.len() > MAX_EVENT_BYTES {
            return Err(SseError::TooLarge);
        }
        Ok(None)
    }

    fn take_event(&mut self) -> Option<String> {
        if !self.has_data {
            return None;
        }
        self.has_data = false;
        Some(std::mem::take(&mut self.data))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str = ": keep-alive\r\n\r\ndata: {\"a\":\"é\"}\r\n\r\nevent: x\nid: 7\ndata: {\"b\":1}\n\ndata: [DONE]\n\n";

    fn all_at_once(bytes: &[u8]) -> Vec<String> {
        let mut p = SseParser::new();
        let mut out = p.feed(bytes).unwrap_or_default();
        out.extend(p.finish());
        out
    }

    #[test]
    fn parses_data_comments_and_crlf() {
        assert_eq!(
            all_at_once(STREAM.as_bytes()),
            ["{\"a\":\"é\"}", "{\"b\":1}", "[DONE]"]
        );
    }

    #[test]
    fn any_split_gives_the_same_events() {
        let bytes = STREAM.as_bytes();
        let whole = all_at_once(bytes);
        for cut in 0..bytes.len() {
            let mut p = SseParser::new();
            let mut out = p.feed(&bytes[..cut]).unwrap_or_default();
            out.extend(p.feed(&bytes[cut..]).unwrap_or_default());
            out.extend(p.finish());
            assert_eq!(out, whole, "split at {cut}");
        }
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for b in bytes {
            out.extend(p.feed(std::slice::from_ref(b)).unwrap_or_default());
        }
        assert_eq!(out, whole, "one byte at a time");
    }

    #[test]
    fn multi_line_data_and_unterminated_last_event() {
        assert_eq!(all_at_once(b"data: a\ndata: b\n\ndata: c"), ["a\nb", "c"]);
        assert_eq!(all_at_once(b"data:x\n\n"), ["x"]);
    }

    #[test]
    fn refuses_an_endless_line() {
        let mut p = SseParser::new();
        let chunk = vec![b'x'; 1 << 20];
        let mut failed = false;
        for _ in 0..5 {
            if p.feed(&chunk).is_err() {
                failed = true;
                break;
            }
        }
        assert!(failed);
    }
}
