//! The `[feishu.ACCOUNT]` table: Feishu's own keys, checked at load through [`TABLE`].

use linkme::distributed_slice;
use serde::{Deserialize, Serialize};

use crate::config::{Channel, PLATFORM_TABLES, TableSchema};

/// How a Feishu account receives events.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FeishuMode {
    /// The WebSocket long connection (no public URL needed).
    #[default]
    Websocket,
    /// HTTP callbacks to a listener.
    Webhook,
}

crate::platform_table!(
    /// Feishu-only settings.
    FeishuSettings {
    /// `feishu`, `lark` or a base URL.
    domain: Option<String>,
    /// `websocket` or `webhook`.
    #[serde(default)]
    mode: FeishuMode,
    /// The owner's open_id, or `app_owner` to ask the application API.
    owner: Option<String>,
    /// Where webhook mode listens (`127.0.0.1:8790`).
    webhook_listen: Option<String>,
});

/// Feishu's account tables, for the configuration.
#[distributed_slice(PLATFORM_TABLES)]
static TABLE: TableSchema = TableSchema {
    channel: Channel::Feishu,
    check: check_table,
    ranges: &[],
};
