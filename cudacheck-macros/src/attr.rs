//! Stage 1: the attribute's tokens and the annotated item, parsed into syntax with spans and
//! nothing else. What the keys mean is decided in [`crate::model`].

use proc_macro2::{Span, TokenStream};
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Expr, Ident, Signature, Token, Visibility};

use crate::model::Errors;

/// One `key = value` or `key(...)` entry of `#[checked_kernel(...)]`.
pub struct RawArg {
    pub key: Ident,
    pub value: RawValue,
}

/// The two shapes an entry takes.
pub enum RawValue {
    /// `key = <expr>`: literals, tuples, arrays.
    Eq(Expr),
    /// `key(...)`: a list whose items the model parses (`requires(..)` holds expressions,
    /// `defines(..)` holds `NAME = value` pairs). The span is the parentheses'.
    List(TokenStream, Span),
    /// `key` alone (a flag such as `instrument`).
    Flag,
    /// A value that did not parse (`block = ,`). Its error is reported already; the key still
    /// counts, so the generated stub keeps the signature the user meant.
    Invalid,
}

/// One entry, from its key to where its value ends. A value that does not parse becomes
/// [`RawValue::Invalid`] with its error in `errors`, and the tokens up to the next `,` are
/// skipped; only a missing key fails the entry.
fn parse_entry(input: ParseStream, errors: &mut Errors) -> syn::Result<RawArg> {
    let key: Ident = input.call(syn::ext::IdentExt::parse_any).map_err(|e| {
        syn::Error::new(
            e.span(),
            "expected a key such as `file = \"kernels/saxpy.cu\"` or `block = (256, 1, 1)`",
        )
    })?;
    let value = if input.peek(Token![=]) {
        input.parse::<Token![=]>()?;
        match input.parse::<Expr>() {
            Ok(e) => RawValue::Eq(e),
            Err(e) => {
                errors.push(syn::Error::new(
                    e.span(),
                    format!("`{key} =` needs a value here ({e})"),
                ));
                skip_to_comma(input);
                RawValue::Invalid
            }
        }
    } else if input.peek(syn::token::Paren) {
        let content;
        let paren = syn::parenthesized!(content in input);
        RawValue::List(content.parse()?, paren.span.join())
    } else {
        RawValue::Flag
    };
    Ok(RawArg { key, value })
}

/// Skips tokens up to (not past) the next top-level `,`.
fn skip_to_comma(input: ParseStream) {
    while !input.is_empty() && !input.peek(Token![,]) {
        if input.parse::<proc_macro2::TokenTree>().is_err() {
            break;
        }
    }
}

/// All entries of the attribute, in order.
pub struct RawArgs(pub Vec<RawArg>);

/// Reads the attribute's entries one at a time, the way serde_derive and tokio-macros keep
/// going: a malformed entry is one error at that entry and the others still count; a missing
/// `,` between two entries is one error there, and the next entry is read as if it were
/// present. Never fails: every problem goes to `errors`.
pub fn parse_args(tokens: TokenStream, errors: &mut Errors) -> RawArgs {
    let parser = |input: ParseStream| -> syn::Result<Vec<RawArg>> {
        let mut out = Vec::new();
        while !input.is_empty() {
            match parse_entry(input, errors) {
                Ok(arg) => out.push(arg),
                Err(e) => {
                    errors.push(e);
                    skip_to_comma(input);
                }
            }
            if input.is_empty() {
                break;
            }
            if input.peek(Token![,]) {
                input.parse::<Token![,]>()?;
            } else {
                errors.push(syn::Error::new(
                    input.span(),
                    "expected `,` between two entries of `#[checked_kernel(...)]`",
                ));
            }
        }
        Ok(out)
    };
    match syn::parse::Parser::parse2(parser, tokens) {
        Ok(args) => RawArgs(args),
        Err(e) => {
            errors.push(e);
            RawArgs(Vec::new())
        }
    }
}

/// The annotated item: a function signature without a body, `pub fn saxpy(..);`.
///
/// `syn::ItemFn` requires a body, so the item is parsed as attributes, visibility, signature
/// and `;` (the shape of a `syn::ForeignItemFn`). A body is accepted by the parser only so that
/// the model can report it as a mistake with a helpful message instead of a parse error.
pub struct KernelItem {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub sig: Signature,
    /// The braces of a body the user wrote by mistake.
    pub body: Option<Span>,
}

impl Parse for KernelItem {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        let sig: Signature = input.parse()?;
        let body = if input.peek(syn::token::Brace) {
            let content;
            let brace = syn::braced!(content in input);
            let _: TokenStream = content.parse()?;
            Some(brace.span.join())
        } else {
            input.parse::<Token![;]>().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "`#[checked_kernel]` goes on a function signature ending in `;`, such as \
                     `pub fn saxpy(y: &mut CudaSlice<f32>, x: &CudaSlice<f32>, a: f32, n: i32);`",
                )
            })?;
            None
        };
        Ok(KernelItem {
            attrs,
            vis,
            sig,
            body,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_entry_shape() {
        let mut errors = Errors::default();
        let args = parse_args(
            r#"file = "k.cu", block = (256, 1, 1), requires(n > 0, x.len() > 1), instrument"#
                .parse()
                .unwrap(),
            &mut errors,
        );
        assert!(errors.into_error().is_none());
        let keys: Vec<String> = args.0.iter().map(|a| a.key.to_string()).collect();
        assert_eq!(keys, ["file", "block", "requires", "instrument"]);
        assert!(matches!(args.0[2].value, RawValue::List(..)));
        assert!(matches!(args.0[3].value, RawValue::Flag));
    }

    #[test]
    fn parses_a_bodiless_signature() {
        let item: KernelItem =
            syn::parse_str("/// doc\npub fn saxpy(y: &mut CudaSlice<f32>, a: f32);").unwrap();
        assert_eq!(item.sig.ident, "saxpy");
        assert_eq!(item.sig.inputs.len(), 2);
        assert_eq!(item.attrs.len(), 1);
        assert!(item.body.is_none());
    }

    #[test]
    fn keeps_a_body_for_the_model_to_reject() {
        let item: KernelItem = syn::parse_str("fn k(a: f32) { }").unwrap();
        assert!(item.body.is_some());
    }

    #[test]
    fn a_missing_semicolon_says_what_the_item_should_look_like() {
        let err = syn::parse_str::<KernelItem>("fn k(a: f32)").err().unwrap();
        assert!(err.to_string().contains("ending in `;`"), "{err}");
    }
}
