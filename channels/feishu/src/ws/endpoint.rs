//! `POST /callback/ws/endpoint`: a fresh single-use socket URL and the server's ClientConfig.

use std::time::Duration;

use serde_json::Value;

use crate::error::Error;
use crate::response::read_json;
use crate::rest::Client;
use crate::secret::Secret;

/// Path of endpoint discovery (not under `/open-apis`).
pub const ENDPOINT_PATH: &str = "/callback/ws/endpoint";

/// Shortest ping interval accepted from a server, so a hostile value cannot spin the loop.
const MIN_PING: Duration = Duration::from_millis(20);

/// Reconnect and keepalive settings sent by the server (seconds on the wire).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClientConfig {
    /// Reconnect attempts; negative = infinite.
    pub reconnect_count: i64,
    /// Pause between reconnect attempts after the first.
    pub reconnect_interval: Duration,
    /// Upper bound of the random delay before the first reconnect attempt.
    pub reconnect_nonce: Duration,
    /// Interval between client pings.
    pub ping_interval: Duration,
}

impl Default for ClientConfig {
    /// The SDK defaults used until a server sends its own.
    fn default() -> Self {
        Self {
            reconnect_count: -1,
            reconnect_interval: Duration::from_secs(120),
            reconnect_nonce: Duration::from_secs(30),
            ping_interval: Duration::from_secs(120),
        }
    }
}

impl ClientConfig {
    /// Adopts the fields present in a `ClientConfig` JSON object; ignores bad values.
    pub fn merge_json(&mut self, v: &Value) {
        let secs = |k: &str| {
            v.get(k)
                .and_then(Value::as_f64)
                .filter(|s| s.is_finite() && *s >= 0.0 && *s < 86_400.0)
                .map(Duration::from_secs_f64)
        };
        if let Some(c) = v.get("ReconnectCount").and_then(Value::as_i64) {
            self.reconnect_count = c;
        }
        if let Some(d) = secs("ReconnectInterval") {
            self.reconnect_interval = d;
        }
        if let Some(d) = secs("ReconnectNonce") {
            self.reconnect_nonce = d;
        }
        if let Some(d) = secs("PingInterval") {
            self.ping_interval = d.max(MIN_PING);
        }
    }
}

/// A discovered socket endpoint.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// `wss://…/ws/v2?…ticket=…`: secret, single use.
    pub url: Secret,
    /// `service_id` from the URL query, written into client frames.
    pub service_id: i32,
    /// `device_id` from the URL query: the connection id, for logs.
    pub device_id: String,
    /// Server settings, if the response carried them.
    pub config: Option<Value>,
}

/// Asks for a fresh socket URL.
pub async fn discover(client: &Client) -> Result<Endpoint, Error> {
    let creds = client.credentials();
    let body = serde_json::json!({"AppID": creds.app_id, "AppSecret": creds.app_secret.expose()});
    let resp = client
        .http()
        .post(format!("{}{ENDPOINT_PATH}", client.base_url()))
        .header("locale", "zh")
        .json(&body)
        .send()
        .await?;
    let (status, v, retry_after) = read_json(resp).await?;
    if status != 200 {
        return Err(Error::Http {
            status,
            retry_after,
        });
    }
    let code = v.get("code").and_then(Value::as_i64).unwrap_or(-1);
    if code != 0 {
        let msg = v
            .get("msg")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        return Err(Error::Endpoint { code, msg });
    }
    let data = v
        .get("data")
        .ok_or_else(|| Error::Decode("endpoint without data".into()))?;
    let raw = data
        .get("URL")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::Decode("endpoint without URL".into()))?;
    parse_endpoint(raw, data.get("ClientConfig").cloned())
}

fn parse_endpoint(raw: &str, config: Option<Value>) -> Result<Endpoint, Error> {
    let url =
        url::Url::parse(raw).map_err(|_| Error::Decode("endpoint URL does not parse".into()))?;
    let query = |k: &str| {
        url.query_pairs()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.into_owned())
    };
    let service_id = query("service_id")
        .and_then(|s| s.parse::<i32>().ok())
        .ok_or_else(|| Error::Decode("endpoint URL without a numeric service_id".into()))?;
    Ok(Endpoint {
        url: Secret::new(raw),
        service_id,
        device_id: query("device_id").unwrap_or_default(),
        config,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_query_and_config() {
        let e = parse_endpoint(
            "wss://h/ws/v2?device_id=d1&service_id=33554678&ticket=t",
            None,
        )
        .unwrap();
        assert_eq!(e.service_id, 33554678);
        assert_eq!(e.device_id, "d1");
        assert!(!format!("{e:?}").contains("ticket"));
        assert!(parse_endpoint("wss://h/ws/v2?service_id=x", None).is_err());
        let mut c = ClientConfig::default();
        c.merge_json(&serde_json::json!({"PingInterval": 90, "ReconnectNonce": 0.5, "ReconnectCount": 3, "ReconnectInterval": -1}));
        assert_eq!(c.ping_interval, Duration::from_secs(90));
        assert_eq!(c.reconnect_nonce, Duration::from_millis(500));
        assert_eq!(c.reconnect_count, 3);
        assert_eq!(c.reconnect_interval, Duration::from_secs(120));
        c.merge_json(&serde_json::json!({"PingInterval": 0}));
        assert_eq!(c.ping_interval, MIN_PING);
    }
}
