//! Pure tier: the user documentation (the README and `docs/`) against the repository. Its `rust`
//! blocks are compiled as doc tests (`tests/src/docs.rs`) and its `cudacheck` command lines are
//! checked against the command's `--help` (`cudacheck-cli/tests/docs_cli.rs`); here, what those
//! cannot see: links that lead nowhere, environment variables the code reads and the reference
//! does not name (or names and nothing reads), and text about how the work was organized
//! rather than about the software.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use cudacheck_tests::{doc_pages, repo_root};

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The page's text outside fenced code blocks, line by line (1-based numbers): links and
/// headings live there, not in code.
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut in_block = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
        } else if !in_block {
            out.push((i + 1, line));
        }
    }
    out
}

/// The targets of the inline links `[text](target)` on a line, outside code spans.
fn link_targets(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for (i, part) in line.split('`').enumerate() {
        if i % 2 == 1 {
            continue; // inside a code span
        }
        let mut rest = part;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(&after[..end]);
            rest = &after[end..];
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation other than `-` and `_` dropped,
/// spaces made `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor a Markdown file's headings give, with GitHub's `-1`, `-2` for repeats.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for (_, line) in prose(text) {
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let s = slug(heading.trim_start_matches('#'));
        let mut candidate = s.clone();
        let mut n = 0;
        while seen.contains(&candidate) {
            n += 1;
            candidate = format!("{s}-{n}");
        }
        seen.insert(candidate);
    }
    seen
}

/// What is wrong with one link of `page`, if anything.
fn check_link(page: &Path, target: &str) -> Option<String> {
    if target.starts_with("http://") || target.starts_with("https://") {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((p, a)) => (p, Some(a)),
        None => (target, None),
    };
    let file = if path.is_empty() {
        page.to_path_buf()
    } else {
        page.parent().unwrap().join(path)
    };
    if !file.exists() {
        return Some(format!("`{target}`: {} does not exist", file.display()));
    }
    let anchor = anchor?;
    if file.extension().is_none_or(|x| x != "md") {
        return None;
    }
    if anchors(&read(&file)).contains(anchor) {
        None
    } else {
        Some(format!(
            "`{target}`: {} has no heading `#{anchor}`",
            file.display()
        ))
    }
}

#[test]
fn docs_links_lead_somewhere() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for page in doc_pages() {
        let text = read(&page);
        for (n, line) in prose(&text) {
            for target in link_targets(line) {
                checked += 1;
                if let Some(p) = check_link(&page, target) {
                    problems.push(format!("{}:{n}: {p}", page.display()));
                }
            }
        }
    }
    assert!(
        checked > 30,
        "only {checked} links found: the reader is broken"
    );
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn docs_link_checker_finds_a_broken_link() {
    let page = repo_root().join("docs/guide.md");
    assert!(check_link(&page, "reference.md#modes-and-switches").is_none());
    assert!(check_link(&page, "#the-module-cache").is_none());
    assert!(check_link(&page, "../ARCHITECTURE.md#the-module-cache").is_none());
    assert!(check_link(&page, "no-such-page.md").is_some());
    assert!(check_link(&page, "reference.md#no-such-heading").is_some());
    assert_eq!(
        slug(" Declaring kernels with `#[checked_kernel]`"),
        "declaring-kernels-with-checked_kernel"
    );
}

/// Every `CUDACHECK_*` string literal of a Rust file, or of the Rust files under a directory.
fn env_literals(path: &Path, out: &mut BTreeSet<String>) {
    if path.is_dir() {
        for e in std::fs::read_dir(path).into_iter().flatten().flatten() {
            env_literals(&e.path(), out);
        }
    } else if path.is_file() && path.extension().is_some_and(|x| x == "rs") {
        for part in read(path).split('"').skip(1).step_by(2) {
            if part
                .strip_prefix("CUDACHECK_")
                .is_some_and(|rest| !rest.is_empty() && rest.chars().all(|c| is_name_char(Some(c))))
            {
                out.insert(part.to_string());
            }
        }
    }
}

/// The workspace's published crates (members without `publish = false`): what users run.
fn published_crates() -> Vec<PathBuf> {
    let root = repo_root();
    let manifest = read(&root.join("Cargo.toml"));
    let members = manifest
        .split_once("members = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(list, _)| list)
        .expect("the workspace lists its members");
    members
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .map(|m| root.join(m))
        .filter(|dir| !read(&dir.join("Cargo.toml")).contains("publish = false"))
        .collect()
}

#[test]
fn docs_reference_names_every_environment_variable_the_crates_read() {
    let crates = published_crates();
    assert!(crates.len() >= 5, "published crates: {crates:?}");
    let mut vars = BTreeSet::new();
    for dir in &crates {
        env_literals(&dir.join("src"), &mut vars);
        env_literals(&dir.join("build.rs"), &mut vars);
    }
    assert!(
        vars.len() > 20,
        "only {} variables found: {vars:?}",
        vars.len()
    );
    let reference = read(&repo_root().join("docs/reference.md"));
    let missing: Vec<&String> = vars
        .iter()
        .filter(|v| {
            !reference
                .match_indices(v.as_str())
                .any(|(at, _)| !is_name_char(reference[at + v.len()..].chars().next()))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "docs/reference.md does not name {missing:?}, which the crates read"
    );
}

fn is_name_char(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// Every file of the repository's own code (Rust, shell, Python), outside build outputs.
fn code_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') && name != ".ci" || name == "target" || name == "results" {
            continue;
        }
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            code_files(&p, out);
        } else if matches!(
            p.extension().and_then(|x| x.to_str()),
            Some("rs" | "sh" | "py")
        ) {
            out.push(p);
        }
    }
}

#[test]
fn docs_reference_names_no_environment_variable_nothing_reads() {
    let root = repo_root();
    let reference = read(&root.join("docs/reference.md"));
    let named: BTreeSet<&str> = reference
        .match_indices("CUDACHECK_")
        .map(|(at, _)| {
            let end = reference[at..]
                .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                .map_or(reference.len(), |n| at + n);
            &reference[at..end]
        })
        .collect();
    let mut files = Vec::new();
    code_files(&root, &mut files);
    let code: String = files.iter().map(|f| read(f)).collect();
    let stale: Vec<&&str> = named.iter().filter(|v| !code.contains(**v)).collect();
    assert!(named.len() > 20, "only {} variables named", named.len());
    assert!(
        stale.is_empty(),
        "docs/reference.md names {stale:?}, which no code of the repository mentions"
    );
}

#[test]
fn docs_speak_of_the_software() {
    // How the work was organized (sessions, issue numbers) and paths outside the repository
    // mean nothing to a user.
    let mut problems = Vec::new();
    for page in doc_pages() {
        let text = read(&page);
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            let issue_number = lower.match_indices("issue ").any(|(at, m)| {
                lower[at + m.len()..]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_digit())
            });
            for (bad, found) in [
                ("an issue number", issue_number),
                ("a session", lower.contains("session")),
                ("a path outside the repository", lower.contains("/tmp/")),
            ] {
                if found {
                    problems.push(format!("{}:{}: {bad}: {line}", page.display(), n + 1));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
