//! What a launch does besides launching: whether it synchronizes and checks afterwards
//! ([`SyncMode`]) and whether it runs the bounds-checked build ([`InstrumentMode`]), each
//! resolved in one documented order (launch, kernel, environment, build profile).
//!
//! Under stream capture a launch does not run, so there is nothing to wait for, and waiting
//! is illegal: [`after_launch`] turns "synchronize" into "do not" there (see
//! [`capture`](crate::capture) for what checks a captured launch still gets).

use std::sync::OnceLock;

/// Whether a launch waits for the kernel and checks for faults right after launching.
///
/// Resolution, first match wins: the launch's own [`Launch::sync`](crate::Launch::sync)
/// (`Always`/`Never`), the kernel's [`KernelBuilder::sync`](crate::KernelBuilder::sync), the
/// `CUDACHECK_SYNC` environment variable (`1`/`0`, read once per process), then the build
/// profile: debug builds synchronize, release builds do not. A launch into a stream that is
/// being captured never synchronizes (see [`capture`](crate::capture)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SyncMode {
    /// Synchronize and check after every launch: faults name their launch exactly.
    Always,
    /// Do not synchronize: faults surface at a later call, naming the recent launches.
    Never,
    /// Defer to `CUDACHECK_SYNC`, then the build profile.
    #[default]
    FromEnv,
}

/// Whether launches of a kernel are bounds-checked ([`KernelBuilder::instrument`]).
///
/// An instrumented launch runs a rewritten copy of the kernel (see
/// [`cudacheck_core::instrument`]) that checks every access through its pointer parameters and
/// fixed-size arrays, synchronizes, and returns [`Error::OutOfBounds`] or
/// [`Error::DeviceAssert`] for the first bad access or failed `assert`, naming the CUDA source
/// line, instead of letting the kernel corrupt memory or poison the context.
///
/// Resolution, first match wins:
/// 1. the launch's own [`Launch::instrument`](crate::Launch::instrument);
/// 2. the kernel's mode, [`On`](Self::On) or [`Off`](Self::Off) (from
///    [`KernelBuilder::instrument`] or the macro's `instrument = true/false`);
/// 3. the `CUDACHECK_INSTRUMENT` environment variable (`1`/`0`, read once per process);
/// 4. the build profile: on in debug builds, off in release builds (for macro-declared kernels,
///    the profile of the crate that declares them).
///
/// [`KernelBuilder::instrument`]: crate::KernelBuilder::instrument
/// [`Error::OutOfBounds`]: crate::Error::OutOfBounds
/// [`Error::DeviceAssert`]: crate::Error::DeviceAssert
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InstrumentMode {
    /// Never bounds-check this kernel's launches (a launch may still ask for it).
    Off,
    /// Bounds-check every launch of this kernel (unless a launch says otherwise).
    On,
    /// Defer to `CUDACHECK_INSTRUMENT`, then the build profile.
    #[default]
    Auto,
}

impl InstrumentMode {
    /// The kernel's part of the resolution: its own mode, or for `Auto` the environment;
    /// `None` leaves it to the launch's build profile. Resolved once, when the kernel is
    /// built, so that a plain launch pays one test for it.
    pub(crate) fn kernel_default(self) -> Option<bool> {
        match self {
            InstrumentMode::On => Some(true),
            InstrumentMode::Off => Some(false),
            InstrumentMode::Auto => env_flag("CUDACHECK_INSTRUMENT", &ENV_INSTRUMENT),
        }
    }
}

/// Whether a kernel's launches are race-checked when a launch does not say: its own setting,
/// else `CUDACHECK_RACES` (`1`/`0`, read once per process), else off. Race checking is a
/// debugging mode (see `cudacheck_core::race`); no build profile turns it on.
pub(crate) fn races_default(kernel: Option<bool>) -> bool {
    kernel
        .or_else(|| env_flag("CUDACHECK_RACES", &ENV_RACES))
        .unwrap_or(false)
}

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

/// Whether a launch synchronizes, in the order documented on [`SyncMode`].
#[inline]
pub(crate) fn sync_wanted(launch: SyncMode, kernel: SyncMode, debug: bool) -> bool {
    match (launch, kernel) {
        (SyncMode::FromEnv, SyncMode::FromEnv) => {
            resolve_sync(launch, kernel, env_flag("CUDACHECK_SYNC", &ENV_SYNC), debug)
        }
        _ => resolve_sync(launch, kernel, None, debug),
    }
}

/// [`sync_wanted`] with the environment's value given.
fn resolve_sync(launch: SyncMode, kernel: SyncMode, env: Option<bool>, debug: bool) -> bool {
    match (launch, kernel) {
        (SyncMode::Always, _) => true,
        (SyncMode::Never, _) => false,
        (_, SyncMode::Always) => true,
        (_, SyncMode::Never) => false,
        _ => env.unwrap_or(debug),
    }
}

/// Whether a launch is bounds-checked, in the order documented on [`InstrumentMode`]:
/// `kernel` is [`InstrumentMode::kernel_default`].
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
        use SyncMode::*;
        // The launch wins over everything.
        assert!(resolve_sync(Always, Never, Some(false), false));
        assert!(!resolve_sync(Never, Always, Some(true), true));
        // Then the kernel's builder, over the environment.
        assert!(resolve_sync(FromEnv, Always, Some(false), false));
        assert!(!resolve_sync(FromEnv, Never, Some(true), true));
        // Then the environment, over the profile.
        assert!(resolve_sync(FromEnv, FromEnv, Some(true), false));
        assert!(!resolve_sync(FromEnv, FromEnv, Some(false), true));
        // Then the profile.
        assert!(resolve_sync(FromEnv, FromEnv, None, true));
        assert!(!resolve_sync(FromEnv, FromEnv, None, false));
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
