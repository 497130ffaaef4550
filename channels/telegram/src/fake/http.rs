//! The fake's HTTP face: routing by token and method, injected faults, and the answers.

use std::sync::Arc;

use axum::extract::{Request, State as AxumState};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::Shared;
use super::answer::{error, ok};
use super::params::Params;
use super::state::Fault;
use crate::method::Method;
use axum::http::header::CONTENT_TYPE;

/// Serves every request (installed as the router's fallback).
pub(crate) async fn handle(AxumState(shared): AxumState<Arc<Shared>>, req: Request) -> Response {
    let path = req.uri().path().to_owned();
    let token = shared.lock().config.token.clone();
    if let Some(rest) = path.strip_prefix("/file/bot") {
        return match rest.split_once('/') {
            Some((t, file)) if t == token => super::files::download(&shared, file),
            _ => unauthorized(),
        };
    }
    let Some((t, name)) = path.strip_prefix("/bot").and_then(|r| r.split_once('/')) else {
        return not_found();
    };
    if t != token {
        return unauthorized();
    }
    let Some(method) = Method::from_name(name) else {
        return not_found();
    };
    let limit = {
        let st = shared.lock();
        st.config.max_upload_photo.max(st.config.max_upload_file)
    };
    let params = match Params::read(req, limit).await {
        Ok(p) => p,
        Err(detail) => return error(400, &format!("Bad Request: {detail}")),
    };
    let fault = shared.lock().take_fault(method.name());
    match fault {
        None => {}
        Some(Fault::Error(status, description)) => return error(status, &description),
        Some(Fault::Raw(status, bytes)) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            return (status, [(CONTENT_TYPE, "application/json")], bytes).into_response();
        }
        Some(Fault::Hang) => {
            let mut down = shared.shutdown.subscribe();
            let _ = down.wait_for(|d| *d).await;
            return error(502, "Bad Gateway");
        }
    }
    let answer = dispatch(&shared, method, params).await;
    shared.bump();
    answer
}

async fn dispatch(shared: &Arc<Shared>, method: Method, p: Params) -> Response {
    use super::{files, send, updates};
    match method {
        Method::GetMe => ok(shared.lock().bot_user()),
        Method::GetUpdates => updates::get_updates(shared, &p).await,
        Method::SendMessage => send::send_message(&mut shared.lock(), &p),
        Method::EditMessageText => send::edit_text(&mut shared.lock(), &p),
        Method::EditMessageReplyMarkup => send::edit_markup(&mut shared.lock(), &p),
        Method::SendMessageDraft => send::send_draft(&mut shared.lock(), &p),
        Method::SendChatAction => send::chat_action(&mut shared.lock(), &p),
        Method::AnswerCallbackQuery => send::answer_callback(&mut shared.lock(), &p),
        Method::SetMyCommands => {
            let lang = p.text("language_code").unwrap_or_default();
            let commands = p.json("commands").unwrap_or(Value::Null);
            shared.lock().commands.insert(lang, commands);
            ok(json!(true))
        }
        Method::GetFile => files::get_file(&mut shared.lock(), &p),
        Method::SendPhoto | Method::SendDocument | Method::SendVoice | Method::SendVideo => {
            files::upload(&mut shared.lock(), method, p)
        }
        Method::DeleteWebhook => {
            let mut st = shared.lock();
            st.webhook_url = None;
            if p.flag("drop_pending_updates") {
                st.queue.clear();
            }
            ok(json!(true))
        }
        Method::SetWebhook => super::webhook::set_webhook(&mut shared.lock(), &p),
        Method::GetWebhookInfo => {
            let st = shared.lock();
            let mut info = json!({
                "url": st.webhook_url.clone().unwrap_or_default(),
                "pending_update_count": st.queue.len(),
                "has_custom_certificate": false,
            });
            if let Some(e) = &st.webhook_last_error {
                info["last_error_message"] = json!(e);
                info["last_error_date"] = json!(1_780_000_000);
            }
            ok(info)
        }
        // Not a method: `from_name` never returns it.
        Method::DownloadFile => not_found(),
    }
}

fn unauthorized() -> Response {
    error(401, "Unauthorized")
}

fn not_found() -> Response {
    error(404, "Not Found")
}
