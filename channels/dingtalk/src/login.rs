//! The login check, above both the client and the Stream connection it opens once (so the
//! client never imports the connection).

use crate::client::{BotIdentity, Client};
use crate::error::Error;

impl Client {
    /// The login check (`login dingtalk ACCOUNT`): the credentials fetch a token, and the app
    /// may open a Stream connection (robot on, Stream mode, published; spec §1.1). The ticket
    /// this asks for is never used and lapses after 90 s. Errors classify as
    /// `Fatal(BadCredentials)` or `Fatal(AppNotReady)` when a person must act.
    pub async fn check_login(&self) -> Result<BotIdentity, Error> {
        self.token().await?;
        crate::stream::open::open(self, &crate::stream::default_subscriptions()).await?;
        Ok(BotIdentity {
            client_id: self.inner.options.credentials.client_id.clone(),
            robot_code: self.robot_code().to_string(),
        })
    }
}
