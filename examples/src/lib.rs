//! Helpers shared by the examples.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use cudacheck::cudarc::driver::CudaStream;
use cudacheck::nvrtc::CudaSource;

/// A stream on device 0; without a GPU, says why and exits successfully (the examples are
/// built and run in CI machines that have none).
pub fn stream_or_exit() -> Arc<CudaStream> {
    match cudacheck::default_stream(0) {
        Ok(s) => s,
        Err(e) => {
            println!("this example needs a GPU: {e}");
            std::process::exit(0);
        }
    }
}

/// `kernels/<file>` of the repository (`CUDACHECK_REPO` names the repository when the example
/// binary runs away from the checkout it was built in, as on the GPU machine).
pub fn kernel(file: &str) -> Result<CudaSource, cudacheck::nvrtc::SourceReadError> {
    let root = match std::env::var_os("CUDACHECK_REPO") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."),
    };
    CudaSource::from_file(root.join("kernels").join(file))
}

/// The error and its sources, one per line, as a person should see it.
pub fn report(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        s.push_str("\n  caused by: ");
        s.push_str(&x.to_string());
        src = x.source();
    }
    s
}

/// The repository's root: `CUDACHECK_REPO` when set (the example binary runs away from the
/// checkout it was built in, as on the GPU machine), else the checkout it was built in.
pub fn repo_root() -> PathBuf {
    match std::env::var_os("CUDACHECK_REPO") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."),
    }
}

/// `bench/<file>` of the repository (`kernels/...`, `styles/...`): the benchmark sets' kernels
/// (`bench_set`).
pub fn bench_kernel(file: &str) -> Result<CudaSource, cudacheck::nvrtc::SourceReadError> {
    CudaSource::from_file(repo_root().join("bench").join(file))
}

/// The median of `v` (the upper one of an even count): what the benchmarks report.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `YYYY-MM-DD HH:MM:SS UTC` from the system clock (days to civil date: Howard Hinnant's
/// algorithm).
pub fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Writes a benchmark's results to each path: JSON where the path ends in `.json`, the
/// markdown table anywhere else; says where.
///
/// # Errors
/// The first write or serialization that fails.
pub fn write_outputs<P: AsRef<str>>(
    paths: &[P],
    md: &str,
    json: &serde_json::Value,
) -> Result<(), Box<dyn std::error::Error>> {
    for path in paths {
        let path = path.as_ref();
        let text = if path.ends_with(".json") {
            serde_json::to_string_pretty(json)?
        } else {
            md.to_string()
        };
        std::fs::write(path, text)?;
        println!("wrote {path}");
    }
    Ok(())
}
