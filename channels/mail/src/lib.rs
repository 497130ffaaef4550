//! `scv-mail`: IMAP claim/IDLE/fetch without touching `\Seen`, SMTP sending, and MIME decoding
//! of hostile mail into bounded plain text. It knows nothing of the bridge daemon: no policy,
//! no store, no supervisor.
