// The tests of a fixture with no cudarc use of its own beyond its dependency line (see its
// Cargo.toml): the pure, NVRTC and GPU tiers of `common.rs`. Included by the fixtures'
// `tests/compat.rs`, after their `mod common`.

common::fixture_tests!();

#[test]
fn gpu_checked_launch_matches_the_cpu() {
    let Some(stream) = common::gpu_stream("gpu_checked_launch_matches_the_cpu") else {
        return;
    };
    let n = 10_001usize;
    let x: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.5).collect();
    let y0: Vec<f32> = (0..n).map(|i| (i % 13) as f32).collect();
    let dx = stream.clone_htod(&x).expect("copy x");
    let mut dy = stream.clone_htod(&y0).expect("copy y");
    common::gpu_checked_saxpy(&stream, &mut dy, &dx, 3.0, n).unwrap_or_else(|e| panic!("{e}"));
    let y = stream.clone_dtoh(&dy).expect("copy back");
    for i in 0..n {
        assert_eq!(y[i], 3.0 * x[i] + y0[i], "element {i}");
    }
    common::gpu_bad_block_is_typed(&stream);
}
