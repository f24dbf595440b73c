//! Stage 1: the attribute's tokens and the annotated item, parsed into syntax with spans and
//! nothing else. What the keys mean is decided in [`crate::model`].

use proc_macro2::{Span, TokenStream};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Attribute, Expr, Ident, Signature, Token, Visibility};

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
}

impl Parse for RawArg {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let key: Ident = input.call(syn::ext::IdentExt::parse_any).map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected a key such as `file = \"kernels/saxpy.cu\"` or `block = (256, 1, 1)`",
            )
        })?;
        let value = if input.peek(Token![=]) {
            input.parse::<Token![=]>()?;
            RawValue::Eq(input.parse()?)
        } else if input.peek(syn::token::Paren) {
            let content;
            let paren = syn::parenthesized!(content in input);
            RawValue::List(content.parse()?, paren.span.join())
        } else {
            RawValue::Flag
        };
        Ok(RawArg { key, value })
    }
}

/// All entries of the attribute, in order.
pub struct RawArgs(pub Vec<RawArg>);

impl Parse for RawArgs {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let list = Punctuated::<RawArg, Token![,]>::parse_terminated(input)?;
        Ok(RawArgs(list.into_iter().collect()))
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
        let args: RawArgs = syn::parse_str(
            r#"file = "k.cu", block = (256, 1, 1), requires(n > 0, x.len() > 1), instrument"#,
        )
        .unwrap();
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
