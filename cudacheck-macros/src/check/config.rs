//! Literal launch configurations (`block`, `grid`, `shared`, `max_registers`) against the
//! hardware limits, at compile time.
//!
//! With `arch = "sm_XY"` the configuration goes through the same validator the runtime uses
//! ([`cudacheck_core::validate::validate`]), so the compile error and the launch error read the
//! same. Without an arch, it is checked against [`PORTABLE`], the limits every supported GPU
//! shares: what fails there fails on every GPU.

use cudacheck_core::limits::{ArchLimits, PORTABLE};
use cudacheck_core::source::{parse_int_literal, KernelDecl, SourceModel};
use cudacheck_core::validate::{validate, LaunchConfig, LaunchPart, ValidateOptions, Violation};
use cudacheck_core::{Axis, Dim3, KernelResources};
use proc_macro2::TokenStream;
use quote::ToTokens;

use crate::model::{DimLit, Errors, Model, Spanned};

/// Checks every literal of the launch configuration.
pub fn check_config(m: &Model, kernel: Option<(&KernelDecl, &SourceModel)>, errors: &mut Errors) {
    let block = m.block.as_ref().and_then(|d| dim3("block", d, errors));
    let grid = m.grid.as_ref().and_then(|d| dim3("grid", d, errors));
    let shared = m
        .shared
        .as_ref()
        .and_then(|s| fits_u32(s, "shared memory bytes", errors));
    check_max_registers(m, errors);
    let resources = resources(kernel);
    match &m.arch {
        Some(arch) => {
            let limits = ArchLimits::for_arch(arch.value);
            let cfg = LaunchConfig {
                grid: grid.unwrap_or(Dim3::new(1, 1, 1)),
                block: block.unwrap_or(Dim3::new(1, 1, 1)),
                dynamic_shared_bytes: shared.unwrap_or(0),
                cluster: None,
            };
            if let Err(violations) =
                validate(&resources, &cfg, &limits, &ValidateOptions::default())
            {
                for v in violations {
                    errors.push(syn::Error::new_spanned(tokens_for(m, &v), v));
                }
            }
        }
        None => {
            if let Some(b) = block {
                check_zero(m, LaunchPart::Block, b, errors);
                check_block_axes(m, b, errors);
                check_threads_per_block(m, b, errors);
                check_launch_bounds(m, &resources, b, errors);
            }
            if let Some(g) = grid {
                check_zero(m, LaunchPart::Grid, g, errors);
                check_grid_axes(m, g, errors);
            }
            check_static_shared(m, &resources, errors);
            check_shared_anywhere(m, &resources, shared.unwrap_or(0), errors);
        }
    }
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

/// Where a violation's error goes: the component or value it is about.
fn tokens_for(m: &Model, v: &Violation) -> TokenStream {
    let block = m.block.as_ref();
    let grid = m.grid.as_ref();
    let whole = |d: Option<&DimLit>| d.map(|d| d.tokens.clone());
    let axis_of = |d: Option<&DimLit>, axis: Axis| d.map(|_| axis_tokens(d, axis));
    let found = match v {
        Violation::ZeroExtent { part, axis, .. } => match part {
            LaunchPart::Block => axis_of(block, *axis),
            LaunchPart::Grid => axis_of(grid, *axis),
            _ => None,
        },
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
        .or_else(|| m.arch.as_ref().map(|a| a.tokens.clone()))
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
    let (allowed, target) = match &m.arch {
        Some(a) => (
            ArchLimits::for_arch(a.value).max_registers_per_thread,
            a.value.to_string(),
        ),
        None => (PORTABLE.max_registers_per_thread, "every GPU".to_string()),
    };
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
    }
}

// A zero extent launches nothing and CUDA reports it as CUDA_ERROR_INVALID_VALUE; the message is
// the runtime validator's own.
fn check_zero(m: &Model, part: LaunchPart, d: Dim3, errors: &mut Errors) {
    if let Some(axis) = Axis::ALL.into_iter().find(|a| a.of(d) == 0) {
        let v = Violation::ZeroExtent {
            part,
            dims: d,
            axis,
        };
        errors.push(syn::Error::new_spanned(tokens_for(m, &v), v));
    }
}

// Block extents per axis are capped by the hardware on every GPU (x and y 1024, z 64).
fn check_block_axes(m: &Model, b: Dim3, errors: &mut Errors) {
    for axis in Axis::ALL {
        let (requested, allowed) = (axis.of(b), axis.of(PORTABLE.max_block_dim));
        if requested > allowed {
            errors.spanned(
                axis_tokens(m.block.as_ref(), axis),
                format!(
                    "block {b} is {requested} along {axis}; every GPU allows at most {allowed} \
                     (CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_{}). Spread the threads over the other \
                     axes, or use fewer threads per block and more blocks.",
                    axis.to_string().to_uppercase()
                ),
            );
        }
    }
}

// The thread count per block is capped at 1024 on every GPU cudacheck supports.
fn check_threads_per_block(m: &Model, b: Dim3, errors: &mut Errors) {
    let allowed = PORTABLE.max_threads_per_block;
    if b.volume() > u64::from(allowed) {
        errors.spanned(
            m.block
                .as_ref()
                .map(|d| d.tokens.clone())
                .unwrap_or_default(),
            format!(
                "block {b} has {} threads; every GPU allows at most {allowed} per block \
                 (CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK). Use fewer threads per block and \
                 more blocks.",
                b.volume()
            ),
        );
    }
}

// `__launch_bounds__(N)` makes the compiler budget registers for N threads; the driver refuses
// a larger block. The message is the runtime validator's own.
fn check_launch_bounds(m: &Model, r: &KernelResources, b: Dim3, errors: &mut Errors) {
    if let Some(allowed) = r.max_threads_per_block {
        if b.volume() > u64::from(allowed) {
            let v = Violation::LaunchBoundsExceeded {
                block: b,
                requested: b.volume(),
                allowed,
            };
            errors.push(syn::Error::new_spanned(tokens_for(m, &v), v));
        }
    }
}

// Grid extents: x up to 2^31-1, y and z up to 65535, on every GPU.
fn check_grid_axes(m: &Model, g: Dim3, errors: &mut Errors) {
    for axis in Axis::ALL {
        let (requested, allowed) = (axis.of(g), axis.of(PORTABLE.max_grid_dim));
        if requested > allowed {
            let fix = if axis == Axis::X {
                "Use a grid-stride loop so fewer blocks cover the data."
            } else {
                "Move the extent to grid x (up to 2^31-1), or loop over it inside the kernel."
            };
            errors.spanned(
                axis_tokens(m.grid.as_ref(), axis),
                format!(
                    "grid {g} is {requested} along {axis}; every GPU allows at most {allowed} \
                     (CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_{}). {fix}",
                    axis.to_string().to_uppercase()
                ),
            );
        }
    }
}

// Static `__shared__` arrays can never exceed 48 KiB per block, on any GPU, opted in or not;
// ptxas would refuse the kernel at the first launch.
fn check_static_shared(m: &Model, r: &KernelResources, errors: &mut Errors) {
    let allowed = PORTABLE.max_static_shared_per_block;
    if r.static_shared_bytes > allowed {
        let v = Violation::StaticSharedTooLarge {
            static_bytes: r.static_shared_bytes,
            allowed,
        };
        errors.push(syn::Error::new_spanned(m.name_tokens(), v));
    }
}

// Shared memory beyond the largest opt-in maximum of any supported GPU cannot run anywhere.
// (Anything below it may run on some GPUs: the runtime checks against the real device.)
fn check_shared_anywhere(m: &Model, r: &KernelResources, dynamic: u32, errors: &mut Errors) {
    // The oldest architecture with the largest maximum names it (`max_by_key` keeps the last).
    let Some(best) = ArchLimits::all().reduce(|best, l| {
        if l.shared_per_block_opt_in > best.shared_per_block_opt_in {
            l
        } else {
            best
        }
    }) else {
        return;
    };
    let requested = u64::from(r.static_shared_bytes) + u64::from(dynamic);
    if requested > u64::from(best.shared_per_block_opt_in) {
        let tokens = m
            .shared
            .as_ref()
            .map(|s| s.tokens.clone())
            .unwrap_or_else(|| m.name_tokens());
        errors.spanned(
            tokens,
            format!(
                "a block uses {requested} bytes of shared memory ({} static + {dynamic} \
                 dynamic); no GPU allows more than {} per block, even after opting in ({}'s \
                 maximum, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN). Use less shared \
                 memory per block, for example smaller tiles.",
                r.static_shared_bytes, best.shared_per_block_opt_in, best.arch
            ),
        );
    }
}
