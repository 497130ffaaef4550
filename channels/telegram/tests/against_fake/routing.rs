//! The fake's routing as the platform's (spec §8.1): GET with a query, form bodies,
//! case-insensitive method names, unknown methods and tokens; and the client's view of them.

use serde_json::Value;

use crate::start;

async fn raw(req: reqwest::RequestBuilder) -> (u16, Value) {
    let resp = req.send().await.expect("answered");
    let status = resp.status().as_u16();
    (status, resp.json().await.expect("JSON"))
}

#[tokio::test]
async fn query_form_and_any_case_reach_the_method() {
    let (fake, handle, _client) = start().await;
    let http = reqwest::Client::new();
    let base = format!("{}bot{}", fake.base_url(), handle.token().expose());
    let (status, me) = raw(http.get(format!("{base}/GETME"))).await;
    assert_eq!(
        (status, me["result"]["id"].as_i64()),
        (200, Some(handle.bot_id()))
    );
    let chat = handle.owner_chat().id.to_string();
    let form = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("chat_id", &chat)
        .append_pair("text", "by form")
        .finish();
    let post = http
        .post(format!("{base}/sendmessage"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form);
    let (status, sent) = raw(post).await;
    assert_eq!(status, 200, "{sent}");
    let url = format!("{base}/sendMessage?chat_id={chat}&text=by%20query");
    let (status, _) = raw(http.get(url)).await;
    assert_eq!(status, 200);
    let texts: Vec<_> = handle.sent().into_iter().map(|s| s.text).collect();
    assert_eq!(texts, ["by form", "by query"]);
}

#[tokio::test]
async fn unknown_methods_and_tokens_answer_like_the_platform() {
    let (fake, handle, _client) = start().await;
    let http = reqwest::Client::new();
    let base = fake.base_url();
    let (status, body) =
        raw(http.get(format!("{base}bot{}/noSuchMethod", handle.token().expose()))).await;
    assert_eq!((status, body["error_code"].as_i64()), (404, Some(404)));
    assert_eq!(body["description"], "Not Found");
    let (status, body) = raw(http.get(format!("{base}bot1:wrong/getMe"))).await;
    assert_eq!((status, body["ok"].as_bool()), (401, Some(false)));
    assert_eq!(body["description"], "Unauthorized");
}
