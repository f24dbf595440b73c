//! The run programs with cudarc's `dynamic-linking`: libcuda is a dependency of the binary.
fn main() {
    std::process::exit(run_programs::main());
}
