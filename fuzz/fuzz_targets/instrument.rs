//! Arbitrary bytes through the PTX reader and instrumenter: any UTF-8 input must give `Ok` or a
//! typed error, never a panic; what comes back must read again as PTX with the same functions,
//! and every kernel's accesses must be accounted for (checked, proven or listed). The same for
//! the build with guards checked on the host (`guard.rs`) and for a launch shape, whose host
//! checks must evaluate, for launch values derived from the input, without panicking.
#![no_main]

use cudacheck_core::instrument::{instrument_ptx, instrument_ptx_with, ptx, InstrumentOptions, LaunchValues};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(out) = instrument_ptx(text) else {
        return;
    };
    let before = ptx::parse(text).expect("instrument_ptx read it");
    let after = ptx::parse(&out.ptx).expect("the instrumented PTX reads again");
    let names = |m: &ptx::Module| {
        m.functions
            .iter()
            .map(|f| f.name.clone())
            .collect::<Vec<_>>()
    };
    let mut expected = names(&before);
    expected.extend(["__cc_assertfail".to_string()]);
    let mut got = names(&after);
    expected.sort();
    got.sort();
    assert_eq!(got, expected, "functions changed");
    let entries = before.functions.iter().filter(|f| f.entry).count();
    assert_eq!(out.kernels.len(), entries);

    let opts = InstrumentOptions::new().block([128, 2, 1]).host_checks(true);
    let Ok(host) = instrument_ptx_with(text, &opts) else {
        return;
    };
    ptx::parse(&host.ptx).expect("the host-check build reads again");
    assert_eq!(host.kernels.len(), entries);
    // Launch values from the input's bytes: scalars, lengths and grids of every size.
    let word = |k: usize| -> u64 {
        let mut b = [0u8; 8];
        for (j, x) in b.iter_mut().enumerate() {
            *x = data.get((k * 8 + j) % data.len().max(1)).copied().unwrap_or(0);
        }
        u64::from_le_bytes(b)
    };
    let scalars: Vec<Option<(u64, u32)>> = (0..4096)
        .map(|k| (k % 7 != 0).then(|| (word(k), [1, 2, 4, 8][k % 4])))
        .collect();
    let lens: Vec<u64> = (0..4096).map(|k| word(k + 13) >> (k % 40)).collect();
    for grid in [[1, 1, 1], [word(1) as u32 | 1, 3, 1], [u32::MAX, 65535, 65535]] {
        let v = LaunchValues {
            grid,
            block: [128, 2, 1],
            scalars: &scalars,
            lens: &lens,
        };
        for k in &host.kernels {
            let _ = k.host_checks_hold(&v);
        }
    }
    // The build checking one kernel's failing host checks on the device: it reads again,
    // and that kernel lists exactly the others.
    let v = LaunchValues {
        grid: [word(2) as u32 | 1, 1, 1],
        block: [128, 2, 1],
        scalars: &scalars,
        lens: &lens,
    };
    let failing = host
        .kernels
        .iter()
        .enumerate()
        .find_map(|(n, k)| k.failing_host_checks(&v).filter(|s| !s.is_empty()).map(|s| (n, s)));
    if let Some((n, set)) = failing {
        let again = instrument_ptx_with(text, &opts.on_device(set)).expect("instrumented once");
        ptx::parse(&again.ptx).expect("the variant reads again");
        let (k, kv) = (&host.kernels[n], &again.kernels[n]);
        let kept: Vec<_> = k
            .host_checks
            .iter()
            .enumerate()
            .filter(|(p, _)| !set.contains(*p))
            .map(|(_, h)| h.clone())
            .collect();
        assert_eq!(kv.host_checks, kept, "the variant keeps the others, in order");
        assert_eq!(
            kv.coverage.checked + kv.coverage.host_checked,
            k.coverage.checked + k.coverage.host_checked,
            "every access still counted once"
        );
    }
});
