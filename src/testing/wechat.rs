//! The WeChat adapter with test timings, and media on the fake iLink CDN, for the tests and
//! benches that drive the daemon against `scv_wechat::fake`.

use std::sync::Arc;

use scv_wechat::cdn::MediaKey;
use scv_wechat::fake::FakeHandle;
use scv_wechat::media::{CdnMedia, ImageItem, VoiceItem};
use scv_wechat::message::MessageItem;

use crate::adapters::PlatformParts;
use crate::adapters::wechat::{Tuning, WechatComponent};
use crate::config::AccountSpec;
use crate::supervisor::{Component, ComponentFactory};

/// Builds WeChat components with `tuning` (a bench's pacing, a test's short holds) instead of
/// the platform's own timings.
pub struct WechatFactory {
    /// The daemon's parts the components are built from.
    pub parts: PlatformParts,
    /// The timings every component gets.
    pub tuning: Tuning,
}

impl ComponentFactory for WechatFactory {
    fn build(&self, spec: &AccountSpec) -> Arc<dyn Component> {
        Arc::new(
            WechatComponent::new(self.parts.ports().port(spec)).with_tuning(self.tuning.clone()),
        )
    }
}

/// An image item whose bytes sit on the fake CDN, encrypted with a fresh key that the item
/// carries in `image_item.aeskey` (hex), as a phone sends a photo.
pub fn image_item(h: &FakeHandle, bytes: &[u8]) -> MessageItem {
    let key = MediaKey::random();
    let param = h.cdn_put(bytes, Some(&key));
    MessageItem {
        item_type: Some(2),
        image_item: Some(ImageItem {
            media: Some(CdnMedia {
                encrypt_query_param: Some(param),
                ..CdnMedia::default()
            }),
            aeskey: Some(key.hex()),
            ..ImageItem::default()
        }),
        ..MessageItem::default()
    }
}

/// A voice note whose SILK audio sits on the fake CDN (key in form B, as iLink sends voice),
/// with WeChat's transcript when `text` is given; `playtime` is the audio's length in ms.
pub fn voice_item_on_cdn(
    h: &FakeHandle,
    silk: &[u8],
    playtime_ms: i64,
    text: Option<&str>,
) -> MessageItem {
    let key = MediaKey::random();
    let param = h.cdn_put(silk, Some(&key));
    MessageItem {
        item_type: Some(3),
        voice_item: Some(VoiceItem {
            media: Some(CdnMedia {
                encrypt_query_param: Some(param),
                aes_key: Some(key.base64_of_hex()),
                encrypt_type: Some(1),
                full_url: None,
            }),
            encode_type: Some(6),
            sample_rate: Some(24_000),
            playtime: Some(playtime_ms),
            text: text.map(str::to_string),
            ..VoiceItem::default()
        }),
        ..MessageItem::default()
    }
}

/// `ms` milliseconds of a 440 Hz tone, mono s16le at `rate`: what a test speaks into the encoder.
pub fn tone(ms: usize, rate: usize) -> Vec<u8> {
    (0..rate * ms / 1000)
        .flat_map(|i| {
            let t = i as f64 * 440.0 * std::f64::consts::TAU / rate as f64;
            ((t.sin() * 8000.0) as i16).to_le_bytes()
        })
        .collect()
}

/// A WeChat voice note of `ms` milliseconds made by the real SILK encoder (Tencent variant:
/// `0x02` first, no `FF FF` end), from [`tone`] at 24 kHz as phones record.
#[cfg(feature = "silk")]
pub fn wechat_silk(ms: usize) -> Vec<u8> {
    crate::speech::encode_silk_for_tests(&tone(ms, 24_000), 24_000)
        .unwrap_or_else(|e| panic!("the SILK encoder takes 24 kHz PCM: {e}"))
}
