//! Yes/no questions without a card template (spec §4.7 A): markdown with two `dtmd://` links
//! that make the owner's client send "yes #qid" / "no #qid" as an ordinary message, and the
//! reading of such answers (typed ones too).

use url::form_urlencoded::byte_serialize;

use crate::send::Outgoing;

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
