//! A call's parameters, however they came (spec §1.1): query string, form, JSON or multipart.
//! Form and multipart values are strings; getters accept both a JSON value and its text.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{FromRequest, Multipart, Request};
use axum::http::header::CONTENT_TYPE;
use serde_json::Value;

/// The most a non-upload body may hold (real requests are a few KB).
const MAX_BODY: usize = 1 << 20;

/// One multipart file part.
pub(crate) struct FilePart {
    pub file_name: String,
    pub bytes: Bytes,
    /// The part was over the limit; its bytes were dropped.
    pub too_large: bool,
}

#[derive(Default)]
pub(crate) struct Params {
    values: HashMap<String, Value>,
    pub files: HashMap<String, FilePart>,
}

impl Params {
    /// Reads the query and the body. `file_limit` caps each file part kept. `Err` = the body
    /// could not be read (answered 400 by the caller).
    pub async fn read(req: Request, file_limit: u64) -> Result<Params, String> {
        let mut params = Params::default();
        for (k, v) in url::form_urlencoded::parse(req.uri().query().unwrap_or("").as_bytes()) {
            params
                .values
                .insert(k.into_owned(), Value::String(v.into_owned()));
        }
        let kind = req
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if kind.starts_with("multipart/form-data") {
            let mp = Multipart::from_request(req, &())
                .await
                .map_err(|e| e.body_text())?;
            params.read_multipart(mp, file_limit).await?;
            return Ok(params);
        }
        let body = axum::body::to_bytes(req.into_body(), MAX_BODY)
            .await
            .map_err(|_| "request body too large".to_owned())?;
        if kind.starts_with("application/json") {
            let text = String::from_utf8_lossy(&body);
            match serde_json::from_str::<Value>(&text) {
                Ok(Value::Object(map)) => params.values.extend(map),
                Ok(_) => return Err("the JSON body is not an object".into()),
                Err(_) => return Err("can't parse JSON object".into()),
            }
        } else if !body.is_empty() {
            for (k, v) in url::form_urlencoded::parse(&body) {
                params
                    .values
                    .insert(k.into_owned(), Value::String(v.into_owned()));
            }
        }
        Ok(params)
    }

    async fn read_multipart(&mut self, mut mp: Multipart, limit: u64) -> Result<(), String> {
        while let Some(mut field) = mp.next_field().await.map_err(|e| e.body_text())? {
            let name = field.name().unwrap_or_default().to_owned();
            let Some(file_name) = field.file_name().map(str::to_owned) else {
                let text = field.text().await.map_err(|e| e.body_text())?;
                self.values.insert(name, Value::String(text));
                continue;
            };
            let mut buf = Vec::new();
            let mut too_large = false;
            while let Some(chunk) = field.chunk().await.map_err(|e| e.body_text())? {
                // Keep reading (and dropping) so the client gets the answer, not a reset.
                if too_large || buf.len() as u64 + chunk.len() as u64 > limit {
                    too_large = true;
                    buf.clear();
                    continue;
                }
                buf.extend_from_slice(&chunk);
            }
            self.files.insert(
                name,
                FilePart {
                    file_name,
                    bytes: Bytes::from(buf),
                    too_large,
                },
            );
        }
        Ok(())
    }

    /// An integer parameter (a JSON number or its text).
    pub fn int(&self, name: &str) -> Option<i64> {
        match self.values.get(name)? {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    /// A text parameter (numbers are given as their text).
    pub fn text(&self, name: &str) -> Option<String> {
        match self.values.get(name)? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }

    /// A JSON-valued parameter (an object/array, or its serialization as text).
    pub fn json(&self, name: &str) -> Option<Value> {
        match self.values.get(name)? {
            Value::String(s) => serde_json::from_str(s).ok(),
            Value::Null => None,
            v => Some(v.clone()),
        }
    }

    /// A boolean parameter.
    pub fn flag(&self, name: &str) -> bool {
        match self.values.get(name) {
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) => s == "true" || s == "1",
            _ => false,
        }
    }
}
