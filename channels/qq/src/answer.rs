//! Reading one HTTP answer of the platform: the body under a cap, the OpenAPI success rule
//! (§6: 200/204 with JSON and no error `code`), the platform's own `message` cut short, and the
//! error for a status without a JSON body. The client and the token fetch both read answers
//! this way, so it sits below both.

use serde_json::Value;

use crate::error::{Call, Error};

/// Largest OpenAPI answer read; a bigger one is refused, not buffered.
pub const MAX_API_BODY: u64 = 1 << 20;

/// Reads an answer into memory, refusing one over `cap` bytes without buffering it.
pub(crate) async fn read_capped(
    call: Call,
    mut resp: reqwest::Response,
    cap: u64,
) -> Result<Vec<u8>, Error> {
    if resp.content_length().is_some_and(|n| n > cap) {
        return Err(Error::TooLarge { call, limit: cap });
    }
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| Error::network(call, e))? {
        if out.len() as u64 + chunk.len() as u64 > cap {
            return Err(Error::TooLarge { call, limit: cap });
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// An OpenAPI answer: 200/204 with JSON and no error `code` is success; anything else (201/202
/// "async success" included, §6) is [`Error::Api`] with the body's code and message.
pub(crate) fn parse_answer(call: Call, status: u16, bytes: &[u8]) -> Result<Value, Error> {
    let value = if bytes.iter().all(u8::is_ascii_whitespace) {
        Some(Value::Null)
    } else {
        serde_json::from_slice::<Value>(bytes).ok()
    };
    let code = value.as_ref().and_then(body_code).unwrap_or(0);
    match (status, value) {
        (200 | 204, Some(v)) if code == 0 => Ok(v),
        (200 | 204, None) => Err(Error::Malformed {
            call,
            detail: format!("HTTP {status}, body is not JSON"),
        }),
        (_, v) => Err(Error::Api {
            call,
            http_status: status,
            code,
            message: v.as_ref().map(short_message).unwrap_or_default(),
            retry_after: None,
        }),
    }
}

/// `code`, else `err_code` (§6 lists both).
fn body_code(v: &Value) -> Option<i64> {
    ["code", "err_code"]
        .iter()
        .filter_map(|k| v.get(*k).and_then(Value::as_i64))
        .find(|c| *c != 0)
}

/// The platform's `message`, cut to 200 characters (it names the problem, never our content).
pub(crate) fn short_message(v: &Value) -> String {
    v.get("message")
        .or_else(|| v.get("msg"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .chars()
        .take(200)
        .collect()
}

/// A non-JSON failure status.
pub(crate) fn status_error(call: Call, status: u16) -> Error {
    Error::Api {
        call,
        http_status: status,
        code: 0,
        message: String::new(),
        retry_after: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers() {
        assert!(parse_answer(Call::SendC2c, 200, br#"{"id":"m1","timestamp":"t"}"#).is_ok());
        assert!(parse_answer(Call::Interaction, 204, b"").is_ok());
        let e = parse_answer(Call::SendC2c, 202, br#"{"code":304023,"message":"audit"}"#)
            .expect_err("async success is not delivered");
        assert!(
            matches!(
                e,
                Error::Api {
                    http_status: 202,
                    code: 304023,
                    ..
                }
            ),
            "{e}"
        );
        let e = parse_answer(
            Call::SendC2c,
            200,
            br#"{"code":22009,"message":"msg limit exceed"}"#,
        )
        .expect_err("code in a 200");
        assert_eq!(e.code(), Some(22009));
        let e =
            parse_answer(Call::SendC2c, 400, br#"{"err_code":40054010}"#).expect_err("err_code");
        assert_eq!(e.code(), Some(40054010));
        let e = parse_answer(Call::SendC2c, 200, b"\x00\xff").expect_err("garbage");
        assert!(matches!(e, Error::Malformed { .. }));
        let e = parse_answer(Call::SendC2c, 503, b"<html>").expect_err("gateway page");
        assert_eq!(e.class(), crate::ErrorClass::Transient);
    }
}
