//! The command menu a chat platform shows beside the input (Telegram's `setMyCommands`): each
//! command every chat answers, with what it does in the chat's language.

use super::Lang;

/// The commands every chat answers, in the order a menu lists them: the command without its
/// `/`, and what it does in `lang` (short: a menu line; Telegram allows 256 characters).
/// Made for the platforms' menus; the commands must stay the ones `conversation::commands`
/// answers and `Msg::Help` names.
pub fn command_menu(lang: Lang) -> [(&'static str, &'static str); 4] {
    match lang {
        Lang::En => [
            ("new", "Start a fresh conversation"),
            ("stop", "Cancel the running answer"),
            ("status", "Show the bridge's health"),
            ("help", "Show the commands"),
        ],
        Lang::ZhCn => [
            ("new", "开始新对话"),
            ("stop", "停止当前回答"),
            ("status", "查看桥接状态"),
            ("help", "显示可用命令"),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::words::Msg;

    #[test]
    fn the_menu_lists_the_commands_help_names_in_both_languages() {
        for lang in [Lang::En, Lang::ZhCn] {
            let help = Msg::Help.text(lang);
            for (command, what) in command_menu(lang) {
                assert!(
                    help.contains(&format!("/{command}")),
                    "{command} in {lang:?}"
                );
                assert!(!what.is_empty() && what.chars().count() <= 256);
                assert!(
                    command
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                    "Telegram's command charset"
                );
            }
        }
    }
}
