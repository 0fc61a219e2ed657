//! `nabla explain CODE`: prints the section of the error index (`docs/errors.md`, embedded at
//! build time) that explains a diagnostic code.

use std::process::ExitCode;

/// The error index, one `## CODE: title` section per code.
pub const ERROR_INDEX: &str = include_str!("../../../docs/errors.md");

/// The section for `code` (case-insensitive), without its trailing blank lines.
pub fn section(code: &str) -> Option<&'static str> {
    let code = hir::Code::from_code(code.trim())?;
    let heading = format!("## {}", code.as_str());
    let start = ERROR_INDEX.find(&heading)?;
    let rest = &ERROR_INDEX[start..];
    let end = rest[heading.len()..].find("\n## ").map_or(rest.len(), |i| i + heading.len() + 1);
    Some(rest[..end].trim_end())
}

pub fn run(code: &str) -> ExitCode {
    match section(code) {
        Some(text) => {
            println!("{text}");
            if let Some(code) = hir::Code::from_code(code.trim())
                && code.severity() == hir::Severity::Warning
            {
                println!(
                    "\nTo keep the code as it is, write `// allow({code})` on its line or the line above \
                     (at the top of the file: for the whole file); see \"Silencing a warning\" in \
                     docs/errors.md."
                );
            }
            ExitCode::SUCCESS
        }
        None => {
            eprintln!(
                "error: no diagnostic code `{code}`; codes look like E0204, W0001 or R0200 (see docs/errors.md)"
            );
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_a_section() {
        for code in hir::Code::ALL {
            let text = section(code.as_str());
            assert!(text.is_some(), "docs/errors.md has no section for {code}");
            let text = text.unwrap_or_default();
            assert!(text.contains(code.title()), "the section of {code} does not carry its title");
            assert!(text.contains("```"), "the section of {code} has no example");
        }
        assert!(section("E9999").is_none());
    }
}
