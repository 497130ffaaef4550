//! The `[qq.ACCOUNT]` table: QQ's own keys, checked at load through [`TABLE`].

use linkme::distributed_slice;

use crate::config::{Channel, KeyRange, PLATFORM_TABLES, TableSchema};
use crate::port::setup::{Said, Setup};

crate::platform_table!(
    /// QQ-only settings.
    QqSettings {
    /// The owner's `user_openid` (this bot's id for them in one-to-one chats); unset: the owner
    /// pairs with the code `login` shows.
    owner: Option<String>,
    /// The OpenAPI base URL (default `https://api.sgroup.qq.com`; the sandbox
    /// `https://sandbox.api.sgroup.qq.com`, or a test's fake).
    api_base: Option<String>,
    /// The access-token host (default `https://bots.qq.com`; a test's fake).
    token_base: Option<String>,
    /// Whether QQ granted this bot custom keyboards and markdown (both by invitation only,
    /// spec §4.3, §4.5): questions then carry Yes/No buttons. Default off: questions are text
    /// answered with their code (which also works when buttons are on).
    buttons: Option<bool>,
    /// Receive through QQ's webhook (the spec's fallback, §1.5) instead of the gateway
    /// WebSocket. Default off.
    webhook: Option<bool>,
    /// Where the webhook listener binds (default `127.0.0.1:8443`, loopback: QQ reaches it
    /// through the operator's HTTPS proxy).
    webhook_listen: Option<String>,
});

/// QQ's table has no numeric keys.
const RANGES: &[KeyRange] = &[];

/// QQ's account tables, for the configuration.
#[distributed_slice(PLATFORM_TABLES)]
static TABLE: TableSchema = TableSchema {
    channel: Channel::Qq,
    check: check_table,
    ranges: RANGES,
};

/// What `init` asks when it adds a QQ bot: only its name (the AppID and AppSecret are the
/// login's).
pub static SETUP: Setup = Setup {
    name: Said {
        en: "A name for the QQ bot",
        zh: "QQ 机器人的名称",
    },
    default_name: "bot",
    questions: &[],
};
