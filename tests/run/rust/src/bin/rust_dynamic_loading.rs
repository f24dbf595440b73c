//! The run programs with cudarc's `dynamic-loading`: libcuda is opened at run time.
fn main() {
    std::process::exit(run_programs::main());
}
