//! Literal launch configurations (`block`, `grid`, `shared`, `max_registers`) against the
//! hardware limits, at compile time.
//!
//! With `arch = "sm_XY"` the configuration goes through the same validator the runtime uses
//! ([`cudacheck_core::validate::validate`]), against the compiled kernel's resources when the
//! build could compile it (`compiled.rs`), so the compile error and the launch error read the
//! same. Without an arch, it goes through [`validate_portable`], the limits every supported GPU
//! shares: what fails there fails on every GPU, in the same words.

use cudacheck_core::limits::{ArchLimits, PORTABLE};
use cudacheck_core::source::{parse_int_literal, KernelDecl, SourceModel};
use cudacheck_core::validate::{
    validate, validate_portable, LaunchConfig, LaunchPart, ValidateOptions, Violation,
};
use cudacheck_core::{Arch, Axis, Dim3, KernelResources};
use proc_macro2::TokenStream;
use quote::ToTokens;

use super::compiled::Compiled;
use crate::model::{DimLit, Errors, Model, Spanned};

/// Checks every literal of the launch configuration: for each named architecture, against the
/// kernel compiled for it when the build could (`compiled[i]` for `m.archs[i]`), else against
/// what the source tells; with no architecture, against the limits every GPU shares. A message
/// that several architectures give alike is reported once.
pub fn check_config(
    m: &Model,
    kernel: Option<(&KernelDecl, &SourceModel)>,
    compiled: &[Option<Compiled>],
    errors: &mut Errors,
) {
    let block = m.block.as_ref().and_then(|d| dim3("block", d, errors));
    let grid = m.grid.as_ref().and_then(|d| dim3("grid", d, errors));
    let cluster = m.cluster.as_ref().and_then(|d| dim3("cluster", d, errors));
    let shared = m
        .shared
        .as_ref()
        .and_then(|s| fits_u32(s, "shared memory bytes", errors));
    check_max_registers(m, errors);
    let mut reported = std::collections::HashSet::new();
    let mut report = |tokens: TokenStream, message: String| {
        if reported.insert(message.clone()) {
            errors.push(syn::Error::new_spanned(tokens, message));
        }
    };
    if m.archs.is_empty() {
        let resources = resources(kernel);
        for v in validate_portable(&resources, block, grid, shared.unwrap_or(0), cluster) {
            report(tokens_for(m, None, &v), v.to_string());
        }
        return;
    }
    for (i, arch) in m.archs.iter().enumerate() {
        let compiled = compiled.get(i).and_then(Option::as_ref);
        let resources = match compiled {
            Some(c) => c.resources.clone(),
            None => resources(kernel),
        };
        let limits = ArchLimits::for_arch(arch.value);
        let cfg = LaunchConfig {
            grid: grid.unwrap_or(Dim3::new(1, 1, 1)),
            block: block.unwrap_or(Dim3::new(1, 1, 1)),
            dynamic_shared_bytes: shared.unwrap_or(0),
            cluster,
        };
        let violations = validate(&resources, &cfg, &limits, &ValidateOptions::default()).err();
        // A dimension given at the call site stands in as 1 above: what only it decides is
        // the launch's to check.
        let decided = |v: &Violation| match v {
            Violation::GridNotClusterMultiple { .. } => grid.is_some(),
            Violation::RequiredBlockMismatch { .. } | Violation::NoBlockFits { .. } => {
                block.is_some()
            }
            _ => true,
        };
        for v in violations.unwrap_or_default().into_iter().filter(decided) {
            let mut message = v.to_string();
            if let Some(c) = compiled.filter(|_| from_compiled_kernel(&v)) {
                message.push_str(&format!(
                    "\n  note: {}: {} registers per thread, {} bytes of static shared memory{}",
                    c.origin,
                    c.resources.registers,
                    c.resources.static_shared_bytes,
                    c.resources
                        .max_threads_per_block
                        .map(|n| format!(", __launch_bounds__({n})"))
                        .unwrap_or_default()
                ));
            }
            report(tokens_for(m, Some(arch), &v), message);
        }
    }
}

/// Whether a violation's numbers come from the compiled kernel (its note says where from).
fn from_compiled_kernel(v: &Violation) -> bool {
    matches!(
        v,
        Violation::TooManyRegistersPerBlock { .. }
            | Violation::StaticSharedTooLarge { .. }
            | Violation::SharedMemoryNeedsOptIn { .. }
            | Violation::SharedMemoryTooLarge { .. }
            | Violation::LaunchBoundsExceeded { .. }
            | Violation::RequiredBlockMismatch { .. }
            | Violation::NoBlockFits { .. }
    )
}

/// What the source tells about the kernel's resources before it is compiled: its
/// `__launch_bounds__` and a lower bound on its static shared memory (arrays whose extents are
/// literals; extents given by macros are not counted).
fn resources(kernel: Option<(&KernelDecl, &SourceModel)>) -> KernelResources {
    let mut r = KernelResources::default();
    let Some((k, model)) = kernel else { return r };
    r.symbol = k.name.clone();
    if let Some(lb) = &k.launch_bounds {
        r.max_threads_per_block = lb.max_threads_value;
        r.min_blocks_per_sm = lb.min_blocks_value;
    }
    let mut total: u64 = 0;
    for a in k.shared_arrays.iter().filter(|a| !a.is_extern) {
        let elem = match &a.elem {
            cudacheck_core::source::CudaType::Named(n) => model
                .struct_named(n)
                .and_then(|s| s.size_align(model))
                .or_else(|| a.elem.size_align()),
            other => other.size_align(),
        };
        let extents: Option<Vec<u64>> = a
            .dims
            .iter()
            .map(|d| d.as_deref().and_then(parse_int_literal))
            .collect();
        if let (Some((size, _)), Some(extents)) = (elem, extents) {
            let bytes = extents
                .iter()
                .try_fold(u64::from(size), |acc, e| acc.checked_mul(*e));
            total = total.saturating_add(bytes.unwrap_or(u64::MAX));
        }
    }
    r.static_shared_bytes = u32::try_from(total).unwrap_or(u32::MAX);
    r
}

/// Where a violation's error goes: the component or value it is about, else the architecture
/// it is about.
fn tokens_for(m: &Model, arch: Option<&Spanned<Arch>>, v: &Violation) -> TokenStream {
    let block = m.block.as_ref();
    let grid = m.grid.as_ref();
    let cluster = m.cluster.as_ref();
    let whole = |d: Option<&DimLit>| d.map(|d| d.tokens.clone());
    let axis_of = |d: Option<&DimLit>, axis: Axis| d.map(|_| axis_tokens(d, axis));
    let found = match v {
        Violation::ZeroExtent { part, axis, .. } => match part {
            LaunchPart::Block => axis_of(block, *axis),
            LaunchPart::Grid => axis_of(grid, *axis),
            LaunchPart::Cluster => axis_of(cluster, *axis),
        },
        Violation::ClustersUnsupported { .. }
        | Violation::ClusterTooLarge { .. }
        | Violation::ClusterMismatch { .. } => whole(cluster),
        Violation::GridNotClusterMultiple { axis, .. } => axis_of(grid, *axis),
        Violation::BlockDimTooLarge { axis, .. } => axis_of(block, *axis),
        Violation::GridDimTooLarge { axis, .. } => axis_of(grid, *axis),
        Violation::TooManyThreadsPerBlock { .. }
        | Violation::TooManyRegistersPerBlock { .. }
        | Violation::LaunchBoundsExceeded { .. }
        | Violation::RequiredBlockMismatch { .. } => whole(block),
        Violation::SharedMemoryNeedsOptIn { .. } | Violation::SharedMemoryTooLarge { .. } => {
            m.shared.as_ref().map(|s| s.tokens.clone())
        }
        _ => None,
    };
    found
        .or_else(|| arch.map(|a| a.tokens.clone()))
        .unwrap_or_else(|| m.name_tokens())
}

/// The tokens of one component of a `block`/`grid` literal, or of the whole literal when the
/// component was filled in as 1.
fn axis_tokens(d: Option<&DimLit>, axis: Axis) -> TokenStream {
    let Some(d) = d else {
        return TokenStream::new();
    };
    d.exprs[axis_index(axis)]
        .as_ref()
        .map(ToTokens::to_token_stream)
        .unwrap_or_else(|| d.tokens.clone())
}

fn axis_index(axis: Axis) -> usize {
    match axis {
        Axis::X => 0,
        Axis::Y => 1,
        Axis::Z => 2,
    }
}

// CUDA dimensions are `unsigned int`: a literal past u32::MAX would wrap silently if the
// wrapper cast it, so it is an error at the component that overflows.
fn dim3(what: &str, d: &DimLit, errors: &mut Errors) -> Option<Dim3> {
    let mut out = [0u32; 3];
    let mut ok = true;
    for (i, axis) in Axis::ALL.into_iter().enumerate() {
        match u32::try_from(d.values[i]) {
            Ok(v) => out[i] = v,
            Err(_) => {
                ok = false;
                let msg = format!(
                    "{what} {axis} = {} does not fit in 32 bits: CUDA {what} dimensions are \
                     `unsigned int` (at most {})",
                    d.values[i],
                    u32::MAX
                );
                match &d.exprs[i] {
                    Some(e) => errors.spanned(e, msg),
                    None => errors.spanned(&d.tokens, msg),
                }
            }
        }
    }
    ok.then(|| Dim3::from(out))
}

fn fits_u32(s: &Spanned<u64>, what: &str, errors: &mut Errors) -> Option<u32> {
    match u32::try_from(s.value) {
        Ok(v) => Some(v),
        Err(_) => {
            errors.spanned(
                &s.tokens,
                format!(
                    "{} {what} does not fit in 32 bits (at most {})",
                    s.value,
                    u32::MAX
                ),
            );
            None
        }
    }
}

// `--maxrregcount` must be between 1 and the per-thread register limit; NVRTC rejects other
// values only at runtime, on the first launch.
fn check_max_registers(m: &Model, errors: &mut Errors) {
    let Some(r) = &m.max_registers else { return };
    let targets: Vec<(u32, String)> = if m.archs.is_empty() {
        vec![(PORTABLE.max_registers_per_thread, "every GPU".to_string())]
    } else {
        m.archs
            .iter()
            .map(|a| {
                let l = ArchLimits::for_arch(a.value);
                (l.max_registers_per_thread, a.value.to_string())
            })
            .collect()
    };
    for (allowed, target) in targets {
        if r.value == 0 || r.value > u64::from(allowed) {
            errors.spanned(
                &r.tokens,
                format!(
                    "max_registers = {}; {target} allows between 1 and {allowed} registers per \
                     thread (CU_FUNC_ATTRIBUTE_NUM_REGS). Use a value in that range, or leave \
                     `max_registers` out to let the compiler choose",
                    r.value
                ),
            );
            return;
        }
    }
}
