//! DingTalk's login steps (spec §1.1–1.3): the app's client id and client secret (the secret
//! asked without echo), checked against the platform before anything is stored: the token
//! endpoint takes them and `connections/open` gives a ticket (robot on, Stream mode,
//! published). The owner then pairs by sending the one-time code to the robot in a direct
//! message (the port's pairing), unless the configuration names their staff id (`owner`).

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use scv_dingtalk::{Client, ClientOptions, ErrorClass};

use super::DingtalkSettings;
use crate::config::ChannelSettings;
use crate::port::login_flow::{
    Answers, Checked, Field, LoginFlow, LoginInput, LoginUi, OwnerBy, Shown, Verified,
};
use crate::secrets::Credentials;

/// The stored login's app id (`clientId`, the old AppKey, `ding…`); also the robot code.
pub(crate) const CLIENT_ID_FIELD: &str = "client_id";
/// The stored login's secret (`clientSecret`, the old AppSecret).
pub(super) const CLIENT_SECRET_FIELD: &str = "client_secret";

const CLIENT_ID: Field = Field::asked(
    CLIENT_ID_FIELD,
    "Client ID (AppKey, ding…)",
    "no client id given: the app's page in the DingTalk developer console shows it under Credentials & basic info",
)
.flag("client-id");

const CLIENT_SECRET: Field = Field::asked(
    CLIENT_SECRET_FIELD,
    "Client Secret (AppSecret)",
    "no client secret given: the app's page in the DingTalk developer console shows it under Credentials & basic info",
)
.secret();

/// DingTalk's login.
pub(super) struct DingTalkLogin;

impl LoginFlow for DingTalkLogin {
    fn intro(&self) -> Option<String> {
        Some(
            "Create an internal app with the robot capability and Stream mode in the DingTalk \
             developer console, publish it, and paste its client id and secret; \
             `scv-bridge guide` explains the steps (`scv-bridge guide --lang zh-CN` in Chinese)."
                .to_string(),
        )
    }

    fn fields(&self, _input: &LoginInput<'_>) -> Vec<Field> {
        vec![CLIENT_ID, CLIENT_SECRET]
    }

    fn verify<'a>(
        &'a self,
        input: &'a LoginInput<'a>,
        answers: &'a Answers,
        ui: &'a mut dyn LoginUi,
    ) -> BoxFuture<'a, Result<Checked, String>> {
        async move {
            let settings = settings_of(input.settings);
            let id = answers.get(CLIENT_ID_FIELD).cloned().unwrap_or_default();
            let secret = answers
                .get(CLIENT_SECRET_FIELD)
                .cloned()
                .unwrap_or_default();
            let verified = verify(&settings, id.trim(), secret.trim()).await?;
            if verified.owner == OwnerBy::Pairing {
                ui.show(Shown::Line(
                    "The owner pairs by sending the code shown below to the robot in a direct message (search the app's name in DingTalk)."
                        .to_string(),
                ));
            }
            Ok(Checked::Verified(verified))
        }
        .boxed()
    }
}

/// Checks the client id and secret with the token endpoint and `connections/open`: what to
/// store, and whether the owner pairs. The error says what failed and what to do.
pub(super) async fn verify(
    settings: &DingtalkSettings,
    client_id: &str,
    secret: &str,
) -> Result<Verified, String> {
    let client = client(settings, client_id, secret)?;
    let bot = client.check_login().await.map_err(|e| match e.class() {
        ErrorClass::Fatal(r) => format!("DingTalk refused the login: {}", r.hint()),
        _ => format!(
            "DingTalk could not be asked ({e}; asked {}): check the network and any proxy, then log in again",
            client.options().api_base
        ),
    })?;
    let entry = Credentials::default()
        .with(CLIENT_ID_FIELD, &bot.client_id)
        .with(CLIENT_SECRET_FIELD, secret);
    Ok(Verified {
        entry,
        said: format!("app {} (robot code {})", bot.client_id, bot.robot_code),
        owner: if owner_of(settings).is_some() {
            OwnerBy::Configured
        } else {
            OwnerBy::Pairing
        },
    })
}

/// The HTTP client of the account's app at its configured bases.
pub(super) fn client(
    settings: &DingtalkSettings,
    client_id: &str,
    secret: &str,
) -> Result<Client, String> {
    let mut o = ClientOptions::new(scv_dingtalk::Credentials::new(client_id, secret));
    if let Some(b) = nonempty(&settings.api_base) {
        o.api_base = b;
    }
    if let Some(b) = nonempty(&settings.oapi_base) {
        o.oapi_base = b;
    }
    Client::new(o).map_err(|e| format!("{e}: fix api_base / oapi_base in the account's table"))
}

/// The account's AI-card template, when it names one (`card_template_id`; the content key
/// defaults to `content`, what most AI-card templates use).
pub(super) fn card_template(
    settings: &DingtalkSettings,
) -> Option<scv_dingtalk::card::CardTemplate> {
    Some(scv_dingtalk::card::CardTemplate {
        template_id: nonempty(&settings.card_template_id)?,
        content_key: nonempty(&settings.card_content_key)
            .unwrap_or_else(|| scv_dingtalk::card::DEFAULT_CONTENT_KEY.to_string()),
    })
}

/// The configured question card template (spec §4.7 B), if any.
pub(super) fn question_template(settings: &DingtalkSettings) -> Option<String> {
    nonempty(&settings.question_card_template_id)
}

/// The configured owner's staff id, if any.
pub(super) fn owner_of(settings: &DingtalkSettings) -> Option<String> {
    nonempty(&settings.owner)
}

fn nonempty(s: &Option<String>) -> Option<String> {
    s.as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// The account's DingTalk settings (defaults when it is not configured yet).
pub(super) fn settings_of(settings: Option<&ChannelSettings>) -> DingtalkSettings {
    settings.map(DingtalkSettings::of).unwrap_or_default()
}
