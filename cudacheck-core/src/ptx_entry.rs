//! The kernels of a PTX module as a launch sees them: each `.entry`'s symbol, its name as C++
//! writes it, and its parameter list (sizes, alignment, and whether the kernel uses a
//! parameter as a global pointer).
//!
//! This is what is known about a kernel shipped as PTX (candle's build-time kernels, a
//! `#[checked_kernel(ptx_file = ...)]`): the macro checks a Rust signature against it, the
//! runtime resolves the name a user gives to a symbol, and the CLI lists it. Read with the
//! instrumenter's tolerant PTX reader ([`crate::instrument::ptx`]).
//!
//! Whether a `.u64` parameter is a pointer is not in PTX's type: it is read from how the
//! kernel uses it. A parameter whose declaration says `.ptr`, or whose loaded value reaches
//! `cvta.to.global` or a global load, store or atomic's address (through moves and additions),
//! is a pointer; a parameter used only in arithmetic is a value; one never used is unknown.

use std::collections::HashMap;

use crate::ir::read::{self as ptx, Function, PtxError, StmtKind};
use crate::ir::{Address, Arith, ArithOp, MemOp, Op};

/// How a kernel uses a parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum ParamUse {
    /// As the address of global memory: a buffer.
    Pointer,
    /// Only as a value.
    Value,
    /// Not at all (or only in ways this reader does not follow).
    Unknown,
}

/// A parameter of a PTX kernel.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PtxParam {
    /// The name a person would use: the PTX name unless it is the compiler's
    /// `<symbol>_param_<n>`, which says nothing the index does not.
    pub name: Option<String>,
    /// Bytes in the parameter buffer.
    pub size: u32,
    /// Alignment in the parameter buffer.
    pub align: u32,
    pub used_as: ParamUse,
}

/// A kernel (`.entry`) of a PTX module.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PtxEntry {
    /// The symbol (mangled for C++ kernels).
    pub symbol: String,
    /// The name as C++ writes it (`scale<float>`); the symbol for `extern "C"` kernels.
    pub name: String,
    pub params: Vec<PtxParam>,
    /// Where it lies in the text it was read from: from `.entry` through its closing brace
    /// (what [`ptx_subset_of`] leaves out of a subset for another kernel).
    #[serde(skip)]
    pub span: std::ops::Range<usize>,
}

impl PtxEntry {
    /// The name of parameter `i` for messages: its PTX name, or `argument i`.
    pub fn param_label(&self, i: usize) -> String {
        self.params
            .get(i)
            .and_then(|p| p.name.clone())
            .unwrap_or_else(|| format!("argument {i}"))
    }
}

/// Every kernel of a PTX module, in order.
///
/// # Errors
/// [`PtxError`] when the text is not a PTX module the reader can follow.
pub fn ptx_entries(text: &str) -> Result<Vec<PtxEntry>, PtxError> {
    let module = ptx::parse(text)?;
    Ok(module
        .functions
        .iter()
        .filter(|f| f.entry)
        .map(|f| PtxEntry {
            symbol: f.name.clone(),
            name: crate::site::demangle(&f.name),
            params: params_of(f),
            span: f.start..f.body_close + 1,
        })
        .collect())
}

/// The entry a user's `name` means: the symbol itself, or the one entry whose C++ name is
/// `name` (spaces ignored, so `scale<float>` and `scale< float >` agree).
pub fn find_entry<'a>(entries: &'a [PtxEntry], name: &str) -> Option<&'a PtxEntry> {
    if let Some(e) = entries.iter().find(|e| e.symbol == name) {
        return Some(e);
    }
    let squash = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let want = squash(name);
    let mut by_name = entries.iter().filter(|e| squash(&e.name) == want);
    match (by_name.next(), by_name.next()) {
        (Some(e), None) => Some(e),
        _ => None,
    }
}

/// The module `text` with every kernel but `symbol` left out: what a launch of `symbol` needs
/// (device functions, globals and the header stay), so that ptxas assembles one kernel, not a
/// whole library's. `None` when the module has no kernel `symbol`.
///
/// # Errors
/// [`PtxError`] when the text is not a PTX module the reader can follow.
pub fn ptx_subset(text: &str, symbol: &str) -> Result<Option<String>, PtxError> {
    Ok(ptx_subset_of(text, &ptx_entries(text)?, symbol))
}

/// [`ptx_subset`] from the module's entries as [`ptx_entries`] read them from `text` (read
/// once, any kernel's subset is then cut without reading the module again: a library's module
/// holds hundreds of kernels).
pub fn ptx_subset_of(text: &str, entries: &[PtxEntry], symbol: &str) -> Option<String> {
    if !entries.iter().any(|e| e.symbol == symbol) {
        return None;
    }
    let mut edits = crate::ir::edit::Edits::new();
    for e in entries.iter().filter(|e| e.symbol != symbol) {
        // Lines are kept (as blank ones) so that an error of ptxas names the module's line.
        let span = e.span.clone();
        edits.replace(span.clone(), "\n".repeat(text[span].matches('\n').count()));
    }
    Some(edits.apply(text))
}

/// Size and alignment from a declaration such as `.param .align 8 .b8 p[16]`,
/// `.param .u64 .ptr .global .align 4 k_param_0` or `.param .f32 a`.
fn size_align(decl: &str) -> (u32, u32) {
    let words: Vec<&str> = decl.split_whitespace().collect();
    let mut align = None;
    let mut elem = None;
    for (i, w) in words.iter().enumerate() {
        if *w == ".align" && words.get(i + 1).is_some_and(|n| !n.starts_with('.')) {
            // `.align N` before the type: the parameter's alignment. After `.ptr` it is the
            // pointee's, which says nothing of the slot.
            if !words[..i].contains(&".ptr") {
                align = words[i + 1].parse::<u32>().ok();
            }
        } else if let Some(t) = w.strip_prefix('.') {
            if elem.is_none() {
                elem = ptx::type_bytes(t).map(|b| b as u32);
            }
        }
    }
    let elem = elem.unwrap_or(0);
    let count = decl
        .rsplit_once('[')
        .and_then(|(_, n)| n.trim_end_matches(']').trim().parse::<u32>().ok())
        .unwrap_or(1);
    (elem * count, align.unwrap_or(elem.max(1)))
}

fn params_of(f: &Function) -> Vec<PtxParam> {
    let uses = param_uses(f);
    f.params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let (size, align) = size_align(&p.decl);
            let compiler_name = p.name.ends_with(&format!("_param_{i}"));
            let used_as = if p.decl.split_whitespace().any(|w| w == ".ptr") {
                ParamUse::Pointer
            } else {
                uses.get(p.name.as_str())
                    .copied()
                    .unwrap_or(ParamUse::Unknown)
            };
            PtxParam {
                name: (!compiler_name).then(|| p.name.clone()),
                size,
                align,
                used_as,
            }
        })
        .collect()
}

/// Follows each parameter's loaded value through moves, conversions and additions to a use
/// that says pointer or value.
fn param_uses<'a>(f: &'a Function) -> HashMap<&'a str, ParamUse> {
    // Register -> the parameter its value comes from.
    let mut from: HashMap<&'a str, &'a str> = HashMap::new();
    let mut uses: HashMap<&'a str, ParamUse> = HashMap::new();
    let mark = |uses: &mut HashMap<&'a str, ParamUse>, p: &'a str, u: ParamUse| {
        let e = uses.entry(p).or_insert(u);
        if u == ParamUse::Pointer {
            *e = ParamUse::Pointer;
        }
    };
    for s in &f.stmts {
        let StmtKind::Instr(i) = &s.kind else {
            continue;
        };
        let ops = &i.operands;
        let param_of = |from: &HashMap<&'a str, &'a str>, o: &str| -> Option<&'a str> {
            let o = o.trim();
            match Address::parse(o) {
                Some(a) => from.get(a.base).copied(),
                None => from.get(o).copied(),
            }
        };
        let access = match i.op {
            Op::Mem(m) if matches!(m.op, MemOp::Ld | MemOp::St | MemOp::Atom | MemOp::Red) => {
                Some(matches!(m.op, MemOp::St | MemOp::Red))
            }
            Op::Prefetch { uniform: false, .. } => Some(false),
            _ => None,
        };
        let copies = matches!(
            i.op,
            Op::Cvta { .. }
                | Op::Mov(_)
                | Op::Convert(_)
                | Op::Arith(Arith {
                    op: ArithOp::Add | ArithOp::Sub,
                    carry_in: false,
                    ..
                })
        );
        match i.op {
            Op::Mem(m) if m.op == MemOp::Ld && m.space == ptx::Space::Param => {
                if let (Some(dst), Some(src)) = (ops.first(), ops.get(1)) {
                    if let Some(a) = Address::parse(src) {
                        if let Some(p) = f.params.iter().find(|p| p.name == a.base) {
                            from.insert(dst.as_str(), p.name.as_str());
                        }
                    }
                }
            }
            _ if copies => {
                let src = ops.iter().skip(1).find_map(|o| param_of(&from, o));
                if let (Some(dst), Some(p)) = (ops.first(), src) {
                    let to_global = matches!(
                        i.op,
                        Op::Cvta {
                            space: ptx::Space::Global,
                            ..
                        }
                    );
                    if to_global {
                        mark(&mut uses, p, ParamUse::Pointer);
                    }
                    from.insert(dst.as_str(), p);
                }
            }
            _ if access.is_some() => {
                // The address operand: a global (or generic) access through a parameter.
                let store = access == Some(true);
                let addr = if store { ops.first() } else { ops.get(1) };
                if let Some(p) = addr.and_then(|a| param_of(&from, a)) {
                    mark(&mut uses, p, ParamUse::Pointer);
                }
                for o in ops.iter().skip(usize::from(store)) {
                    if let Some(p) = from.get(o.trim()).copied() {
                        mark(&mut uses, p, ParamUse::Value);
                    }
                }
            }
            _ => {
                for o in ops.iter().skip(1) {
                    if let Some(p) = from.get(o.trim()).copied() {
                        mark(&mut uses, p, ParamUse::Value);
                    }
                }
            }
        }
    }
    uses
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = r#"
.version 8.0
.target sm_80
.address_size 64

.visible .entry affine_f32(
	.param .u64 affine_f32_param_0,
	.param .u64 affine_f32_param_1,
	.param .u64 affine_f32_param_2,
	.param .f32 affine_f32_param_3
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<5>;
	.reg .f32 	%f<4>;
	.reg .b64 	%rd<9>;

	ld.param.u64 	%rd1, [affine_f32_param_0];
	ld.param.u64 	%rd2, [affine_f32_param_1];
	ld.param.u64 	%rd3, [affine_f32_param_2];
	ld.param.f32 	%f1, [affine_f32_param_3];
	mov.u32 	%r1, %tid.x;
	cvt.u64.u32 	%rd4, %r1;
	setp.ge.u64 	%p1, %rd4, %rd1;
	@%p1 bra 	$L__BB0_2;
	cvta.to.global.u64 	%rd5, %rd2;
	cvta.to.global.u64 	%rd6, %rd3;
	shl.b64 	%rd7, %rd4, 2;
	add.s64 	%rd8, %rd5, %rd7;
	ld.global.f32 	%f2, [%rd8];
	mul.f32 	%f3, %f2, %f1;
	add.s64 	%rd8, %rd6, %rd7;
	st.global.f32 	[%rd8], %f3;
$L__BB0_2:
	ret;
}

.visible .entry _Z5scaleIfEvPT_S0_i(
	.param .u64 .ptr .global .align 4 _Z5scaleIfEvPT_S0_i_param_0,
	.param .align 8 .b8 _Z5scaleIfEvPT_S0_i_param_1[16],
	.param .u32 n
)
{
	ret;
}
"#;

    #[test]
    fn sizes_pointers_and_values_come_from_the_ptx() {
        let e = ptx_entries(PTX).unwrap();
        assert_eq!(e.len(), 2);
        let a = &e[0];
        assert_eq!(a.symbol, "affine_f32");
        let sizes: Vec<u32> = a.params.iter().map(|p| p.size).collect();
        assert_eq!(sizes, [8, 8, 8, 4]);
        let uses: Vec<ParamUse> = a.params.iter().map(|p| p.used_as).collect();
        assert_eq!(
            uses,
            [
                ParamUse::Value,
                ParamUse::Pointer,
                ParamUse::Pointer,
                ParamUse::Value
            ]
        );
        assert_eq!(a.param_label(1), "argument 1");
    }

    #[test]
    fn declarations_give_alignment_names_and_ptr_attributes() {
        let e = ptx_entries(PTX).unwrap();
        let s = &e[1];
        assert_eq!(s.name, "scale<float>");
        assert_eq!(s.params[0].used_as, ParamUse::Pointer);
        assert_eq!((s.params[0].size, s.params[0].align), (8, 8));
        assert_eq!((s.params[1].size, s.params[1].align), (16, 8));
        assert_eq!(s.params[2].name.as_deref(), Some("n"));
        assert_eq!(s.param_label(2), "n");
    }

    #[test]
    fn a_subset_keeps_one_kernel_and_everything_else() {
        let sub = ptx_subset(PTX, "affine_f32").unwrap().unwrap();
        let e = ptx_entries(&sub).unwrap();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].symbol, "affine_f32");
        assert!(sub.contains(".target sm_80"));
        assert_eq!(sub.lines().count(), PTX.lines().count(), "lines are kept");
        let other = ptx_subset(PTX, "_Z5scaleIfEvPT_S0_i").unwrap().unwrap();
        assert_eq!(ptx_entries(&other).unwrap()[0].name, "scale<float>");
        assert!(ptx_subset(PTX, "nope").unwrap().is_none());
    }

    #[test]
    fn an_entry_is_found_by_symbol_or_by_its_cpp_name() {
        let e = ptx_entries(PTX).unwrap();
        assert_eq!(
            find_entry(&e, "affine_f32").map(|e| e.params.len()),
            Some(4)
        );
        assert_eq!(
            find_entry(&e, "scale< float >").map(|e| e.symbol.as_str()),
            Some("_Z5scaleIfEvPT_S0_i")
        );
        assert!(find_entry(&e, "scale<double>").is_none());
    }
}
