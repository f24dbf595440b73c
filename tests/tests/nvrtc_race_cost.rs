//! NVRTC tier: what race checking adds to the benchmark set's 15 kernels with shared
//! accesses, counted statically from the race-checked PTX of each launch shape (shadow bytes
//! per block and per thread, PTX instructions of the prologue, per checked access and per
//! barrier, shared atomics per barrier). A prediction, not a measurement: run with
//! `--nocapture` to print the table `results/races.md` quotes. Needs NVRTC, no GPU.

use cudacheck::nvrtc::{compile, CompileOptions, CudaSource};
use cudacheck_core::instrument::{instrument_ptx_with, InstrumentOptions};
use cudacheck_core::race::{cost_row, race_ptx_costed, RaceCost, RaceOptions, COST_HEADER};
use cudacheck_core::Arch;
use cudacheck_tests::{nvrtc_or_skip, repo_root};

/// The benchmark set's kernels with shared accesses (`examples/bench_set.rs`): name, file,
/// block, dynamic shared bytes of the timed launch.
const KERNELS: &[(&str, &str, [u32; 3], u32)] = &[
    ("blur5x5_tiled", "bench/kernels/stencil.cu", [32, 8, 1], 0),
    ("layernorm_rows", "bench/kernels/norm.cu", [256, 1, 1], 0),
    ("softmax_smem_row", "bench/kernels/norm.cu", [256, 1, 1], 4096 * 4),
    ("block_reduce_sum<256>", "bench/kernels/reduce.cu", [256, 1, 1], 0),
    ("absmax_warp", "bench/kernels/reduce.cu", [256, 1, 1], 0),
    ("scan_block_inclusive", "bench/kernels/reduce.cu", [1024, 1, 1], 0),
    ("row_dot_dynsmem", "bench/kernels/reduce.cu", [256, 1, 1], 256 * 4),
    ("histogram256_shared", "bench/kernels/reduce.cu", [256, 1, 1], 0),
    ("sgemm_tiled_4x4", "bench/kernels/linalg.cu", [16, 16, 1], 0),
    ("transpose_padded", "bench/kernels/linalg.cu", [32, 8, 1], 0),
    ("attention_small_tiles", "bench/kernels/linalg.cu", [64, 1, 1], 0),
    ("row_mean_pitched", "bench/kernels/loops2.cu", [256, 1, 1], 0),
    ("histogram_range", "bench/kernels/loops2.cu", [256, 1, 1], 1000 * 4),
    ("rmsnorm_block_f16", "bench/kernels/loops2.cu", [1024, 1, 1], 0),
    ("softmax_rows_3pass", "bench/kernels/loops2.cu", [512, 1, 1], 0),
];

/// The race-checked build of `name` for its launch shape, as a launch builds it, with its cost.
fn cost_of(name: &str, file: &str, block: [u32; 3], dynamic: u32) -> RaceCost {
    let arch: Arch = "sm_90".parse().unwrap();
    let src = CudaSource::from_file(repo_root().join(file)).unwrap();
    let opts = CompileOptions {
        ptx: true,
        ..CompileOptions::new(arch)
    };
    let ptx = compile(&src, &opts).unwrap().ptx.unwrap();
    let inst = instrument_ptx_with(
        &ptx,
        &InstrumentOptions::new()
            .block(block)
            .dynamic_shared_bytes(dynamic)
            .host_checks(true),
    )
    .unwrap();
    let (r, costs) = race_ptx_costed(&inst.ptx, &RaceOptions::new(dynamic)).unwrap();
    cudacheck::nvrtc::assemble_ptx(&r.ptx, arch, file).unwrap();
    let k = r
        .kernels
        .iter()
        .find(|k| k.name == name || k.symbol == name)
        .unwrap_or_else(|| panic!("{file}: no kernel `{name}`"));
    assert!(k.coverage.is_complete(), "{name}: {:?}", k.coverage);
    costs.into_iter().find(|c| c.symbol == k.symbol).unwrap()
}

#[test]
fn nvrtc_race_cost_of_the_benchmark_sets_shared_kernels() {
    if !nvrtc_or_skip() {
        return;
    }
    let mut table = format!("{COST_HEADER}\n");
    for &(name, file, block, dynamic) in KERNELS {
        let c = cost_of(name, file, block, dynamic);
        let threads = block.iter().product::<u32>();
        assert!(c.prologue > 0, "{name}: no shadow");
        assert!(
            !c.accesses.is_empty() || !c.barriers.is_empty(),
            "{name}: nothing race-checked"
        );
        // Every word of the block's shared memory has its records.
        assert!(
            c.shadow_bytes(dynamic) >= c.static_shared_bytes + dynamic,
            "{name}: shadow {} for {} bytes",
            c.shadow_bytes(dynamic),
            c.static_shared_bytes + dynamic
        );
        table.push_str(&cost_row(name, &c, threads, dynamic));
        table.push('\n');
    }
    println!("{table}");
}
