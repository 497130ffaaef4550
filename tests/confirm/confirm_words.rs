//! Confirm questions in the owner's language: fixed by `language = "zh-CN"`, or followed from
//! the chat under `auto`; English stays byte for byte as it was (see confirm_pipeline.rs).

use crate::confirm_support as support;

use scv_bridge::protocol::ConfirmState;
use scv_bridge::words::Language;
use support::*;

fn zh_cn() -> BedOptions {
    let mut settings = settings();
    settings.languages.insert(account(), Language::ZhCn);
    BedOptions {
        settings,
        ..BedOptions::default()
    }
}

#[tokio::test]
async fn zh_cn_asks_and_answers_in_chinese() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = Bed::open(dir.path(), T0_MS, zh_cn()).await;
    let info = bed
        .svc
        .ask("部署 1.4？", None, Some(600))
        .await
        .expect("ask");
    let code = bed.svc.view(&info.id).expect("view").code;
    assert_eq!(
        bed.nth_sent(1).await,
        format!("部署 1.4？\n请在 08:10 前回复 Y {code}（同意）或 N {code}（拒绝）")
    );
    bed.say("a1", OWNER, &format!("Y {code}")).await;
    assert_eq!(
        bed.nth_sent(2).await,
        format!("收到，已记录：同意（{code}）。")
    );
    bed.say("a2", OWNER, &format!("N {code}")).await;
    assert_eq!(
        bed.nth_sent(3).await,
        format!("这个问题已经回答过了：同意（{code}）。")
    );
    bed.shut().await;
}

#[tokio::test]
async fn auto_asks_in_the_language_the_owner_wrote_in() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = Bed::open(dir.path(), T0_MS, BedOptions::default()).await;
    bed.say("m1", OWNER, "你好").await;
    bed.nth_sent(1).await;
    let info = bed
        .svc
        .ask("重启服务？", None, Some(600))
        .await
        .expect("ask");
    let code = bed.svc.view(&info.id).expect("view").code;
    assert_eq!(
        bed.nth_sent(2).await,
        format!("重启服务？\n请在 08:10 前回复 Y {code}（同意）或 N {code}（拒绝）")
    );
    bed.svc.withdraw(&info.id).await.expect("withdraw");
    assert_eq!(
        bed.svc.status(&info.id).await.expect("status").state,
        ConfirmState::Withdrawn
    );
    assert_eq!(
        bed.nth_sent(3).await,
        format!("此问题已撤回，无需再回答：“重启服务？”（{code}）。")
    );
    bed.shut().await;
}
