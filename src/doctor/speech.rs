//! The speech server (`[speech]`): its key variable is set and it transcribes a fifth of a
//! second of silence within ten seconds, with the model and path configured. No check when no
//! server is set (voice notes then reach the agent as files).

use std::time::Duration;

use super::{Check, CheckId};
use crate::config::Config;
use crate::speech::Speech;

/// How long the probe may take.
const WITHIN: Duration = Duration::from_secs(10);

/// The speech check, when `[speech]` names a server.
pub(super) async fn check(config: &Config) -> Option<Check> {
    let speech = Speech::from_config(&config.speech)?;
    let base = config.speech.base_url.clone().unwrap_or_default();
    Some(match speech.probe(WITHIN).await {
        Ok(()) => Check::pass(
            CheckId::Speech,
            format!("speech: {base} transcribes with model {}", model(&speech)),
        ),
        Err(e) => Check::fail(
            CheckId::Speech,
            format!("speech: {base}: {}", e.message()),
            e.action(),
        ),
    })
}

fn model(speech: &Speech) -> String {
    speech
        .settings()
        .map(|s| s.model.clone())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::fake_speech::{FakeSpeech, Mode};

    fn config(base: &str) -> Config {
        let text = format!("[speech]\nbase_url = \"{base}\"\nmodel = \"small\"\n");
        Config::parse(std::path::Path::new("/etc/scv/config.toml"), &text).expect("parses")
    }

    #[tokio::test]
    async fn the_speech_server_is_asked_and_a_wrong_model_is_named_with_its_fix() {
        assert!(
            check(&Config::parse(std::path::Path::new("/c.toml"), "").expect("empty"))
                .await
                .is_none()
        );
        let fake = FakeSpeech::start().await.expect("fake");
        let ok = check(&config(&fake.base_url())).await.expect("a check");
        assert!(ok.fix.is_none(), "{ok:?}");
        assert_eq!(fake.received()[0].model, "small");
        fake.mode(Mode::Speaches(vec!["large".into()]));
        let bad = check(&config(&fake.base_url())).await.expect("a check");
        assert!(bad.what.contains("does not know the model"), "{bad:?}");
        assert!(
            bad.fix
                .as_deref()
                .is_some_and(|f| f.contains("[speech] model")),
            "{bad:?}"
        );
        let down = check(&config("http://127.0.0.1:9/v1"))
            .await
            .expect("a check");
        assert!(down.what.contains("cannot be reached"), "{down:?}");
    }
}
