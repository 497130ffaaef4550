//! The fake's AI-card routes (spec §7.14): create-and-deliver with its checks, streaming with
//! guid idempotency, and parameter updates.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use super::http::{gate, spend_quota};
use super::records::{CardRecord, Fault};
use super::state::{Shared, api_error, ok};
use crate::call::Call;

type S = State<Arc<Shared>>;

/// `cardParamMap` values must be strings of at most 1 KB, keys at most 100 bytes (spec §6).
fn param_map(v: &Value) -> Option<Map<String, Value>> {
    let map = v.as_object()?;
    map.iter()
        .all(|(k, v)| k.len() <= 100 && v.as_str().is_some_and(|s| s.len() <= 1024))
        .then(|| map.clone())
}

/// The `openSpaceId` and its matching deliver model (spec §4.6): `Err` with a message.
fn check_space(sh: &Shared, v: &Value) -> Result<String, &'static str> {
    let space = v["openSpaceId"].as_str().unwrap_or_default();
    let robot = sh.config.client_id.as_str();
    if let Some(staff) = space.strip_prefix("dtv1.card//IM_ROBOT.") {
        let model = &v["imRobotOpenDeliverModel"];
        if model["spaceType"] != "IM_ROBOT" || model["robotCode"] != robot {
            return Err("imRobotOpenDeliverModel is missing or wrong");
        }
        if !sh.config.staff.iter().any(|s| s == staff) {
            return Err("unknown user in openSpaceId");
        }
    } else if let Some(group) = space.strip_prefix("dtv1.card//IM_GROUP.") {
        if v["imGroupOpenDeliverModel"]["robotCode"] != robot {
            return Err("imGroupOpenDeliverModel is missing or wrong");
        }
        if !sh.config.groups.iter().any(|g| g == group) {
            return Err("unknown group in openSpaceId");
        }
    } else {
        return Err("openSpaceId is malformed");
    }
    Ok(space.to_string())
}

/// `POST /v1.0/card/instances/createAndDeliver`.
pub(crate) async fn create(State(sh): S, headers: HeaderMap, body: Bytes) -> Response {
    let fault = match gate(&sh, &headers, Call::CardCreate).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let template = v["cardTemplateId"].as_str().unwrap_or_default();
    if !sh.config.card_templates.iter().any(|(t, _)| t == template) {
        return api_error(400, "param.invalid", "cardTemplateId not found");
    }
    let out_track_id = v["outTrackId"].as_str().unwrap_or_default().to_string();
    if out_track_id.is_empty() {
        return api_error(400, "param.empty", "outTrackId is empty");
    }
    let Some(params) = param_map(&v["cardData"]["cardParamMap"]) else {
        return api_error(
            400,
            "param.invalid",
            "cardParamMap values must be strings of at most 1 KB",
        );
    };
    let space = match check_space(&sh, &v) {
        Ok(s) => s,
        Err(m) => return api_error(400, "param.invalid", m),
    };
    if let Err(r) = spend_quota(&sh) {
        return r.into_response();
    }
    let mut st = sh.lock();
    if st.cards.contains_key(&out_track_id) {
        return api_error(400, "param.invalid", "outTrackId already used");
    }
    let delivered = fault != Some(Fault::NotDelivered);
    if delivered {
        st.cards.insert(
            out_track_id.clone(),
            CardRecord {
                out_track_id: out_track_id.clone(),
                template_id: template.to_string(),
                open_space_id: space.clone(),
                params,
                streamed: Map::new(),
                stream_calls: 0,
                finalized: false,
                reopened: false,
            },
        );
    }
    let result = json!({"spaceType": "IM_ROBOT", "spaceId": space, "success": delivered,
                        "errorMsg": if delivered { "" } else { "robot is not in the space" },
                        "carrierId": "carrier-1"});
    ok(json!({"success": true, "result": {"outTrackId": out_track_id, "deliverResults": [result]}}))
}

/// `PUT /v1.0/card/streaming`: known card, a new guid (a replay is a no-op), a template key.
pub(crate) async fn stream(State(sh): S, headers: HeaderMap, body: Bytes) -> Response {
    let fault = match gate(&sh, &headers, Call::CardStream).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (Some(id), Some(guid), Some(key), Some(content)) = (
        v["outTrackId"].as_str(),
        v["guid"].as_str(),
        v["key"].as_str(),
        v["content"].as_str(),
    ) else {
        return api_error(
            400,
            "param.empty",
            "outTrackId, guid, key and content are required",
        );
    };
    if fault == Some(Fault::NotDelivered) {
        return ok(json!({"success": false, "result": false}));
    }
    let mut st = sh.lock();
    let Some(template) = st.cards.get(id).map(|c| c.template_id.clone()) else {
        // An unknown card is 200 with success:false (spec §7.14).
        return ok(json!({"success": false, "result": false}));
    };
    let keys = sh
        .config
        .card_templates
        .iter()
        .find(|(t, _)| *t == template)
        .map(|(_, k)| k.clone());
    if !keys.is_some_and(|k| k.iter().any(|k| k == key)) {
        return api_error(
            400,
            "param.invalid",
            "key is not a variable of the template",
        );
    }
    if !st.card_guids.insert(guid.to_string()) {
        return ok(json!({"success": true, "result": true}));
    }
    drop(st);
    if let Err(r) = spend_quota(&sh) {
        return r.into_response();
    }
    let mut st = sh.lock();
    if let Some(card) = st.cards.get_mut(id) {
        card.reopened |= card.finalized;
        card.finalized = v["isFinalize"].as_bool().unwrap_or(false);
        card.streamed
            .insert(key.to_string(), Value::String(content.to_string()));
        card.stream_calls += 1;
    }
    ok(json!({"success": true, "result": true}))
}

/// `PUT /v1.0/card/instances`: applies `cardParamMap` by key.
pub(crate) async fn update(State(sh): S, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(r) = gate(&sh, &headers, Call::CardUpdate).await {
        return r;
    }
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let Some(params) = param_map(&v["cardData"]["cardParamMap"]) else {
        return api_error(
            400,
            "param.invalid",
            "cardParamMap values must be strings of at most 1 KB",
        );
    };
    if let Err(r) = spend_quota(&sh) {
        return r.into_response();
    }
    let id = v["outTrackId"].as_str().unwrap_or_default();
    let mut st = sh.lock();
    let Some(card) = st.cards.get_mut(id) else {
        return ok(json!({"success": false, "result": false}));
    };
    card.params.extend(params);
    ok(json!({"success": true, "result": true}))
}
