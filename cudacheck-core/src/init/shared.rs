//! The shared-memory half of init checking: one bit per byte of the block's shared memory,
//! in extra dynamic shared memory the launch adds after its own ([`super::shared_shadow_bytes`]),
//! cleared by the block's threads before the program's code runs (one barrier), set by shared
//! stores and atomics, tested by shared reads. A byte is written when a thread of the block
//! wrote it since the block began.
//!
//! The shadow covers the shared window from the lowest array the kernel names (or the dynamic
//! arrays, when lower) to the end of the launch's dynamic shared memory: bit `A - lo` for the
//! byte at shared address `A`. A kernel that finds less dynamic shared memory than its shadow
//! needs (a launch that did not add it) checks no shared memory.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::ir::read::{Function, Module, Space};

/// The dynamic shared array the shadow is addressed from.
pub(super) const DYN: &str = "__cci_dyn";

/// The shared arrays `f` names, sorted (module-scope ones included).
fn arrays<'a>(m: &'a Module, f: &'a Function) -> Vec<&'a str> {
    let named: BTreeSet<&str> = f
        .instrs()
        .flat_map(|i| i.operands.iter())
        .flat_map(|o| o.split(|c: char| !(c.is_ascii_alphanumeric() || "_$.".contains(c))))
        .collect();
    let mut v: Vec<&str> = f
        .vars
        .iter()
        .chain(&m.vars)
        .filter(|v| v.space == Space::Shared && v.bytes.is_some())
        .map(|v| v.name.as_str())
        .filter(|v| named.contains(v))
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The kernel's first code: the shadow's place (`%__cci_sb`), the window it covers
/// (`%__cci_lo`, `%__cci_lim` bytes), whether the launch gave room for it (`%__cci_soff` when
/// not), the shadow cleared, then a barrier.
pub(super) fn prologue(m: &Module, f: &Function, dynamic_shared_bytes: u32) -> String {
    let mut s = format!("\tmov.u32 %__cci_lo, {DYN};\n");
    for v in arrays(m, f) {
        let _ = write!(
            s,
            "\tmov.u32 %__cci_x, {v};\n\tmin.u32 %__cci_lo, %__cci_lo, %__cci_x;\n"
        );
    }
    let _ = write!(
        s,
        "\tmov.u32 %__cci_sb, {DYN};\n\
         \tadd.u32 %__cci_sb, %__cci_sb, {udyn};\n\
         \tand.b32 %__cci_sb, %__cci_sb, -16;\n\
         \tsub.u32 %__cci_lim, %__cci_sb, %__cci_lo;\n\
         \tadd.u32 %__cci_n, %__cci_lim, 31;\n\
         \tshr.u32 %__cci_n, %__cci_n, 5;\n\
         \tmov.u32 %__cci_i, {DYN};\n\
         \tsub.u32 %__cci_i, %__cci_sb, %__cci_i;\n\
         \tmad.lo.u32 %__cci_i, %__cci_n, 4, %__cci_i;\n\
         \tmov.u32 %__cci_x, %dynamic_smem_size;\n\
         \tsetp.lt.u32 %__cci_soff, %__cci_x, %__cci_i;\n\
         \t@%__cci_soff bra $__cci_cleared;\n\
         \tmov.u32 %__cci_x, %ntid.x;\n\tmov.u32 %__cci_w, %ntid.y;\n\tmov.u32 %__cci_m, %ntid.z;\n\
         \tmul.lo.u32 %__cci_N, %__cci_x, %__cci_w;\n\tmul.lo.u32 %__cci_N, %__cci_N, %__cci_m;\n\
         \tmov.u32 %__cci_i, %tid.z;\n\tmov.u32 %__cci_m, %tid.y;\n\
         \tmad.lo.u32 %__cci_i, %__cci_i, %__cci_w, %__cci_m;\n\
         \tmov.u32 %__cci_m, %tid.x;\n\
         \tmad.lo.u32 %__cci_i, %__cci_i, %__cci_x, %__cci_m;\n\
         $__cci_clear:\n\
         \tsetp.ge.u32 %__cci_p, %__cci_i, %__cci_n;\n\
         \t@%__cci_p bra $__cci_cleared;\n\
         \tmad.lo.u32 %__cci_x, %__cci_i, 4, %__cci_sb;\n\
         \tst.shared.u32 [%__cci_x], 0;\n\
         \tadd.u32 %__cci_i, %__cci_i, %__cci_N;\n\
         \tbra.uni $__cci_clear;\n\
         $__cci_cleared:\n\
         \tbar.sync 0;\n",
        udyn = u64::from(dynamic_shared_bytes) + 15,
    );
    s
}

/// The shadow word of the shared access at `base + offset` in `%__cci_sw`, its bits in
/// `%__cci_m`, the word in `%__cci_w`, the address in `%__cci_sa`; to `$__cci_s<n>` when the
/// address is outside the shadowed window. `wide`: `base` is a 64-bit register.
pub(super) fn lookup(base: &str, offset: i64, wide: bool, bytes: u64, n: u32) -> String {
    let ones = if bytes >= 32 {
        u32::MAX
    } else {
        (1u32 << bytes) - 1
    };
    let addr = if wide {
        format!("cvt.u32.u64 %__cci_sa, {base};\n\tadd.s32 %__cci_sa, %__cci_sa, {offset};\n\t")
    } else if crate::ir::is_reg(base) {
        format!("add.s32 %__cci_sa, {base}, {offset};\n\t")
    } else {
        format!("mov.u32 %__cci_sa, {base};\n\tadd.s32 %__cci_sa, %__cci_sa, {offset};\n\t")
    };
    format!(
        "@%__cci_soff bra $__cci_s{n};\n\t{addr}\
         sub.u32 %__cci_b, %__cci_sa, %__cci_lo;\n\t\
         setp.ge.u32 %__cci_p, %__cci_b, %__cci_lim;\n\t\
         @%__cci_p bra $__cci_s{n};\n\t\
         shr.u32 %__cci_x, %__cci_b, 5;\n\t\
         mad.lo.u32 %__cci_sw, %__cci_x, 4, %__cci_sb;\n\t\
         and.b32 %__cci_b, %__cci_b, 31;\n\t\
         shl.b32 %__cci_m, {ones}, %__cci_b;\n\t\
         ld.volatile.shared.u32 %__cci_w, [%__cci_sw];\n\t"
    )
}
