//! Privacy mode (spec §5, §8.13): with it on, a group delivers the bot only commands, messages
//! that mention it, and replies to it. The test is the fake's own reading of BotFather's words,
//! independent of the client's `Message::addresses`, so a test can catch the two disagreeing.

use serde_json::Value;

use super::state::State;

/// Whether the platform would deliver this message to the bot.
pub(crate) fn delivered(st: &State, msg: &Value) -> bool {
    let group = matches!(msg["chat"]["type"].as_str(), Some("group" | "supergroup"));
    if !group || st.config.can_read_all_group_messages {
        return true;
    }
    let text = msg["text"]
        .as_str()
        .or_else(|| msg["caption"].as_str())
        .unwrap_or("");
    let mention = format!("@{}", st.config.bot_username).to_lowercase();
    text.starts_with('/')
        || text.to_lowercase().contains(&mention)
        || msg["reply_to_message"]["from"]["id"].as_i64() == Some(st.bot_id())
}
