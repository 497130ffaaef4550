//! `scv-bridge login wechat ACCOUNT` (replaced by the real flow as it lands).

use crate::config::Config;

/// Runs the login flow for `account`; the error is for people.
pub async fn run(_config: &Config, account: &str, _args: &super::LoginArgs) -> Result<(), String> {
    Err(format!(
        "login for wechat:{account} is not available in this build yet"
    ))
}
