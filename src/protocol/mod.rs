//! Wire types of the control socket (`daemon-protocol.md`) and its bounded JSON-lines framing.

mod delivery;
mod framing;
mod messages;
mod status;
mod status_frame;

pub use delivery::{DeliveryCounts, SendInfo, SendState, WaitWhy, WaitingItem};
pub use framing::{
    FrameError, FrameReader, MAX_CLIENT_FRAME_BYTES, MAX_SERVER_FRAME_BYTES, write_frame,
};
pub use messages::{
    ClientMessage, DaemonCommand, ErrorCode, PROTOCOL_VERSION, PeerInfo, ServerEvent,
};
pub use status::{
    AgentHealth, AgentProcesses, AgentState, ComponentHealth, ComponentState, ConfirmInfo,
    ConfirmState, ConsoleStatus, DaemonStatus, DelegationSummary, HealthNote, MailCounts,
    NoteSource, Purpose, ReloadSummary, RemoteTools, Senders, SpeechHealth,
};
pub use status_frame::status_line;
