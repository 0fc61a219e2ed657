//! `docs/cli.md` against the binary: every subcommand `nabla --help` lists (and every hidden one
//! declared in `crates/cli/src`) has a `## \`nabla NAME\`` section, and every flag that
//! `nabla NAME -h` lists, long and short, is named in that section. A new flag without
//! documentation fails here.

use std::{path::PathBuf, process::Command};

fn nabla(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_nabla"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap_or_else(|err| panic!("cannot run nabla: {err}"));
    assert!(output.status.success(), "nabla {args:?} failed: {output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn reference() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/cli.md");
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// The lines of a help text's section (`Commands:`, `Options:`) up to the next blank line.
fn help_section<'a>(help: &'a str, heading: &str) -> Vec<&'a str> {
    help.lines()
        .skip_while(|line| line.trim() != heading)
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .collect()
}

/// The subcommands `nabla --help` lists, without `help` itself.
fn subcommands() -> Vec<String> {
    let help = nabla(&["--help"]);
    let names: Vec<String> = help_section(&help, "Commands:")
        .iter()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect();
    assert!(names.len() >= 7, "too few subcommands in\n{help}");
    names
}

/// The flags (`--long` and `-s`) on the option lines of a help text.
fn flags(help: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in help_section(help, "Options:") {
        let line = line.trim_start();
        if !line.starts_with('-') {
            continue;
        }
        // `-j, --jobs <JOBS>  How many ...`: the flags come before the value and the description.
        for word in line.split([' ', ',']).take_while(|w| w.is_empty() || w.starts_with('-')) {
            let name = word.trim_start_matches('-');
            let valid =
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
            if valid {
                found.push(word.to_owned());
            }
        }
    }
    found
}

/// The text of `## \`nabla NAME\`` up to the next `## ` heading.
fn section<'a>(reference: &'a str, name: &str) -> Option<&'a str> {
    let heading = format!("\n## `nabla {name}`\n");
    let start = reference.find(&heading)? + heading.len();
    let rest = &reference[start..];
    Some(rest.find("\n## ").map_or(rest, |end| &rest[..end]))
}

/// Whether `flag` is named in `text` as code: `` `--jobs N` ``, `` `-j` ``, `` `--check` ``.
fn names_flag(text: &str, flag: &str) -> bool {
    text.match_indices(&format!("`{flag}")).any(|(at, matched)| {
        let next = text[at + matched.len()..].chars().next();
        matches!(next, Some('`' | ' ' | ','))
    })
}

#[test]
fn every_subcommand_and_flag_is_documented() {
    let reference = reference();
    let mut missing = Vec::new();
    for name in subcommands() {
        let Some(text) = section(&reference, &name) else {
            missing.push(format!("no section `## \\`nabla {name}\\``"));
            continue;
        };
        let help = nabla(&[name.as_str(), "-h"]);
        for flag in flags(&help) {
            if flag != "-h" && flag != "--help" && !names_flag(text, &flag) {
                missing.push(format!("`nabla {name} {flag}` is not in its section"));
            }
        }
    }
    for flag in flags(&nabla(&["--help"])) {
        if !names_flag(&reference, &flag) {
            missing.push(format!("`nabla {flag}` is not described"));
        }
    }
    assert!(missing.is_empty(), "docs/cli.md is incomplete:\n{}", missing.join("\n"));
}

/// Subcommands hidden from `--help` are declared with `#[command(name = "...", hide = true)]`;
/// each is still named on the page.
#[test]
fn hidden_subcommands_are_documented() {
    let main = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/main.rs");
    let source = std::fs::read_to_string(&main).unwrap_or_else(|err| panic!("{err}"));
    let reference = reference();
    let hidden: Vec<&str> = source
        .lines()
        .filter(|line| line.contains("#[command(") && line.contains("hide = true"))
        .filter_map(|line| line.split("name = \"").nth(1)?.split('"').next())
        .collect();
    assert_eq!(hidden, ["__test-worker"]);
    for name in hidden {
        assert!(reference.contains(&format!("`nabla {name}`")), "`nabla {name}` is not described");
    }
}

#[test]
fn the_parsers_of_this_test_read_clap_help() {
    let help = "Usage: nabla test [OPTIONS]\n\nOptions:\n      --filter <FILTER>  Run only\n  -j, \
                --jobs <JOBS>      How many\n  -h, --help             Print help\n";
    assert_eq!(flags(help), ["--filter", "-j", "--jobs", "-h", "--help"]);
    let page =
        "# x\n\n## `nabla test`\n\n| `-j N`, `--jobs N` | x |\n\n## `nabla fmt`\n\n`--check`\n";
    let test = section(page, "test").unwrap_or_default();
    assert!(names_flag(test, "-j") && names_flag(test, "--jobs"));
    assert!(!names_flag(test, "--check") && !names_flag(test, "--job"));
    assert!(section(page, "run").is_none());
}
