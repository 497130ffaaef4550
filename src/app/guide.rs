//! `scv-bridge guide`: the set-up guide in the reader's language, rendered for a terminal.
//!
//! The guide is Markdown (`docs/setup*.md`, built in). A terminal shows Markdown's marks as they
//! are, so links become their text (the target in parentheses when it says more than the text,
//! and never a path into the source tree, which an installed binary has not got), bold loses
//! its stars and headings are underlined. Tables and code stay as written: they read well as
//! plain text. Hand-written rather than a Markdown crate: these four rules are all the guide
//! needs, and a renderer would add a dependency tree for them.

use clap::ValueEnum;

/// The languages of `guide` and of `init`'s questions.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum GuideLang {
    /// English.
    En,
    /// Simplified Chinese (also `zh`, `zh_CN`).
    #[value(name = "zh-CN", aliases = ["zh", "zh_CN", "zh-cn", "zh_cn"])]
    ZhCn,
}

/// The language the guide is printed in: the flag, else the locale (`LC_ALL`, `LC_MESSAGES`,
/// `LANG`, the first one set, as the C library reads them), else English.
pub fn language(flag: Option<GuideLang>, env: impl Fn(&str) -> Option<String>) -> GuideLang {
    if let Some(lang) = flag {
        return lang;
    }
    let locale = ["LC_ALL", "LC_MESSAGES", "LANG"]
        .into_iter()
        .filter_map(env)
        .find(|v| !v.is_empty());
    match locale {
        Some(l) if l.to_ascii_lowercase().starts_with("zh") => GuideLang::ZhCn,
        _ => GuideLang::En,
    }
}

/// The language of the words catalogue for [`language`]'s choice (`init`'s questions).
pub fn words_lang(
    flag: Option<GuideLang>,
    env: impl Fn(&str) -> Option<String>,
) -> crate::words::Lang {
    match language(flag, env) {
        GuideLang::En => crate::words::Lang::En,
        GuideLang::ZhCn => crate::words::Lang::ZhCn,
    }
}

/// The guide's text in `lang`, for a terminal.
pub fn text(lang: GuideLang) -> String {
    render(match lang {
        GuideLang::En => super::example::GUIDE_EN,
        GuideLang::ZhCn => super::example::GUIDE_ZH_CN,
    })
}

/// `markdown` with links, bold and headings rendered as plain text, fenced code indented.
pub fn render(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut code = false;
    for line in markdown.lines() {
        // A fenced block is printed as written (a `#` there is a shell comment).
        if line.trim_start().starts_with("```") {
            code = !code;
            continue;
        }
        if code {
            out.push_str("    ");
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        let body = inline(line);
        if hashes > 0 && line[hashes..].starts_with(' ') {
            let title = body[hashes..].trim();
            let mark = if hashes == 1 { '=' } else { '-' };
            out.push_str(title);
            out.push('\n');
            out.extend(std::iter::repeat_n(mark, title.chars().count().max(3)));
        } else {
            out.push_str(&body);
        }
        out.push('\n');
    }
    out
}

/// One line's links and bold as plain text.
fn inline(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(open) = rest.find('[') {
        let Some((text, target, after)) = link_at(&rest[open..]) else {
            out.push_str(&rest[..=open]);
            rest = &rest[open + 1..];
            continue;
        };
        out.push_str(&rest[..open]);
        out.push_str(text);
        // A relative target is a file in the source tree: the text already names what it is.
        let plain = text.trim_matches('`');
        if target.contains("://") && plain != target {
            out.push_str(&format!(" ({target})"));
        }
        rest = after;
    }
    out.push_str(rest);
    out.replace("**", "")
}

/// `[text](target)` at the start of `s`: the text, the target and what follows.
fn link_at(s: &str) -> Option<(&str, &str, &str)> {
    let close = s.find("](")?;
    let text = &s[1..close];
    if text.contains('[') {
        return None;
    }
    let after = &s[close + 2..];
    let end = after.find(')')?;
    Some((text, &after[..end], &after[end + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_locale_picks_the_language_unless_the_flag_does() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let zh = |l| matches!(l, GuideLang::ZhCn);
        assert!(zh(language(None, env(&[("LANG", "zh_CN.UTF-8")]))));
        assert!(zh(language(
            None,
            env(&[("LC_ALL", "zh_CN"), ("LANG", "C")])
        )));
        assert!(!zh(language(
            None,
            env(&[("LC_ALL", "C.UTF-8"), ("LANG", "zh_CN")])
        )));
        assert!(zh(language(
            None,
            env(&[("LC_ALL", ""), ("LANG", "zh_TW.UTF-8")])
        )));
        assert!(!zh(language(None, env(&[]))));
        assert!(!zh(language(
            Some(GuideLang::En),
            env(&[("LANG", "zh_CN")])
        )));
    }

    #[test]
    fn links_bold_and_headings_read_as_plain_text() {
        let md = "# Title\n\nSee [`setup.md`](setup.md) and **the [console](https://open.feishu.cn/app)**.\n## Next\n[a] b\n```sh\n# a comment\n```";
        assert_eq!(
            render(md),
            "Title\n=====\n\nSee `setup.md` and the console (https://open.feishu.cn/app).\nNext\n----\n[a] b\n    # a comment\n"
        );
    }

    #[test]
    fn the_built_in_guides_have_no_markdown_links_or_bold_left() {
        for lang in [GuideLang::En, GuideLang::ZhCn] {
            let t = text(lang);
            assert!(!t.contains("]("), "a raw link is left:\n{t}");
            assert!(!t.contains("**"), "bold marks are left:\n{t}");
            assert!(
                !t.lines().any(|l| l.starts_with('#')),
                "a raw heading is left"
            );
        }
    }
}
