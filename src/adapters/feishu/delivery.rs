//! One event from either transport (the long connection or an HTTP callback) with the one way
//! to answer it, so the session handles both alike: journal, then answer.

use scv_feishu::webhook_server::WebhookDelivery;
use scv_feishu::ws::{AckHandle, AckResponse, Delivery};

/// An event waiting to be journaled and answered.
pub(super) struct Incoming {
    /// The v2 event envelope JSON.
    pub payload: Vec<u8>,
    /// Where the answer goes.
    pub reply: Reply,
}

/// How an event is answered: an ACK frame on the socket that delivered it, or the HTTP response.
pub(super) enum Reply {
    /// The long connection.
    Socket(AckHandle),
    /// An HTTP callback request, held open until answered (500 if not in time: re-sent).
    Http(WebhookDelivery),
}

impl Reply {
    /// Answers; a transport already gone means Feishu re-sends, which the journal dedupes.
    pub fn send(self, response: AckResponse) {
        match self {
            Reply::Socket(h) => {
                if h.ack(response).is_err() {
                    tracing::debug!(
                        "the socket closed before the ACK; the event will be re-pushed"
                    );
                }
            }
            Reply::Http(d) => d.respond(response),
        }
    }
}

impl From<Delivery> for Incoming {
    fn from(d: Delivery) -> Self {
        Incoming {
            payload: d.payload,
            reply: Reply::Socket(d.ack),
        }
    }
}

impl From<WebhookDelivery> for Incoming {
    fn from(mut d: WebhookDelivery) -> Self {
        Incoming {
            payload: std::mem::take(&mut d.payload),
            reply: Reply::Http(d),
        }
    }
}
