// Compile-time checked block sizes at call sites.
fn main() {
    let block: cudacheck::core::Dim3 = cudacheck::block!(16, 16).into();
    assert_eq!(block, cudacheck::core::Dim3::new(16, 16, 1));
}
