//! The `[feishu.ACCOUNT]` table: Feishu's own keys, checked at load through [`TABLE`].

use linkme::distributed_slice;
use serde::{Deserialize, Serialize};

use crate::config::{Channel, PLATFORM_TABLES, TableSchema};
use crate::port::setup::{Choice, Goes, Question, Said, Setup};

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
    /// The accounts host "scan to create" registers apps on (a proxy, a test's fake), as
    /// `login --accounts URL` gives it; default: the platform's (`accounts.feishu.cn`).
    accounts_url: Option<String>,
});

/// Feishu's account tables, for the configuration.
#[distributed_slice(PLATFORM_TABLES)]
static TABLE: TableSchema = TableSchema {
    channel: Channel::Feishu,
    check: check_table,
    ranges: &[],
};

/// What `init` asks when it adds a Feishu account: the domain (written), the app ID (for the
/// login only).
pub static SETUP: Setup = Setup {
    name: Said {
        en: "A name for the Feishu account",
        zh: "飞书账号的名称",
    },
    default_name: "work",
    questions: &[
        Question {
            key: "domain",
            goes: Goes::Table,
            prompt: Said {
                en: "Feishu (China) or Lark (international)?",
                zh: "飞书（中国）还是 Lark（国际版）？",
            },
            choices: &[
                Choice {
                    value: "feishu",
                    label: Said {
                        en: "Feishu (open.feishu.cn)",
                        zh: "飞书（open.feishu.cn）",
                    },
                },
                Choice {
                    value: "lark",
                    label: Said {
                        en: "Lark (open.larksuite.com)",
                        zh: "Lark（国际版，open.larksuite.com）",
                    },
                },
            ],
            default: None,
        },
        Question {
            key: "app-id",
            goes: Goes::Login,
            prompt: Said {
                en: "The Feishu app ID (cli_...; empty: log in later)",
                zh: "飞书应用 ID（cli_...；留空：稍后登录）",
            },
            choices: &[],
            default: None,
        },
    ],
};
