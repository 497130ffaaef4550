//! WeChat's SILK voice notes decoded to PCM, with `silk-codec` (the Skype SILK SDK's C sources,
//! bundled and built by `cc`; bindgen needs libclang at build time, which `.ci/run` installs).
//! Chosen over `silk-rs` because it accepts both WeChat's `0x02`-prefixed variant and the
//! standard one, stops at the `FF FF` end mark instead of failing on it, and reports a
//! truncated frame as an error (spec B2). Behind the `silk` feature (on by default): without
//! it a voice note with no platform transcript reaches the agent as its file and a note.

use super::SpeechFailure;

/// Mono s16le PCM at `rate` from a SILK file.
#[cfg(feature = "silk")]
pub fn decode(bytes: &[u8], rate: u32) -> Result<Vec<u8>, SpeechFailure> {
    let rate = i32::try_from(rate).map_err(|_| SpeechFailure::Decode("bad rate".into()))?;
    silk_codec::decode_silk(bytes, rate).map_err(|e| SpeechFailure::Decode(format!("SILK: {e}")))
}

/// Without the `silk` feature nothing decodes SILK.
#[cfg(not(feature = "silk"))]
pub fn decode(_bytes: &[u8], _rate: u32) -> Result<Vec<u8>, SpeechFailure> {
    Err(SpeechFailure::Decode(
        "this build has no SILK decoder (built without the `silk` feature)".into(),
    ))
}

/// A SILK file in WeChat's variant (`0x02` first, no `FF FF` end mark) from mono s16le `pcm`
/// at `rate`: for tests and benches, which make their voice notes with the real encoder.
#[cfg(all(feature = "silk", any(test, feature = "testing")))]
pub fn encode_wechat(pcm: &[u8], rate: u32) -> Result<Vec<u8>, SpeechFailure> {
    let rate = i32::try_from(rate).map_err(|_| SpeechFailure::Decode("bad rate".into()))?;
    silk_codec::encode_silk(pcm, rate, 24_000, true)
        .map_err(|e| SpeechFailure::Decode(format!("SILK: {e}")))
}

#[cfg(all(test, feature = "silk"))]
mod tests {
    use super::*;

    fn tone(ms: usize, rate: usize) -> Vec<u8> {
        (0..rate * ms / 1000)
            .flat_map(|i| {
                let v = ((i as f64 * 440.0 * std::f64::consts::TAU / rate as f64).sin() * 8000.0)
                    as i16;
                v.to_le_bytes()
            })
            .collect()
    }

    #[test]
    fn wechat_silk_round_trips_with_and_without_its_marks() {
        let pcm = tone(1000, 24_000);
        let silk = encode_wechat(&pcm, 24_000).expect("encodes");
        assert_eq!(silk[0], 0x02, "the Tencent variant starts with 0x02");
        let out = decode(&silk, 16_000).expect("decodes");
        // One second at 16 kHz, s16le: 50 frames of 20 ms.
        assert_eq!(out.len(), 32_000);
        let standard = &silk[1..];
        assert_eq!(decode(standard, 16_000).expect("standard").len(), 32_000);
        let mut ended = silk.clone();
        ended.extend_from_slice(&[0xFF, 0xFF]);
        assert_eq!(decode(&ended, 16_000).expect("with FF FF").len(), 32_000);
        let cut = &silk[..silk.len() - 3];
        assert!(
            decode(cut, 16_000).is_err(),
            "a truncated frame is an error"
        );
    }
}
