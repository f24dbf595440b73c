//! The host checks of a bounds-checked build evaluated with no GPU, for one launch's
//! arguments, grid and block: which fail, and why (each with its expression and the interval
//! the host computes for it).

use cudacheck_core::instrument::{
    HostCheck, HostCheckSet, InstrumentedKernel, LaunchValues, UNKNOWN_LEN,
};

/// One argument of a launch: a buffer of so many bytes, or a scalar.
#[derive(Clone, Copy, Debug)]
pub enum Arg {
    Buf(u64),
    I32(i32),
    I64(i64),
    F32(f32),
}

/// The host checks of `ik` that fail for a launch of `grid` x `block` with `args`, each as a
/// line for a person: where, which buffer, the offset's expression, its interval, and the
/// innermost part the host cannot bound.
///
/// # Panics
///
/// When `args` does not have one entry per parameter of the kernel.
pub fn failing(
    ik: &InstrumentedKernel,
    grid: [u32; 3],
    block: [u32; 3],
    args: &[Arg],
) -> Vec<String> {
    let (scalars, lens) = values(args);
    let v = LaunchValues {
        grid,
        block,
        scalars: &scalars,
        lens: &lens,
    };
    assert_eq!(ik.num_params as usize, args.len(), "{}: arguments", ik.name);
    ik.host_checks
        .iter()
        .filter(|c| !c.holds(&v))
        .map(|c| describe(c, &v))
        .collect()
}

/// The host checks of `ik` that fail for the launch, as the set a build checks on the device
/// instead (`InstrumentOptions::on_device`), as the runtime makes it for such a launch.
///
/// # Panics
///
/// When more fail than a set holds (the fully checked build serves such a launch).
pub fn failing_set(
    ik: &InstrumentedKernel,
    grid: [u32; 3],
    block: [u32; 3],
    args: &[Arg],
) -> HostCheckSet {
    let (scalars, lens) = values(args);
    let v = LaunchValues {
        grid,
        block,
        scalars: &scalars,
        lens: &lens,
    };
    ik.failing_host_checks(&v)
        .unwrap_or_else(|| panic!("{}: too many host checks fail", ik.name))
}

/// A launch's scalar arguments (value and bytes) and buffer lengths, by parameter.
fn values(args: &[Arg]) -> (Vec<Option<(u64, u32)>>, Vec<u64>) {
    let scalars = args
        .iter()
        .map(|a| match *a {
            Arg::Buf(_) => None,
            Arg::I32(x) => Some((u64::from(x as u32), 4)),
            Arg::I64(x) => Some((x as u64, 8)),
            Arg::F32(x) => Some((u64::from(x.to_bits()), 4)),
        })
        .collect();
    let lens = args
        .iter()
        .map(|a| match *a {
            Arg::Buf(n) => n,
            _ => UNKNOWN_LEN,
        })
        .collect();
    (scalars, lens)
}

fn describe(c: &HostCheck, v: &LaunchValues<'_>) -> String {
    let at = c
        .loc
        .as_ref()
        .map_or("?".into(), |l| format!("line {}", l.line));
    let len = c
        .array_bytes
        .unwrap_or_else(|| v.lens.get(c.param as usize).copied().unwrap_or(0));
    let why = match c.offset.first_failure(v) {
        Some(e) if e != &c.offset => format!("; the host cannot bound {e}"),
        _ => String::new(),
    };
    format!(
        "{at}: {:?} of {} bytes, param {} (len {len}): offset {} evaluates to {:?}{why}",
        c.kind,
        c.bytes,
        c.param,
        c.offset,
        c.offset.interval(v)
    )
}

/// Whether one of [`failing`]'s lines is a check of parameter `p`'s buffer.
pub fn fails_on(lines: &[String], p: usize) -> bool {
    let at = format!("param {p} ");
    lines.iter().any(|l| l.contains(&at))
}
