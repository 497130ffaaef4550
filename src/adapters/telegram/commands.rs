//! The bot's command menu (`setMyCommands`, spec §5): `/new`, `/stop`, `/status`, `/help`
//! with their descriptions from `words::menu`, set once at the start of every run (so a change
//! of the `language` setting shows after the restart a reload gives the account).
//!
//! Telegram picks a menu by the user's app language: the default menu (no `language_code`) is
//! in the configured language, English under `auto`; the `zh` menu is Chinese under `auto`,
//! else the configured language too, so a menu left by an earlier setting never lingers.
//! Failures are cosmetic: logged, and the run goes on.

use std::time::Duration;

use scv_telegram::Client;
use scv_telegram::types::BotCommand;

use crate::ids::AccountKey;
use crate::words::menu::command_menu;
use crate::words::{Lang, Language};

/// How long the menu may take before the run goes on without it.
const SET_TIMEOUT: Duration = Duration::from_secs(5);

/// The menus to set: `(language_code, language)`; `None` is the default menu.
pub(super) fn menus(language: Language) -> [(Option<&'static str>, Lang); 2] {
    [
        (None, language.fixed().unwrap_or(Lang::En)),
        (Some("zh"), language.fixed().unwrap_or(Lang::ZhCn)),
    ]
}

/// The commands of one menu in `lang`.
fn commands(lang: Lang) -> Vec<BotCommand> {
    command_menu(lang)
        .into_iter()
        .map(|(command, what)| BotCommand {
            command: command.to_string(),
            description: what.to_string(),
        })
        .collect()
}

/// Sets the bot's menus for `language` (both calls, each within [`SET_TIMEOUT`]).
pub(super) async fn set(client: &Client, account: &AccountKey, language: Language) {
    for (code, lang) in menus(language) {
        let menu = commands(lang);
        match tokio::time::timeout(SET_TIMEOUT, client.set_commands(&menu, code)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::warn!(account = %account, error = %e, "the bot's command menu was not set; commands still work when typed")
            }
            Err(_) => {
                tracing::warn!(account = %account, "setting the bot's command menu timed out; commands still work when typed")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_gives_an_english_default_and_a_chinese_zh_menu_and_fixed_gives_one_language() {
        assert_eq!(
            menus(Language::Auto),
            [(None, Lang::En), (Some("zh"), Lang::ZhCn)]
        );
        assert_eq!(
            menus(Language::ZhCn),
            [(None, Lang::ZhCn), (Some("zh"), Lang::ZhCn)]
        );
        assert_eq!(
            menus(Language::En),
            [(None, Lang::En), (Some("zh"), Lang::En)]
        );
        let names: Vec<String> = commands(Lang::En).into_iter().map(|c| c.command).collect();
        assert_eq!(names, ["new", "stop", "status", "help"]);
    }
}
