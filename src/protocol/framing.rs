//! Bounded JSON-lines framing: one object per `\n`-terminated line.

use serde::Serialize;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

/// The largest frame a client may send (1 MiB).
pub const MAX_CLIENT_FRAME_BYTES: usize = 1 << 20;
/// The largest frame the server sends (8 MiB).
pub const MAX_SERVER_FRAME_BYTES: usize = 8 << 20;

/// The most buffer [`FrameReader::next_frame`] keeps between frames, in bytes.
const KEPT_BUFFER: usize = 64 * 1024;

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The peer sent more than the limit without a newline; the rest was not buffered.
    #[error("frame larger than {limit} bytes")]
    TooLarge {
        /// The limit that was exceeded.
        limit: usize,
    },
    /// The frame is not UTF-8.
    #[error("frame is not valid UTF-8")]
    NotUtf8,
    /// Reading failed.
    #[error("read failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Reads newline-terminated frames, refusing any longer than `limit` as soon as it is exceeded.
pub struct FrameReader<R> {
    inner: R,
    limit: usize,
    buf: Vec<u8>,
}

impl<R: AsyncBufRead + Unpin> FrameReader<R> {
    /// Wraps a buffered reader.
    pub fn new(inner: R, limit: usize) -> Self {
        FrameReader {
            inner,
            limit,
            buf: Vec::new(),
        }
    }

    /// The next frame without its newline, or `None` at a clean end of stream.
    ///
    /// A final line without a newline is returned as a frame. Blank lines are skipped.
    pub async fn next_frame(&mut self) -> Result<Option<String>, FrameError> {
        let line = self.next_frame_str().await?.map(str::to_owned);
        // The line is copied out, so a large buffer is not kept: the daemon reads many
        // connections this way, and one large frame must not pin its size on each.
        if self.buf.capacity() > KEPT_BUFFER {
            self.buf = Vec::new();
        }
        Ok(line)
    }

    /// [`FrameReader::next_frame`], lent from the reader's own buffer until the next read: a
    /// large answer (a status of a thousand accounts is hundreds of KiB) is parsed where it was
    /// read, with no copy and no new buffer, whose fresh pages each cost a fault.
    pub async fn next_frame_str(&mut self) -> Result<Option<&str>, FrameError> {
        loop {
            self.buf.clear();
            let complete = self.fill_line().await?;
            if !complete && self.buf.is_empty() {
                return Ok(None);
            }
            if self.buf.iter().all(|b| b.is_ascii_whitespace()) {
                if complete {
                    continue;
                }
                return Ok(None);
            }
            return std::str::from_utf8(&self.buf)
                .map(Some)
                .map_err(|_| FrameError::NotUtf8);
        }
    }

    /// Appends bytes up to the next newline into `buf`; true when a newline ended it.
    async fn fill_line(&mut self) -> Result<bool, FrameError> {
        loop {
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                return Ok(false);
            }
            let (take, found) = match memchr::memchr(b'\n', available) {
                Some(i) => (i, true),
                None => (available.len(), false),
            };
            if self.buf.len() + take > self.limit {
                return Err(FrameError::TooLarge { limit: self.limit });
            }
            self.buf.extend_from_slice(&available[..take]);
            let consumed = if found { take + 1 } else { take };
            self.inner.consume(consumed);
            if found {
                if self.buf.last() == Some(&b'\r') {
                    self.buf.pop();
                }
                return Ok(true);
            }
        }
    }
}

/// Serializes `value` as one line and writes it, refusing lines over `limit`.
pub async fn write_frame<W, T>(writer: &mut W, value: &T, limit: usize) -> std::io::Result<()>
where
    W: AsyncWrite + Unpin,
    T: Serialize,
{
    let mut line = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    if line.len() >= limit {
        return Err(std::io::Error::other(format!(
            "refusing to send a frame of {} bytes (limit {limit})",
            line.len()
        )));
    }
    line.push(b'\n');
    writer.write_all(&line).await?;
    writer.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    async fn frames(input: &[u8], limit: usize) -> Vec<Result<Option<String>, String>> {
        let mut r = FrameReader::new(BufReader::with_capacity(4, input), limit);
        let mut out = Vec::new();
        loop {
            let f = r.next_frame().await.map_err(|e| e.to_string());
            let end = matches!(f, Ok(None) | Err(_));
            out.push(f);
            if end {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn splits_lines_across_small_reads() {
        let got = frames(b"{\"a\":1}\n\n{\"b\":2}\r\n{\"c\":3}", 64).await;
        assert_eq!(
            got,
            vec![
                Ok(Some("{\"a\":1}".into())),
                Ok(Some("{\"b\":2}".into())),
                Ok(Some("{\"c\":3}".into())),
                Ok(None)
            ]
        );
    }

    #[tokio::test]
    async fn refuses_oversize_frame_at_the_limit() {
        let mut input = vec![b'x'; 100];
        input.push(b'\n');
        let got = frames(&input, 99).await;
        assert_eq!(got, vec![Err("frame larger than 99 bytes".into())]);
        let got = frames(&input, 100).await;
        assert_eq!(
            got[0].as_ref().map(|f| f.as_ref().map(|s| s.len())),
            Ok(Some(100))
        );
    }

    #[tokio::test]
    async fn oversize_is_detected_before_the_stream_ends() {
        // A peer that never sends a newline must not make us buffer without bound.
        let (mut tx, rx) = tokio::io::duplex(1024);
        let writer = tokio::spawn(async move {
            let chunk = vec![b'y'; 1024];
            for _ in 0..64 {
                if tx.write_all(&chunk).await.is_err() {
                    break;
                }
            }
            tx
        });
        let mut r = FrameReader::new(BufReader::new(rx), 4096);
        let err = r.next_frame().await.expect_err("oversize");
        assert!(matches!(err, FrameError::TooLarge { limit: 4096 }));
        drop(r);
        let _ = writer.await;
    }

    #[tokio::test]
    async fn a_lent_frame_is_only_its_own_line_after_a_longer_one() {
        let input = format!("{}\nshort\r\n\n\nlast", "x".repeat(5000));
        let mut r = FrameReader::new(BufReader::with_capacity(7, input.as_bytes()), 8192);
        assert_eq!(
            r.next_frame_str().await.expect("read").map(str::len),
            Some(5000)
        );
        assert_eq!(r.next_frame_str().await.expect("read"), Some("short"));
        assert_eq!(r.next_frame_str().await.expect("read"), Some("last"));
        assert_eq!(r.next_frame_str().await.expect("read"), None);
    }

    #[tokio::test]
    async fn write_frame_appends_newline_and_respects_limit() {
        let mut out = Vec::new();
        write_frame(&mut out, &serde_json::json!({"k": "v"}), 64)
            .await
            .expect("write");
        assert_eq!(out, b"{\"k\":\"v\"}\n");
        let big = "z".repeat(100);
        assert!(write_frame(&mut Vec::new(), &big, 50).await.is_err());
    }
}
