//! What a voice note's bytes are and how they go to the speech server: Ogg Opus as it is
//! (`voice.ogg`, `audio/ogg`), WAV as it is, WeChat's SILK decoded to 16 kHz mono WAV first
//! (spec B2–B3); and an Ogg Opus stream's duration from its pages (RFC 7845).

use std::io::Cursor;

use super::SpeechFailure;

/// The audio handed to the server: its bytes, the file name (with the extension the server
/// reads the format from) and its content type.
pub struct Upload {
    /// The bytes.
    pub bytes: Vec<u8>,
    /// `voice.ogg`, `voice.wav`, `voice.mp3`.
    pub file_name: &'static str,
    /// `audio/ogg`, `audio/wav`, `audio/mpeg`.
    pub mime: &'static str,
    /// The duration, when the container tells it (caps are checked against it).
    pub seconds: Option<f64>,
}

/// The containers the bridge recognises by their first bytes (names are not trusted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `OggS`: Feishu's and Telegram's voice notes, and what TTS answers with `opus`.
    Ogg,
    /// `RIFF....WAVE`.
    Wav,
    /// `ID3` or an MPEG frame sync.
    Mp3,
    /// `#!SILK_V3`, with or without WeChat's `0x02` first.
    Silk,
}

/// The format the bytes start with.
pub fn sniff(head: &[u8]) -> Option<Format> {
    let silk = |h: &[u8]| h.starts_with(b"#!SILK_V3");
    if head.starts_with(b"OggS") {
        Some(Format::Ogg)
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WAVE" {
        Some(Format::Wav)
    } else if head.starts_with(b"ID3")
        || (head.len() > 1 && head[0] == 0xFF && head[1] & 0xE0 == 0xE0)
    {
        Some(Format::Mp3)
    } else if silk(head) || (head.first() == Some(&0x02) && silk(&head[1..])) {
        Some(Format::Silk)
    } else {
        None
    }
}

/// The sample rate SILK is decoded to: Whisper's own, and the smallest upload (spec B2).
pub const WAV_RATE: u32 = 16_000;

/// Prepares `bytes` for the server; SILK is decoded (blocking: call it off the runtime).
pub fn upload(bytes: Vec<u8>) -> Result<Upload, SpeechFailure> {
    match sniff(&bytes) {
        Some(Format::Ogg) => {
            let seconds = opus_duration_ms(&bytes).ok().map(|ms| ms as f64 / 1000.0);
            Ok(Upload {
                bytes,
                file_name: "voice.ogg",
                mime: "audio/ogg",
                seconds,
            })
        }
        Some(Format::Wav) => {
            let seconds = wav_seconds(&bytes);
            Ok(Upload {
                bytes,
                file_name: "voice.wav",
                mime: "audio/wav",
                seconds,
            })
        }
        Some(Format::Mp3) => Ok(Upload {
            bytes,
            file_name: "voice.mp3",
            mime: "audio/mpeg",
            seconds: None,
        }),
        Some(Format::Silk) => {
            let pcm = super::silk::decode(&bytes, WAV_RATE)?;
            let seconds = Some(pcm.len() as f64 / 2.0 / f64::from(WAV_RATE));
            Ok(Upload {
                bytes: wav(&pcm, WAV_RATE),
                file_name: "voice.wav",
                mime: "audio/wav",
                seconds,
            })
        }
        None => Err(SpeechFailure::Decode(
            "not Ogg, WAV, MP3 or SILK audio".into(),
        )),
    }
}

/// A 44-byte WAV header for mono s16le `pcm` at `rate`, then the samples.
pub fn wav(pcm: &[u8], rate: u32) -> Vec<u8> {
    let len = u32::try_from(pcm.len()).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(44 + pcm.len());
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&len.saturating_add(36).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes()); // PCM
    out.extend_from_slice(&1u16.to_le_bytes()); // mono
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&(rate * 2).to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(pcm);
    out
}

/// The seconds a canonical 44-byte-header WAV holds, from its `fmt ` byte rate.
fn wav_seconds(b: &[u8]) -> Option<f64> {
    let rate = u32::from_le_bytes(b.get(28..32)?.try_into().ok()?);
    (rate > 0).then(|| b.len().saturating_sub(44) as f64 / f64::from(rate))
}

/// The duration of an Ogg Opus stream in milliseconds: (the last page's granule position −
/// the `OpusHead` pre-skip) / 48, since Opus granules always count 48 kHz samples (RFC 7845).
/// Fails when the first packet is not `OpusHead` (not Opus, or not Ogg).
pub fn opus_duration_ms(bytes: &[u8]) -> Result<u64, SpeechFailure> {
    let bad = |why: &str| SpeechFailure::Decode(format!("not Ogg Opus: {why}"));
    let mut reader = ogg::PacketReader::new(Cursor::new(bytes));
    let head = reader
        .read_packet()
        .map_err(|e| bad(&e.to_string()))?
        .ok_or_else(|| bad("empty stream"))?;
    if !head.data.starts_with(b"OpusHead") || head.data.len() < 12 {
        return Err(bad("no OpusHead"));
    }
    let pre_skip = u64::from(u16::from_le_bytes([head.data[10], head.data[11]]));
    let mut last = 0u64;
    while let Some(p) = reader.read_packet().map_err(|e| bad(&e.to_string()))? {
        if p.last_in_page() {
            last = last.max(p.absgp_page());
        }
    }
    Ok(last.saturating_sub(pre_skip) / 48)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_sniffed_from_their_bytes() {
        assert_eq!(sniff(b"OggS\0\x02"), Some(Format::Ogg));
        assert_eq!(sniff(b"RIFF\0\0\0\0WAVEfmt "), Some(Format::Wav));
        assert_eq!(sniff(b"ID3\x04"), Some(Format::Mp3));
        assert_eq!(sniff(b"\x02#!SILK_V3\x01"), Some(Format::Silk));
        assert_eq!(sniff(b"#!SILK_V3"), Some(Format::Silk));
        assert_eq!(sniff(b"%PDF"), None);
    }

    #[test]
    fn a_wav_header_describes_its_samples() {
        let w = wav(&[0u8; 32_000], 16_000);
        assert_eq!(w.len(), 44 + 32_000);
        assert_eq!(sniff(&w), Some(Format::Wav));
        assert_eq!(wav_seconds(&w), Some(1.0));
    }

    #[test]
    fn an_ogg_stream_without_opushead_has_no_duration() {
        assert!(opus_duration_ms(b"OggS garbage").is_err());
        assert!(opus_duration_ms(b"").is_err());
    }
}
