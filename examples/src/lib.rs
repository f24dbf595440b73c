//! Helpers shared by the examples.

use std::path::PathBuf;
use std::sync::Arc;

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
