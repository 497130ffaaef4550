//! The chunked upload for files over [`MAX_INLINE_UPLOAD_BYTES`] (§4.4; seen in 2026 clients,
//! not in the docs): `upload_prepare` with the file's hashes, a `PUT` of each block to its
//! presigned URL, `upload_part_finish` per block (retried every second while the platform
//! answers `40093001`, up to its `retry_timeout`), then `files {upload_id}` for the
//! `file_info`. Blocks go one at a time: the platform's `concurrency` hint is not needed for
//! the sizes a chat carries.
//!
//! [`MAX_INLINE_UPLOAD_BYTES`]: crate::limits::MAX_INLINE_UPLOAD_BYTES

use std::time::Duration;

use md5::{Digest, Md5};
use reqwest::Method;
use serde_json::{Value, json};
use sha1::Sha1;

use crate::answer::status_error;
use crate::client::Client;
use crate::error::{Call, Error};
use crate::media::{FileType, Uploaded};

/// `md5_10m` covers this many leading bytes (§4.4).
const MD5_10M_BYTES: usize = 10_002_432;
/// "Part not ready yet": ask again a second later (§4.4).
pub const PART_BUSY: i64 = 40093001;
/// How long to keep asking when the platform gives no `retry_timeout`.
const DEFAULT_RETRY_TIMEOUT: Duration = Duration::from_secs(60);

/// One block the platform wants.
struct Part {
    index: usize,
    url: String,
}

/// What `upload_prepare` answered.
struct Prepared {
    upload_id: String,
    block_size: usize,
    parts: Vec<Part>,
    retry_timeout: Duration,
}

impl Client {
    /// Uploads `data` in blocks for the chat at `base` (`/v2/users/{id}` or `/v2/groups/{id}`).
    pub(crate) async fn upload_chunked(
        &self,
        base: &str,
        file_type: FileType,
        data: &[u8],
        file_name: Option<&str>,
    ) -> Result<Uploaded, Error> {
        let body = json!({
            "file_type": file_type as u8,
            "file_name": file_name.unwrap_or("file"),
            "file_size": data.len(),
            "md5": hex(&Md5::digest(data)),
            "sha1": hex(&<Sha1 as sha1::Digest>::digest(data)),
            "md5_10m": hex(&Md5::digest(&data[..data.len().min(MD5_10M_BYTES)])),
        });
        let path = format!("{base}/upload_prepare");
        let v = self
            .call(Call::Upload, Method::POST, &path, Some(&body))
            .await?;
        let prepared = read_prepared(&v, data.len())?;
        for part in &prepared.parts {
            let start = (part.index - 1) * prepared.block_size;
            let block = &data[start..data.len().min(start + prepared.block_size)];
            self.put_block(&part.url, block).await?;
            self.finish_part(base, &prepared, part.index, block).await?;
        }
        let done = json!({"upload_id": prepared.upload_id, "file_type": file_type as u8,
            "srv_send_msg": false});
        let v = self
            .call(
                Call::Upload,
                Method::POST,
                &format!("{base}/files"),
                Some(&done),
            )
            .await?;
        crate::media::read_uploaded(&v)
    }

    async fn put_block(&self, url: &str, block: &[u8]) -> Result<(), Error> {
        let resp = self
            .http
            .put(url)
            .timeout(crate::limits::API_TIMEOUT * 6)
            .body(block.to_vec())
            .send()
            .await
            .map_err(|e| Error::network(Call::Upload, e))?;
        let status = resp.status().as_u16();
        if (200..300).contains(&status) {
            Ok(())
        } else {
            Err(status_error(Call::Upload, status))
        }
    }

    /// `upload_part_finish`, asked again every second while the platform says `40093001`.
    async fn finish_part(
        &self,
        base: &str,
        prepared: &Prepared,
        index: usize,
        block: &[u8],
    ) -> Result<(), Error> {
        let body = json!({"upload_id": prepared.upload_id, "part_index": index,
            "block_size": block.len(), "md5": hex(&Md5::digest(block))});
        let path = format!("{base}/upload_part_finish");
        let give_up = tokio::time::Instant::now() + prepared.retry_timeout;
        loop {
            match self
                .call(Call::Upload, Method::POST, &path, Some(&body))
                .await
            {
                Err(e) if e.code() == Some(PART_BUSY) && tokio::time::Instant::now() < give_up => {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                r => return r.map(drop),
            }
        }
    }
}

/// Reads `upload_prepare`'s answer and checks its parts cover the file exactly once.
fn read_prepared(v: &Value, size: usize) -> Result<Prepared, Error> {
    let bad = |detail: &str| Error::Malformed {
        call: Call::Upload,
        detail: detail.into(),
    };
    let upload_id = v
        .get("upload_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let upload_id = upload_id.ok_or_else(|| bad("upload_prepare without upload_id"))?;
    let block_size = v.get("block_size").and_then(Value::as_u64).unwrap_or(0);
    let block_size = usize::try_from(block_size).ok().filter(|b| *b > 0);
    let block_size = block_size.ok_or_else(|| bad("upload_prepare without a block_size"))?;
    let mut parts: Vec<Part> = v
        .get("parts")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(read_part).collect())
        .unwrap_or_default();
    parts.sort_by_key(|p| p.index);
    let wanted = size.div_ceil(block_size);
    let exact = parts.len() == wanted && parts.iter().enumerate().all(|(i, p)| p.index == i + 1);
    if !exact {
        return Err(bad("upload_prepare parts do not cover the file"));
    }
    let secs = v.get("retry_timeout").and_then(Value::as_u64);
    Ok(Prepared {
        upload_id: upload_id.to_owned(),
        block_size,
        parts,
        retry_timeout: secs.map_or(DEFAULT_RETRY_TIMEOUT, Duration::from_secs),
    })
}

fn read_part(p: &Value) -> Option<Part> {
    Some(Part {
        index: usize::try_from(p.get("index")?.as_u64()?).ok()?,
        url: p.get("presigned_url")?.as_str()?.to_owned(),
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_must_cover_the_file_exactly() {
        let part = |i: u64| json!({"index": i, "presigned_url": "http://h/p"});
        let ok = json!({"upload_id": "u", "block_size": 4, "parts": [part(2), part(1)]});
        let p = read_prepared(&ok, 7).expect("two blocks for seven bytes");
        assert_eq!(
            p.parts.iter().map(|p| p.index).collect::<Vec<_>>(),
            vec![1, 2]
        );
        for bad in [
            json!({"upload_id": "u", "block_size": 4, "parts": [part(1)]}),
            json!({"upload_id": "u", "block_size": 0, "parts": [part(1), part(2)]}),
            json!({"upload_id": "u", "block_size": 4, "parts": [part(1), part(3)]}),
            json!({"block_size": 4, "parts": [part(1), part(2)]}),
            json!({"upload_id": "u", "block_size": 4, "parts": "x"}),
        ] {
            assert!(read_prepared(&bad, 7).is_err(), "{bad}");
        }
        assert_eq!(hex(&Md5::digest(b"")), "d41d8cd98f00b204e9800998ecf8427e");
    }
}
