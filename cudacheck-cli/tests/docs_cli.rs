//! Pure tier: every `cudacheck` command line the README and `docs/` show names subcommands and
//! flags the command has. Shell blocks cannot be compiled as the `rust` blocks are
//! (`tests/src/docs.rs`); instead each page's code (fenced blocks, and code spans in the text)
//! is searched for `cudacheck SUBCOMMAND ...`, and each flag is looked up in
//! `cudacheck SUBCOMMAND --help`, so a renamed or removed flag fails here, not a user's
//! copy-paste.

use std::collections::HashMap;
use std::process::Command;

use cudacheck_tests::doc_pages;

/// `cudacheck PATH... --help`, asked once per path.
#[derive(Default)]
struct Helps(HashMap<Vec<String>, String>);

impl Helps {
    fn get(&mut self, path: &[String]) -> &str {
        self.0.entry(path.to_vec()).or_insert_with(|| {
            let out = Command::new(env!("CARGO_BIN_EXE_cudacheck"))
                .args(path)
                .arg("--help")
                .output()
                .expect("cudacheck runs");
            assert!(out.status.success(), "cudacheck {path:?} --help failed");
            String::from_utf8_lossy(&out.stdout).into_owned()
        })
    }

    /// The subcommands a help text lists under `Commands:`.
    fn subcommands(&mut self, path: &[String]) -> Vec<String> {
        let help = self.get(path);
        let Some((_, rest)) = help.split_once("Commands:\n") else {
            return Vec::new();
        };
        rest.lines()
            .take_while(|l| l.starts_with("  "))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|w| *w != "help")
            .map(str::to_string)
            .collect()
    }
}

/// The code of a page, one entry per command line with its 1-based line number: each line of a
/// fenced block (a line that starts with spaces continues the one before, as the synopses
/// do), and each code span of the text. Shell comments are dropped.
fn code_lines(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut in_block = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            let code = strip_comment(line);
            match out.last_mut() {
                Some((n, prev)) if *n == i && line.starts_with(' ') && !code.trim().is_empty() => {
                    prev.push(' ');
                    prev.push_str(code.trim());
                    *n = i + 1;
                }
                _ => out.push((i + 1, code.to_string())),
            }
        } else {
            let spans = line.split('`').skip(1).step_by(2);
            out.extend(spans.map(|s| (i + 1, s.to_string())));
        }
    }
    out
}

/// The line without a shell comment (`#` at the start or after a space, followed by a space).
fn strip_comment(line: &str) -> &str {
    let bytes = line.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let before = i == 0 || bytes[i - 1] == b' ';
        let after = bytes.get(i + 1).map_or(true, |&c| c == b' ');
        if b == b'#' && before && after {
            return &line[..i];
        }
    }
    line
}

/// A token as written, without the brackets and punctuation of a synopsis (`[--json]`,
/// `--block X[,Y,Z]]`).
fn bare(token: &str) -> &str {
    token
        .trim_start_matches(['[', '('])
        .trim_end_matches([']', ')', ',', '.', ';', ':'])
}

/// The flag a token names, if it is one: `--arch=sm_90` is `--arch`, `-DNAME` is `-D`.
fn flag(token: &str) -> Option<&str> {
    let t = bare(token);
    if t.starts_with("--") && t.len() > 2 {
        Some(t.split('=').next().unwrap())
    } else if t.starts_with('-') && !t.starts_with("--") && t.len() > 1 {
        Some(&t[..2])
    } else {
        None
    }
}

/// Whether `help` lists `flag` as a word (`--json` is not `--json-lines`).
fn help_has(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(at, _)| {
        let before = help[..at].chars().next_back();
        let after = help[at + flag.len()..].chars().next();
        before.map_or(true, |c| c == ' ' || c == ',' || c == '\n')
            && after.map_or(true, |c| !(c.is_alphanumeric() || c == '-' || c == '_'))
    })
}

/// Every problem with the `cudacheck` command lines of `text`, and how many flags were checked.
fn check_text(helps: &mut Helps, text: &str) -> (Vec<String>, usize) {
    let top = helps.subcommands(&[]);
    let mut problems = Vec::new();
    let mut checked = 0;
    for (n, code) in code_lines(text) {
        let words: Vec<&str> = code.split_whitespace().collect();
        for (at, w) in words.iter().enumerate() {
            // `cudacheck`, `scripts/cudacheck`, `cudacheck-cli/...` is not the command.
            if !(*w == "cudacheck" || w.ends_with("/cudacheck")) {
                continue;
            }
            let Some(sub) = words.get(at + 1).map(|s| bare(s)) else {
                continue;
            };
            if !top.iter().any(|t| t == sub) {
                continue; // prose about cudacheck, not a command line
            }
            let mut path = vec![sub.to_string()];
            let mut rest = &words[at + 2..];
            if let Some(next) = rest.first().map(|s| bare(s)) {
                if helps.subcommands(&path).iter().any(|s| s == next) {
                    path.push(next.to_string());
                    rest = &rest[1..];
                }
            }
            for token in rest {
                if *token == "--" || *token == "&&" || *token == ";" {
                    break; // what follows is another command's
                }
                if bare(token) == "cudacheck" {
                    break; // the next command on the line
                }
                let Some(f) = flag(token) else { continue };
                checked += 1;
                if !help_has(helps.get(&path), f) {
                    problems.push(format!(
                        "line {n}: `cudacheck {}` has no flag `{f}`: {code}",
                        path.join(" ")
                    ));
                }
            }
        }
    }
    (problems, checked)
}

#[test]
fn docs_cudacheck_command_lines_use_flags_the_command_has() {
    let mut helps = Helps::default();
    let mut problems = Vec::new();
    let mut checked = 0;
    for page in doc_pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let (p, c) = check_text(&mut helps, &text);
        problems.extend(p.into_iter().map(|p| format!("{}: {p}", page.display())));
        checked += c;
    }
    assert!(
        checked > 40,
        "only {checked} flags found in the docs: the reader is broken"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn docs_cli_checker_finds_a_flag_the_command_lacks() {
    let mut helps = Helps::default();
    let text = "```sh\n\
                cudacheck check kernels/ --arch sm_90 --blocks 256   # a typo\n\
                cudacheck cache info --json\n\
                cudacheck run --races -- cargo test --no-run\n\
                ```\n\
                and `scripts/cudacheck instrument a.cu --ptx --no-such-flag`.\n";
    let (problems, checked) = check_text(&mut helps, text);
    assert_eq!(checked, 6, "{problems:?}");
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].contains("no flag `--blocks`"), "{problems:?}");
    assert!(
        problems[1].contains("no flag `--no-such-flag`"),
        "{problems:?}"
    );
}
