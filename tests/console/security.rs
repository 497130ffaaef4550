//! The console's guard over real HTTP against a daemon: no session, no page; a link works
//! once and not after it expires; a change needs the page's CSRF token and its origin; every
//! answer carries the headers; a console beyond this machine is warned about; nothing secret
//! is ever served.

use std::time::Duration;

use scv_bridge::confirm::Clock;
use scv_bridge::daemon::console_keys::LINK_TTL_MS;
use scv_bridge::protocol::{ComponentState, DaemonCommand};
use scv_wechat::Endpoint;

use crate::support::*;

#[tokio::test]
async fn without_a_session_nothing_useful_is_served() {
    let mut bed = Bed::start(Options::default()).await;
    let client = http();
    for path in ["/", "/events", "/?lang=zh-CN"] {
        let answer = client
            .get(format!("{}{path}", bed.base()))
            .send()
            .await
            .expect("get");
        assert_eq!(answer.status(), 401, "{path}");
        let body = answer.text().await.expect("body");
        assert!(body.contains("scv-bridge console"), "{body}");
        assert!(!body.contains(ID) && !body.contains("csrf"), "{body}");
    }
    let post = client
        .post(format!("{}/answer", bed.base()))
        .header("origin", bed.base())
        .header("content-type", FORM)
        .body(form(&[("id", "q-1".into()), ("answer", "yes".into())]))
        .send()
        .await
        .expect("post");
    assert_eq!(post.status(), 401);
    let forged = client
        .get(format!("{}/", bed.base()))
        .header("cookie", "scv_console=0123")
        .send()
        .await
        .expect("get");
    assert_eq!(forged.status(), 401, "a made-up cookie opens nothing");
    bed.stop().await;
}

#[tokio::test]
async fn a_link_opens_one_session_once_and_not_after_it_expires() {
    let clock = Clock::manual(scv_bridge::clock::wall_ms());
    let mut bed = Bed::start(Options {
        clock: clock.clone(),
        ..Options::default()
    })
    .await;
    let client = http();
    let link = bed.link().await;
    let answer = client.get(&link).send().await.expect("login");
    assert_eq!(answer.status(), 303);
    let set = answer.headers()["set-cookie"].to_str().expect("ascii");
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    let cookie = session_cookie(&answer);
    let page = client
        .get(format!("{}/", bed.base()))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("page");
    assert_eq!(page.status(), 200);
    let again = client.get(&link).send().await.expect("again");
    assert_eq!(again.status(), 401, "a link works once");
    assert!(again.headers().get("set-cookie").is_none());

    let late = bed.link().await;
    clock.advance(Duration::from_millis(LINK_TTL_MS));
    let expired = client.get(&late).send().await.expect("late");
    assert_eq!(expired.status(), 401, "an expired link is refused");
    bed.stop().await;
}

#[tokio::test]
async fn guessing_links_is_paced() {
    let mut bed = Bed::start(Options::default()).await;
    let client = http();
    let mut statuses = Vec::new();
    for n in 0..=scv_bridge::daemon::console_keys::MAX_FAILED_ATTEMPTS {
        let guess = format!("{}/login?token={n:064}", bed.base());
        statuses.push(client.get(guess).send().await.expect("guess").status());
    }
    assert!(statuses[..statuses.len() - 1].iter().all(|s| *s == 401));
    assert_eq!(statuses.last().map(|s| s.as_u16()), Some(429));
    let link = bed.link().await;
    let refused = client.get(&link).send().await.expect("login");
    assert_eq!(
        refused.status(),
        429,
        "even a good link waits out the window"
    );
    bed.stop().await;
}

#[tokio::test]
async fn a_change_needs_the_csrf_token_and_the_console_s_origin() {
    let mut bed = Bed::start(Options {
        logged_in: true,
        ..Options::default()
    })
    .await;
    let (cookie, csrf) = sign_in(&bed).await;
    let client = http();
    let asker = bed
        .cli_command(&["confirm", "Ship it?", "--chat", ID])
        .spawn();
    let _asker = asker.expect("ask");
    let confirm = bed.daemon().core.confirm().expect("confirm").clone();
    let mut changes = confirm.subscribe_changes();
    let id = within(
        async {
            loop {
                if let Some(q) = confirm.open_questions().first() {
                    return q.id.clone();
                }
                let _ = changes.changed().await;
            }
        },
        "the question",
    )
    .await;
    let post = |fields: Vec<(&'static str, String)>, origin: Option<String>| {
        let mut request = client
            .post(format!("{}/answer", bed.base()))
            .header("cookie", &cookie)
            .header("content-type", FORM)
            .body(form(&fields));
        if let Some(o) = origin {
            request = request.header("origin", o);
        }
        request.send()
    };
    let no_token = post(
        vec![("id", id.clone()), ("answer", "yes".into())],
        Some(bed.base()),
    )
    .await
    .expect("post");
    assert_eq!(no_token.status(), 403, "no CSRF token");
    let wrong = post(
        vec![
            ("csrf", "0".repeat(64)),
            ("id", id.clone()),
            ("answer", "yes".into()),
        ],
        Some(bed.base()),
    )
    .await
    .expect("post");
    assert_eq!(wrong.status(), 403, "a wrong CSRF token");
    let fields = vec![
        ("csrf", csrf.clone()),
        ("id", id.clone()),
        ("answer", "yes".into()),
    ];
    let cross = post(fields.clone(), Some("http://evil.example".into()))
        .await
        .expect("post");
    assert_eq!(cross.status(), 403, "another origin");
    let no_origin = post(fields.clone(), None).await.expect("post");
    assert_eq!(no_origin.status(), 403, "no origin at all");
    assert_eq!(confirm.open_questions().len(), 1, "nothing was answered");
    let ok = post(fields, Some(bed.base())).await.expect("post");
    assert_eq!(ok.status(), 303, "{:?}", ok.text().await);
    let view = confirm.view(&id).expect("remembered");
    assert_eq!(view.info.state, scv_bridge::protocol::ConfirmState::Yes);
    bed.stop().await;
}

#[tokio::test]
async fn every_answer_carries_the_headers() {
    let mut bed = Bed::start(Options::default()).await;
    let (cookie, _) = sign_in(&bed).await;
    let client = http();
    for (path, signed) in [
        ("/", true),
        ("/?lang=zh-CN", true),
        ("/", false),
        ("/login?token=x", false),
        ("/assets/console.js", false),
        ("/assets/console.css", false),
        ("/nothing-here", true),
    ] {
        let mut request = client.get(format!("{}{path}", bed.base()));
        if signed {
            request = request.header("cookie", &cookie);
        }
        let answer = request.send().await.expect("get");
        let h = answer.headers();
        let csp = h["content-security-policy"].to_str().expect("ascii");
        assert!(csp.contains("default-src 'self'"), "{path}: {csp}");
        assert!(csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"));
        assert!(csp.contains("frame-ancestors 'none'"));
        assert_eq!(h["x-frame-options"], "DENY", "{path}");
        assert_eq!(h["referrer-policy"], "no-referrer", "{path}");
    }
    bed.stop().await;
}

#[tokio::test]
async fn a_console_beyond_this_machine_is_warned_about_in_status() {
    let mut bed = Bed::start(Options {
        listen: "0.0.0.0:0",
        ..Options::default()
    })
    .await;
    let status = bed.status().await;
    let console = status.console.expect("the console in status");
    assert!(console.listen.starts_with("0.0.0.0:"), "{console:?}");
    let warning = console.warning.expect("a warning");
    assert!(warning.contains("beyond this machine"), "{warning}");
    let out = bed.cli(&["status"]).await;
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("warning: the console listens on 0.0.0.0:"),
        "{table}"
    );
    let (cookie, _) = sign_in(&bed).await;
    let page = http()
        .get(format!("{}/", bed.base()))
        .header("cookie", cookie)
        .send()
        .await
        .expect("page")
        .text()
        .await
        .expect("body");
    assert!(page.contains("beyond this machine"), "the page warns too");
    bed.stop().await;

    let mut home = Bed::start(Options::default()).await;
    let status = home.status().await;
    assert_eq!(status.console.expect("console").warning, None);
    home.stop().await;
}

#[tokio::test]
async fn no_secret_or_message_is_ever_served() {
    let mut bed = Bed::start(Options {
        logged_in: true,
        ..Options::default()
    })
    .await;
    bed.wait_state(ComponentState::Connected).await;
    let fake = bed.fake.handle();
    let message = "planted-message-text-93be";
    fake.push_text(OWNER, message);
    // Handed out, then journaled before the next poll asks for more: it is in the store.
    within(
        async {
            loop {
                let changed = fake.changed();
                if !fake.handed_out().is_empty() {
                    break;
                }
                changed.await;
            }
        },
        "the message to be handed out",
    )
    .await;
    let polls = fake.requests_to(Endpoint::GetUpdates).len();
    assert!(
        fake.wait_for_requests(Endpoint::GetUpdates, polls + 1, PATIENCE)
            .await
    );
    let (cookie, _) = sign_in(&bed).await;
    let link = bed.link().await;
    let mut served = String::new();
    let client = http();
    for path in [
        "/",
        "/?lang=zh-CN",
        "/assets/console.js",
        "/assets/console.css",
        "/login?token=wrong",
    ] {
        let answer = client
            .get(format!("{}{path}", bed.base()))
            .header("cookie", &cookie)
            .send()
            .await
            .expect("get");
        served.push_str(&format!("{:?}", answer.headers()));
        served.push_str(&answer.text().await.expect("body"));
    }
    served.push_str(&first_event(&client, &bed, &cookie).await);
    let token = link.split("token=").nth(1).expect("token");
    let status = bed.status().await;
    assert!(
        served.contains(ID) && served.contains("connected"),
        "the crawl saw the page"
    );
    for planted in [BOT_TOKEN, MODEL_KEY, message, token] {
        assert!(!served.contains(planted), "{planted} was served");
    }
    assert!(!format!("{status:?}").contains(BOT_TOKEN));
    let control = scv_bridge::client::request(&bed.daemon().socket, DaemonCommand::Status)
        .await
        .expect("status");
    assert!(
        control.console.expect("console").link.is_none(),
        "no link in plain status"
    );
    bed.stop().await;
}

/// The first live frame of `/events`.
async fn first_event(client: &reqwest::Client, bed: &Bed, cookie: &str) -> String {
    let mut answer = client
        .get(format!("{}/events", bed.base()))
        .header("cookie", cookie)
        .send()
        .await
        .expect("events");
    assert_eq!(answer.status(), 200);
    let mut text = format!("{:?}", answer.headers());
    within(
        async {
            while !text.contains("\n\n") {
                let chunk = answer.chunk().await.expect("chunk").expect("more");
                text.push_str(&String::from_utf8_lossy(&chunk));
            }
        },
        "the first live frame",
    )
    .await;
    assert!(text.contains("event: live"), "{text}");
    text
}

/// A login started from the page, and an answer to its question, need the CSRF token like any
/// change; an account the configuration does not have is refused, and an answer with no question
/// waiting goes nowhere.
#[tokio::test]
async fn logins_and_their_answers_need_the_token_and_a_real_account() {
    let mut bed = Bed::start(Options::default()).await;
    let (cookie, csrf) = sign_in(&bed).await;
    let client = http();
    let post = |path: &'static str, fields: Vec<(&'static str, String)>| {
        client
            .post(format!("{}{path}", bed.base()))
            .header("cookie", &cookie)
            .header("content-type", FORM)
            .header("origin", bed.base())
            .body(form(&fields))
            .send()
    };
    for path in ["/scan", "/scan/answer"] {
        let fields = vec![("account", ID.to_string()), ("answer", "4821".into())];
        let refused = post(path, fields).await.expect("post");
        assert_eq!(refused.status(), 403, "{path} without the token");
    }
    let unknown = post(
        "/scan",
        vec![
            ("csrf", csrf.clone()),
            ("account", "telegram:nobody".into()),
        ],
    )
    .await
    .expect("post");
    assert_eq!(unknown.status(), 404);
    assert!(
        unknown
            .text()
            .await
            .expect("text")
            .contains("telegram:nobody")
    );
    let nothing_asked = post(
        "/scan/answer",
        vec![("csrf", csrf.clone()), ("answer", "4821".into())],
    )
    .await
    .expect("post");
    assert_eq!(nothing_asked.status(), 409);
    bed.stop().await;
}
