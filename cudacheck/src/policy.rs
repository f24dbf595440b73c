//! What a launch does besides launching: whether it synchronizes and checks afterwards, whether
//! it runs the bounds-checked build, and whether it is race-checked, each resolved in the one
//! order the crate documents (`lib.rs`, "Switches"): the launch, the kernel, the environment,
//! the build profile.
//!
//! Every switch is a `bool` at both levels (`KernelBuilder::sync(bool)`, `Launch::sync(bool)`,
//! and likewise `instrument` and `races`), held here as an `Option<bool>`: `None`, a switch never
//! set, leaves the choice to the next level of the order.
//!
//! Under stream capture a launch does not run, so there is nothing to wait for, and waiting
//! is illegal: [`after_launch`] turns "synchronize" into "do not" there (see
//! [`capture`](crate::capture) for what checks a captured launch still gets).

use std::sync::OnceLock;

/// The kernel's part of the bounds-checking order: its own setting, else
/// `CUDACHECK_INSTRUMENT`; `None` leaves it to the launch's build profile. Resolved once, when
/// the kernel is built, so that a plain launch pays one test for it.
pub(crate) fn instrument_default(kernel: Option<bool>) -> Option<bool> {
    kernel.or_else(|| env_flag("CUDACHECK_INSTRUMENT", &ENV_INSTRUMENT))
}

/// Whether a kernel's launches are race-checked when a launch does not say: its own setting,
/// else `CUDACHECK_RACES` (`1`/`0`, read once per process), else off. Race checking is a
/// debugging mode (see `cudacheck_core::race`); no build profile turns it on.
pub(crate) fn races_default(kernel: Option<bool>) -> bool {
    kernel
        .or_else(|| env_flag("CUDACHECK_RACES", &ENV_RACES))
        .unwrap_or(false)
}

/// Whether a kernel's launches are init-checked (reads of memory nothing wrote) when a launch
/// does not say: its own setting, else `CUDACHECK_INIT` (`1`/`0`, read once per process), else
/// off. Like race checking, a debugging mode no build profile turns on.
pub(crate) fn init_default(kernel: Option<bool>) -> bool {
    kernel
        .or_else(|| env_flag("CUDACHECK_INIT", &ENV_INIT))
        .unwrap_or(false)
}

static ENV_INIT: OnceLock<Option<bool>> = OnceLock::new();
static ENV_RACES: OnceLock<Option<bool>> = OnceLock::new();
static ENV_SYNC: OnceLock<Option<bool>> = OnceLock::new();
static ENV_INSTRUMENT: OnceLock<Option<bool>> = OnceLock::new();
static ENV_KEEP_LOOP_CHECKS: OnceLock<Option<bool>> = OnceLock::new();

/// `CUDACHECK_KEEP_LOOP_CHECKS=1`: bounds-checked builds keep every check inside loops (no loop
/// versioning, `cudacheck_core::instrument::InstrumentOptions::keep_loop_checks`), to measure
/// what versioning saves. Reports are the same either way.
pub(crate) fn keep_loop_checks() -> bool {
    env_flag("CUDACHECK_KEEP_LOOP_CHECKS", &ENV_KEEP_LOOP_CHECKS).unwrap_or(false)
}

static ENV_CHECKED_JIT: OnceLock<Option<bool>> = OnceLock::new();

/// `CUDACHECK_CHECKED_JIT=0`: bounds-checked builds are loaded from nvJitLink's CUBIN rather
/// than from their PTX through the driver's JIT (the default; `build.rs`, `Loaded::load`
/// says why), to compare the two or to work around a driver's JIT.
pub(crate) fn checked_jit() -> bool {
    env_flag("CUDACHECK_CHECKED_JIT", &ENV_CHECKED_JIT).unwrap_or(true)
}

static ENV_PLAIN_JIT: OnceLock<Option<bool>> = OnceLock::new();

/// `CUDACHECK_PLAIN_JIT=1`: plain builds of kernels compiled from source are loaded from
/// NVRTC's PTX through the driver's JIT, as bounds-checked builds are, instead of from NVRTC's
/// CUBIN (the default). For comparing a kernel with its checked build assembled the same way,
/// and for `cudacheck run` over a program that uses the library: the interposer checks a
/// kernel whose module carries PTX, and a CUBIN carries none.
pub(crate) fn plain_jit() -> bool {
    env_flag("CUDACHECK_PLAIN_JIT", &ENV_PLAIN_JIT).unwrap_or(false)
}

/// A yes/no environment variable, read once per process into `cell`.
fn env_flag(name: &str, cell: &OnceLock<Option<bool>>) -> Option<bool> {
    *cell.get_or_init(|| parse_flag(std::env::var(name).ok().as_deref()))
}

/// A yes/no environment value: `Some(true)` for 1/true/yes/always/on, `Some(false)` for
/// 0/false/no/never/off, `None` otherwise.
pub(crate) fn parse_flag(v: Option<&str>) -> Option<bool> {
    match v?.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "always" | "on" => Some(true),
        "0" | "false" | "no" | "never" | "off" => Some(false),
        _ => None,
    }
}

/// Whether a launch synchronizes: the launch's `sync`, the kernel's, `CUDACHECK_SYNC` (read
/// only when neither said), the build profile.
#[inline]
pub(crate) fn sync_wanted(launch: Option<bool>, kernel: Option<bool>, debug: bool) -> bool {
    match launch.or(kernel) {
        Some(on) => on,
        None => env_flag("CUDACHECK_SYNC", &ENV_SYNC).unwrap_or(debug),
    }
}

/// Whether a launch is bounds-checked: the launch's `instrument`, then `kernel`, which is
/// [`instrument_default`] (the kernel's setting, then the environment), then the profile.
#[inline]
pub(crate) fn instrumented(launch: Option<bool>, kernel: Option<bool>, debug: bool) -> bool {
    launch.or(kernel).unwrap_or(debug)
}

/// What a launch does once its kernel is queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum After {
    /// Return at once (release mode; faults surface at a later call).
    Return,
    /// Wait for the kernel and check: faults name this launch.
    Synchronize,
    /// The stream is being captured: the kernel did not run, and waiting would invalidate the
    /// capture. Nothing is waited for; bounds-checked launches leave their record to
    /// [`capture::Checks`](crate::capture::Checks).
    Captured,
}

/// The post-launch step for a launch that wants to synchronize (`sync`) on a stream that is
/// or is not `capturing`.
#[inline]
pub(crate) fn after_launch(sync: bool, capturing: bool) -> After {
    match (capturing, sync) {
        (true, _) => After::Captured,
        (false, true) => After::Synchronize,
        (false, false) => After::Return,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_resolution_order() {
        // The launch wins over everything.
        assert!(sync_wanted(Some(true), Some(false), false));
        assert!(!sync_wanted(Some(false), Some(true), true));
        // Then the kernel's builder, whatever the environment and the profile.
        assert!(sync_wanted(None, Some(true), false));
        assert!(!sync_wanted(None, Some(false), true));
    }

    #[test]
    fn the_kernel_setting_comes_before_the_environment() {
        // `instrument_default` and `races_default` read the environment only for a kernel
        // that said nothing; what it said stands whatever the variables hold.
        assert_eq!(instrument_default(Some(true)), Some(true));
        assert_eq!(instrument_default(Some(false)), Some(false));
        assert!(races_default(Some(true)));
        assert!(!races_default(Some(false)));
    }

    #[test]
    fn instrument_resolution_order() {
        assert!(
            instrumented(Some(true), Some(false), false),
            "the launch first"
        );
        assert!(!instrumented(Some(false), Some(true), true));
        assert!(instrumented(None, Some(true), false), "then the kernel");
        assert!(!instrumented(None, Some(false), true));
        assert!(instrumented(None, None, true), "then the profile");
        assert!(!instrumented(None, None, false));
    }

    #[test]
    fn env_values() {
        assert_eq!(parse_flag(Some("1")), Some(true));
        assert_eq!(parse_flag(Some(" Always ")), Some(true));
        assert_eq!(parse_flag(Some("0")), Some(false));
        assert_eq!(parse_flag(Some("never")), Some(false));
        assert_eq!(parse_flag(Some("maybe")), None);
        assert_eq!(parse_flag(None), None);
    }

    #[test]
    fn a_captured_launch_never_synchronizes() {
        assert_eq!(after_launch(true, true), After::Captured);
        assert_eq!(after_launch(false, true), After::Captured);
        assert_eq!(after_launch(true, false), After::Synchronize);
        assert_eq!(after_launch(false, false), After::Return);
    }
}
