//! What tests push and read of the fake's media: received media messages with their resources,
//! failure knobs, uploads and media sends.

use axum::body::Bytes;
use serde_json::{Value, json};

use super::{PushedMedia, Resource, SentMedia, Upload};
use crate::fake::FakeFeishu;
use crate::fake::records::{PushOptions, Pushed};
use crate::fake::state::{PendingPush, Stored, message_event};
use crate::media::ResourceType;

/// A resource a pushed message carries: its key, type, bytes, file name and MIME type.
type NewResource = (String, ResourceType, Bytes, Option<String>, &'static str);

impl FakeFeishu {
    /// Pushes a p2p message of any `message_type` whose content JSON string is `content` (kept
    /// as given: tests push malformed content too), with the `resources` it carries.
    pub fn push_p2p_raw(&self, from_open_id: &str, message_type: &str, content: &str) -> Pushed {
        self.push_media_message(from_open_id, message_type, content, Vec::new())
    }

    /// Pushes a p2p image message; the image is served by the resource endpoint.
    pub fn push_p2p_image(&self, from_open_id: &str, image: impl Into<Bytes>) -> PushedMedia {
        let key = self.media_key("img_v3_in");
        let content = json!({ "image_key": key }).to_string();
        let res = (
            key.clone(),
            ResourceType::Image,
            image.into(),
            None,
            "image/png",
        );
        let pushed = self.push_media_message(from_open_id, "image", &content, vec![res]);
        PushedMedia {
            pushed,
            keys: vec![key],
        }
    }

    /// Pushes a p2p file message named `file_name`.
    pub fn push_p2p_file(
        &self,
        from_open_id: &str,
        file_name: &str,
        bytes: impl Into<Bytes>,
    ) -> PushedMedia {
        let key = self.media_key("file_v3_in");
        let content = json!({ "file_key": key, "file_name": file_name }).to_string();
        let res = (
            key.clone(),
            ResourceType::File,
            bytes.into(),
            Some(file_name.to_string()),
            "application/octet-stream",
        );
        let pushed = self.push_media_message(from_open_id, "file", &content, vec![res]);
        PushedMedia {
            pushed,
            keys: vec![key],
        }
    }

    /// Pushes a p2p voice message (Opus) lasting `duration_ms`.
    pub fn push_p2p_audio(
        &self,
        from_open_id: &str,
        bytes: impl Into<Bytes>,
        duration_ms: u64,
    ) -> PushedMedia {
        let key = self.media_key("file_v3_in");
        let content = json!({ "file_key": key, "duration": duration_ms }).to_string();
        let res = (
            key.clone(),
            ResourceType::File,
            bytes.into(),
            None,
            "audio/opus",
        );
        let pushed = self.push_media_message(from_open_id, "audio", &content, vec![res]);
        PushedMedia {
            pushed,
            keys: vec![key],
        }
    }

    /// Pushes a p2p video (`media`) with its cover image; keys are `[video, cover]`.
    pub fn push_p2p_video(
        &self,
        from_open_id: &str,
        file_name: &str,
        video: impl Into<Bytes>,
        cover: impl Into<Bytes>,
    ) -> PushedMedia {
        let (file_key, image_key) = (self.media_key("file_v3_in"), self.media_key("img_v3_in"));
        let content = json!({"file_key": file_key, "image_key": image_key, "file_name": file_name, "duration": 2000}).to_string();
        let res = vec![
            (
                file_key.clone(),
                ResourceType::File,
                video.into(),
                Some(file_name.to_string()),
                "video/mp4",
            ),
            (
                image_key.clone(),
                ResourceType::Image,
                cover.into(),
                None,
                "image/jpeg",
            ),
        ];
        let pushed = self.push_media_message(from_open_id, "media", &content, res);
        PushedMedia {
            pushed,
            keys: vec![file_key, image_key],
        }
    }

    /// Pushes a p2p `post` with a text row and one `img` row per image.
    pub fn push_p2p_post_images(
        &self,
        from_open_id: &str,
        text: &str,
        images: Vec<Vec<u8>>,
    ) -> PushedMedia {
        let mut rows = vec![json!([{"tag": "text", "text": text}])];
        let mut res = Vec::new();
        for img in images {
            let key = self.media_key("img_v3_in");
            rows.push(json!([{"tag": "img", "image_key": key}]));
            res.push((
                key,
                ResourceType::Image,
                Bytes::from(img),
                None,
                "image/png",
            ));
        }
        let keys = res.iter().map(|r| r.0.clone()).collect();
        let content = json!({"title": "", "content": rows}).to_string();
        let pushed = self.push_media_message(from_open_id, "post", &content, res);
        PushedMedia { pushed, keys }
    }

    fn media_key(&self, prefix: &str) -> String {
        format!("{prefix}_{}", self.shared.lock().next())
    }

    fn push_media_message(
        &self,
        from_open_id: &str,
        message_type: &str,
        content: &str,
        resources: Vec<NewResource>,
    ) -> Pushed {
        let chat = format!("oc_p2p_{from_open_id}");
        let (message_id, event_id) = {
            let mut st = self.shared.lock();
            let message_id = format!("om_in{}", st.next());
            st.messages.insert(
                message_id.clone(),
                Stored {
                    chat_id: chat.clone(),
                    msg_type: message_type.to_string(),
                    content: serde_json::from_str(content).unwrap_or(Value::Null),
                    by_bot: false,
                    created: tokio::time::Instant::now(),
                    aged: std::time::Duration::ZERO,
                    recalled: false,
                },
            );
            for (key, ty, bytes, name, mime) in resources {
                let r = Resource {
                    ty,
                    bytes,
                    name,
                    mime: mime.to_string(),
                    oversized: false,
                };
                st.media.resources.insert((message_id.clone(), key), r);
            }
            let event_id = format!("ev_{}", st.next());
            (message_id, event_id)
        };
        let mut event = message_event(from_open_id, &message_id, &chat, "p2p", "", json!([]));
        event["message"]["message_type"] = json!(message_type);
        event["message"]["content"] = json!(content);
        self.shared.enqueue(PendingPush {
            event_id: event_id.clone(),
            event_type: crate::event::MESSAGE_RECEIVE.into(),
            event,
            im_message_id: Some(message_id.clone()),
            options: PushOptions::default(),
            attempt: 0,
        });
        Pushed {
            event_id,
            message_id,
        }
    }

    /// Answers every resource download with business code `code` (or normally again, `None`).
    pub fn fail_resources_with(&self, code: Option<i64>) {
        self.shared.lock().media.resource_failure = code;
    }

    /// Answers every upload with business code `code` (or normally again, `None`).
    pub fn fail_uploads_with(&self, code: Option<i64>) {
        self.shared.lock().media.upload_failure = code;
    }

    /// Makes a resource look larger than 100 MB (234037) without holding 100 MB.
    pub fn make_resource_oversized(&self, message_id: &str, key: &str) {
        let mut st = self.shared.lock();
        if let Some(r) = st
            .media
            .resources
            .get_mut(&(message_id.to_string(), key.to_string()))
        {
            r.oversized = true;
        }
    }

    /// While on, resources are served without `Content-Length` (chunked).
    pub fn serve_resources_unsized(&self, on: bool) {
        self.shared.lock().media.unsized_resources = on;
    }

    /// Resource download requests, refused ones included.
    pub fn resource_requests(&self) -> usize {
        self.shared.lock().media.resource_requests
    }

    /// Upload requests (images and files), refused ones included.
    pub fn upload_requests(&self) -> usize {
        self.shared.lock().media.upload_requests
    }

    /// Accepted uploads, in order.
    pub fn uploads(&self) -> Vec<Upload> {
        let st = self.shared.lock();
        st.media
            .upload_order
            .iter()
            .filter_map(|k| st.media.uploads.get(k).cloned())
            .collect()
    }

    /// Image, file, audio and video messages the app sent, with the uploads they name.
    pub fn sent_media(&self) -> Vec<SentMedia> {
        let st = self.shared.lock();
        st.sent
            .iter()
            .filter(|s| ["image", "file", "audio", "media"].contains(&s.msg_type.as_str()))
            .filter_map(|s| {
                let field = if s.msg_type == "image" {
                    "image_key"
                } else {
                    "file_key"
                };
                let key = s.content.get(field)?.as_str()?;
                Some(SentMedia {
                    message_id: s.message_id.clone(),
                    msg_type: s.msg_type.clone(),
                    uuid: s.uuid.clone(),
                    upload: st.media.uploads.get(key)?.clone(),
                })
            })
            .collect()
    }
}
