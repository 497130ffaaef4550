//! Commands on the subscribed socket: write a frame, wait for the answer with the same
//! `req_id`, one frame at a time per `req_id` (§4.1).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::oneshot;

use super::{Connection, lock};
use crate::error::Error;
use crate::frame;

/// A command's answer frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// `0` = success.
    pub errcode: i64,
    /// The server's words.
    pub errmsg: String,
    /// `body`, for commands that return one (uploads).
    pub body: Option<Value>,
}

impl Connection {
    /// Sends `cmd` with `req_id` and `body` and waits up to `timeout` for its answer; a
    /// non-zero `errcode` is an [`Error::Platform`].
    ///
    /// Frames with the same `req_id` go one at a time: the next is written only after the
    /// previous one was answered or timed out, because answers carry only the `req_id` and
    /// pipelined ones could not be told apart (§4.1). Other `req_id`s overlap freely.
    pub async fn command(
        &self,
        cmd: &'static str,
        req_id: &str,
        body: Value,
        timeout: Duration,
    ) -> Result<Response, Error> {
        let lock = self.handle_lock(req_id);
        let guard = lock.lock().await;
        let result = self.command_unlocked(cmd, req_id, body, timeout).await;
        drop(guard);
        self.release_handle_lock(req_id, lock);
        result
    }

    async fn command_unlocked(
        &self,
        cmd: &'static str,
        req_id: &str,
        body: Value,
        timeout: Duration,
    ) -> Result<Response, Error> {
        let started = tokio::time::Instant::now();
        self.wait_for_link(timeout).await;
        let timeout = timeout.saturating_sub(started.elapsed());
        let (tx, rx) = oneshot::channel();
        {
            let link = self.link();
            let Some(link) = link.as_ref() else {
                return Err(Error::NotConnected { cmd });
            };
            lock(&link.pending).insert(req_id.to_owned(), tx);
            if link
                .out
                .send(frame::request(cmd, req_id, Some(body)))
                .is_err()
            {
                lock(&link.pending).remove(req_id);
                return Err(Error::NotConnected { cmd });
            }
        }
        let timer = self.options().ack_timer.clone();
        let answered = tokio::select! {
            got = rx => Some(got),
            () = timer.sleep(timeout) => None,
        };
        let answer = match answered {
            Some(Ok(r)) => r,
            // The socket ended and dropped every waiter.
            Some(Err(_)) => return Err(Error::ConnectionLost { cmd }),
            None => {
                if let Some(link) = self.link().as_ref() {
                    lock(&link.pending).remove(req_id);
                }
                return Err(Error::AckTimeout {
                    cmd,
                    after: timeout,
                });
            }
        };
        match answer.errcode {
            0 => Ok(answer),
            code => Err(Error::Platform {
                cmd,
                code,
                errmsg: answer.errmsg,
            }),
        }
    }

    /// Waits up to `timeout` for a subscribed socket, so a command issued during a reconnect
    /// (a fallback right after the old socket died) goes out on the next one.
    async fn wait_for_link(&self, timeout: Duration) {
        let mut status = self.status();
        let up = status.wait_for(|s| s.state == super::LinkState::Connected);
        let _ = tokio::time::timeout(timeout, up).await;
    }

    fn handle_lock(&self, req_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        lock(&self.inner.handle_locks)
            .entry(req_id.to_owned())
            .or_default()
            .clone()
    }

    /// Forgets a handle's lock once nobody else holds or waits on it.
    fn release_handle_lock(&self, req_id: &str, held: Arc<tokio::sync::Mutex<()>>) {
        let mut locks = lock(&self.inner.handle_locks);
        // Ours and the map's: nobody else is waiting.
        if Arc::strong_count(&held) == 2 {
            locks.remove(req_id);
        }
    }
}
