//! WeChat's login steps: a QR code scanned with WeChat. The scanner becomes the account's
//! owner; the entry (bot token, bot id, base URL, owner id) replaces an earlier login as a
//! whole. The account's component never writes credentials, so a task stopping after this
//! login cannot put the old token back.

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use scv_wechat::login::{LoginEvent, LoginOptions, LoginOutcome, run_login};
use scv_wechat::types::DEFAULT_BASE_URL;
use scv_wechat::{BotToken, Client, LoginCredentials};

use super::WechatSettings;
use crate::port::login_flow::{
    Answers, Checked, Field, LoginFlow, LoginInput, LoginUi, OwnerBy, Shown, Verified,
};
use crate::secrets::{Credentials, OWNER_FIELD};

/// The stored login's field naming the bot (from the scan's answer; the same-bot check reads it).
pub(crate) const BOT_ID_FIELD: &str = "bot_id";
/// The stored login's secret.
pub(crate) const TOKEN_FIELD: &str = "bot_token";
/// The stored login's iLink host (the one the scan happened on).
pub(super) const BASE_URL_FIELD: &str = "base_url";

/// `--base-url URL`: the iLink host to log in against (never asked).
const BASE_URL: Field = Field {
    prompt: None,
    ..Field::asked(BASE_URL_FIELD, "iLink base URL", "")
        .flag("base-url")
        .optional()
};

/// The digits WeChat shows on the phone when it wants them typed here.
const VERIFY_CODE: Field = Field::asked(
    "verify_code",
    "Enter the digits shown on your phone",
    "no verification code given",
);

/// WeChat's login.
pub(super) struct WechatLogin;

impl LoginFlow for WechatLogin {
    fn fields(&self, _input: &LoginInput<'_>) -> Vec<Field> {
        vec![BASE_URL]
    }

    fn verify<'a>(
        &'a self,
        input: &'a LoginInput<'a>,
        answers: &'a Answers,
        ui: &'a mut dyn LoginUi,
    ) -> BoxFuture<'a, Result<Checked, String>> {
        scan(input, answers, ui).boxed()
    }
}

/// Shows the codes until one is scanned and confirmed.
async fn scan(
    input: &LoginInput<'_>,
    answers: &Answers,
    ui: &mut dyn LoginUi,
) -> Result<Checked, String> {
    let (key, account) = (input.key, &input.key.account);
    // The stored token lets the server recognise a bot already bound to this client.
    let recent: Vec<BotToken> = input
        .previous
        .and_then(|c| c.get(TOKEN_FIELD))
        .map(|t| BotToken::new(t.expose()))
        .into_iter()
        .collect();
    let base = base_url(input, answers);
    let client = Client::new(&base, None).map_err(|e| {
        format!("cannot log in against {base}: {e}; correct base_url in [wechat.{account}]")
    })?;
    let mut options = LoginOptions::default();
    if let Some(poll) = input.poll {
        options.poll_interval = poll;
    }
    let outcome = run_login(&client, &recent, &options, &mut Phone { ui })
        .await
        .map_err(|e| {
            format!(
                "the WeChat login against {base} failed: {e}; check this machine's network to that host, or correct base_url in [wechat.{account}] (or --base-url)"
            )
        })?;
    match outcome {
        LoginOutcome::Confirmed(c) => Ok(Checked::Verified(verified(&c))),
        LoginOutcome::AlreadyBound if input.previous.is_some() => Ok(Checked::Kept(format!(
            "{key} is already bound to this bridge; the stored login is kept"
        ))),
        LoginOutcome::AlreadyBound => Err(format!(
            "WeChat says this bot is already bound, but {key} has no stored login; log in again with another bot"
        )),
    }
}

/// Where to log in: `--base-url`, else the account's configured `base_url` (the host its
/// daemon polls, so the fix `status` prints logs in where the account lives), else iLink's.
fn base_url(input: &LoginInput<'_>, answers: &Answers) -> String {
    let configured = input
        .settings
        .map(WechatSettings::of)
        .and_then(|w| w.base_url);
    answers
        .get(BASE_URL_FIELD)
        .cloned()
        .or(configured)
        .unwrap_or_else(|| DEFAULT_BASE_URL.to_string())
}

/// What the scan confirmed: every field, saved as one (a second login replaces it).
fn verified(c: &LoginCredentials) -> Verified {
    let mut entry = Credentials::default()
        .with(TOKEN_FIELD, c.bot_token.expose())
        .with(BOT_ID_FIELD, c.bot_id.as_str())
        .with(BASE_URL_FIELD, c.base_url());
    if let Some(o) = &c.owner_user_id {
        entry = entry.with(OWNER_FIELD, o.as_str());
    }
    let owner = match &c.owner_user_id {
        Some(o) => format!(", owner {o}"),
        None => ", no owner reported (nobody is the owner)".to_string(),
    };
    Verified {
        entry,
        said: format!("bot {}{owner}", c.bot_id),
        owner: OwnerBy::Login,
    }
}

/// The scan's progress, in the login UI's terms.
struct Phone<'a> {
    ui: &'a mut dyn LoginUi,
}

impl scv_wechat::login::LoginUi for Phone<'_> {
    fn event(&mut self, event: LoginEvent) {
        let line = match event {
            LoginEvent::ShowQr {
                image_url,
                number,
                of,
            } => {
                return self.ui.show(Shown::Qr {
                    app: "WeChat",
                    url: image_url,
                    number,
                    of,
                });
            }
            LoginEvent::Waiting => "waiting for a scan...",
            LoginEvent::Scanned => "scanned; confirm the login on your phone",
            LoginEvent::Expired => "the code expired",
            LoginEvent::VerifyCodeBlocked => {
                "too many wrong verification codes; this code is blocked"
            }
            LoginEvent::Redirected { .. } => "moved to another login server",
            LoginEvent::WrongVerifyCode => "that verification code was wrong",
        };
        self.ui.show(Shown::Line(line.to_string()));
    }

    async fn verify_code(&mut self) -> Option<String> {
        let code = self.ui.ask(&VERIFY_CODE).await.ok()?;
        let code = code.trim().to_string();
        (!code.is_empty()).then_some(code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_entry_has_every_field_and_prints_none() {
        let c = LoginCredentials {
            bot_token: BotToken::new("secret-token"),
            bot_id: "b@im.bot".into(),
            base_url: None,
            owner_user_id: Some("o@im.wechat".into()),
        };
        let v = verified(&c);
        let get = |n: &str| v.entry.get(n).map(|s| s.expose().to_string());
        assert_eq!(get(TOKEN_FIELD).as_deref(), Some("secret-token"));
        assert_eq!(get(BOT_ID_FIELD).as_deref(), Some("b@im.bot"));
        assert_eq!(get(BASE_URL_FIELD).as_deref(), Some(DEFAULT_BASE_URL));
        assert_eq!(get(OWNER_FIELD).as_deref(), Some("o@im.wechat"));
        assert!(!format!("{:?}", v.entry).contains("secret-token"));
        assert_eq!(v.owner, OwnerBy::Login);
    }
}
