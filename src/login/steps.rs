//! The one login walk every platform's steps go through: ask, verify, store (with a pairing
//! code where the login names no owner), tell the daemon, wait for the pairing.

use crate::config::{AccountKey, CommandLine, Config};
use crate::port::login_flow::{Answers, Checked, Field, LoginInput, LoginUi, OwnerBy, Shown};
use crate::port::login_store::{load, store_verified};
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
    unknown_flags(fields, args)?;
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
