//! How a chat's language is chosen under `language = "auto"`, and where the choice is kept.

use super::Lang;
use crate::ids::{AccountKey, ChatId};
use rusqlite::{OptionalExtension, Transaction};

/// The language `text` is written in, if it shows one: any CJK ideograph or kana means
/// Chinese; otherwise any letter means English. Commands (`/status`), digits, emoji and
/// punctuation show none, so they keep the chat's remembered language.
pub fn detect(text: &str) -> Option<Lang> {
    if text.trim_start().starts_with('/') {
        return None;
    }
    let cjk = |c: char| matches!(c as u32, 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF);
    if text.chars().any(cjk) {
        Some(Lang::ZhCn)
    } else if text.chars().any(|c| c.is_alphabetic()) {
        Some(Lang::En)
    } else {
        None
    }
}

/// The language last remembered for the chat (`chat_language`), if any.
pub fn remembered(
    t: &Transaction<'_>,
    account: &AccountKey,
    chat: &ChatId,
) -> rusqlite::Result<Option<Lang>> {
    let lang: Option<String> = t
        .prepare_cached("SELECT lang FROM chat_language WHERE account = ?1 AND chat = ?2")?
        .query_row([account.to_string(), chat.as_str().to_string()], |r| {
            r.get(0)
        })
        .optional()?;
    Ok(lang.as_deref().and_then(Lang::parse))
}

/// Remembers `lang` for the chat, so a restart keeps it. Nearly every message names its chat's
/// language again; an unchanged one writes nothing, so the turn's read of its next message
/// stays a read.
pub fn remember(
    t: &Transaction<'_>,
    account: &AccountKey,
    chat: &ChatId,
    lang: Lang,
) -> rusqlite::Result<()> {
    t.prepare_cached(
        "INSERT INTO chat_language (account, chat, lang) VALUES (?1, ?2, ?3)
         ON CONFLICT (account, chat) DO UPDATE SET lang = excluded.lang
         WHERE lang IS NOT excluded.lang",
    )?
    .execute([
        account.to_string(),
        chat.as_str().to_string(),
        lang.as_str().to_string(),
    ])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cjk_is_chinese_letters_are_english_commands_show_none() {
        let cases = [
            ("你好，帮我看看", Some(Lang::ZhCn)),
            ("hello there", Some(Lang::En)),
            ("ok 好的", Some(Lang::ZhCn)),
            ("/status", None),
            ("/new", None),
            ("123 👍", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(detect(text), want, "{text:?}");
        }
    }

    #[tokio::test]
    async fn the_same_language_again_writes_nothing() {
        let (store, _g) = crate::store::Store::open_in_memory().expect("store");
        let changes = store
            .call(|t| {
                let (a, c) = (
                    AccountKey::new(crate::config::Channel::Wechat, "a"),
                    ChatId::new("c"),
                );
                let mut changes = Vec::new();
                for lang in [Lang::En, Lang::En, Lang::ZhCn] {
                    remember(t, &a, &c, lang)?;
                    changes.push((t.changes(), remembered(t, &a, &c)?));
                }
                Ok(changes)
            })
            .await
            .expect("store");
        assert_eq!(
            changes,
            [
                (1, Some(Lang::En)),
                (0, Some(Lang::En)),
                (1, Some(Lang::ZhCn))
            ]
        );
    }
}
