//! Which open platform to talk to: Feishu (China), Lark (international) or an explicit base URL.

use std::fmt;
use std::str::FromStr;

/// The brand or base URL of the open platform.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Domain {
    /// `https://open.feishu.cn`.
    Feishu,
    /// `https://open.larksuite.com`.
    Lark,
    /// Any other base URL (a proxy, or a fake on `http://127.0.0.1:PORT`), without trailing slash.
    Custom(String),
}

/// A `domain` value that is neither `feishu`, `lark` nor an http(s) URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("domain must be `feishu`, `lark` or an http(s):// base URL, got {0:?}")]
pub struct DomainError(pub String);

impl Domain {
    /// The OpenAPI and WS-endpoint base URL, without trailing slash.
    pub fn base_url(&self) -> &str {
        match self {
            Domain::Feishu => "https://open.feishu.cn",
            Domain::Lark => "https://open.larksuite.com",
            Domain::Custom(url) => url,
        }
    }
}

impl FromStr for Domain {
    type Err = DomainError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        match t.to_ascii_lowercase().as_str() {
            "feishu" => return Ok(Domain::Feishu),
            "lark" | "larksuite" => return Ok(Domain::Lark),
            _ => {}
        }
        match url::Url::parse(t) {
            Ok(u) if (u.scheme() == "http" || u.scheme() == "https") && u.host().is_some() => {
                Ok(Domain::Custom(t.trim_end_matches('/').to_string()))
            }
            _ => Err(DomainError(s.to_string())),
        }
    }
}

impl fmt::Display for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Domain::Feishu => f.write_str("feishu"),
            Domain::Lark => f.write_str("lark"),
            Domain::Custom(u) => f.write_str(u),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_brands_and_urls() {
        assert_eq!("feishu".parse::<Domain>(), Ok(Domain::Feishu));
        assert_eq!("Lark".parse::<Domain>(), Ok(Domain::Lark));
        let d: Domain = "http://127.0.0.1:8080/".parse().unwrap();
        assert_eq!(d.base_url(), "http://127.0.0.1:8080");
        assert_eq!(Domain::Lark.base_url(), "https://open.larksuite.com");
        assert!("ftp://x".parse::<Domain>().is_err());
        assert!("nonsense".parse::<Domain>().is_err());
    }
}
