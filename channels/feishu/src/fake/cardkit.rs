//! The fake's CardKit routes (media-and-streaming.md §5.1, §5.4), strict as the platform is:
//! JSON 2.0 cards with unique element ids, sent at most once by `card_id`, a per-card sequence
//! that must strictly increase across every operation (300317), streaming mode that closes
//! itself after 10 minutes of the fake clock (200850) and refuses updates while closed (300309),
//! 10 operations per second per card (230020), 30 KB per card (200860), 14 days of life (200750).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::{patch, post, put};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::FakeFeishu;
use super::reply::{Refusal, authorize, err, ok};
use super::state::Shared;

/// Streaming mode closes itself this long after it was last opened.
const STREAMING_FOR: Duration = Duration::from_secs(600);
/// A card entity lives this long.
const CARD_LIFE: Duration = Duration::from_secs(14 * 24 * 3600);
/// Operations per second on one card.
const OPS_PER_SECOND: usize = 10;
/// The largest card, in bytes of its JSON.
const MAX_CARD_BYTES: usize = 30 * 1024;

/// One content update the fake accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentUpdate {
    /// Its sequence.
    pub sequence: i64,
    /// The full text it set.
    pub content: String,
    /// The old text was a prefix of the new one (the client types the new part out).
    pub typewriter: bool,
}

/// A card entity as the fake holds it.
#[derive(Debug, Clone)]
pub struct CardRecord {
    /// Its id.
    pub card_id: String,
    /// The card JSON as created.
    pub card: Value,
    /// The message it was sent in, once sent.
    pub message_id: Option<String>,
    /// Whether streaming mode is on now (as of the last operation).
    pub streaming: bool,
    /// Every accepted content update, in order.
    pub updates: Vec<ContentUpdate>,
    /// Every accepted sequence (content and settings), in order.
    pub sequences: Vec<i64>,
    /// Settings operations accepted: `streaming_mode` set to this value.
    pub settings: Vec<bool>,
    /// Operations refused, by code.
    pub refused: Vec<i64>,
    opened: Instant,
    created: Instant,
    aged: Duration,
    ops: VecDeque<Instant>,
}

impl CardRecord {
    /// The text of element `id` now.
    pub fn text(&self, id: &str) -> Option<String> {
        elements(&self.card)
            .find(|e| e.get("element_id").and_then(Value::as_str) == Some(id))
            .and_then(|e| e.get("content").and_then(Value::as_str))
            .map(String::from)
    }
}

/// The card entities and their knobs.
#[derive(Debug, Default)]
pub(crate) struct CardKit {
    cards: HashMap<String, CardRecord>,
    order: Vec<String>,
    /// Calls to any CardKit route, whatever their outcome.
    requests: usize,
    /// Operations still to be refused with 230020 whatever the rate.
    limit_next: usize,
    /// Creates refused with this code (99991672: the app lacks `cardkit:card:write`).
    refuse_create: Option<i64>,
}

impl CardKit {
    /// Checks that a message naming card entity `card_id` may be sent, and records it sent in
    /// `message_id`. A card entity can be sent only once; the platform's code for a second
    /// send is unconfirmed, 230099 stands in.
    pub(crate) fn send(&mut self, card_id: &str, message_id: &str) -> Result<(), Refusal> {
        let Some(card) = self.cards.get_mut(card_id) else {
            return Err((200740, "card entity not found"));
        };
        if card.message_id.is_some() {
            return Err((230099, "the card entity was sent already"));
        }
        card.message_id = Some(message_id.to_string());
        Ok(())
    }

    /// Whether `card_id` names a card entity (an IM patch of such a card is refused).
    pub(crate) fn is_entity(content: &Value) -> bool {
        content.get("type").and_then(Value::as_str) == Some("card")
    }
}

/// The card entity a message content names, if it is one (`{"type":"card","data":{card_id}}`).
pub(crate) fn entity_of(content: &Value) -> Option<&str> {
    if !CardKit::is_entity(content) {
        return None;
    }
    content.pointer("/data/card_id").and_then(Value::as_str)
}

fn elements(card: &Value) -> impl Iterator<Item = &Value> {
    card.pointer("/body/elements")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn elements_mut(card: &mut Value) -> impl Iterator<Item = &mut Value> {
    card.pointer_mut("/body/elements")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

/// The CardKit routes.
pub(crate) fn routes() -> Router<Arc<Shared>> {
    Router::new()
        .route("/open-apis/cardkit/v1/cards", post(create))
        .route(
            "/open-apis/cardkit/v1/cards/{id}/elements/{eid}/content",
            put(content),
        )
        .route("/open-apis/cardkit/v1/cards/{id}/settings", patch(settings))
}

fn valid_element_id(id: &str) -> bool {
    id.len() <= 20
        && id.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Checks a card JSON as create does.
fn check_card(card: &Value) -> Result<(), Refusal> {
    if card.get("schema").and_then(Value::as_str) != Some("2.0") {
        return Err((300303, "the card is not schema 2.0"));
    }
    if card
        .pointer("/config/update_multi")
        .and_then(Value::as_bool)
        == Some(false)
    {
        return Err((300302, "update_multi is false"));
    }
    let mut seen = std::collections::HashSet::new();
    let mut count = 0;
    for e in elements(card) {
        count += 1;
        if let Some(id) = e.get("element_id").and_then(Value::as_str) {
            if !valid_element_id(id) {
                return Err((10002, "invalid element_id"));
            }
            if !seen.insert(id.to_string()) {
                return Err((300301, "duplicate element_id"));
            }
        }
    }
    if count == 0 {
        return Err((300307, "empty card"));
    }
    if count > 200 {
        return Err((300305, "more than 200 elements"));
    }
    if card.to_string().len() > MAX_CARD_BYTES {
        return Err((200860, "the card is larger than 30 KB"));
    }
    Ok(())
}

/// Every CardKit call: counted, then the refusal when its token is not good.
fn refused_call(sh: &Shared, headers: &HeaderMap) -> Option<Response> {
    sh.lock().cardkit.requests += 1;
    authorize(sh, headers)
        .err()
        .map(|(code, msg)| err(code, msg))
}

/// The request body as JSON; a body that is not JSON reads as null (and is refused by the
/// field checks that follow).
fn body_json(body: &Bytes) -> Value {
    serde_json::from_slice(body).unwrap_or(Value::Null)
}

async fn create(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(refused) = refused_call(&sh, &headers) {
        return refused;
    }
    if let Some(code) = sh.lock().cardkit.refuse_create {
        return err(
            code,
            "Access denied. One of the following scopes is required: [cardkit:card:write]",
        );
    }
    let v = body_json(&body);
    if v.get("type").and_then(Value::as_str) != Some("card_json") {
        return err(10002, "type must be card_json");
    }
    let Some(data) = v
        .get("data")
        .and_then(Value::as_str)
        .filter(|d| !d.is_empty() && d.chars().count() <= 3_000_000)
    else {
        return err(10002, "data must be 1 to 3000000 characters");
    };
    let Ok(card) = serde_json::from_str::<Value>(data) else {
        return err(200220, "card JSON could not be generated");
    };
    if let Err((code, msg)) = check_card(&card) {
        return err(code, msg);
    }
    let mut st = sh.lock();
    let card_id = format!("73553727661{:05}", st.next());
    let now = Instant::now();
    let streaming = card
        .pointer("/config/streaming_mode")
        .and_then(Value::as_bool)
        == Some(true);
    st.cardkit.order.push(card_id.clone());
    st.cardkit.cards.insert(
        card_id.clone(),
        CardRecord {
            card_id: card_id.clone(),
            card,
            message_id: None,
            streaming,
            updates: Vec::new(),
            sequences: Vec::new(),
            settings: Vec::new(),
            refused: Vec::new(),
            opened: now,
            created: now,
            aged: Duration::ZERO,
            ops: VecDeque::new(),
        },
    );
    ok(json!({"card_id": card_id}))
}

/// The checks every operation on a card passes, in the platform's order as far as it is
/// known: the card exists and is alive, the per-card rate, then the sequence.
fn admit(ck: &mut CardKit, id: &str, v: &Value, now: Instant) -> Result<i64, Refusal> {
    let limited = ck.limit_next > 0;
    if limited {
        ck.limit_next -= 1;
    }
    let Some(card) = ck.cards.get_mut(id) else {
        return Err((200740, "card entity not found"));
    };
    let refuse = |card: &mut CardRecord, r: Refusal| {
        card.refused.push(r.0);
        Err(r)
    };
    if now.saturating_duration_since(card.created) + card.aged > CARD_LIFE {
        return refuse(card, (200750, "the card entity is older than 14 days"));
    }
    while card
        .ops
        .front()
        .is_some_and(|t| *t + Duration::from_secs(1) <= now)
    {
        card.ops.pop_front();
    }
    if limited || card.ops.len() >= OPS_PER_SECOND {
        return refuse(card, (230020, "frequency limit"));
    }
    let Some(seq) = v
        .get("sequence")
        .and_then(Value::as_i64)
        .filter(|s| (1..=i64::from(i32::MAX)).contains(s))
    else {
        return refuse(card, (10002, "sequence must be 1 to 2147483647"));
    };
    if card.sequences.last().is_some_and(|last| seq <= *last) {
        return refuse(card, (300317, "sequence must increase"));
    }
    card.ops.push_back(now);
    Ok(seq)
}

/// [`admit`]s an operation on card `id` and hands over the card to apply it to.
fn admitted<'a>(
    ck: &'a mut CardKit,
    id: &str,
    v: &Value,
    now: Instant,
) -> Result<(&'a mut CardRecord, i64), Refusal> {
    let seq = admit(ck, id, v, now)?;
    let card = ck
        .cards
        .get_mut(id)
        .ok_or((200740, "card entity not found"))?;
    Ok((card, seq))
}

async fn content(
    State(sh): State<Arc<Shared>>,
    Path((id, eid)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(refused) = refused_call(&sh, &headers) {
        return refused;
    }
    let v = body_json(&body);
    let Some(text) = v
        .get("content")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty() && c.chars().count() <= 100_000)
        .map(String::from)
    else {
        return err(10002, "content must be 1 to 100000 characters");
    };
    let now = Instant::now();
    let mut st = sh.lock();
    let (card, seq) = match admitted(&mut st.cardkit, &id, &v, now) {
        Ok(a) => a,
        Err((code, msg)) => return err(code, msg),
    };
    if card.streaming && now.saturating_duration_since(card.opened) >= STREAMING_FOR {
        card.streaming = false;
        card.refused.push(200850);
        return err(200850, "card streaming timeout");
    }
    if !card.streaming {
        card.refused.push(300309);
        return err(300309, "streaming mode is closed");
    }
    let mut after = card.card.clone();
    let Some(el) = elements_mut(&mut after)
        .find(|e| e.get("element_id").and_then(Value::as_str) == Some(eid.as_str()))
    else {
        card.refused.push(300310);
        return err(300310, "no such element");
    };
    if !matches!(
        el.get("tag").and_then(Value::as_str),
        Some("markdown" | "plain_text")
    ) {
        card.refused.push(300310);
        return err(300310, "only plain_text and markdown elements stream");
    }
    let old = el
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    el["content"] = Value::String(text.clone());
    if after.to_string().len() > MAX_CARD_BYTES {
        card.refused.push(200860);
        return err(200860, "the card is larger than 30 KB");
    }
    card.card = after;
    card.sequences.push(seq);
    card.updates.push(ContentUpdate {
        sequence: seq,
        typewriter: text.starts_with(&old),
        content: text,
    });
    ok(json!({}))
}

async fn settings(
    State(sh): State<Arc<Shared>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(refused) = refused_call(&sh, &headers) {
        return refused;
    }
    let v = body_json(&body);
    let Some(on) = v
        .get("settings")
        .and_then(Value::as_str)
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
        .and_then(|s| s.pointer("/config/streaming_mode").and_then(Value::as_bool))
    else {
        return err(
            10002,
            "settings must be a JSON string with config.streaming_mode",
        );
    };
    let now = Instant::now();
    let mut st = sh.lock();
    let (card, seq) = match admitted(&mut st.cardkit, &id, &v, now) {
        Ok(a) => a,
        Err((code, msg)) => return err(code, msg),
    };
    card.sequences.push(seq);
    card.settings.push(on);
    card.streaming = on;
    if on {
        card.opened = now;
    }
    if let Some(cfg) = card.card.get_mut("config") {
        cfg["streaming_mode"] = Value::Bool(on);
    }
    ok(json!({}))
}

impl FakeFeishu {
    /// Every card entity created, in order.
    pub fn cards(&self) -> Vec<CardRecord> {
        let st = self.shared.lock();
        st.cardkit
            .order
            .iter()
            .filter_map(|id| st.cardkit.cards.get(id).cloned())
            .collect()
    }

    /// Calls to the CardKit routes so far, whatever their outcome.
    pub fn cardkit_requests(&self) -> usize {
        self.shared.lock().cardkit.requests
    }

    /// Closes streaming mode of `card_id` as if someone else did (updates get 300309 until it
    /// is reopened).
    pub fn close_card_streaming(&self, card_id: &str) {
        if let Some(c) = self.shared.lock().cardkit.cards.get_mut(card_id) {
            c.streaming = false;
        }
    }

    /// Ages `card_id` past its 14 days: every later operation gets 200750, the card can no
    /// longer be updated at all.
    pub fn expire_card(&self, card_id: &str) {
        if let Some(c) = self.shared.lock().cardkit.cards.get_mut(card_id) {
            c.aged = CARD_LIFE;
        }
    }

    /// While `Some(code)`, every card create is refused with `code` (99991672: a missing scope).
    pub fn refuse_card_create(&self, code: Option<i64>) {
        self.shared.lock().cardkit.refuse_create = code;
    }

    /// Refuses the next `n` CardKit operations with 230020 (frequency limit).
    pub fn limit_next_card_ops(&self, n: usize) {
        self.shared.lock().cardkit.limit_next += n;
    }
}
