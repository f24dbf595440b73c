//! Names as a person reads them: kernels and arrays demangled, the function a call names.

use crate::ir::read::Instr;

/// The function a `call` names: its first operand that is not a parenthesized list.
pub fn callee(i: &Instr) -> Option<&str> {
    i.operands
        .iter()
        .map(|o| o.trim())
        .find(|o| !o.starts_with('(') && !o.is_empty())
}

/// A readable kernel name: `scale<double>` for `_Z5scaleIdEvPT_S0_i`, the symbol itself for
/// `extern "C"` kernels.
pub fn demangle(symbol: &str) -> String {
    if !symbol.starts_with("_Z") {
        return symbol.to_string();
    }
    match cpp_demangle::Symbol::new(symbol.as_bytes()).map(|s| s.demangle()) {
        Ok(Ok(full)) => {
            // Drop the parameter list: `void scale<double>(double*, double, int)` -> `scale<double>`.
            let no_ret = full.strip_prefix("void ").unwrap_or(&full);
            match no_ret.rfind('(') {
                Some(i) if no_ret.ends_with(')') => no_ret[..i].to_string(),
                _ => no_ret.to_string(),
            }
        }
        _ => symbol.to_string(),
    }
}

/// A shared array's name as written: `tile` for `_ZZ7dynsmemE4tile`; `local array` for the
/// thread's local frame (`__local_depot3`), whose arrays PTX does not name.
pub fn demangle_var(name: &str) -> String {
    if name.starts_with("__local_depot") {
        return "local array".to_string();
    }
    if let Some(rest) = name.strip_prefix("_ZZ") {
        // _ZZ <encoding> E <len><name>
        if let Some(e) = rest.rfind('E') {
            let tail = &rest[e + 1..];
            let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
            if digits > 0 {
                return tail[digits..].to_string();
            }
        }
    }
    demangle(name)
}
