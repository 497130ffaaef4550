//! Typing a `get_qrcode_status` answer: the status word, and the credentials a confirmed login
//! carries. The client reads it; the login walk (`login.rs`) acts on it.

use crate::error::Error;
use crate::token::BotToken;
use crate::types::{LoginCredentials, QrStatus, QrStatusBody};

/// Types a `get_qrcode_status` body.
pub(crate) fn parse_qr_status(body: QrStatusBody) -> Result<QrStatus, Error> {
    let word = body.status.clone().unwrap_or_default();
    Ok(match word.as_str() {
        "wait" => QrStatus::Wait,
        "scaned" => QrStatus::Scanned,
        "confirmed" => QrStatus::Confirmed(credentials(body)?),
        "expired" => QrStatus::Expired,
        "scaned_but_redirect" => QrStatus::Redirect {
            host: body.redirect_host.filter(|h| !h.trim().is_empty()),
        },
        "need_verifycode" => QrStatus::NeedVerifyCode,
        "verify_code_blocked" => QrStatus::VerifyCodeBlocked,
        "binded_redirect" => QrStatus::AlreadyBound,
        _ => QrStatus::Unknown(word),
    })
}

fn credentials(body: QrStatusBody) -> Result<LoginCredentials, Error> {
    let bot_token = body
        .bot_token
        .filter(|t| !t.trim().is_empty())
        .ok_or(Error::IncompleteLogin { field: "bot_token" })?;
    // The plugin treats a missing bot id as a failed login; so do we.
    let bot_id = body
        .ilink_bot_id
        .filter(|b| !b.is_empty())
        .ok_or(Error::IncompleteLogin {
            field: "ilink_bot_id",
        })?;
    Ok(LoginCredentials {
        bot_token: BotToken::new(bot_token),
        bot_id,
        base_url: body.baseurl.filter(|u| !u.is_empty()),
        owner_user_id: body.ilink_user_id.filter(|u| !u.is_empty()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_qr_status_word_maps() {
        let body = |status: &str| QrStatusBody {
            status: Some(status.into()),
            ..Default::default()
        };
        assert_eq!(parse_qr_status(body("wait")).ok(), Some(QrStatus::Wait));
        assert_eq!(
            parse_qr_status(body("scaned")).ok(),
            Some(QrStatus::Scanned)
        );
        assert_eq!(
            parse_qr_status(body("expired")).ok(),
            Some(QrStatus::Expired)
        );
        assert_eq!(
            parse_qr_status(body("need_verifycode")).ok(),
            Some(QrStatus::NeedVerifyCode)
        );
        assert_eq!(
            parse_qr_status(body("verify_code_blocked")).ok(),
            Some(QrStatus::VerifyCodeBlocked)
        );
        assert_eq!(
            parse_qr_status(body("binded_redirect")).ok(),
            Some(QrStatus::AlreadyBound)
        );
        assert_eq!(
            parse_qr_status(body("scaned_but_redirect")).ok(),
            Some(QrStatus::Redirect { host: None })
        );
        let mut r = body("scaned_but_redirect");
        r.redirect_host = Some("idc2.example".into());
        assert_eq!(
            parse_qr_status(r).ok(),
            Some(QrStatus::Redirect {
                host: Some("idc2.example".into())
            })
        );
        assert_eq!(
            parse_qr_status(body("brand_new")).ok(),
            Some(QrStatus::Unknown("brand_new".into()))
        );
        // Confirmed without a bot id is a failed login, as in the plugin.
        let mut c = body("confirmed");
        c.bot_token = Some("tok".into());
        assert!(matches!(
            parse_qr_status(c.clone()),
            Err(Error::IncompleteLogin {
                field: "ilink_bot_id"
            })
        ));
        c.ilink_bot_id = Some("b@im.bot".into());
        let Ok(QrStatus::Confirmed(creds)) = parse_qr_status(c) else {
            panic!("confirmed")
        };
        assert_eq!(
            (creds.bot_token.expose(), creds.bot_id.as_str()),
            ("tok", "b@im.bot")
        );
        assert!(matches!(
            parse_qr_status(body("confirmed")),
            Err(Error::IncompleteLogin { field: "bot_token" })
        ));
    }
}
