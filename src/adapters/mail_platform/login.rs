//! Mail's login steps: the mailbox password (or app password), checked by an IMAP login when
//! the account is configured; a mailbox has no bot and no owner.

use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use crate::config::ChannelSettings;
use crate::port::login_flow::{
    Answers, Checked, Field, LoginFlow, LoginInput, LoginUi, OwnerBy, Shown, Verified,
};
use crate::secrets::Credentials;

use crate::mail::PASSWORD_FIELD;

/// Kept exactly as typed: a password may begin or end with a space.
const PASSWORD: Field = Field::asked(
    PASSWORD_FIELD,
    "Mail password (or app password)",
    "no mail password (or app password) given",
)
.secret()
.exact();

/// Mail's login.
pub(super) struct MailLogin;

impl LoginFlow for MailLogin {
    fn fields(&self, _input: &LoginInput<'_>) -> Vec<Field> {
        vec![PASSWORD]
    }

    fn verify<'a>(
        &'a self,
        input: &'a LoginInput<'a>,
        answers: &'a Answers,
        ui: &'a mut dyn LoginUi,
    ) -> BoxFuture<'a, Result<Checked, String>> {
        check(input, answers, ui).boxed()
    }
}

/// An IMAP login with the password where the account is configured; refused only when the
/// server refuses it (a server that cannot be reached now is a warning: the password is kept).
async fn check(
    input: &LoginInput<'_>,
    answers: &Answers,
    ui: &mut dyn LoginUi,
) -> Result<Checked, String> {
    let (key, account) = (input.key, &input.key.account);
    let password = answers.get(PASSWORD_FIELD).cloned().unwrap_or_default();
    let stored = Checked::Verified(Verified {
        entry: Credentials::default().with(PASSWORD_FIELD, &password),
        said: "password stored".into(),
        owner: OwnerBy::Nobody,
    });
    let Some(ChannelSettings::Mail(s)) = input.settings else {
        ui.show(Shown::Line(format!(
            "note: [mail.{account}] is not configured yet; storing the password unchecked"
        )));
        return Ok(stored);
    };
    let imap = crate::mail::imap_settings(s, scv_mail::Password::new(&password));
    let server = format!("IMAP {}:{}", imap.host, imap.port);
    match scv_mail::ImapSession::connect(&imap).await {
        Ok(session) => session.logout().await,
        Err(e) => match e.classify() {
            scv_mail::ErrorClass::Fatal { auth: true } => {
                let again = input.commands.command(&format!("login mail {account}"));
                return Err(format!(
                    "{key}: {server} rejected the login for {}: run `{again}` with the right password (or an app password, for a provider with two-step sign-in)",
                    s.username
                ));
            }
            _ => ui.show(Shown::Line(format!(
                "warning: {key}: cannot check the password at {server} now ({e}); storing it anyway. Check imap_host, imap_port, tls and tls_ca under [mail.{account}], then `{}`",
                input.commands.command("doctor")
            ))),
        },
    }
    Ok(stored)
}
