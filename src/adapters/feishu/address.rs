//! Where a Feishu message goes and the key it is sent under: shared by text and media sends.

use scv_feishu::rest::ReceiveId;

/// Feishu accepts `uuid` idempotency keys of at most 50 characters.
const MAX_UUID: usize = 50;

/// Where a chat id points: the pipeline's chats are `oc_…` chat ids, but a proactive message to
/// "the owner's chat" (confirm questions via `notify`) names the owner's `ou_…` open_id.
pub(super) fn receive_id(chat: &str) -> ReceiveId {
    if chat.starts_with("ou_") {
        ReceiveId::OpenId(chat.to_string())
    } else if chat.starts_with("on_") {
        ReceiveId::UnionId(chat.to_string())
    } else {
        ReceiveId::ChatId(chat.to_string())
    }
}

/// The `uuid` for an outbox key: the key itself when it fits, else a stable 32-hex digest of it.
pub(super) fn uuid_for(key: &str) -> String {
    if key.len() <= MAX_UUID {
        return key.to_string();
    }
    // Two FNV-1a passes with different offsets: stable across builds, no dependency.
    let fnv = |seed: u64| {
        key.bytes().fold(seed, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
    };
    format!(
        "{:016x}{:016x}",
        fnv(0xcbf2_9ce4_8422_2325),
        fnv(0x8422_2325_cbf2_9ce4)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_fit_and_are_stable() {
        assert_eq!(uuid_for("short/1/0"), "short/1/0");
        let long = "feishu:work/om_0123456789abcdef0123456789abcdef01/0";
        let u = uuid_for(long);
        assert_eq!(u.len(), 32);
        assert_eq!(u, uuid_for(long));
        assert_ne!(
            u,
            uuid_for("feishu:work/om_0123456789abcdef0123456789abcdef01/1")
        );
    }

    #[test]
    fn owner_ids_are_sent_as_open_ids() {
        assert_eq!(receive_id("oc_1"), ReceiveId::ChatId("oc_1".into()));
        assert_eq!(receive_id("ou_o"), ReceiveId::OpenId("ou_o".into()));
        assert_eq!(receive_id("on_u"), ReceiveId::UnionId("on_u".into()));
    }
}
