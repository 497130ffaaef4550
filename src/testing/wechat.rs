//! The WeChat adapter with test timings, and media on the fake iLink CDN, for the tests and
//! benches that drive the daemon against `scv_wechat::fake`.

use std::sync::Arc;

use scv_wechat::cdn::MediaKey;
use scv_wechat::fake::FakeHandle;
use scv_wechat::media::{CdnMedia, ImageItem};
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
