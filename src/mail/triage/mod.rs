//! Mail triage: what to tell the owner about new mail, decided once per message.
//!
//! # Layout
//!
//! - [`rules`]: the pre-filter (automated and bulk mail, our own mail), decided without a model.
//! - [`budget`]: the local day, the daily token budget and token estimates.
//! - [`batch`]: several mails in one call: the prompt and the strict per-mail parse.
//! - [`model`]: the OpenAI-compatible model call with strict JSON out.
//! - [`digest`]: item lines and the numbered digest text.
//! - [`db`]: the mail tables (cursor, claims, report items, digests, counters, pending replies).

pub mod batch;
pub mod budget;
pub mod db;
pub mod digest;
pub mod model;
pub mod rules;

use serde::Deserialize;

/// How soon the owner should hear about a mail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Urgency {
    /// Can wait for a digest, low interest.
    Low,
    /// Goes in the next digest.
    Normal,
    /// Sent at once.
    Urgent,
}

/// How one claimed mail was decided; stored as its `outcome`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The pre-filter decided: automated, bulk or our own mail. Not reported.
    Rule,
    /// The model said it need not be reported.
    ModelNo,
    /// To be reported; `summary` is `None` when the model failed or was not asked.
    Report {
        /// How soon.
        urgency: Urgency,
        /// At most 140 characters by the model.
        summary: Option<String>,
        /// Whether a model decided it.
        triaged: bool,
    },
    /// The day's token budget was spent: decided by the pre-filter only, not reported.
    Budget,
    /// The message disappeared before it could be fetched.
    Gone,
}

impl Outcome {
    /// The stored name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Outcome::Rule => "rule",
            Outcome::ModelNo => "model_no",
            Outcome::Report { .. } => "report",
            Outcome::Budget => "budget",
            Outcome::Gone => "gone",
        }
    }

    /// Whether a model triaged it.
    pub fn triaged(&self) -> bool {
        matches!(
            self,
            Outcome::ModelNo | Outcome::Report { triaged: true, .. }
        )
    }
}
