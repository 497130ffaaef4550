//! Feishu's "scan to create an app": when a login gives no app ID, the person scans a QR code
//! with the Feishu app, confirms creating a new app on the page, and the platform hands the new
//! app's ID and secret to this login, which then verifies and stores them as a typed login would.
//!
//! Only the link and progress lines are shown (on a terminal or the console page); the app
//! secret and the registration's device code are never shown, sent to a browser or logged.

use scv_feishu::registration::{Created, Registration, RegistrationError, RegistrationOptions};

use crate::port::login_flow::{Answers, Field, LoginInput, LoginUi, Shown};

/// The answer naming the accounts host to register on (a proxy, or a test's fake).
pub(super) const ACCOUNTS_FIELD: &str = "accounts";

/// `--accounts URL`: the accounts host for scan-to-create (never asked). A Lark tenant's
/// poll then goes to `URL/lark`, so one proxy (or fake) can stand for both hosts.
pub(super) const ACCOUNTS: Field = Field {
    prompt: None,
    ..Field::asked(ACCOUNTS_FIELD, "Feishu accounts URL", "")
        .flag("accounts")
        .optional()
};

/// Codes shown before giving up: a link lives 10 minutes and serves one person.
const CODES: u32 = 3;
/// The name the page suggests for the new app (the person may change it there).
const APP_NAME: &str = "scv-bridge";

/// Shows the link, waits for the scan, and returns the new app (re-issuing an expired link up
/// to [`CODES`] times). The error is for people: what failed and what to do.
pub(super) async fn create_app(
    input: &LoginInput<'_>,
    answers: &Answers,
    ui: &mut dyn LoginUi,
) -> Result<Created, String> {
    let login = input
        .commands
        .command(&format!("login feishu {}", input.key.account));
    let options = options(answers);
    let host = options.feishu_accounts.clone();
    let why = |e: RegistrationError| explain(e, &host, &login);
    let registration = Registration::new(options).map_err(|e| why(e.into()))?;
    registration.init().await.map_err(why)?;
    for number in 1..=CODES {
        let mut begun = registration.begin().await.map_err(why)?;
        if let Some(pace) = input.poll {
            // A test's quick pace; a real login keeps the platform's.
            begun.interval = pace;
        }
        ui.show(Shown::Qr {
            app: "Feishu",
            url: begun.qr_url.clone(),
            number,
            of: CODES,
        });
        ui.show(Shown::Line(format!(
            "Scan the code with the Feishu app (or open the link) and confirm creating the app; the code is valid for {} minutes.",
            begun.expires_in.as_secs().div_ceil(60)
        )));
        match registration.wait(&begun).await {
            Ok(created) => return Ok(created),
            Err(RegistrationError::Expired) if number < CODES => {
                ui.show(Shown::Line("the code expired".into()));
            }
            Err(e) => return Err(why(e)),
        }
    }
    Err(why(RegistrationError::Expired))
}

/// The hosts to register on: the flag's (a test's fake, a proxy), else the platform's
/// (`accounts.feishu.cn`, and `accounts.larksuite.com` for a Lark tenant).
fn options(answers: &Answers) -> RegistrationOptions {
    let mut o = RegistrationOptions::official(APP_NAME);
    if let Some(url) = answers.get(ACCOUNTS_FIELD) {
        let url = url.trim_end_matches('/').to_string();
        // The page a link built without the server's own lives on that host too.
        o.open_base = url.clone();
        o.lark_accounts = format!("{url}/lark");
        o.feishu_accounts = url;
    }
    o
}

/// A registration that ended without an app, in words: what failed and what to run.
fn explain(e: RegistrationError, host: &str, login: &str) -> String {
    let typed = format!("{login} --app-id cli_…");
    match e {
        RegistrationError::Unsupported => format!(
            "{host} does not offer creating an app by scanning now: create the app in the Feishu developer console (`scv-bridge guide`), then run `{typed}`"
        ),
        RegistrationError::Denied => {
            format!("creating the app was cancelled on the phone; run `{login}` to scan again")
        }
        RegistrationError::Expired => format!(
            "no code was scanned in time ({CODES} codes shown); run `{login}` to get a new one"
        ),
        RegistrationError::Refused { error, description } => format!(
            "{host} refused to create the app ({error}: {description}); run `{login}` again later, or create the app in the Feishu developer console and run `{typed}`"
        ),
        RegistrationError::Transport(e) => format!(
            "cannot create the app at {host} ({e}): check the network and any proxy, then run `{login}` again"
        ),
    }
}

/// A created app whose pair did not verify: the error, and how to recover the app (its secret
/// is not handed out again, but can be reset on its page).
pub(super) fn unverified(e: &str, app_id: &str, input: &LoginInput<'_>) -> String {
    let login = input
        .commands
        .command(&format!("login feishu {}", input.key.account));
    format!(
        "{e}\nThe app {app_id} was created: reset its secret on its page in the Feishu developer console, then run `{login} --app-id {app_id}`"
    )
}
