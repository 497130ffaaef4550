//! The fake's QR login: each issued code walks through phases that the test drives.

use std::collections::HashMap;

use serde_json::{Value, json};

/// Where one QR code is in its login.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum QrPhase {
    Wait,
    Scanned,
    NeedVerifyCode {
        code: String,
        wrong: u32,
    },
    VerifyBlocked,
    /// Answered once, then the code counts as scanned.
    Redirect {
        host: Option<String>,
    },
    Confirmed {
        credentials: Value,
    },
    Expired,
    AlreadyBound,
}

/// Wrong verify codes allowed before `verify_code_blocked`.
const MAX_WRONG_CODES: u32 = 3;

/// Every QR code issued, newest last.
#[derive(Default)]
pub(crate) struct QrBook {
    codes: HashMap<String, QrPhase>,
    order: Vec<String>,
    pub(crate) local_token_lists: Vec<Vec<String>>,
}

impl QrBook {
    /// Issues a new code in phase `wait`.
    pub(crate) fn issue(&mut self) -> String {
        let id = format!("fakeqr-{}-{}", self.order.len() + 1, super::random::hex(4));
        self.codes.insert(id.clone(), QrPhase::Wait);
        self.order.push(id.clone());
        id
    }

    pub(crate) fn issued(&self) -> usize {
        self.order.len()
    }

    /// Moves the newest code to `phase`; false if no code was issued yet.
    pub(crate) fn set_latest(&mut self, phase: QrPhase) -> bool {
        match self.order.last().and_then(|id| self.codes.get_mut(id)) {
            Some(p) => {
                *p = phase;
                true
            }
            None => false,
        }
    }

    /// The phase of `qrcode`, if it was issued.
    pub(crate) fn phase_of(&self, qrcode: &str) -> Option<QrPhase> {
        self.codes.get(qrcode).cloned()
    }

    /// Whether a status poll for `qrcode` should be held (nothing to report yet).
    pub(crate) fn should_hold(&self, qrcode: &str) -> bool {
        matches!(
            self.codes.get(qrcode),
            Some(QrPhase::Wait | QrPhase::Scanned)
        )
    }

    /// Answers one status poll, advancing one-shot phases.
    pub(crate) fn poll(&mut self, qrcode: &str, verify_code: Option<&str>) -> Value {
        // An unknown code is answered as expired, so a client fetches a new one.
        let Some(phase) = self.codes.get_mut(qrcode) else {
            return json!({"ret": 0, "status": "expired"});
        };
        match phase {
            QrPhase::Wait => json!({"ret": 0, "status": "wait"}),
            QrPhase::Scanned => json!({"ret": 0, "status": "scaned"}),
            QrPhase::NeedVerifyCode { code, wrong } => match verify_code {
                Some(given) if given == code => {
                    *phase = QrPhase::Scanned;
                    json!({"ret": 0, "status": "scaned"})
                }
                Some(_) => {
                    *wrong += 1;
                    if *wrong >= MAX_WRONG_CODES {
                        *phase = QrPhase::VerifyBlocked;
                        json!({"ret": 0, "status": "verify_code_blocked"})
                    } else {
                        json!({"ret": 0, "status": "need_verifycode"})
                    }
                }
                None => json!({"ret": 0, "status": "need_verifycode"}),
            },
            QrPhase::VerifyBlocked => json!({"ret": 0, "status": "verify_code_blocked"}),
            QrPhase::Redirect { host } => {
                let mut body = json!({"ret": 0, "status": "scaned_but_redirect"});
                if let Some(h) = host {
                    body["redirect_host"] = json!(h);
                }
                *phase = QrPhase::Scanned;
                body
            }
            QrPhase::Confirmed { credentials } => {
                let mut body = credentials.clone();
                body["ret"] = json!(0);
                body["status"] = json!("confirmed");
                body
            }
            QrPhase::Expired => json!({"ret": 0, "status": "expired"}),
            QrPhase::AlreadyBound => json!({"ret": 0, "status": "binded_redirect"}),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_code_walk() {
        let mut book = QrBook::default();
        let id = book.issue();
        assert!(book.set_latest(QrPhase::NeedVerifyCode {
            code: "123".into(),
            wrong: 0
        }));
        assert_eq!(book.poll(&id, None)["status"], "need_verifycode");
        assert_eq!(book.poll(&id, Some("000"))["status"], "need_verifycode");
        assert_eq!(book.poll(&id, Some("123"))["status"], "scaned");
        book.set_latest(QrPhase::NeedVerifyCode {
            code: "9".into(),
            wrong: 0,
        });
        for _ in 0..2 {
            assert_eq!(book.poll(&id, Some("1"))["status"], "need_verifycode");
        }
        assert_eq!(book.poll(&id, Some("1"))["status"], "verify_code_blocked");
        assert_eq!(book.poll(&id, Some("9"))["status"], "verify_code_blocked");
    }

    #[test]
    fn redirect_is_one_shot_and_unknown_codes_expire() {
        let mut book = QrBook::default();
        assert!(!book.set_latest(QrPhase::Scanned));
        let id = book.issue();
        book.set_latest(QrPhase::Redirect {
            host: Some("h:1".into()),
        });
        let body = book.poll(&id, None);
        assert_eq!(
            (body["status"].as_str(), body["redirect_host"].as_str()),
            (Some("scaned_but_redirect"), Some("h:1"))
        );
        assert_eq!(book.poll(&id, None)["status"], "scaned");
        assert_eq!(book.poll("nope", None)["status"], "expired");
    }
}
