//! The fake DingTalk (being built).
