//! The one login walk every platform's steps go through: ask, verify, store (with a pairing
//! code where the login names no owner), tell the daemon, wait for the pairing.

use crate::config::{AccountKey, CommandLine, Config};
use crate::port::login_flow::{Answers, Checked, Field, LoginInput, LoginUi, OwnerBy, Shown};
use crate::port::login_store::{load, store_verified};
#[cfg(test)]
use crate::secrets::{CredentialStore, Credentials};
use crate::supervisor::unix_now;

use super::LoginArgs;
use super::said::Said;

/// Runs `channel`'s login for `account` with any UI; everything it said, one line each, is
/// also shown through `ui` as it goes. The error is for people.
pub async fn run_with(
    channel: crate::ids::Channel,
    config: &Config,
    account: &str,
    args: &LoginArgs,
    ui: &mut dyn LoginUi,
) -> Result<String, String> {
    let key = AccountKey::parse(&format!("{channel}:{account}")).ok_or_else(|| {
        format!("expected an account name of letters, digits, '-' or '_', found '{account}'")
    })?;
    let flow = crate::adapters::platform(channel).login();
    let store = super::credential_store(config).await?;
    let previous = load(&store, &key).await?;
    let commands = CommandLine::for_config(&config.path);
    let input = LoginInput {
        key: &key,
        settings: config.accounts.get(&key).map(|s| &s.settings),
        previous: previous.as_ref(),
        poll: args.poll,
        commands: &commands,
    };
    if let Some(intro) = flow.intro() {
        ui.show(Shown::Line(intro));
    }
    let answers = ask_all(&flow.fields(&input), args, ui).await?;
    let verified = match flow.verify(&input, &answers, ui).await? {
        Checked::Verified(v) => v,
        Checked::Kept(line) => {
            ui.show(Shown::Line(line.clone()));
            return Ok(line);
        }
    };
    let owner = verified.owner.clone();
    let mut said = Said::new(ui);
    said.line(format!("logged in: {key}: {}", verified.said));
    let stored = store_verified(&store, &key, verified, unix_now()).await?;
    if !config.accounts.contains_key(&key) {
        said.line(format!(
            "note: [{}.{account}] is not in {}; add it so the daemon runs this account",
            key.channel,
            config.path.display()
        ));
    }
    let (daemon, line) = super::tell_daemon(config).await;
    said.line(line);
    if owner == OwnerBy::Configured {
        said.line("The owner comes from `owner` in the configuration; nothing to pair.".into());
    }
    if let Some(code) = &stored.code {
        let wait = super::pairing_wait::Wait {
            store: &store,
            key: &key,
            daemon,
            poll: args.poll,
            commands: &commands,
        };
        wait.pair(&mut said, code, stored.previous_owner.as_deref())
            .await?;
    }
    Ok(said.all())
}

/// Every question's answer: its flag's value, else asked; a required one must not be empty.
async fn ask_all(
    fields: &[Field],
    args: &LoginArgs,
    ui: &mut dyn LoginUi,
) -> Result<Answers, String> {
    // Before any question: a typo in a flag must not cost the person their answers.
    unknown_flags(fields, args)?;
    let mut answers = Answers::new();
    for field in fields {
        let given = field.flag.and_then(|f| args.flags.get(f)).cloned();
        let typed = match (given, field.prompt) {
            (Some(v), _) => v,
            (None, Some(_)) => ui.ask(field).await?,
            (None, None) => continue,
        };
        let value = if field.exact {
            typed
        } else {
            typed.trim().to_string()
        };
        if value.is_empty() {
            if field.required {
                return Err(field.missing.to_string());
            }
            continue;
        }
        answers.insert(field.name, value);
    }
    Ok(answers)
}

/// A flag no question takes is an error (a typo must not be ignored silently).
fn unknown_flags(fields: &[Field], args: &LoginArgs) -> Result<(), String> {
    let known: Vec<&str> = fields.iter().filter_map(|f| f.flag).collect();
    match args.flags.keys().find(|f| !known.contains(&f.as_str())) {
        None => Ok(()),
        Some(f) if known.is_empty() => Err(format!("this login takes no options, found --{f}")),
        Some(f) => Err(format!(
            "this login takes {}, found --{f}",
            known
                .iter()
                .map(|k| format!("--{k}"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;
    use futures_util::future::BoxFuture;

    use super::*;

    /// Answers each question from a list, and remembers what it was asked.
    struct Script {
        answers: Vec<&'static str>,
        asked: Vec<&'static str>,
    }

    impl LoginUi for Script {
        fn show(&mut self, _shown: Shown) {}

        fn ask<'a>(&'a mut self, field: &'a Field) -> BoxFuture<'a, Result<String, String>> {
            self.asked.push(field.name);
            let next = (!self.answers.is_empty()).then(|| self.answers.remove(0).to_string());
            async move { next.ok_or_else(|| "no more answers".to_string()) }.boxed()
        }
    }

    const ID: Field = Field::asked("id", "Id", "no id given").flag("id");
    const SECRET: Field = Field::asked("secret", "Secret", "no secret given").secret();
    const PASSWORD: Field = Field::asked("password", "Password", "no password").exact();
    const NOTE: Field = Field::asked("note", "Note", "").optional();

    #[tokio::test]
    async fn flags_answer_their_questions_and_the_rest_is_asked() {
        let args = LoginArgs::parse(&["--id".into(), "cli_1".into()]).expect("parses");
        let mut ui = Script {
            answers: vec![" s3cret ", " pass word ", ""],
            asked: Vec::new(),
        };
        let a = ask_all(&[ID, SECRET, PASSWORD, NOTE], &args, &mut ui)
            .await
            .expect("answered");
        assert_eq!(
            ui.asked,
            ["secret", "password", "note"],
            "the flag's is not asked"
        );
        assert_eq!(a.get("id").map(String::as_str), Some("cli_1"));
        assert_eq!(a.get("secret").map(String::as_str), Some("s3cret"));
        assert_eq!(a.get("password").map(String::as_str), Some(" pass word "));
        assert_eq!(a.get("note"), None, "an empty optional answer is no answer");
    }

    #[tokio::test]
    async fn an_empty_required_answer_and_an_unknown_flag_are_refused() {
        let mut ui = Script {
            answers: vec!["  "],
            asked: Vec::new(),
        };
        let e = ask_all(&[SECRET], &LoginArgs::default(), &mut ui).await;
        assert_eq!(e.expect_err("empty"), "no secret given");
        let args = LoginArgs::parse(&["--app=x".into()]).expect("parses");
        let mut ui = Script {
            answers: vec!["x"],
            asked: Vec::new(),
        };
        let e = ask_all(&[ID, SECRET], &args, &mut ui).await;
        assert_eq!(e.expect_err("typo"), "this login takes --id, found --app");
        assert!(
            LoginArgs::parse(&["--id".into()]).is_err(),
            "a flag without its value"
        );
        assert!(LoginArgs::parse(&["stray".into()]).is_err());
    }

    #[tokio::test]
    async fn a_pairing_login_keeps_the_owner_and_adds_a_code_a_scan_replaces_all() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = CredentialStore::Files(dir.path().join("creds"));
        let key = AccountKey::parse("feishu:w").expect("key");
        let earlier = Credentials::default()
            .with("secret", "old")
            .with(crate::secrets::OWNER_FIELD, "ou_owner");
        store.save("feishu:w", &earlier).expect("save");
        let verified = |owner| crate::port::login_flow::Verified {
            entry: Credentials::default().with("secret", "new"),
            said: String::new(),
            owner,
        };
        let stored = store_verified(&store, &key, verified(OwnerBy::Pairing), 1000)
            .await
            .expect("stored");
        assert_eq!(stored.previous_owner.as_deref(), Some("ou_owner"));
        let code = stored.code.expect("a code");
        let now = store.load("feishu:w").expect("load").expect("some");
        assert_eq!(now.owner().as_deref(), Some("ou_owner"));
        let field = |n: &str| now.get(n).map(|v| v.expose().to_string());
        assert_eq!(field(crate::port::pairing::CODE_FIELD), Some(code));
        assert_eq!(field("secret").as_deref(), Some("new"));
        let expires = 1000 + crate::port::pairing::CODE_TTL_SECS;
        assert_eq!(
            field(crate::port::pairing::EXPIRES_FIELD),
            Some(expires.to_string())
        );
        let scanned = store_verified(&store, &key, verified(OwnerBy::Login), 1000)
            .await
            .expect("stored");
        assert_eq!(
            scanned,
            crate::port::login_store::Stored {
                code: None,
                previous_owner: None
            }
        );
        let now = store.load("feishu:w").expect("load").expect("some");
        assert_eq!(
            now.owner(),
            None,
            "a login that names the owner replaces the entry whole"
        );
    }
}
