//! GPU tier: `#[checked_kernel]` wrappers whose kernels the build compiled (`arch`), launched
//! with a literal thread-block cluster, outputs poisoned before the launch and compared with
//! the CPU's.

use std::sync::Arc;

use cudacheck::checked_kernel;
use cudacheck::core::validate::Violation;
use cudacheck::cudarc::driver::{CudaSlice, CudaStream};
use cudacheck::{Error, LaunchErrorKind};
use cudacheck_tests::{chain, gpu_or_skip};

/// y = a * x + y in clusters of two blocks (sm_90 and later).
#[checked_kernel(
    file = "../kernels/saxpy.cu",
    name = "saxpy",
    arch = "sm_90",
    block = 256,
    cluster = (2, 1, 1),
    requires(y.len() >= n as usize, x.len() >= n as usize)
)]
fn saxpy_clustered(y: &mut CudaSlice<f32>, x: &CudaSlice<f32>, a: f32, n: i32);

fn major(stream: &Arc<CudaStream>) -> i32 {
    stream.context().compute_capability().unwrap().0
}

#[test]
fn gpu_macro_cluster_launch_matches_the_cpu() {
    let Some(stream) = gpu_or_skip() else { return };
    let n = 4096usize;
    let xs: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let ys: Vec<f32> = (0..n).map(|i| 1.0 - i as f32).collect();
    let x = cudacheck::alloc_copy(&stream, &xs).unwrap();
    let mut y = cudacheck::alloc_copy(&stream, &ys).unwrap();
    // 16 blocks: a whole number of clusters of two.
    let r = unsafe { saxpy_clustered(&stream, 16u32, &mut y, &x, 3.0, n as i32) };
    if major(&stream) < 9 {
        let e = r.unwrap_err();
        assert!(
            chain(&e).contains("no thread block clusters"),
            "{}",
            chain(&e)
        );
        return;
    }
    r.unwrap_or_else(|e| panic!("{}", chain(&e)));
    let got = stream.clone_dtoh(&y).unwrap();
    let want: Vec<f32> = xs.iter().zip(&ys).map(|(x, y)| 3.0 * x + y).collect();
    assert_eq!(got, want);
}

#[test]
fn gpu_macro_cluster_grid_not_a_multiple_is_refused_before_launch() {
    let Some(stream) = gpu_or_skip() else { return };
    if major(&stream) < 9 {
        return;
    }
    let n = 4096usize;
    let x = cudacheck::alloc_copy(&stream, &vec![1.0f32; n]).unwrap();
    let poison = vec![f32::NAN; n];
    let mut y = cudacheck::alloc_copy(&stream, &poison).unwrap();
    // 15 blocks cannot form clusters of two: refused with the rule, nothing launched.
    let e = unsafe { saxpy_clustered(&stream, 15u32, &mut y, &x, 3.0, n as i32) }.unwrap_err();
    let Error::Launch(l) = &e else {
        panic!("{}", chain(&e))
    };
    let LaunchErrorKind::InvalidConfig { violations } = &l.kind else {
        panic!("{}", chain(&e))
    };
    assert!(
        matches!(violations[0], Violation::GridNotClusterMultiple { .. }),
        "{}",
        chain(&e)
    );
    let got = stream.clone_dtoh(&y).unwrap();
    assert!(got.iter().all(|v| v.is_nan()), "the refused launch wrote");
}
