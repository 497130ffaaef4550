//! A model server on this machine is offered on the model form with its models: one that
//! serves the OpenAI-compatible list (llama.cpp's `/v1/models`, the OpenAI fake) and one that
//! serves only Ollama's `/api/tags`; a port where something listens but never answers is left
//! out without holding the page. Choosing one saves it as the model.

use axum::routing::get;
use scv_bridge::config::Config;
use scv_bridge::console::LocalServer;
use scv_bridge::testing::fake_openai::FakeOpenAi;

use crate::support::*;

/// An Ollama that answers only `/api/tags` (older builds have no `/v1/models`).
async fn ollama() -> String {
    let app = axum::Router::new().route(
        "/api/tags",
        get(|| async {
            axum::Json(
                serde_json::json!({"models": [{"name": "qwen2.5:7b"}, {"name": "llama3.2:3b"}]}),
            )
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

#[tokio::test]
async fn local_model_servers_are_offered_with_their_models() {
    let llama = FakeOpenAi::start().await.expect("fake");
    let llama_origin = llama.base_url().trim_end_matches("/v1").to_string();
    let ollama_origin = ollama().await;
    // Accepts connections and never answers: the probe's timeout ends it.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let silent_origin = format!("http://{}", silent.local_addr().expect("addr"));
    let mut bed = Bed::start(Options {
        local: vec![
            LocalServer {
                name: "Ollama",
                origin: ollama_origin.clone(),
            },
            LocalServer {
                name: "llama.cpp",
                origin: llama_origin.clone(),
            },
            LocalServer {
                name: "Silent",
                origin: silent_origin,
            },
        ],
        ..Options::default()
    })
    .await;
    let (cookie, csrf) = sign_in(&bed).await;
    let page = within(
        async {
            http()
                .get(format!("{}/", bed.base()))
                .header("cookie", &cookie)
                .send()
                .await
                .expect("page")
                .text()
                .await
                .expect("body")
        },
        "the page, with a silent port probed",
    )
    .await;
    let ollama_form = page
        .split("data-server=\"Ollama\"")
        .nth(1)
        .expect("Ollama offered");
    let ollama_form = ollama_form.split("</form>").next().expect("its form");
    assert!(ollama_form.contains(&format!("value=\"{ollama_origin}/v1\"")));
    assert!(
        ollama_form.contains("<option value=\"qwen2.5:7b\">"),
        "{ollama_form}"
    );
    assert!(ollama_form.contains("<option value=\"llama3.2:3b\">"));
    let llama_form = page
        .split("data-server=\"llama.cpp\"")
        .nth(1)
        .expect("llama.cpp offered");
    assert!(llama_form.contains("<option value=\"m\">"), "{llama_form}");
    assert!(
        !page.contains("data-server=\"Silent\""),
        "a silent port is not offered"
    );

    let chosen = http()
        .post(format!("{}/setup/agent", bed.base()))
        .header("cookie", &cookie)
        .header("content-type", FORM)
        .header("origin", bed.base())
        .body(form(&[
            ("csrf", csrf),
            ("base_url", llama.base_url()),
            ("model", "m".to_string()),
        ]))
        .send()
        .await
        .expect("choose");
    assert_eq!(chosen.status(), 200);
    let config = Config::load(&bed.config_path).expect("loads");
    assert_eq!(
        config.agent.base_url.as_deref(),
        Some(llama.base_url().as_str())
    );
    assert_eq!(config.agent.model.as_deref(), Some("m"));
    drop(silent);
    bed.stop().await;
}
