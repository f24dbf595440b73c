//! Finding a file's namespace-scope functions without a device annotation, and the facts
//! classifying one needs: does it do host-only things, is its extent certain.

use std::collections::HashSet;

use tree_sitter::Node;

use super::decls::innermost_scope;
use super::text::*;
use super::Item;
use crate::source::parse::location;

/// Walks the scopes a function can sit in at namespace scope.
pub(super) fn collect_items<'t>(
    text: &str,
    parent: Node<'t>,
    namespace: &[String],
    plain: &HashSet<String>,
    out: &mut Vec<Item<'t>>,
) {
    let mut cursor = parent.walk();
    let children: Vec<Node<'t>> = parent.named_children(&mut cursor).collect();
    for node in children {
        match node.kind() {
            "function_definition" | "declaration" => {
                if let Some(it) = item(text, node, node, None, namespace, plain) {
                    out.push(it);
                }
            }
            "template_declaration" => {
                let mut c = node.walk();
                let inner = node
                    .named_children(&mut c)
                    .find(|n| matches!(n.kind(), "function_definition" | "declaration"));
                if let Some(inner) = inner {
                    if let Some(it) = item(text, node, inner, Some(node), namespace, plain) {
                        out.push(it);
                    }
                }
            }
            "linkage_specification" => match node.child_by_field_name("body") {
                Some(b) if b.kind() == "declaration_list" => {
                    collect_items(text, b, namespace, plain, out)
                }
                Some(b) if matches!(b.kind(), "function_definition" | "declaration") => {
                    if let Some(it) = item(text, node, b, None, namespace, plain) {
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
                    collect_items(text, body, &inner, plain, out);
                }
            }
            "preproc_if" | "preproc_ifdef" | "preproc_else" | "preproc_elif"
            | "preproc_elifdef" => collect_items(text, node, namespace, plain, out),
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
    plain: &HashSet<String>,
) -> Option<Item<'t>> {
    let declarator = function_declarator(func)?;
    let name_node = declarator.child_by_field_name("declarator")?;
    let mut class = None;
    let name = match name_node.kind() {
        "identifier" => &text[name_node.byte_range()],
        "template_function" => &text[name_node.child_by_field_name("name")?.byte_range()],
        // A member defined outside its class (`Real Estimator<Real>::operator()() {...}`): set
        // aside with its class.
        "qualified_identifier" if func.child_by_field_name("body").is_some() => {
            class = Some(innermost_scope(text, name_node)?.to_owned());
            let written = &text[name_node.byte_range()];
            written.rsplit("::").next().unwrap_or(written).trim()
        }
        // Operators and destructors stay as they are.
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
        // `DEVICE_INLINE`): not provably host code, so left alone, unless the unit's own
        // `#define`s show it stands for no annotation (`FGAPI`, `EXPORT`).
        if may_be_annotation(word, plain) && !template_params.iter().any(|p| p == word) {
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
        class,
    })
}

/// The `function_declarator` of a function definition or declaration, under the pointer and
/// reference declarators of its return type (`float* make(size_t n)`).
pub(super) fn function_declarator(func: Node) -> Option<Node> {
    let mut cursor = func.walk();
    let declarators: Vec<Node> = func
        .children_by_field_name("declarator", &mut cursor)
        .collect();
    declarators.into_iter().find_map(|mut d| loop {
        match d.kind() {
            "function_declarator" => return Some(d),
            "pointer_declarator" | "reference_declarator" => {
                d = d.child_by_field_name("declarator").or_else(|| {
                    d.named_child(u32::try_from(d.named_child_count()).ok()?.checked_sub(1)?)
                })?;
            }
            _ => return None,
        }
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

/// Whether `word` may be a macro standing for a device annotation: it looks like a macro and
/// is not one the unit defines as something else (`plain`, see `plain_macros`).
pub(super) fn may_be_annotation(word: &str, plain: &HashSet<String>) -> bool {
    looks_like_macro(word) && !plain.contains(word)
}

pub(super) fn looks_like_macro(word: &str) -> bool {
    word.len() >= 2
        && word.bytes().any(|b| b.is_ascii_uppercase())
        && word
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// Whether the conditionals inside a function (or class) open and close inside it: blanking
/// keeps every directive (see `blank`), but a conditional that spans the function's edge
/// leaves its extent in doubt. Other directives (`#define`, `#include`, `#pragma`) may stand
/// anywhere.
pub(super) fn balanced_conditionals(s: &str) -> bool {
    let mut depth = 0i32;
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
            _ => {}
        }
        if depth < 0 {
            return false;
        }
    }
    depth == 0
}

/// Whether a declaration the parser recovered from (`FGAPI void FGAPIENTRY glutInit(int*
/// argc, char** argv);`: a return type between two macros) is still one whole statement: it
/// ends with its `;`, holds no braces and balanced parentheses, and starts where a statement
/// starts (after a `;`, a brace or a preprocessor line).
fn declaration_is_whole(text: &str, outer: std::ops::Range<usize>) -> bool {
    let own = blank_block_comments(&text[outer.clone()]);
    let opens = own.matches('(').count();
    if !own.trim_end().ends_with(';')
        || own.contains(['{', '}'])
        || opens != own.matches(')').count()
    {
        return false;
    }
    let before = blank_block_comments(&text[..outer.start]);
    let last = before
        .lines()
        .rev()
        .map(|l| l.find("//").map_or(l, |at| &l[..at]).trim())
        .find(|l| !l.is_empty());
    match last {
        None => true,
        Some(l) => l.starts_with('#') || l.ends_with([';', '{', '}']),
    }
}

/// Whether the function's extent is known. The parser recovers from what it cannot read
/// (a macro invocation with a type as its argument, `LAUNCH(float, 4);`); inside a body that
/// leaves the function's own extent intact when the body still runs from its `{` to a matching
/// `}`. An error in the signature leaves the extent in doubt.
pub(super) fn extent_is_certain(text: &str, it: &Item) -> bool {
    definition_is_whole(text, it.func, it.outer.clone())
}

/// [`extent_is_certain`] for any function definition or declaration `func` (`outer`: with its
/// `template<...>`), an out-of-class member's too.
pub(super) fn definition_is_whole(text: &str, func: Node, outer: std::ops::Range<usize>) -> bool {
    if !func.has_error() {
        return true;
    }
    let Some(body) = func.child_by_field_name("body") else {
        return declaration_is_whole(text, outer);
    };
    let mut cursor = func.walk();
    let signature_ok = func
        .children(&mut cursor)
        .filter(|c| c.id() != body.id())
        // A lone all-caps word between the return type and the name (`void CUDART_CB f(...)`)
        // parses as an error, but moves no edge: only macros shown to stand for no annotation
        // get this far (see `may_be_annotation`).
        .all(|c| {
            (!c.has_error() && !c.is_error())
                || (c.is_error() && looks_like_macro(text[c.byte_range()].trim()))
        });
    let b = blank_block_comments(&text[body.byte_range()]);
    signature_ok && b.starts_with('{') && b.ends_with('}') && braces_balance(&b)
}
