//! Tables of the agent module (append steps; every per-account table has an `account` column).

/// The agent module's migrations.
pub(super) const STEPS: &[&str] = &[
    // 1: the `openai` backend's per-chat history (one row per answered exchange, oldest dropped
    // first) and its daily token usage per account (UTC days).
    "CREATE TABLE agent_history (
        account TEXT NOT NULL,
        chat TEXT NOT NULL,
        turn INTEGER NOT NULL,
        user_text TEXT NOT NULL,
        assistant_text TEXT NOT NULL,
        at_unix INTEGER NOT NULL,
        PRIMARY KEY (account, chat, turn)
     );
     CREATE TABLE agent_usage (
        account TEXT NOT NULL,
        day TEXT NOT NULL,
        turns INTEGER NOT NULL,
        prompt_tokens INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL,
        estimated_turns INTEGER NOT NULL,
        PRIMARY KEY (account, day)
     );",
    // 2: what the `openai` backend learned about its model, per account whose turn learned it:
    // `vision` 0 once the endpoint said it takes no images (a 400), so later turns of that
    // account send the saved path instead (per account, so `channel_logout` forgets it too).
    "CREATE TABLE agent_model_facts (
        account TEXT NOT NULL,
        model TEXT NOT NULL,
        vision INTEGER NOT NULL,
        PRIMARY KEY (account, model)
     );",
];
