//! `scv-bridge man`: one manual page with every subcommand in it.
//!
//! clap_mangen's whole-page render lists the subcommands as `scv-bridge-run(1)` and so on, pages
//! nobody installs (the README installs one file). So the page is put together from its
//! sections: the program's own, then a COMMANDS section with each subcommand, nested ones
//! included, as a subsection with its synopsis, description and options.

use std::io::Write;

use clap::CommandFactory;
use clap_mangen::Man;

use super::args::Cli;
use super::complete::quiet_pipe;

/// Writes the manual page (roff) to `out`, quietly done when the reader has gone.
pub fn man_page(out: &mut dyn Write) -> Result<(), String> {
    let page = page().map_err(|e| format!("cannot build the manual page: {e}"))?;
    quiet_pipe(out.write_all(page.as_bytes()).and_then(|()| out.flush()))
        .map_err(|e| format!("cannot write the manual page: {e}"))
}

/// The page as roff text.
fn page() -> std::io::Result<String> {
    let mut cmd = Cli::command();
    // Gives every subcommand its full name (`scv-bridge login wechat`) for its synopsis.
    cmd.build();
    let man = Man::new(cmd.clone());
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    out.extend_from_slice(b".SH COMMANDS\n");
    for sub in visible(&cmd) {
        subsection(sub, &mut out)?;
    }
    man.render_version_section(&mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The subcommands a reader runs: not hidden, and not clap's `help`, which only prints what
/// the page already says.
fn visible(cmd: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    cmd.get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
}

/// One subcommand (and, after it, each of its own) as a `.SS` subsection: the sections clap
/// renders for it, their `.SH` headings dropped so they stay inside the subsection.
fn subsection(cmd: &clap::Command, out: &mut Vec<u8>) -> std::io::Result<()> {
    let name = cmd.get_bin_name().unwrap_or_else(|| cmd.get_name());
    writeln!(out, ".SS \"{}\"", name.replace('-', "\\-"))?;
    // The program's own flags (`--config`, `--help`) are described once, at the top.
    let own = cmd.clone().mut_args(|a| {
        let shared = a.is_global_set() || a.get_id() == "help";
        a.hide(shared)
    });
    let man = Man::new(own);
    let mut body = Vec::new();
    man.render_synopsis_section(&mut body)?;
    body.extend_from_slice(b".PP\n");
    man.render_description_section(&mut body)?;
    man.render_options_section(&mut body)?;
    // What a subcommand's help says after its options (`login`: each platform's options).
    man.render_extra_section(&mut body)?;
    for line in String::from_utf8_lossy(&body).lines() {
        if !line.starts_with(".SH ") {
            writeln!(out, "{line}")?;
        }
    }
    for sub in visible(cmd) {
        subsection(sub, out)?;
    }
    Ok(())
}
