//! The request headers of spec §1.1 and the `base_info` body field of §1.2.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

/// Header naming how `Authorization` is to be read; always [`AUTHORIZATION_TYPE_VALUE`].
pub const AUTHORIZATION_TYPE: &str = "AuthorizationType";
/// The only value of [`AUTHORIZATION_TYPE`].
pub const AUTHORIZATION_TYPE_VALUE: &str = "ilink_bot_token";
/// Header with a fresh random uint32 per request, decimal then base64.
pub const WECHAT_UIN: &str = "X-WECHAT-UIN";
/// Header with the iLink app id (`bot`).
pub const APP_ID: &str = "iLink-App-Id";
/// Header with the encoded client version, see [`encode_client_version`].
pub const APP_CLIENT_VERSION: &str = "iLink-App-ClientVersion";
/// Optional routing header, sent only when configured.
pub const ROUTE_TAG: &str = "SKRouteTag";

/// Who the client says it is, in headers and in `base_info`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    /// `iLink-App-Id`.
    pub app_id: String,
    /// The version string sent as `base_info.channel_version`; its numeric form goes into
    /// `iLink-App-ClientVersion`.
    pub channel_version: String,
    /// `base_info.bot_agent` (ASCII, at most 256 bytes).
    pub bot_agent: String,
    /// `SKRouteTag`, sent only when set.
    pub route_tag: Option<String>,
}

impl Default for ClientIdentity {
    fn default() -> Self {
        ClientIdentity {
            app_id: "bot".to_owned(),
            // We present the official plugin version the spec was read from, since the closed
            // server may tune behaviour per version; we name ourselves in `bot_agent`, which
            // exists for observability.
            channel_version: "2.4.3".to_owned(),
            bot_agent: sanitize_bot_agent(&format!(
                "scv-bridge/{} (scv-wechat)",
                env!("CARGO_PKG_VERSION")
            )),
            route_tag: None,
        }
    }
}

impl ClientIdentity {
    /// The decimal `iLink-App-ClientVersion` value for `channel_version`.
    pub fn client_version_header(&self) -> String {
        encode_client_version(&self.channel_version).to_string()
    }

    /// The `base_info` object for POST bodies.
    pub fn base_info(&self) -> BaseInfo {
        BaseInfo {
            channel_version: self.channel_version.clone(),
            bot_agent: Some(self.bot_agent.clone()),
        }
    }
}

/// The `base_info` object every POST body except `get_bot_qrcode` carries (spec §1.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BaseInfo {
    /// The client version string, e.g. `"2.4.3"`.
    pub channel_version: String,
    /// UA-style client description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bot_agent: Option<String>,
}

/// Encodes `major.minor.patch` as `(major<<16)|(minor<<8)|patch` (2.4.3 → 132099). Parts that
/// are missing or not numbers count as 0, and each part is clamped to a byte so a strange
/// version string can never produce a value with the high byte set.
pub fn encode_client_version(version: &str) -> u32 {
    let mut parts = version
        .split('.')
        .map(|p| p.trim().parse::<u32>().unwrap_or(0).min(255));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    let patch = parts.next().unwrap_or(0);
    (major << 16) | (minor << 8) | patch
}

/// A fresh `X-WECHAT-UIN` value: a random uint32 in decimal ASCII, then standard base64.
pub fn random_uin() -> String {
    encode_uin(rand::random::<u32>())
}

/// Encodes one uint32 the way `X-WECHAT-UIN` wants it (3141592653 → `MzE0MTU5MjY1Mw==`).
pub fn encode_uin(value: u32) -> String {
    STANDARD.encode(value.to_string())
}

/// Whether `header` is a valid `X-WECHAT-UIN`: base64 of a decimal uint32.
pub fn is_valid_uin(header: &str) -> bool {
    let Ok(bytes) = STANDARD.decode(header.trim()) else {
        return false;
    };
    std::str::from_utf8(&bytes)
        .ok()
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .is_some_and(|s| s.parse::<u32>().is_ok())
}

/// Keeps printable ASCII only and cuts to 256 bytes, as the spec requires of `bot_agent`.
pub fn sanitize_bot_agent(agent: &str) -> String {
    let mut out: String = agent
        .chars()
        .filter(|c| c.is_ascii() && !c.is_ascii_control())
        .collect();
    out.truncate(256);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_version_matches_spec_examples() {
        assert_eq!(encode_client_version("2.4.3"), 132099);
        assert_eq!(encode_client_version("2.2.0"), 131584);
        assert_eq!(encode_client_version("1.0.3"), 65539);
        assert_eq!(encode_client_version("garbage"), 0);
        assert_eq!(encode_client_version("999.1.1"), (255 << 16) | (1 << 8) | 1);
    }

    #[test]
    fn uin_matches_spec_example_and_validates() {
        assert_eq!(encode_uin(3141592653), "MzE0MTU5MjY1Mw==");
        assert!(is_valid_uin("MzE0MTU5MjY1Mw=="));
        assert!(is_valid_uin(&random_uin()));
        assert!(!is_valid_uin("not base64!"));
        assert!(!is_valid_uin(&STANDARD.encode("12a")));
        assert!(!is_valid_uin(&STANDARD.encode("99999999999")));
    }

    #[test]
    fn uin_is_fresh_per_call() {
        // Two equal draws from 2^32 values would be a 1 in 4 billion event; three in a row
        // means the value is not random.
        let a = random_uin();
        assert!(a != random_uin() || a != random_uin());
    }

    #[test]
    fn bot_agent_is_ascii_and_bounded() {
        assert_eq!(sanitize_bot_agent("Bot/1 (ünï)\n"), "Bot/1 (n)");
        assert_eq!(sanitize_bot_agent(&"x".repeat(300)).len(), 256);
        assert!(
            ClientIdentity::default()
                .bot_agent
                .starts_with("scv-bridge/")
        );
    }
}
