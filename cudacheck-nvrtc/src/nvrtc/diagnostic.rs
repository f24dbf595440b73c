//! NVRTC's compiler log, parsed into structured [`Diagnostic`]s that render like rustc's.
//!
//! NVRTC (its front end is EDG's) writes each diagnostic as
//!
//! ```text
//! kernels/x.cu(12): error: identifier "foo" is undefined
//!       y = foo + 1;
//!           ^
//!
//! ```
//!
//! The header carries no column; the caret line does. Both the source line and the caret line
//! are printed with a two-space prefix, and tabs are copied as tabs, so the caret's character
//! index, less the prefix, is the 1-based column counted in characters. Extra explanation lines
//! (`argument types are: ...`) sit between the header and the source line; context lines
//! (`detected during: instantiation of ...`) follow the caret.

use std::fmt;

/// How serious a [`Diagnostic`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Severity {
    /// The compilation failed (`error`, `catastrophic error`, `fatal error`).
    Error,
    Warning,
    Note,
    Remark,
}

impl Severity {
    /// The word rustc and NVRTC use for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
            Severity::Remark => "remark",
        }
    }

    /// Recognizes NVRTC's severity words; longest first, so `catastrophic error` is not read as
    /// a file name ending in `catastrophic`.
    fn parse_prefix(s: &str) -> Option<(Severity, &str)> {
        const WORDS: &[(&str, Severity)] = &[
            ("catastrophic error", Severity::Error),
            ("fatal error", Severity::Error),
            ("internal error", Severity::Error),
            ("error", Severity::Error),
            ("warning", Severity::Warning),
            ("remark", Severity::Remark),
            ("note", Severity::Note),
        ];
        WORDS
            .iter()
            .find_map(|(word, sev)| s.strip_prefix(word).map(|rest| (*sev, rest)))
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One message from NVRTC's log, with the place it points at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file as NVRTC names it: the [`CudaSource`](super::CudaSource)'s name for the main
    /// file, the path of an included header, `nvrtc` or `ptxas` for messages about no file, or
    /// `__nv_name_map` for a bad name expression.
    pub file: String,
    /// 1-based line; `None` for messages about no line (`nvrtc: error: unrecognized option`).
    pub line: Option<u32>,
    /// 1-based column in characters, read off the caret line.
    pub column: Option<u32>,
    pub severity: Severity,
    /// The message, without the severity and the diagnostic number.
    pub message: String,
    /// The offending source line as NVRTC printed it (without NVRTC's two-space indent).
    pub source_line: Option<String>,
    /// The caret's 1-based column; the same as `column` when NVRTC printed a caret.
    pub caret_column: Option<u32>,
    /// EDG's diagnostic number (`177-D`), the handle for `-diag-suppress`.
    pub code: Option<String>,
    /// Context lines: explanations (`argument types are: (int *)`) and the template
    /// instantiation chain (`detected during: instantiation of ...`).
    pub notes: Vec<String>,
}

impl Diagnostic {
    /// A diagnostic with no place, such as NVRTC's complaints about options.
    pub fn without_location(file: &str, severity: Severity, message: &str) -> Self {
        Diagnostic {
            file: file.to_string(),
            line: None,
            column: None,
            severity,
            message: message.to_string(),
            source_line: None,
            caret_column: None,
            code: None,
            notes: Vec::new(),
        }
    }

    /// Whether this diagnostic made the compilation fail.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Renders like rustc:
///
/// ```text
/// error: identifier "foo" is undefined
///   --> kernels/x.cu:12:9
///    |
/// 12 |     y = foo + 1;
///    |         ^
/// ```
impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.code {
            Some(code) => write!(f, "{}[{}]: {}", self.severity, code, self.message)?,
            None => write!(f, "{}: {}", self.severity, self.message)?,
        }
        let line_no = self.line.map(|l| l.to_string()).unwrap_or_default();
        let gutter = " ".repeat(line_no.len().max(1));
        match (self.line, self.column) {
            (Some(line), Some(col)) => write!(f, "\n{gutter}--> {}:{line}:{col}", self.file)?,
            (Some(line), None) => write!(f, "\n{gutter}--> {}:{line}", self.file)?,
            _ => {}
        }
        if let (Some(src), Some(_)) = (&self.source_line, self.line) {
            write!(f, "\n{gutter} |\n{line_no} | {src}")?;
            if let Some(caret) = self.caret_column {
                // Reuse the source line's own tabs so the caret lands under the right character
                // whatever the terminal's tab width.
                let pad: String = src
                    .chars()
                    .take(caret.saturating_sub(1) as usize)
                    .map(|c| if c == '\t' { '\t' } else { ' ' })
                    .collect();
                write!(f, "\n{gutter} | {pad}^")?;
            }
        }
        for note in &self.notes {
            write!(f, "\n{gutter} = note: {note}")?;
        }
        Ok(())
    }
}

/// Where one diagnostic's header line splits.
struct Header<'a> {
    file: &'a str,
    line: Option<u32>,
    severity: Severity,
    code: Option<&'a str>,
    message: &'a str,
}

/// Parses `file(12): error #123-D: message`, `nvrtc: error: message` and
/// `ptxas error   : message`. A file name may itself contain `(`, so every `(digits): ` is tried,
/// left to right.
fn parse_header(line: &str) -> Option<Header<'_>> {
    // Found from the `): ` back over the digits to the `(`, not forward from each `(`: that
    // search ran to the end of the line for every `(`, quadratic in a line of many of them
    // (an echoed source line can be one), and the candidates and their order are the same.
    for (close, _) in line.match_indices("): ") {
        let before = &line[..close];
        let digits_start = before.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let digits = &before[digits_start..];
        let Some(file) = before[..digits_start].strip_suffix('(') else {
            continue;
        };
        if digits.is_empty() || file.is_empty() {
            continue;
        }
        if let Some(h) = parse_severity_and_message(&line[close + 3..]) {
            return Some(Header {
                file,
                line: digits.parse().ok(),
                ..h
            });
        }
    }
    // Messages about no file at all: NVRTC's option parser and ptxas.
    for tool in ["nvrtc: ", "ptxas "] {
        if let Some(after) = line.strip_prefix(tool) {
            let after = after.trim_start();
            let (severity, rest) = Severity::parse_prefix(after)?;
            let message = rest.trim_start().strip_prefix(':')?.trim();
            return Some(Header {
                file: tool.trim_end_matches([':', ' ']),
                line: None,
                severity,
                code: None,
                message,
            });
        }
    }
    None
}

/// `error #123-D: message` or `error: message`.
fn parse_severity_and_message(s: &str) -> Option<Header<'_>> {
    let (severity, rest) = Severity::parse_prefix(s)?;
    let (code, message) = if let Some(numbered) = rest.strip_prefix(" #") {
        let (code, message) = numbered.split_once(": ")?;
        (Some(code), message)
    } else {
        (None, rest.strip_prefix(": ")?)
    };
    Some(Header {
        file: "",
        line: None,
        severity,
        code,
        message,
    })
}

/// NVRTC indents echoed source and caret lines by two spaces.
fn strip_echo_indent(line: &str) -> &str {
    line.strip_prefix("  ").unwrap_or(line)
}

/// The caret's 1-based column, if `line` is a caret line.
fn caret_column(line: &str) -> Option<u32> {
    let body = strip_echo_indent(line);
    let trimmed = body.trim_end();
    if !trimmed.ends_with('^')
        || !trimmed[..trimmed.len() - 1]
            .chars()
            .all(char::is_whitespace)
    {
        return None;
    }
    u32::try_from(trimmed.chars().count()).ok()
}

/// Parses every diagnostic in an NVRTC program log, in log order. Lines that are not part of a
/// diagnostic (ptxas's resource report, the `N errors detected` summary) are skipped; so is the
/// boilerplate `Remark: The warnings can be suppressed ...`, which follows every warning and
/// says nothing about the source.
pub fn parse_log(log: &str) -> Vec<Diagnostic> {
    let lines: Vec<&str> = log.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(h) = parse_header(lines[i]) else {
            i += 1;
            continue;
        };
        let mut diag = Diagnostic {
            file: h.file.to_string(),
            line: h.line,
            column: None,
            severity: h.severity,
            message: h.message.trim_end().to_string(),
            source_line: None,
            caret_column: None,
            code: h.code.map(str::to_string),
            notes: Vec::new(),
        };
        // The diagnostic's body runs to the next blank line or the next header.
        let start = i + 1;
        let mut end = start;
        while end < lines.len()
            && !lines[end].trim().is_empty()
            && parse_header(lines[end]).is_none()
        {
            end += 1;
        }
        let body = &lines[start..end];
        let caret_at = body.iter().position(|l| caret_column(l).is_some());
        match caret_at {
            Some(c) if c >= 1 => {
                for extra in &body[..c - 1] {
                    diag.notes.push(extra.trim().to_string());
                }
                diag.source_line = Some(strip_echo_indent(body[c - 1]).to_string());
                diag.caret_column = caret_column(body[c]);
                diag.column = diag.caret_column;
                for extra in &body[c + 1..] {
                    diag.notes.push(extra.trim().to_string());
                }
            }
            _ => {
                for extra in body {
                    diag.notes.push(extra.trim().to_string());
                }
            }
        }
        out.push(diag);
        i = end;
    }
    out
}

/// What must hold for any log, for the `nvrtc_log` fuzz target and the pure-tier tests below:
/// parsing and rendering never panic, everything a diagnostic holds (file, message, code,
/// source line, notes) was in the log, there is at most one diagnostic per line, and the
/// column is the caret's. Returns the broken property. Compiled only for tests and under
/// `cargo fuzz` (which sets `--cfg fuzzing`): not part of the API.
#[cfg(any(test, fuzzing))]
#[doc(hidden)]
pub fn check_parse_log(log: &str) -> Result<(), String> {
    let diagnostics = parse_log(log);
    if diagnostics.len() > log.lines().count() {
        return Err(format!("{} diagnostics", diagnostics.len()));
    }
    for d in &diagnostics {
        let parts = [
            Some(&d.file),
            Some(&d.message),
            d.code.as_ref(),
            d.source_line.as_ref(),
        ];
        if let Some(part) = parts
            .into_iter()
            .flatten()
            .chain(&d.notes)
            .find(|part| !log.contains(part.as_str()))
        {
            return Err(format!("{part:?} is not in the log"));
        }
        if d.column != d.caret_column || (d.caret_column.is_some() && d.source_line.is_none()) {
            return Err(format!("column {:?}, caret {:?}", d.column, d.caret_column));
        }
        if !d.to_string().contains(&d.message) {
            return Err(format!("the rendering of {d:?} lost its message"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Verbatim NVRTC 13.0 output for a file with two errors on one line, a parse error and a
    /// warning (the source line is `    f(p);`, indented four spaces).
    const LOG_MIXED: &str = "k.cu(3): error: argument of type \"int *\" is incompatible with parameter of type \"float *\"\n      f(p);\n        ^\n\nk.cu(3): error: too few arguments in function call\n      f(p);\n         ^\n\nk.cu(5): error: expected a \";\"\n      float y = 2.0;\n      ^\n\nk.cu(4): warning #177-D: variable \"x\" was declared but never referenced\n      int x = 1\n          ^\n\nRemark: The warnings can be suppressed with \"-diag-suppress <warning-number>\"\n\n3 errors detected in the compilation of \"k.cu\".\n";

    #[test]
    fn parses_errors_with_line_column_and_source() {
        let d = parse_log(LOG_MIXED);
        assert_eq!(d.len(), 4, "{d:#?}");
        assert_eq!(d[0].file, "k.cu");
        assert_eq!(d[0].line, Some(3));
        assert_eq!(d[0].column, Some(7));
        assert_eq!(d[0].severity, Severity::Error);
        assert_eq!(d[0].source_line.as_deref(), Some("    f(p);"));
        assert_eq!(
            d[0].message,
            "argument of type \"int *\" is incompatible with parameter of type \"float *\""
        );
        assert_eq!(d[1].column, Some(8));
        assert_eq!((d[2].line, d[2].column), (Some(5), Some(5)));
        assert_eq!(d[3].severity, Severity::Warning);
        assert_eq!(d[3].code.as_deref(), Some("177-D"));
        assert_eq!(d[3].column, Some(9));
        assert!(d.iter().all(|d| d.notes.is_empty()), "{d:#?}");
    }

    #[test]
    fn renders_like_rustc() {
        let d = &parse_log("kernels/x.cu(12): error: identifier \"foo\" is undefined\n      y = foo + 1;\n          ^\n\n")[0];
        assert_eq!(
            d.to_string(),
            "error: identifier \"foo\" is undefined\n  --> kernels/x.cu:12:9\n   |\n12 |     y = foo + 1;\n   |         ^"
        );
    }

    #[test]
    fn keeps_tabs_so_the_caret_lines_up() {
        let log =
            "k.cu(2): error: identifier \"foo\" is undefined\n  \tint y = foo;\n  \t        ^\n\n";
        let d = &parse_log(log)[0];
        assert_eq!(d.column, Some(10));
        assert_eq!(d.source_line.as_deref(), Some("\tint y = foo;"));
        assert!(
            d.to_string()
                .ends_with("2 | \tint y = foo;\n  | \t        ^"),
            "{d}"
        );
    }

    #[test]
    fn instantiation_context_becomes_notes_and_header_paths_are_kept() {
        let log = "/tmp/inc/h.cuh(1): error: expression must have class type but it has type \"float\"\n  template<class T> __device__ T twice(T x) { return x.nope * 2; }\n                                                     ^\n          detected during:\n            instantiation of \"T twice(T) [with T=float]\" at line 4 of k.cu\n            instantiation of \"void k(T *) [with T=float]\" at line 6 of k.cu\n\n1 error detected in the compilation of \"k.cu\".\n";
        let d = parse_log(log);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].file, "/tmp/inc/h.cuh");
        assert_eq!(d[0].column, Some(52));
        assert_eq!(d[0].notes.len(), 3);
        assert_eq!(
            d[0].notes[1],
            "instantiation of \"T twice(T) [with T=float]\" at line 4 of k.cu"
        );
        assert!(d[0].to_string().contains("= note: detected during:"));
    }

    #[test]
    fn explanation_lines_before_the_source_are_notes() {
        let log = "k.cu(3): error: no instance of overloaded function \"f\" matches the argument list\n            argument types are: (int *)\n      f(p);\n      ^\n\n";
        let d = &parse_log(log)[0];
        assert_eq!(d.notes, vec!["argument types are: (int *)".to_string()]);
        assert_eq!(d.source_line.as_deref(), Some("    f(p);"));
        assert_eq!(d.column, Some(5));
    }

    #[test]
    fn catastrophic_errors_and_option_errors() {
        let log = "k.cu(1): catastrophic error: could not open source file \"nosuch.h\" (no directories in search list)\n  #include <nosuch.h>\n                     ^\n\n1 catastrophic error detected in the compilation of \"k.cu\".\nCompilation terminated.\n";
        let d = parse_log(log);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].severity, Severity::Error);
        assert_eq!(d[0].column, Some(20));
        assert_eq!(
            d[0].message,
            "could not open source file \"nosuch.h\" (no directories in search list)"
        );

        let d = parse_log("nvrtc: error: unrecognized option --bogus-opt found\n");
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].file, "nvrtc");
        assert_eq!(d[0].line, None);
        assert_eq!(d[0].message, "unrecognized option --bogus-opt found");
        assert_eq!(
            d[0].to_string(),
            "error: unrecognized option --bogus-opt found"
        );
    }

    #[test]
    fn ptxas_report_is_not_a_diagnostic_but_ptxas_warnings_are() {
        let log = "ptxas info    : 0 bytes gmem\nptxas info    : Compiling entry function '_Z1kPff' for 'sm_90'\nptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\nptxas info    : Used 10 registers, used 1 barriers, 1024 bytes smem\nptxas warning : Registers are spilled to local memory in function '_Z1kPff'\n";
        let d = parse_log(log);
        assert_eq!(d.len(), 1, "{d:#?}");
        assert_eq!(d[0].file, "ptxas");
        assert_eq!(d[0].severity, Severity::Warning);
        assert!(d[0].message.starts_with("Registers are spilled"));
    }

    #[test]
    fn a_line_of_many_parentheses_is_read_in_linear_time() {
        // Found by review while writing the `nvrtc_log` fuzz target: each `(` searched the rest
        // of the line for `): `. The old search took 14.8 s on this line in an optimized build
        // (3.5 s at half the length: quadratic); now it takes milliseconds.
        let mut log = "(".repeat(200_000);
        log.push_str("x.cu(9): error: boom\n");
        let d = parse_log(&log);
        assert_eq!(d.len(), 1, "{d:#?}");
        assert_eq!(d[0].line, Some(9));
        assert_eq!(d[0].file.len(), 200_004);
        assert!(d[0].file.ends_with("((x.cu"));
        assert_eq!(d[0].message, "boom");
    }

    #[test]
    fn a_parenthesised_number_without_a_severity_is_skipped_for_the_next() {
        let d = &parse_log("a(1): see b(2): warning: w\n")[0];
        assert_eq!(d.file, "a(1): see b");
        assert_eq!(d.line, Some(2));
        assert_eq!(d.severity, Severity::Warning);
    }

    /// Logs in NVRTC 13.0's format, one per shape the parser knows.
    const SAMPLE_LOGS: &[&str] = &[
        LOG_MIXED,
        "/tmp/inc/h.cuh(1): error: expression must have class type but it has type \"float\"\n  template<class T> __device__ T twice(T x) { return x.nope * 2; }\n                                                     ^\n          detected during:\n            instantiation of \"T twice(T) [with T=float]\" at line 4 of k.cu\n\n",
        "k.cu(3): error: no instance of overloaded function \"f\" matches the argument list\n            argument types are: (int *)\n      f(p);\n      ^\n\n",
        "k.cu(2): error: identifier \"foo\" is undefined\n  \tint y = foo;\n  \t        ^\n\n",
        "nvrtc: error: unrecognized option --bogus-opt found\nptxas warning : Registers are spilled to local memory in function '_Z1kPff'\ndir (copy)/x(2).cu(7): warning #550-D: variable \"s\" was set but never used\n",
    ];

    #[test]
    fn every_truncation_of_the_sample_logs_parses() {
        for (i, log) in SAMPLE_LOGS.iter().enumerate() {
            for cut in (0..=log.len()).filter(|&c| log.is_char_boundary(c)) {
                if let Err(why) = check_parse_log(&log[..cut]) {
                    panic!("log {i} cut at {cut}: {why}");
                }
            }
        }
    }

    #[test]
    fn random_mutations_of_the_sample_logs_parse() {
        // xorshift64 with a fixed seed: reproducible, and no dependency. Inserted bytes are the
        // ones the grammar reads, and a byte that is not UTF-8.
        const GRAMMAR: &[u8] = b"()0123456789:^ \t\n#-'\xff";
        let mut state = 0x6a09_e667_f3bc_c908_u64;
        let mut next = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let mut found = 0;
        for (i, log) in SAMPLE_LOGS.iter().enumerate() {
            for round in 0..800 {
                let mut b = log.as_bytes().to_vec();
                for _ in 0..1 + next(4) {
                    let at = next(b.len());
                    match next(3) {
                        0 => b[at] = GRAMMAR[next(GRAMMAR.len())],
                        1 => drop(b.remove(at)),
                        _ => b.insert(at, GRAMMAR[next(GRAMMAR.len())]),
                    }
                }
                let text = String::from_utf8_lossy(&b);
                if let Err(why) = check_parse_log(&text) {
                    panic!("log {i} round {round}: {why}");
                }
                found += parse_log(&text).len();
            }
        }
        assert!(found > 4000, "the mutants held only {found} diagnostics");
    }

    #[test]
    fn file_names_with_parentheses() {
        let d = &parse_log(
            "dir (copy)/x(2).cu(7): warning #550-D: variable \"s\" was set but never used\n",
        )[0];
        assert_eq!(d.file, "dir (copy)/x(2).cu");
        assert_eq!(d.line, Some(7));
        assert_eq!(d.source_line, None);
    }
}
