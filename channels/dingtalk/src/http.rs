//! The plumbing under every HTTP call: a timeout, a bounded body read, and the two error
//! shapes (new API: non-2xx `{code, message}`; old API and webhooks: 200 `errcode`), turned
//! into [`Error`] here and nowhere else.

use std::time::Duration;

use serde_json::Value;

use crate::call::Call;
use crate::error::{Error, network};

/// Largest API answer read (they are small JSON objects; a proxy page may not be).
pub(crate) const MAX_ANSWER_BYTES: usize = 1 << 20;

/// A read answer: status, body, `Retry-After`.
pub(crate) struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
    pub retry_after: Option<Duration>,
}

/// Sends `req` and reads its answer (at most [`MAX_ANSWER_BYTES`]).
pub(crate) async fn send(
    call: Call,
    req: reqwest::RequestBuilder,
    timeout: Duration,
) -> Result<Answer, Error> {
    let mut resp = req
        .timeout(timeout)
        .send()
        .await
        .map_err(|e| network(call, e, timeout))?;
    let status = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| network(call, e, timeout))? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(Error::Malformed {
                call,
                detail: format!("answer larger than {MAX_ANSWER_BYTES} bytes"),
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Answer {
        status,
        body,
        retry_after,
    })
}

/// A new-API answer: the JSON body of a 2xx, else [`Error::Api`] (or [`Error::Http`] when the
/// body is not the platform's JSON).
pub(crate) fn new_api(call: Call, a: Answer) -> Result<Value, Error> {
    let parsed: Option<Value> = serde_json::from_slice(&a.body).ok();
    if (200..300).contains(&a.status) {
        return match parsed {
            Some(v) => Ok(v),
            None if a.body.iter().all(u8::is_ascii_whitespace) => Ok(Value::Null),
            None => Err(Error::Malformed {
                call,
                detail: "the answer is not JSON".into(),
            }),
        };
    }
    let code = parsed
        .as_ref()
        .and_then(|v| v.get("code"))
        .and_then(|c| match c {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        });
    let Some(code) = code else {
        return Err(Error::Http {
            call,
            status: a.status,
            retry_after: a.retry_after,
        });
    };
    let v = parsed.unwrap_or(Value::Null);
    let message = short(v.get("message").and_then(Value::as_str).unwrap_or_default());
    let required_scopes = v
        .pointer("/accessdenieddetail/requiredScopes")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    Err(Error::Api {
        call,
        status: a.status,
        code,
        message,
        required_scopes,
        retry_after: a.retry_after,
    })
}

/// An old-API or webhook answer: the JSON of a 200 with `errcode` 0 (or none).
pub(crate) fn old_api(call: Call, a: Answer) -> Result<Value, Error> {
    if !(200..300).contains(&a.status) {
        return Err(Error::Http {
            call,
            status: a.status,
            retry_after: a.retry_after,
        });
    }
    let v: Value = serde_json::from_slice(&a.body).map_err(|_| Error::Malformed {
        call,
        detail: "the answer is not JSON".into(),
    })?;
    let errcode = v.get("errcode").and_then(Value::as_i64).unwrap_or(0);
    if errcode != 0 {
        let errmsg = short(v.get("errmsg").and_then(Value::as_str).unwrap_or_default());
        return Err(Error::Errcode {
            call,
            errcode,
            errmsg,
        });
    }
    Ok(v)
}

/// The platform's message, cut to a log-friendly length on a character boundary.
fn short(s: &str) -> String {
    s.chars().take(200).collect()
}

/// A string field of a JSON answer, or [`Error::Malformed`] naming it.
pub(crate) fn field<'a>(call: Call, v: &'a Value, name: &str) -> Result<&'a str, Error> {
    v.get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| Error::Malformed {
            call,
            detail: format!("no `{name}` in the answer"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, body: &str) -> Answer {
        Answer {
            status,
            body: body.as_bytes().to_vec(),
            retry_after: None,
        }
    }

    #[test]
    fn new_api_errors_carry_code_and_scopes_and_proxy_pages_are_http() {
        let e = new_api(
            Call::BatchSend,
            answer(
                403,
                r#"{"code":"Forbidden.AccessDenied.AccessTokenPermissionDenied","message":"no","accessdenieddetail":{"requiredScopes":["qyapi_robot_sendmsg"]}}"#,
            ),
        )
        .unwrap_err();
        let Error::Api {
            code,
            required_scopes,
            ..
        } = e
        else {
            panic!("{e:?}")
        };
        assert!(code.ends_with("PermissionDenied"));
        assert_eq!(required_scopes, ["qyapi_robot_sendmsg"]);
        assert!(matches!(
            new_api(Call::Token, answer(502, "<html>bad gateway</html>")),
            Err(Error::Http { status: 502, .. })
        ));
        assert!(matches!(
            new_api(Call::Token, answer(200, "<xml/>")),
            Err(Error::Malformed { .. })
        ));
        assert_eq!(new_api(Call::Token, answer(200, "")).unwrap(), Value::Null);
    }

    #[test]
    fn old_api_errcode_and_hostile_bodies() {
        assert!(matches!(
            old_api(
                Call::Upload,
                answer(200, r#"{"errcode":40004,"errmsg":"bad type"}"#)
            ),
            Err(Error::Errcode { errcode: 40004, .. })
        ));
        assert!(
            old_api(
                Call::Upload,
                answer(200, r#"{"errcode":0,"media_id":"@a"}"#)
            )
            .is_ok()
        );
        let deep = "[".repeat(100_000);
        assert!(old_api(Call::Upload, answer(200, &deep)).is_err());
        assert!(new_api(Call::Token, answer(400, &deep)).is_err());
        let long = format!(r#"{{"errcode":1,"errmsg":"{}"}}"#, "错".repeat(5000));
        let Err(Error::Errcode { errmsg, .. }) = old_api(Call::Upload, answer(200, &long)) else {
            panic!()
        };
        assert_eq!(errmsg.chars().count(), 200);
    }
}
