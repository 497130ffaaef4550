//! What the platform or a sender may throw at the account: payloads without what identifies
//! them, a huge message, a rate-limited send, and the doctor's probes against the fake.

use scv_bridge::adapters::platform;
use scv_bridge::ids::{AccountKey, Channel};
use scv_bridge::probe::ProbeInput;
use scv_qq::fake::RateLimitStyle;
use serde_json::json;

use super::support::*;

#[tokio::test]
async fn broken_and_huge_payloads_are_counted_and_the_link_goes_on() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    // No sender, no id, a sender of the wrong type: counted, never journaled.
    h.fake.push_raw(
        "C2C_MESSAGE_CREATE",
        json!({"id": "X1", "content": "no author"}),
    );
    h.fake
        .push_raw("GROUP_AT_MESSAGE_CREATE", json!({"content": "no id"}));
    h.fake.push_raw(
        "C2C_MESSAGE_CREATE",
        json!({"id": "X2", "content": 5, "author": {"user_openid": ["a"]}}),
    );
    let huge = "巨".repeat(300_000);
    h.fake.push_c2c(OWNER, &huge);
    h.fake.push_c2c(OWNER, "after");
    h.until("two answers", |f| f.sent().len() >= 2).await;
    h.settle().await;
    let prompts = h.agent.prompts();
    assert_eq!(prompts.len(), 2, "the huge one and the last one");
    assert!(
        prompts[0].len() < huge.len(),
        "the huge one was cut for the agent"
    );
    assert_eq!(prompts[1], "after");
    let dropped = h.health().dropped;
    assert_eq!(dropped.get("undecodable"), Some(&3), "{dropped:?}");
    assert!(h.fake.rejected().is_empty(), "{:?}", h.fake.rejected());
    h.stop().await;
}

#[tokio::test]
async fn a_rate_limited_send_waits_says_so_and_goes_once() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    h.fake.rate_limit_next(1, RateLimitStyle::Http429);
    h.fake.push_c2c(OWNER, "slowly");
    h.until_health("the wait in status", |c| {
        c.notes
            .iter()
            .any(|n| n.text.starts_with("sends failing:") && n.text.contains("1 waiting"))
    })
    .await;
    h.until("the answer", |f| !f.sent().is_empty()).await;
    h.settle().await;
    assert_eq!(h.texts_to(&format!("user:{OWNER}")), ["echo: slowly"]);
    let refused = h.fake.rejected();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].status, 429);
    let seqs: Vec<u64> = h.fake.sent().iter().map(|s| s.msg_seq).collect();
    // The retry repeats the refused attempt's `msg_id` + `msg_seq`: had the first gone through,
    // QQ would refuse the second as a duplicate instead of showing it twice.
    assert_eq!(seqs, [1], "the retry repeats its attempt's msg_seq");
    h.until_health("the note cleared", |c| c.notes.is_empty())
        .await;
    h.stop().await;
}

#[tokio::test]
async fn the_owner_counts_in_a_group_only_under_the_same_id() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    let group = "GROUP00000000000000000000000007";
    h.fake.push_group_at(group, OWNER, "same id");
    h.until("the group answer", |f| !f.sent().is_empty()).await;
    h.settle().await;
    assert_eq!(h.texts_to(&format!("group:{group}")), ["echo: same id"]);
    h.stop().await;
}

#[tokio::test]
async fn the_doctor_probes_pass_against_the_fake_and_say_a_refused_secret() {
    let setup = Setup::owned();
    let good = login(&setup.fake);
    let h = Harness::start(setup).await;
    let key = AccountKey::new(Channel::Qq, "bot");
    let spec = h.config.accounts.get(&key).expect("the account");
    let qq = platform(Channel::Qq);
    let input = ProbeInput {
        spec,
        stored: Some(&good),
        login: "scv-bridge login qq bot",
    };
    let checks = qq.probe(input).await;
    let ids: Vec<&str> = checks.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["qq.bot", "qq.gateway"]);
    assert!(checks.iter().all(|c| c.fix.is_none()), "{checks:?}");
    let bad = good.clone().with("app_secret", "wrong");
    let input = ProbeInput {
        spec,
        stored: Some(&bad),
        login: "scv-bridge login qq bot",
    };
    let checks = qq.probe(input).await;
    let fix = checks[0].fix.clone().unwrap_or_default();
    assert!(fix.contains("`scv-bridge login qq bot`"), "{fix}");
    h.stop().await;
}
