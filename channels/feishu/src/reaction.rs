//! Emoji reactions on a message: Feishu has no typing API, so a `Typing` reaction on the
//! user's message is the sign that an answer is being written (media-and-streaming.md §5.3).

use reqwest::Method;
use serde_json::{Value, json};

use crate::error::Error;
use crate::rest::{Client, path_segment};

/// The emoji the bridge shows while an answer is being written.
pub const TYPING: &str = "Typing";

impl Client {
    /// Adds the reaction `emoji` (an official emoji type such as [`TYPING`]) to `message_id`;
    /// returns the reaction's id, which removing it needs.
    pub async fn add_reaction(&self, message_id: &str, emoji: &str) -> Result<String, Error> {
        let path = format!(
            "/open-apis/im/v1/messages/{}/reactions",
            path_segment(message_id)?
        );
        let body = json!({"reaction_type": {"emoji_type": emoji}});
        let data = self.call(Method::POST, &path, Some(body)).await?;
        data.get("reaction_id")
            .and_then(Value::as_str)
            .map(String::from)
            .ok_or_else(|| Error::Decode("a reaction without reaction_id".into()))
    }

    /// Removes the bot's own reaction `reaction_id` from `message_id`.
    pub async fn remove_reaction(&self, message_id: &str, reaction_id: &str) -> Result<(), Error> {
        let path = format!(
            "/open-apis/im/v1/messages/{}/reactions/{}",
            path_segment(message_id)?,
            path_segment(reaction_id)?
        );
        self.call(Method::DELETE, &path, None).await.map(|_| ())
    }
}
