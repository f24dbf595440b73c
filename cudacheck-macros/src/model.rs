//! Stage 2: the attribute's entries and the item, turned into a typed model.
//!
//! This stage decides what each key means and whether its value has the right shape (a string,
//! an integer, a tuple of integers, ...). Whether the values are *allowed* (a block within the
//! hardware limits, a signature matching the CUDA declaration) is [`crate::check`]'s business.
//! Errors are collected, not returned at the first one, so that the user sees all of them.

use std::path::PathBuf;

use cudacheck_core::Arch;
use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::punctuated::Punctuated;
use syn::{Attribute, Expr, ExprLit, FnArg, Ident, Lit, LitStr, Pat, Signature, Token, Type};

use crate::attr::{KernelItem, RawArg, RawArgs, RawValue};
use crate::typemap::RustTy;

/// A key of the attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    File,
    Source,
    PtxFile,
    Ptx,
    Name,
    Arch,
    Include,
    Define,
    Defines,
    MaxRegisters,
    Block,
    Grid,
    Shared,
    Cluster,
    Requires,
    Instrument,
    Races,
    Init,
}

impl Key {
    /// Every key, in the order the docs list them.
    pub const ALL: [Key; 18] = [
        Key::File,
        Key::Source,
        Key::PtxFile,
        Key::Ptx,
        Key::Name,
        Key::Arch,
        Key::Include,
        Key::Define,
        Key::Defines,
        Key::MaxRegisters,
        Key::Block,
        Key::Grid,
        Key::Shared,
        Key::Cluster,
        Key::Requires,
        Key::Instrument,
        Key::Races,
        Key::Init,
    ];

    /// As written in the attribute.
    pub fn as_str(self) -> &'static str {
        match self {
            Key::File => "file",
            Key::Source => "source",
            Key::PtxFile => "ptx_file",
            Key::Ptx => "ptx",
            Key::Name => "name",
            Key::Arch => "arch",
            Key::Include => "include",
            Key::Define => "define",
            Key::Defines => "defines",
            Key::MaxRegisters => "max_registers",
            Key::Block => "block",
            Key::Grid => "grid",
            Key::Shared => "shared",
            Key::Cluster => "cluster",
            Key::Requires => "requires",
            Key::Instrument => "instrument",
            Key::Races => "races",
            Key::Init => "init",
        }
    }

    /// The key written `s`, if it is one.
    pub fn parse(s: &str) -> Option<Key> {
        Key::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Whether the key says where the kernel's code comes from.
    fn is_source(self) -> bool {
        matches!(self, Key::File | Key::Source | Key::PtxFile | Key::Ptx)
    }
}

/// Spellings people reach for, with the key they mean. Checked before edit distance, because
/// `threads` is nowhere near `block` by letters.
const HINTS: &[(&str, &str)] = &[
    ("threads", "block"),
    ("block_dim", "block"),
    ("block_size", "block"),
    ("blockdim", "block"),
    ("grid_dim", "grid"),
    ("blocks", "grid"),
    ("smem", "shared"),
    ("shared_mem", "shared"),
    ("shared_memory", "shared"),
    ("shared_bytes", "shared"),
    ("dynamic_shared", "shared"),
    ("path", "file"),
    ("kernel", "name"),
    ("symbol", "name"),
    ("includes", "include"),
    ("include_dirs", "include"),
    ("target", "arch"),
    ("sm", "arch"),
    ("maxrregcount", "max_registers"),
    ("registers", "max_registers"),
    ("require", "requires"),
    ("bounds_check", "instrument"),
    ("race_check", "races"),
    ("racecheck", "races"),
    ("init_check", "init"),
    ("initcheck", "init"),
    ("uninit", "init"),
];

/// Accumulates errors so that every mistake is reported at once.
#[derive(Default)]
pub struct Errors(Option<syn::Error>);

impl Errors {
    pub fn push(&mut self, e: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }

    pub fn spanned(&mut self, tokens: impl ToTokens, msg: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(tokens, msg));
    }

    pub fn at(&mut self, span: Span, msg: impl std::fmt::Display) {
        self.push(syn::Error::new(span, msg));
    }

    pub fn into_error(self) -> Option<syn::Error> {
        self.0
    }
}

/// Where the CUDA source comes from.
pub enum SourceSpec {
    /// `file = "kernels/saxpy.cu"`: `path` is resolved against the crate's manifest directory.
    File { lit: LitStr, path: PathBuf },
    /// `source = r#"..."#`.
    Inline { lit: LitStr },
    /// `ptx_file = "kernels/saxpy.ptx"`: a PTX module, resolved like `file`.
    PtxFile { lit: LitStr, path: PathBuf },
    /// `ptx = include_str!(..)` is not a literal; `ptx = r#"..."#`: PTX text.
    PtxInline { lit: LitStr },
}

impl SourceSpec {
    /// Whether the kernel comes as PTX rather than CUDA C++.
    pub fn is_ptx(&self) -> bool {
        matches!(
            self,
            SourceSpec::PtxFile { .. } | SourceSpec::PtxInline { .. }
        )
    }
}

/// A `block`/`grid` literal: one to three integer components, missing ones are 1.
pub struct DimLit {
    /// The whole value as written, for errors about the whole.
    pub tokens: TokenStream,
    /// x, y, z; in 64 bits so that an out-of-range literal is reported rather than wrapped.
    pub values: [u64; 3],
    /// Each component as written; `None` for components filled in as 1.
    pub exprs: [Option<Expr>; 3],
}

/// `define = ["TILE=16"]` or `defines(TILE = 16)`.
pub struct Define {
    pub name: String,
    pub value: Option<String>,
}

/// A `requires(...)` clause.
pub struct Requirement {
    pub expr: Expr,
    /// The clause as the user wrote it, for the runtime's error message.
    pub text: String,
}

/// One parameter of the Rust declaration.
pub struct Param {
    pub ident: Ident,
    pub ty: Box<Type>,
    pub kind: RustTy,
}

/// A value with the span of the tokens that produced it.
pub struct Spanned<T> {
    pub value: T,
    pub tokens: TokenStream,
}

/// The whole attribute plus item, typed.
pub struct Model {
    pub attrs: Vec<Attribute>,
    pub vis: syn::Visibility,
    pub sig: Signature,
    pub body: Option<Span>,
    pub source: Option<SourceSpec>,
    /// `name = "..."`, when the CUDA name differs from the Rust one.
    pub name: Option<LitStr>,
    /// `arch = "sm_90"` or `arch = ["sm_80", "sm_90"]`: each is checked (and compiled).
    pub archs: Vec<Spanned<Arch>>,
    pub includes: Vec<(LitStr, PathBuf)>,
    pub defines: Vec<Define>,
    pub max_registers: Option<Spanned<u64>>,
    pub block: Option<DimLit>,
    pub grid: Option<DimLit>,
    /// `cluster = (2, 1, 1)`: blocks per thread-block cluster (sm_90 and later).
    pub cluster: Option<DimLit>,
    pub shared: Option<Spanned<u64>>,
    pub requires: Vec<Requirement>,
    pub instrument: Option<bool>,
    /// `races = true`: launches are race-checked (`KernelBuilder::races`).
    pub races: Option<bool>,
    /// `init = true`: launches are init-checked (`KernelBuilder::init`).
    pub init: Option<bool>,
    /// Whether `block`/`grid` were given at all, even malformed: the wrapper's signature depends
    /// on it, and the stub emitted on error must have the signature the user expects.
    pub block_given: bool,
    pub grid_given: bool,
    /// The Rust parameters that are plain `name: Type` (others are reported and left out).
    pub params: Vec<Param>,
    /// Whether every Rust parameter made it into `params`; when not, comparing the list with
    /// the CUDA one would only repeat the error already reported.
    pub params_complete: bool,
}

impl Model {
    /// The CUDA kernel name (the `name` key, or the Rust function's name), with any template
    /// arguments.
    pub fn cuda_name(&self) -> String {
        match &self.name {
            Some(lit) => lit.value().trim().to_string(),
            None => self.sig.ident.to_string(),
        }
    }

    /// The tokens to point at for errors about the kernel name.
    pub fn name_tokens(&self) -> TokenStream {
        match &self.name {
            Some(lit) => lit.to_token_stream(),
            None => self.sig.ident.to_token_stream(),
        }
    }
}

/// The directory relative paths are resolved against: the manifest directory of the crate being
/// compiled. `CUDACHECK_MANIFEST_DIR_OVERRIDE` exists for trybuild, whose test crates live under
/// `target/` while the fixtures they name live beside the real manifest (trybuild issue #202).
pub fn manifest_dir() -> PathBuf {
    std::env::var_os("CUDACHECK_MANIFEST_DIR_OVERRIDE")
        .or_else(|| std::env::var_os("CARGO_MANIFEST_DIR"))
        .map(PathBuf::from)
        .unwrap_or_default()
}

/// Builds the model, collecting every shape error into `errors`.
pub fn build(args: RawArgs, item: KernelItem, errors: &mut Errors) -> Model {
    let params = params(&item.sig, errors);
    let mut m = Model {
        params_complete: params.len() == item.sig.inputs.len(),
        params,
        attrs: item.attrs,
        vis: item.vis,
        sig: item.sig,
        body: item.body,
        source: None,
        name: None,
        archs: Vec::new(),
        includes: Vec::new(),
        defines: Vec::new(),
        max_registers: None,
        block: None,
        grid: None,
        cluster: None,
        shared: None,
        requires: Vec::new(),
        instrument: None,
        races: None,
        init: None,
        block_given: false,
        grid_given: false,
    };
    let mut seen: Vec<Ident> = Vec::new();
    for arg in args.0 {
        let key = arg.key.to_string();
        if seen.iter().any(|k| *k == key) {
            errors.spanned(
                &arg.key,
                format!("duplicate key `{key}`: it was already given; give each key once"),
            );
            continue;
        }
        seen.push(arg.key.clone());
        apply(&mut m, arg, errors);
    }
    let source_named = seen
        .iter()
        .any(|k| Key::parse(&k.to_string()).is_some_and(Key::is_source));
    if m.source.is_none() && !source_named {
        errors.at(
            Span::call_site(),
            "missing the CUDA source: add `file = \"kernels/<name>.cu\"` (relative to the \
             directory of Cargo.toml) or `source = \"...\"`, or for a kernel compiled to PTX \
             `ptx_file = \"<name>.ptx\"` or `ptx = \"...\"`",
        );
    }
    m
}

fn apply(m: &mut Model, arg: RawArg, errors: &mut Errors) {
    let written = arg.key.to_string();
    let Some(key) = Key::parse(&written) else {
        errors.spanned(&arg.key, unknown_key_message(&written));
        return;
    };
    match key {
        Key::File | Key::Source | Key::PtxFile | Key::Ptx => {
            if let Some(lit) = string(&arg, errors) {
                if m.source.is_some() {
                    errors.spanned(
                        &arg.key,
                        "give one of `file`, `source`, `ptx_file` and `ptx`, not several",
                    );
                    return;
                }
                m.source = Some(match key {
                    Key::File => SourceSpec::File {
                        path: manifest_dir().join(lit.value()),
                        lit,
                    },
                    Key::Source => SourceSpec::Inline { lit },
                    Key::PtxFile => SourceSpec::PtxFile {
                        path: manifest_dir().join(lit.value()),
                        lit,
                    },
                    _ => SourceSpec::PtxInline { lit },
                });
            }
        }
        Key::Name => m.name = string(&arg, errors),
        Key::Arch => {
            for lit in strings(&arg, errors) {
                match lit.value().parse::<Arch>() {
                    Ok(a) if m.archs.iter().any(|b| b.value == a) => {
                        errors.spanned(&lit, format!("`{}` is listed twice in `arch`", lit.value()))
                    }
                    Ok(a) => m.archs.push(Spanned {
                        value: a,
                        tokens: lit.to_token_stream(),
                    }),
                    Err(e) => errors.spanned(&lit, e),
                }
            }
        }
        Key::Include => {
            for lit in strings(&arg, errors) {
                let path = manifest_dir().join(lit.value());
                m.includes.push((lit, path));
            }
        }
        Key::Define => {
            for lit in strings(&arg, errors) {
                let text = lit.value();
                let (name, value) = match text.split_once('=') {
                    Some((n, v)) => (n.trim().to_string(), Some(v.trim().to_string())),
                    None => (text.trim().to_string(), None),
                };
                if !is_c_identifier(&name) {
                    errors.spanned(
                        &lit,
                        format!(
                            "`{name}` is not a macro name: write `\"NAME\"` or `\"NAME=value\"`"
                        ),
                    );
                    continue;
                }
                m.defines.push(Define { name, value });
            }
        }
        Key::Defines => {
            let Some(items) = list::<DefineItem>(&arg, "`defines(TILE = 16, FAST)`", errors) else {
                return;
            };
            for d in items {
                let value = d.value.map(|v| match &v {
                    Expr::Lit(ExprLit {
                        lit: Lit::Str(s), ..
                    }) => s.value(),
                    other => tidy(other.to_token_stream()),
                });
                m.defines.push(Define {
                    name: d.name.to_string(),
                    value,
                });
            }
        }
        Key::MaxRegisters => m.max_registers = integer(&arg, errors),
        Key::Shared => m.shared = integer(&arg, errors),
        Key::Block => {
            m.block_given = true;
            m.block = dim(&arg, errors);
        }
        Key::Grid => {
            m.grid_given = true;
            m.grid = dim(&arg, errors);
        }
        Key::Cluster => m.cluster = dim(&arg, errors),
        Key::Requires => {
            let Some(exprs) = list::<Expr>(&arg, "`requires(out.len() >= n as usize)`", errors)
            else {
                return;
            };
            for expr in exprs {
                let text = tidy(expr.to_token_stream());
                m.requires.push(Requirement { expr, text });
            }
        }
        Key::Instrument => m.instrument = flag(&arg, errors),
        Key::Races => m.races = flag(&arg, errors),
        Key::Init => m.init = flag(&arg, errors),
    }
}

/// A yes/no key: `key`, `key = true` or `key = false`.
fn flag(arg: &RawArg, errors: &mut Errors) -> Option<bool> {
    match &arg.value {
        RawValue::Flag => Some(true),
        RawValue::Eq(Expr::Lit(ExprLit {
            lit: Lit::Bool(b), ..
        })) => Some(b.value),
        _ => {
            malformed(arg, "`true` or `false`", errors);
            None
        }
    }
}

/// `unknown key `threads`; did you mean `block`? valid keys: ...`
pub fn unknown_key_message(key: &str) -> String {
    let hint = HINTS
        .iter()
        .find(|(wrong, _)| *wrong == key)
        .map(|(_, right)| *right)
        .or_else(|| {
            Key::ALL
                .iter()
                .map(|k| (strsim::damerau_levenshtein(k.as_str(), key), k.as_str()))
                .filter(|(d, k)| *d <= 2 || (*d <= 3 && k.len() > 6))
                .min_by_key(|(d, _)| *d)
                .map(|(_, k)| k)
        });
    let valid = Key::ALL
        .iter()
        .map(|k| format!("`{}`", k.as_str()))
        .collect::<Vec<_>>()
        .join(", ");
    match hint {
        Some(h) => format!("unknown key `{key}`; did you mean `{h}`?\n  valid keys: {valid}"),
        None => format!("unknown key `{key}`\n  valid keys: {valid}"),
    }
}

fn malformed(arg: &RawArg, expected: &str, errors: &mut Errors) {
    let key = &arg.key;
    let msg = format!("malformed `{key}`: expected {expected}");
    match &arg.value {
        RawValue::Eq(e) => errors.spanned(e, msg),
        RawValue::List(t, span) => {
            if t.is_empty() {
                errors.at(*span, msg)
            } else {
                errors.spanned(t, msg)
            }
        }
        RawValue::Flag => errors.spanned(key, format!("`{key}` needs a value: {expected}")),
        // Reported where the value failed to parse.
        RawValue::Invalid => {}
    }
}

fn string(arg: &RawArg, errors: &mut Errors) -> Option<LitStr> {
    match &arg.value {
        RawValue::Eq(Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        })) => Some(s.clone()),
        _ => {
            let example = match arg.key.to_string().as_str() {
                "name" => "a string such as `\"saxpy\"` or `\"scale<float>\"`",
                "file" => "a path string such as `\"kernels/saxpy.cu\"`",
                _ => "a string literal",
            };
            malformed(arg, example, errors);
            None
        }
    }
}

/// `key = "x"` or `key = ["x", "y"]`.
fn strings(arg: &RawArg, errors: &mut Errors) -> Vec<LitStr> {
    let expected = match arg.key.to_string().as_str() {
        "arch" => "a string such as `\"sm_90\"`, or an array such as `[\"sm_80\", \"sm_90\"]`",
        "define" => "a string or an array of strings such as `[\"TILE=16\", \"FAST\"]`",
        _ => "a string or an array of strings such as `[\"include\", \"third_party\"]`",
    };
    match &arg.value {
        RawValue::Eq(Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        })) => vec![s.clone()],
        RawValue::Eq(Expr::Array(a)) => {
            let mut out = Vec::new();
            for e in &a.elems {
                match e {
                    Expr::Lit(ExprLit {
                        lit: Lit::Str(s), ..
                    }) => out.push(s.clone()),
                    other => errors.spanned(
                        other,
                        format!("malformed `{}`: expected {expected}", arg.key),
                    ),
                }
            }
            out
        }
        _ => {
            malformed(arg, expected, errors);
            Vec::new()
        }
    }
}

fn list<T: syn::parse::Parse>(arg: &RawArg, example: &str, errors: &mut Errors) -> Option<Vec<T>> {
    let RawValue::List(tokens, _) = &arg.value else {
        malformed(arg, &format!("a list such as {example}"), errors);
        return None;
    };
    match syn::parse::Parser::parse2(Punctuated::<T, Token![,]>::parse_terminated, tokens.clone()) {
        Ok(items) => Some(items.into_iter().collect()),
        Err(e) => {
            errors.push(syn::Error::new(
                e.span(),
                format!("malformed `{}`: {e}; expected {example}", arg.key),
            ));
            None
        }
    }
}

struct DefineItem {
    name: Ident,
    value: Option<Expr>,
}

impl syn::parse::Parse for DefineItem {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        let name: Ident = input.parse()?;
        let value = if input.peek(Token![=]) {
            input.parse::<Token![=]>()?;
            Some(input.parse()?)
        } else {
            None
        };
        Ok(DefineItem { name, value })
    }
}

fn integer(arg: &RawArg, errors: &mut Errors) -> Option<Spanned<u64>> {
    let RawValue::Eq(e) = &arg.value else {
        malformed(arg, "an integer literal such as `4096`", errors);
        return None;
    };
    match const_int(e) {
        Ok(v) => Some(Spanned {
            value: v,
            tokens: e.to_token_stream(),
        }),
        Err(msg) => {
            errors.spanned(e, format!("malformed `{}`: {msg}", arg.key));
            None
        }
    }
}

fn dim(arg: &RawArg, errors: &mut Errors) -> Option<DimLit> {
    let expected = "an integer or a tuple of up to three integers such as `(256, 1, 1)`";
    let RawValue::Eq(e) = &arg.value else {
        malformed(arg, expected, errors);
        return None;
    };
    let comps: Vec<&Expr> = match e {
        Expr::Tuple(t) => t.elems.iter().collect(),
        Expr::Array(a) => a.elems.iter().collect(),
        Expr::Paren(p) => vec![&*p.expr],
        other => vec![other],
    };
    if comps.is_empty() || comps.len() > 3 {
        errors.spanned(
            e,
            format!(
                "malformed `{}`: {} components; expected {expected}",
                arg.key,
                comps.len()
            ),
        );
        return None;
    }
    let mut values = [1u64; 3];
    let mut exprs: [Option<Expr>; 3] = [None, None, None];
    let mut ok = true;
    for (i, c) in comps.into_iter().enumerate() {
        match const_int(c) {
            Ok(v) => values[i] = v,
            Err(msg) => {
                errors.spanned(c, format!("malformed `{}`: {msg}", arg.key));
                ok = false;
            }
        }
        exprs[i] = Some(c.clone());
    }
    ok.then(|| DimLit {
        tokens: e.to_token_stream(),
        values,
        exprs,
    })
}

/// Evaluates an integer literal or a small arithmetic expression of literals
/// (`48 * 1024`, `1 << 10`), which is how people write sizes.
fn const_int(e: &Expr) -> Result<u64, String> {
    let too_big = "the value does not fit in 64 bits".to_string();
    match e {
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => i
            .base10_parse::<u64>()
            .map_err(|_| "expected an unsigned integer".to_string()),
        Expr::Paren(p) => const_int(&p.expr),
        Expr::Group(g) => const_int(&g.expr),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => {
            Err("a negative value; sizes are unsigned".to_string())
        }
        Expr::Binary(b) => {
            let (l, r) = (const_int(&b.left)?, const_int(&b.right)?);
            match b.op {
                syn::BinOp::Add(_) => l.checked_add(r).ok_or(too_big),
                syn::BinOp::Sub(_) => l
                    .checked_sub(r)
                    .ok_or_else(|| "the subtraction goes below zero".to_string()),
                syn::BinOp::Mul(_) => l.checked_mul(r).ok_or(too_big),
                syn::BinOp::Shl(_) if r < 64 => l.checked_mul(1u64 << r).ok_or(too_big),
                _ => Err(
                    "only `+`, `-`, `*` and `<<` of integer literals are evaluated \
                          at compile time"
                        .to_string(),
                ),
            }
        }
        _ => Err(
            "expected an integer literal (constants and variables cannot be checked at \
                  compile time; pass them to the launch instead)"
                .to_string(),
        ),
    }
}

fn params(sig: &Signature, errors: &mut Errors) -> Vec<Param> {
    let mut out = Vec::new();
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(r) => errors.spanned(
                r,
                "a kernel has no `self`: declare the kernel's parameters only",
            ),
            FnArg::Typed(pt) => match &*pt.pat {
                Pat::Ident(pi) if pi.subpat.is_none() => out.push(Param {
                    ident: pi.ident.clone(),
                    kind: RustTy::classify(&pt.ty),
                    ty: pt.ty.clone(),
                }),
                other => errors.spanned(
                    other,
                    "kernel parameters need a plain name (`x: &CudaSlice<f32>`): the name is \
                     used in messages and in `requires(...)`",
                ),
            },
        }
    }
    out
}

fn is_c_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// A type as the user wrote it, for messages: `&mut CudaSlice<f32>`, not the token stream's
/// `& mut CudaSlice < f32 >`.
pub fn type_text(ty: &impl ToTokens) -> String {
    let mut s = tidy(ty.to_token_stream());
    for (from, to) in [
        (" < ", "<"),
        (" <", "<"),
        ("< ", "<"),
        (" >", ">"),
        ("' ", "'"),
    ] {
        s = s.replace(from, to);
    }
    s
}

/// Token text with the spaces `TokenStream`'s `Display` puts around `.`, `::`, `(` and `,`
/// removed, so that a `requires` clause reads as the user wrote it.
pub fn tidy(tokens: TokenStream) -> String {
    let mut s = tokens.to_string();
    for (from, to) in [
        (" . ", "."),
        (" :: ", "::"),
        (" ()", "()"),
        ("( ", "("),
        (" )", ")"),
        (" ,", ","),
        (" [", "["),
        ("[ ", "["),
        (" ]", "]"),
        ("& ", "&"),
    ] {
        s = s.replace(from, to);
    }
    // `len (x)` -> `len(x)`, but keep `>= (a)` as written.
    let mut out = String::with_capacity(s.len());
    let bytes: Vec<char> = s.chars().collect();
    for (i, c) in bytes.iter().enumerate() {
        if *c == ' '
            && bytes.get(i + 1) == Some(&'(')
            && i > 0
            && (bytes[i - 1].is_alphanumeric() || bytes[i - 1] == '_')
        {
            continue;
        }
        out.push(*c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_reads_back_and_is_documented() {
        let docs = include_str!("lib.rs");
        for k in Key::ALL {
            assert_eq!(Key::parse(k.as_str()), Some(k));
            assert!(
                docs.contains(&format!("`{}`", k.as_str())),
                "{k:?} is not in the docs"
            );
        }
        assert_eq!(Key::parse("threads"), None);
    }

    fn model(attr: &str, item: &str) -> (Model, Option<String>) {
        let mut errors = Errors::default();
        let args = crate::attr::parse_args(attr.parse().unwrap(), &mut errors);
        let item: KernelItem = syn::parse_str(item).unwrap();
        let m = build(args, item, &mut errors);
        (
            m,
            errors.into_error().map(|e| {
                e.into_iter()
                    .map(|e| e.to_string())
                    .collect::<Vec<_>>()
                    .join("\n")
            }),
        )
    }

    const ITEM: &str = "fn saxpy(y: &mut CudaSlice<f32>, x: &CudaSlice<f32>, a: f32, n: i32);";

    #[test]
    fn reads_every_key() {
        let (m, err) = model(
            r#"source = "x", name = "scale<float>", arch = "sm_90", include = ["inc"],
               define = ["TILE=16", "FAST"], defines(N = 4), max_registers = 32,
               block = (16, 16), grid = 4, shared = 48 * 1024,
               requires(x.len() >= n as usize), instrument = false"#,
            ITEM,
        );
        assert!(err.is_none(), "{err:?}");
        assert_eq!(m.cuda_name(), "scale<float>");
        assert_eq!(m.archs.first().map(|a| a.value), Some(Arch::new(9, 0)));
        assert_eq!(m.block.as_ref().map(|b| b.values), Some([16, 16, 1]));
        assert_eq!(m.grid.as_ref().map(|b| b.values), Some([4, 1, 1]));
        assert_eq!(m.shared.as_ref().map(|s| s.value), Some(49152));
        assert_eq!(m.max_registers.as_ref().map(|s| s.value), Some(32));
        let defines: Vec<_> = m
            .defines
            .iter()
            .map(|d| (d.name.as_str(), d.value.as_deref()))
            .collect();
        assert_eq!(
            defines,
            [("TILE", Some("16")), ("FAST", None), ("N", Some("4"))]
        );
        assert_eq!(m.requires[0].text, "x.len() >= n as usize");
        assert_eq!(m.instrument, Some(false));
        assert_eq!(m.params.len(), 4);
    }

    #[test]
    fn reports_every_mistake_at_once() {
        let (_, err) = model(
            r#"source = "x", threads = 256, block = "big", block = 1, arch = "sm_99""#,
            ITEM,
        );
        let err = err.unwrap();
        assert!(err.contains("did you mean `block`"), "{err}");
        assert!(err.contains("valid keys: `file`"), "{err}");
        assert!(err.contains("malformed `block`"), "{err}");
        assert!(err.contains("duplicate key `block`"), "{err}");
        assert!(err.contains("no limits table"), "{err}");
    }

    #[test]
    fn typos_get_an_edit_distance_suggestion() {
        assert!(unknown_key_message("blokc").contains("did you mean `block`"));
        assert!(unknown_key_message("max_register").contains("did you mean `max_registers`"));
        assert!(!unknown_key_message("zzzzzz").contains("did you mean"));
    }

    #[test]
    fn missing_source_is_an_error() {
        let (_, err) = model("block = 32", ITEM);
        assert!(err.unwrap().contains("missing the CUDA source"));
    }

    #[test]
    fn literal_arithmetic_is_evaluated_and_overflow_reported() {
        let e: Expr = syn::parse_str("1 << 10").unwrap();
        assert_eq!(const_int(&e), Ok(1024));
        let e: Expr = syn::parse_str("18446744073709551615 * 2").unwrap();
        assert!(const_int(&e).unwrap_err().contains("64 bits"));
        let e: Expr = syn::parse_str("-1").unwrap();
        assert!(const_int(&e).unwrap_err().contains("negative"));
    }
}
