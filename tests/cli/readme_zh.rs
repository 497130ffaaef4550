//! README.zh-CN.md keeps up with README.md: the same sections in the same order, and every
//! table (commands, troubleshooting) with the same rows in the same order, each row naming the
//! same `scv-bridge` commands and the same quoted status texts where those stay English.

use std::path::Path;

fn read(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(name)).expect(name)
}

/// The level of each heading, in order (`##` is 2).
fn headings(text: &str) -> Vec<usize> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.push(line.chars().take_while(|c| *c == '#').count());
        }
    }
    out
}

/// Every table's body rows (header and rule left out), table by table.
fn tables(text: &str) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut in_table = false;
    for line in text.lines() {
        if line.starts_with('|') {
            if !in_table {
                out.push(Vec::new());
                in_table = true;
            }
            out.last_mut().expect("a table").push(line.to_string());
        } else {
            in_table = false;
        }
    }
    for t in &mut out {
        t.drain(..t.len().min(2));
    }
    out
}

/// The code spans of `text`.
fn spans(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The code spans of `row` that a translation keeps as they are: commands (`scv-bridge ...`).
fn commands(row: &str) -> Vec<String> {
    spans(row)
        .into_iter()
        .filter(|s| s.starts_with("scv-bridge"))
        .collect()
}

/// The code spans of the row's first cell: what the row is about (a status text, a command).
fn first_cell(row: &str) -> Vec<String> {
    spans(row.split(" | ").next().unwrap_or(row))
}

#[test]
fn the_chinese_readme_has_every_section_of_the_english_one() {
    let (en, zh) = (read("README.md"), read("README.zh-CN.md"));
    assert_eq!(
        headings(&en),
        headings(&zh),
        "README.zh-CN.md's headings differ from README.md's"
    );
}

#[test]
fn the_chinese_readme_has_every_table_row_of_the_english_one() {
    let (en, zh) = (tables(&read("README.md")), tables(&read("README.zh-CN.md")));
    assert_eq!(en.len(), zh.len(), "number of tables");
    for (i, (e, z)) in en.iter().zip(&zh).enumerate() {
        for (n, (er, zr)) in e.iter().zip(z).enumerate() {
            assert_eq!(
                commands(er),
                commands(zr),
                "table {i} row {n}:\n  {er}\n  {zr}"
            );
            for span in first_cell(er) {
                assert!(
                    zr.contains(&format!("`{span}`")),
                    "table {i} row {n}: the Chinese row lacks `{span}`:\n  {er}\n  {zr}"
                );
            }
        }
        assert_eq!(
            e.len(),
            z.len(),
            "table {i}: README.md has {} rows, README.zh-CN.md {}; first English rows past the Chinese: {:?}",
            e.len(),
            z.len(),
            e.get(z.len())
        );
    }
}
