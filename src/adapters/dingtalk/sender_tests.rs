//! The DingTalk sender's pure parts: answer links, question markdown, pieces.

use super::*;

#[test]
fn answer_links_send_the_word_and_the_code() {
    assert_eq!(
        answer_link("yes", "7F"),
        "dtmd://dingtalkclient/sendMessage?content=yes%207F"
    );
    assert_eq!(
        crate::confirm::parse_answer("yes 7F").and_then(|a| a.code),
        Some("7F".to_string()),
        "the core reads what the link sends"
    );
}

#[test]
fn a_question_carries_links_in_its_language_that_answer_with_its_code() {
    let q = |text: &str| Question {
        id: "q-7".into(),
        text: text.into(),
        code: "7F".into(),
        deadline: "14:30".into(),
        buttons: true,
    };
    let Outgoing::Markdown { title, text } =
        question_markdown("Delete it? Reply Y 7F / N 7F.", &q("Delete it?"))
    else {
        panic!("markdown")
    };
    assert_eq!(title, "Delete it?");
    assert!(
        text.starts_with("Delete it? Reply Y 7F / N 7F.\n\n"),
        "{text}"
    );
    assert!(
        text.ends_with(
            "[yes](dtmd://dingtalkclient/sendMessage?content=yes%207F) · [no](dtmd://dingtalkclient/sendMessage?content=no%207F)"
        ),
        "{text}"
    );
    let Outgoing::Markdown { text, .. } = question_markdown("删除吗？", &q("删除吗？"))
    else {
        panic!("markdown")
    };
    assert!(
        text.contains("[同意](") && text.contains("[拒绝]("),
        "{text}"
    );
}

#[test]
fn pieces_fit_the_group_param_limit() {
    let cjk = "字".repeat(MAX_CHARS);
    assert_eq!(fit(&cjk), vec![cjk.clone()], "3 500 CJK characters fit");
    // Control characters are escaped as six bytes each: 3 400 of them do not fit.
    let escaped = "\u{1}".repeat(1700) + "\n\n" + &"\u{1}".repeat(1700);
    let pieces = fit(&escaped);
    assert!(pieces.len() >= 2, "{}", pieces.len());
    for p in &pieces {
        let param = Outgoing::Markdown {
            title: String::new(),
            text: p.clone(),
        }
        .msg_param();
        assert!(param.len() <= GROUP_MSG_PARAM_MAX_BYTES, "{}", param.len());
    }
    assert_eq!(
        pieces.concat().matches('\u{1}').count(),
        3400,
        "nothing lost"
    );
}
