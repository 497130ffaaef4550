//! The login check: a good token gives the bot's identity; a refused, malformed or
//! unreachable one says which, and the token never shows in an error.

use scv_telegram::login::{LoginError, check_login};
use scv_telegram::{BotToken, Client, ErrorClass, FatalReason, Method};

use crate::start;

#[tokio::test]
async fn a_good_token_gives_the_bots_identity_with_a_64_bit_id() {
    let (fake, handle, _) = start().await;
    let (token, bot) = check_login(
        &fake.base_url(),
        &format!("  {}\n", handle.token().expose()),
    )
    .await
    .expect("accepted");
    assert_eq!(token, handle.token());
    assert_eq!(bot.id, handle.bot_id());
    assert!(bot.id > i64::from(u32::MAX), "ids above 32 bits survive");
    assert_eq!(bot.username, "scv_fake_bot");
    assert!(bot.is_bot && !bot.can_read_all_group_messages);
}

#[tokio::test]
async fn a_revoked_token_is_refused_and_classified_for_relogin() {
    let (fake, _, _) = start().await;
    let other = "5000000001:AAsomeoneElsesSecret";
    let err = check_login(&fake.base_url(), other).await.expect_err("401");
    assert!(matches!(err, LoginError::Refused), "{err}");
    assert!(!err.to_string().contains("someoneElse"));
    // The same refusal on any call of a running account: stop and ask for a new token.
    let client =
        Client::new(&fake.base_url(), BotToken::parse(other).expect("shape")).expect("url");
    let e = client.get_me().await.expect_err("401");
    assert_eq!(
        e.class(),
        ErrorClass::Fatal {
            relogin: true,
            reason: FatalReason::BadToken
        }
    );
    assert!(!e.to_string().contains("someoneElse"), "{e}");
}

#[tokio::test]
async fn a_malformed_paste_is_refused_before_any_call() {
    let (fake, handle, _) = start().await;
    let err = check_login(&fake.base_url(), "not a token")
        .await
        .expect_err("shape");
    assert!(matches!(err, LoginError::Format(_)), "{err}");
    assert_eq!(handle.poll_requests(), 0);
}

#[tokio::test]
async fn an_unreachable_server_is_not_a_refusal_and_hides_the_token() {
    let (fake, handle, _) = start().await;
    let base = fake.base_url();
    drop(fake);
    let raw = handle.token().expose().to_owned();
    let err = check_login(&base, &raw).await.expect_err("nobody listens");
    let LoginError::Unreachable(e) = &err else {
        panic!("expected Unreachable, got {err}");
    };
    assert_eq!(e.class(), ErrorClass::Transient);
    let secret = raw.split_once(':').expect("colon").1;
    assert!(!err.to_string().contains(secret), "{err}");
    assert!(!format!("{err:?}").contains(secret));
}

#[tokio::test]
async fn a_5xx_is_transient_and_an_unknown_method_path_is_a_bad_token() {
    let (_fake, handle, client) = start().await;
    handle.fail_next(Method::GetMe, 502, "Bad Gateway");
    assert_eq!(
        client.get_me().await.expect_err("502").class(),
        ErrorClass::Transient
    );
    handle.fail_next(Method::GetMe, 404, "Not Found");
    assert_eq!(
        client.get_me().await.expect_err("404").class(),
        ErrorClass::Fatal {
            relogin: true,
            reason: FatalReason::BadToken
        }
    );
    assert!(client.get_me().await.is_ok(), "faults are one-shot");
}
