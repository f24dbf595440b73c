// A literal block size at a call site is checked by `cudacheck::Block`'s const assertion.
fn main() {
    let block: cudacheck::core::Dim3 = cudacheck::block!(2048).into();
    println!("{block}");
}
