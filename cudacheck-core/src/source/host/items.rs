//! Finding a file's namespace-scope functions without a device annotation, and the facts
//! classifying one needs: does it do host-only things, is its extent certain.

use tree_sitter::Node;

use super::text::*;
use super::Item;
use crate::source::parse::location;

/// Walks the scopes a function can sit in at namespace scope.
pub(super) fn collect_items<'t>(
    text: &str,
    parent: Node<'t>,
    namespace: &[String],
    out: &mut Vec<Item<'t>>,
) {
    let mut cursor = parent.walk();
    let children: Vec<Node<'t>> = parent.named_children(&mut cursor).collect();
    for node in children {
        match node.kind() {
            "function_definition" | "declaration" => {
                if let Some(it) = item(text, node, node, None, namespace) {
                    out.push(it);
                }
            }
            "template_declaration" => {
                let mut c = node.walk();
                let inner = node
                    .named_children(&mut c)
                    .find(|n| matches!(n.kind(), "function_definition" | "declaration"));
                if let Some(inner) = inner {
                    if let Some(it) = item(text, node, inner, Some(node), namespace) {
                        out.push(it);
                    }
                }
            }
            "linkage_specification" => match node.child_by_field_name("body") {
                Some(b) if b.kind() == "declaration_list" => collect_items(text, b, namespace, out),
                Some(b) if matches!(b.kind(), "function_definition" | "declaration") => {
                    if let Some(it) = item(text, node, b, None, namespace) {
                        out.push(it);
                    }
                }
                _ => {}
            },
            "namespace_definition" => {
                let mut inner = namespace.to_vec();
                match node.child_by_field_name("name") {
                    Some(n) => inner.extend(
                        text[n.byte_range()]
                            .split("::")
                            .map(|p| p.trim().to_owned()),
                    ),
                    None => inner.push(String::new()),
                }
                if let Some(body) = node.child_by_field_name("body") {
                    collect_items(text, body, &inner, out);
                }
            }
            "preproc_if" | "preproc_ifdef" | "preproc_else" | "preproc_elif"
            | "preproc_elifdef" => collect_items(text, node, namespace, out),
            _ => {}
        }
    }
}

/// The function `func` declares or defines, when no annotation makes it device code.
pub(super) fn item<'t>(
    text: &str,
    outer: Node<'t>,
    func: Node<'t>,
    template: Option<Node<'t>>,
    namespace: &[String],
) -> Option<Item<'t>> {
    let mut cursor = func.walk();
    let declarator = func
        .children_by_field_name("declarator", &mut cursor)
        .find(|d| d.kind() == "function_declarator")?;
    let name_node = declarator.child_by_field_name("declarator")?;
    let name = match name_node.kind() {
        "identifier" => &text[name_node.byte_range()],
        "template_function" => &text[name_node.child_by_field_name("name")?.byte_range()],
        // Operators, destructors and out-of-class member definitions stay as they are.
        _ => return None,
    };
    // Everything before the declarator: the specifiers and the return type.
    let prefix = &text[outer.start_byte()..declarator.start_byte()];
    let template_params = template
        .and_then(|t| t.child_by_field_name("parameters"))
        .map(|p| template_param_names(text, p))
        .unwrap_or_default();
    let template_clause = template
        .and_then(|t| t.child_by_field_name("parameters"))
        .map(|p| collapse(&strip_line_comments(&text[p.byte_range()])));
    if annotated_before(text, outer.start_byte()) {
        return None;
    }
    for word in identifiers(prefix) {
        if matches!(word, "__device__" | "__global__") {
            return None;
        }
        // An all-caps word may be a macro standing for `__device__` (`HOST_DEVICE`,
        // `DEVICE_INLINE`): not provably host code, so left alone.
        if looks_like_macro(word) && !template_params.iter().any(|p| p == word) {
            return None;
        }
    }
    Some(Item {
        name: name.to_owned(),
        location: location(text, name_node),
        outer: outer.byte_range(),
        func,
        body: func.child_by_field_name("body"),
        namespace: namespace.to_vec(),
        template_params,
        template_clause,
    })
}

/// Whether a function body does something only host code can: launch with `<<<`, call the
/// CUDA runtime or driver API (`cudaMalloc(`, `cuLaunchKernel(`), or use the C++ library's
/// host-only synchronization and I/O.
pub(super) fn does_host_only_things(body: &str) -> bool {
    if body.contains("<<<") {
        return true;
    }
    let words: Vec<&str> = identifiers(body).collect();
    words.iter().any(|w| {
        let api = w
            .strip_prefix("cuda")
            .or_else(|| w.strip_prefix("cu"))
            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_uppercase()));
        api || matches!(
            *w,
            "mutex" | "lock_guard" | "unique_lock" | "cout" | "cerr" | "fprintf" | "stderr"
        )
    })
}

/// Whether code throws or uses the C++ iostreams: what device code can never do (nvcc rejects
/// `throw` in device code, and the stream classes have no device version).
pub(super) fn throws_or_streams(code: &str) -> bool {
    identifiers(code).any(|w| {
        matches!(w, "throw" | "cout" | "cerr" | "clog")
            || w.ends_with("stringstream")
            || w == "ostream"
            || w == "istream"
    })
}

/// Whether the words just before `start` annotate the function for the device. Error recovery
/// can leave a function's `__global__` in the node before it (after a macro invocation with no
/// `;`, such as `DEFINE(float)` on the line above), so the function itself looks unannotated.
pub(super) fn annotated_before(text: &str, start: usize) -> bool {
    let b = text.as_bytes();
    let mut i = start;
    loop {
        while i > 0 && b[i - 1].is_ascii_whitespace() {
            i -= 1;
        }
        if i > 0 && b[i - 1] == b')' {
            // `__launch_bounds__(256)`
            let mut depth = 0;
            while i > 0 {
                i -= 1;
                match b[i] {
                    b')' => depth += 1,
                    b'(' => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    break;
                }
            }
            while i > 0 && b[i - 1].is_ascii_whitespace() {
                i -= 1;
            }
            return text[..i].ends_with("__launch_bounds__");
        }
        let end = i;
        while i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
            i -= 1;
        }
        match &text[i..end] {
            "__global__" | "__device__" => return true,
            "static" | "inline" | "__forceinline__" | "__noinline__" | "__host__" | "extern"
            | "constexpr" => {}
            _ => return false,
        }
    }
}

pub(super) fn template_param_names(text: &str, list: Node) -> Vec<String> {
    let mut cursor = list.walk();
    let params: Vec<Node> = list.named_children(&mut cursor).collect();
    params
        .into_iter()
        .filter_map(|p| {
            if let Some(n) = p.child_by_field_name("name") {
                return Some(text[n.byte_range()].to_owned());
            }
            if let Some(d) = p.child_by_field_name("declarator") {
                return identifiers(&text[d.byte_range()]).last().map(str::to_owned);
            }
            let mut c = p.walk();
            let found = p
                .named_children(&mut c)
                .filter(|n| matches!(n.kind(), "type_identifier" | "identifier"))
                .last()
                .map(|n| text[n.byte_range()].to_owned());
            found
        })
        .collect()
}

pub(super) fn looks_like_macro(word: &str) -> bool {
    word.len() >= 2
        && word.bytes().any(|b| b.is_ascii_uppercase())
        && word
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// Blanking removes preprocessor lines with the function; that is harmless only for
/// conditionals that open and close inside it.
pub(super) fn balanced_preprocessor(s: &str) -> bool {
    let mut depth = 0i32;
    // A macro the function defines and undefines again is its own (`#define LAUNCH(D) ...`
    // used by a `switch` and `#undef`ined after it): blanking both changes nothing outside.
    let directive_names = |kind: &str| -> Vec<&str> {
        s.lines()
            .filter_map(|l| l.trim_start().strip_prefix('#'))
            .filter_map(|d| d.trim_start().strip_prefix(kind))
            .filter_map(|rest| {
                rest.starts_with([' ', '\t'])
                    .then(|| rest.trim_start())
                    .and_then(|r| {
                        r.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                            .next()
                    })
            })
            .collect()
    };
    let defined = directive_names("define");
    let undefined = directive_names("undef");
    if defined.len() != undefined.len() || defined.iter().any(|d| !undefined.contains(d)) {
        return false;
    }
    for line in s.lines() {
        let Some(d) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let word = d
            .trim_start()
            .split(|c: char| !c.is_ascii_alphabetic())
            .next();
        match word {
            Some("if" | "ifdef" | "ifndef") => depth += 1,
            Some("endif") => depth -= 1,
            Some(
                "else" | "elif" | "elifdef" | "elifndef" | "pragma" | "line" | "error" | "warning"
                | "define" | "undef",
            ) => {}
            _ => return false,
        }
        if depth < 0 {
            return false;
        }
    }
    depth == 0
}

/// Whether the function's extent is known. The parser recovers from what it cannot read
/// (a macro invocation with a type as its argument, `LAUNCH(float, 4);`); inside a body that
/// leaves the function's own extent intact when the body still runs from its `{` to a matching
/// `}`. An error in the signature leaves the extent in doubt.
pub(super) fn extent_is_certain(text: &str, it: &Item) -> bool {
    if !it.func.has_error() {
        return true;
    }
    let Some(body) = it.body else {
        return false;
    };
    let mut cursor = it.func.walk();
    let signature_ok = it
        .func
        .children(&mut cursor)
        .filter(|c| c.id() != body.id())
        .all(|c| !c.has_error() && !c.is_error());
    let b = blank_block_comments(&text[body.byte_range()]);
    signature_ok && b.starts_with('{') && b.ends_with('}') && braces_balance(&b)
}
