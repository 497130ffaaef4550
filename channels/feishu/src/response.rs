//! Reading a response of Feishu's REST API: a bounded JSON object with its HTTP status and the
//! rate limit's reset (`x-ogw-ratelimit-reset`). The token cache, messages and media all read
//! their answers here, below the client that sends them.

use std::time::Duration;

use serde_json::Value;

use crate::error::Error;

/// Largest response body we read; real responses are a few KB.
const MAX_RESPONSE_BYTES: usize = 4 << 20;

/// Reads a JSON response: `(http status, body, x-ogw-ratelimit-reset)`.
pub(crate) async fn read_json(
    resp: reqwest::Response,
) -> Result<(u16, Value, Option<Duration>), Error> {
    let status = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get("x-ogw-ratelimit-reset")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0 && *s < 86_400.0)
        .map(Duration::from_secs_f64);
    let bytes = read_limited(resp).await?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(v) if v.is_object() => Ok((status, v, retry_after)),
        _ => Err(Error::Http {
            status,
            retry_after,
        }),
    }
}

async fn read_limited(mut resp: reqwest::Response) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        if out.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(Error::Decode("response body too large".into()));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}
