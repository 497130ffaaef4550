//! QR login: typing the status answers, and [`run_login`], the whole walk of spec §2
//! (fetch, show, poll, redirect, verify code, refresh on expiry) for `scv-bridge login wechat`.

use std::future::Future;
use std::time::Duration;

use crate::client::Client;
use crate::error::Error;
use crate::token::BotToken;
use crate::types::{LOGIN_TIMEOUT, LoginCredentials, MAX_QR_CODES, QR_POLL_INTERVAL, QrStatus};

/// Knobs of a login; the defaults are the plugin's (tests shorten the interval).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginOptions {
    /// Pause between two status polls.
    pub poll_interval: Duration,
    /// Give up after this long in total.
    pub deadline: Duration,
    /// QR codes to show in total (the first plus refreshes).
    pub max_codes: u32,
}

impl Default for LoginOptions {
    fn default() -> Self {
        LoginOptions {
            poll_interval: QR_POLL_INTERVAL,
            deadline: LOGIN_TIMEOUT,
            max_codes: MAX_QR_CODES,
        }
    }
}

/// What the login tells the user as it goes (each reported when it changes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoginEvent {
    /// Show this URL as a QR code (see [`crate::render_qr_terminal`]); code `number` of `of`.
    ShowQr {
        /// The URL to encode (`qrcode_img_content`).
        image_url: String,
        /// 1 for the first code, 2 after the first refresh, ...
        number: u32,
        /// The most codes this login will show.
        of: u32,
    },
    /// Waiting for a scan.
    Waiting,
    /// Scanned; waiting for the user to confirm on the phone.
    Scanned,
    /// The code expired (a new one follows if any are left).
    Expired,
    /// Too many wrong verify codes: the code is dropped (a new one follows if any are left).
    VerifyCodeBlocked,
    /// The server moved polling to another host.
    Redirected {
        /// The new base URL.
        base_url: String,
    },
    /// The verify code just sent was wrong; another is asked for.
    WrongVerifyCode,
}

/// The side of a login that talks to the user.
pub trait LoginUi {
    /// Reports progress.
    fn event(&mut self, event: LoginEvent);
    /// Asks for the digits shown on the phone; `None` cancels the login.
    fn verify_code(&mut self) -> impl Future<Output = Option<String>> + Send;
}

/// How a login ended well.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoginOutcome {
    /// New credentials: store them all (the owner too).
    Confirmed(LoginCredentials),
    /// The bot is already bound to this client: keep the stored credentials.
    AlreadyBound,
}

/// How a login failed.
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    /// Every QR code allowed expired (or was blocked) without a confirmation.
    #[error("wechat login: {0} QR codes expired without a confirmation; run the login again")]
    TooManyCodes(u32),
    /// The overall deadline passed.
    #[error("wechat login: not confirmed within {0:?}")]
    TimedOut(Duration),
    /// The user gave no verify code.
    #[error("wechat login: cancelled (no verify code given)")]
    Cancelled,
    /// A call failed in a way that polling again cannot fix.
    #[error(transparent)]
    Call(#[from] Error),
}

/// Runs a whole QR login with `client` (no token needed; its base URL is where login starts,
/// normally [`crate::types::DEFAULT_BASE_URL`]). `recent_tokens` (newest first) lets the
/// server answer "already bound". Timeouts, network errors and gateway 5xx during polling
/// count as "wait", as the spec says.
pub async fn run_login(
    client: &Client,
    recent_tokens: &[BotToken],
    options: &LoginOptions,
    ui: &mut impl LoginUi,
) -> Result<LoginOutcome, LoginError> {
    tokio::time::timeout(
        options.deadline,
        login_loop(client, recent_tokens, options, ui),
    )
    .await
    .map_err(|_| LoginError::TimedOut(options.deadline))?
}

async fn login_loop(
    client: &Client,
    recent_tokens: &[BotToken],
    options: &LoginOptions,
    ui: &mut impl LoginUi,
) -> Result<LoginOutcome, LoginError> {
    for number in 1..=options.max_codes {
        let ticket = client.get_qrcode(recent_tokens).await?;
        ui.event(LoginEvent::ShowQr {
            image_url: ticket.qrcode_img_content.clone(),
            number,
            of: options.max_codes,
        });
        let mut poller = client.clone();
        let mut verify_code: Option<String> = None;
        // Waiting/Scanned come back on every poll; the user needs to hear each once.
        let mut last: Option<LoginEvent> = None;
        loop {
            let status = poller
                .qrcode_status(&ticket.qrcode, verify_code.as_deref())
                .await?;
            match status {
                QrStatus::Wait | QrStatus::Unknown(_) => {
                    report_once(ui, &mut last, LoginEvent::Waiting)
                }
                QrStatus::Scanned => {
                    verify_code = None;
                    report_once(ui, &mut last, LoginEvent::Scanned);
                }
                QrStatus::Confirmed(credentials) => {
                    return Ok(LoginOutcome::Confirmed(credentials));
                }
                QrStatus::AlreadyBound => return Ok(LoginOutcome::AlreadyBound),
                QrStatus::Expired => {
                    ui.event(LoginEvent::Expired);
                    break;
                }
                QrStatus::VerifyCodeBlocked => {
                    ui.event(LoginEvent::VerifyCodeBlocked);
                    break;
                }
                QrStatus::Redirect { host } => {
                    if let Some(host) = host {
                        poller = poller.redirected(&host)?;
                        ui.event(LoginEvent::Redirected {
                            base_url: poller.base_url().to_owned(),
                        });
                    }
                }
                QrStatus::NeedVerifyCode => {
                    if verify_code.is_some() {
                        ui.event(LoginEvent::WrongVerifyCode);
                    }
                    verify_code = Some(ui.verify_code().await.ok_or(LoginError::Cancelled)?);
                    // The spec says to poll again at once with the code.
                    continue;
                }
            }
            tokio::time::sleep(options.poll_interval).await;
        }
    }
    Err(LoginError::TooManyCodes(options.max_codes))
}

fn report_once(ui: &mut impl LoginUi, last: &mut Option<LoginEvent>, event: LoginEvent) {
    if last.as_ref() != Some(&event) {
        *last = Some(event.clone());
        ui.event(event);
    }
}
