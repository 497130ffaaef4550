//! The set-up of the WeChat `kill -9` tests (`kill9`, `kill9_send`): the real binary with one
//! WeChat account, `wechat:phone` (anyone may write), on the fake iLink server, answered by the
//! fake model.

use scv_bridge::testing::fake_openai::FakeOpenAi;
use scv_wechat::fake::{FakeConfig, FakeServer};

use crate::process_support::bed::{ProcessBed, openai_agent, wechat_login};

/// The fake iLink server started with `config`, the fake model, and a bed whose configuration
/// names both, logged in as `owner@im.wechat`.
pub async fn start(config: FakeConfig) -> (ProcessBed, FakeServer, FakeOpenAi) {
    let fake = FakeServer::start_with(config).await.expect("fake ilink");
    let model = FakeOpenAi::start().await.expect("fake model");
    let p = ProcessBed::new(
        |_| {
            format!(
                "{}[wechat.phone]\nsenders = \"anyone\"\nbase_url = \"{}\"\n",
                openai_agent(&model.base_url(), "m", "SCV_KILL9_KEY"),
                fake.base_url(),
            )
        },
        &[("SCV_KILL9_KEY", "k")],
    );
    p.save_login("wechat:phone", &wechat_login(&fake, "owner@im.wechat"));
    (p, fake, model)
}
