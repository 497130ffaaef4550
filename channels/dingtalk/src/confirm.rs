//! Yes/no questions without a card template (spec §4.7 A): markdown with two `dtmd://` links
//! that make the owner's client send "yes #qid" / "no #qid" as an ordinary message, and the
//! reading of such answers (typed ones too). With a question card template (§4.7 B): the
//! card's variables, its buttons' parameter, and the `outTrackId` that names the question.

use url::form_urlencoded::byte_serialize;

use crate::send::Outgoing;

/// The question card's variable holding the question (markdown). The template is the account's
/// own, so this name, [`ANSWERED_KEY`] and [`ANSWER_PARAM`] are the bridge's contract with it:
/// the guide tells people to use them, so they must stay stable.
pub const QUESTION_KEY: &str = "question";
/// The question card's variable saying how it was answered: empty while open (the template
/// shows its buttons only while it is empty).
pub const ANSWERED_KEY: &str = "answered";
/// The button parameter (its "回传请求" params) carrying `yes` or `no`.
pub const ANSWER_PARAM: &str = "answer";
/// `outTrackId`s of question cards start with this; the question id follows.
const TRACK_PREFIX: &str = "scvq.";

/// A fresh `outTrackId` for a card asking question `qid` (a new card needs a new id, so a
/// card sent again after a crash is a second card naming the same question).
pub fn question_track_id(qid: &str) -> String {
    format!("{TRACK_PREFIX}{qid}.{:016x}", rand::random::<u64>())
}

/// The question id a question card's `outTrackId` names; `None` for any other card.
pub fn question_of_track_id(out_track_id: &str) -> Option<&str> {
    let (qid, nonce) = out_track_id.strip_prefix(TRACK_PREFIX)?.rsplit_once('.')?;
    (!qid.is_empty() && !nonce.is_empty()).then_some(qid)
}

/// An answer to a yes/no question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Yes.
    Yes,
    /// No.
    No,
}

/// The question as markdown with Yes / No links. `qid` is the daemon's question code; the
/// labels come from the daemon's word catalogue.
pub fn yes_no_markdown(title: &str, question: &str, qid: &str, yes: &str, no: &str) -> Outgoing {
    let text = format!(
        "{question}\n\n[{yes}]({}) · [{no}]({})",
        answer_link("yes", qid),
        answer_link("no", qid)
    );
    Outgoing::Markdown {
        title: title.to_string(),
        text,
    }
}

/// The same question with two buttons (`sampleActionCard2`, robot API only: a session
/// webhook takes text and markdown). The buttons send the same texts as the links.
pub fn yes_no_buttons(title: &str, question: &str, qid: &str, yes: &str, no: &str) -> Outgoing {
    Outgoing::ActionCard2 {
        title: title.to_string(),
        text: question.to_string(),
        buttons: [
            (yes.to_string(), answer_link("yes", qid)),
            (no.to_string(), answer_link("no", qid)),
        ],
    }
}

/// `dtmd://dingtalkclient/sendMessage?content=<word #qid>`: tapping it sends that text.
fn answer_link(word: &str, qid: &str) -> String {
    let content: String = byte_serialize(format!("{word} #{qid}").as_bytes()).collect();
    // `+` is form encoding's space; the client expects %20.
    format!(
        "dtmd://dingtalkclient/sendMessage?content={}",
        content.replace('+', "%20")
    )
}

/// Reads "yes #qid", "no #qid", or a bare typed yes/no (and 是/否). `None` for anything else.
pub fn parse_answer(text: &str) -> Option<(Answer, Option<String>)> {
    let t = text.trim();
    let (word, rest) = match t.split_once(char::is_whitespace) {
        Some((w, r)) => (w, r.trim()),
        None => (t, ""),
    };
    let answer = match word.to_lowercase().as_str() {
        "yes" | "y" | "是" | "好" => Answer::Yes,
        "no" | "n" | "否" | "不" => Answer::No,
        _ => return None,
    };
    if rest.is_empty() {
        return Some((answer, None));
    }
    let qid = rest.strip_prefix('#')?;
    (!qid.is_empty() && !qid.contains(char::is_whitespace)).then(|| (answer, Some(qid.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_cards_track_id_names_its_question_and_nothing_else_does() {
        let id = question_track_id("q-7");
        assert_eq!(question_of_track_id(&id), Some("q-7"));
        assert_ne!(id, question_track_id("q-7"), "a new card, a new id");
        assert_eq!(question_of_track_id("scv-0123"), None);
        assert_eq!(question_of_track_id("scvq.q-7"), None);
        assert_eq!(question_of_track_id("scvq..00ff"), None);
        assert_eq!(question_of_track_id("scvq.q-7."), None);
    }

    #[test]
    fn links_send_the_answer_with_the_code() {
        let Outgoing::Markdown { text, .. } =
            yes_no_markdown("Confirm", "Delete it?", "q7", "Yes", "No")
        else {
            panic!()
        };
        assert!(
            text.contains("[Yes](dtmd://dingtalkclient/sendMessage?content=yes%20%23q7)"),
            "{text}"
        );
        assert!(text.contains("content=no%20%23q7"));
        assert_eq!(
            parse_answer("yes #q7"),
            Some((Answer::Yes, Some("q7".into())))
        );
        assert_eq!(parse_answer(" NO "), Some((Answer::No, None)));
        assert_eq!(parse_answer("是"), Some((Answer::Yes, None)));
        assert_eq!(parse_answer("yes please"), None);
        assert_eq!(parse_answer("nothing"), None);
        assert_eq!(parse_answer("no #"), None);
        let Outgoing::ActionCard2 { buttons, .. } =
            yes_no_buttons("C", "Delete?", "q7", "Yes", "No")
        else {
            panic!()
        };
        assert_eq!(
            buttons[1].1,
            "dtmd://dingtalkclient/sendMessage?content=no%20%23q7"
        );
    }
}
