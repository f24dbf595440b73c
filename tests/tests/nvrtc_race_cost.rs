//! NVRTC tier: what race checking adds to the benchmark set's 15 kernels with shared
//! accesses, counted statically from the race-checked PTX of each launch shape (shadow bytes
//! per block and per thread, PTX instructions of the prologue, per checked access and per
//! barrier, shared atomics per barrier), and the registers and resident blocks per SM of the
//! plain and race-checked builds on sm_90 (ptxas through nvJitLink, the occupancy calculator).
//! A prediction, not a measurement: run with `--nocapture` to print the table
//! `results/races.md` quotes. Needs NVRTC and nvJitLink, no GPU.

use cudacheck::nvrtc::{compile, CompileOptions, CudaSource};
use cudacheck_core::cubin::read_cubin;
use cudacheck_core::instrument::{instrument_ptx_with, InstrumentOptions};
use cudacheck_core::race::{cost_row, race_ptx_costed, RaceCost, RaceOptions, COST_HEADER};
use cudacheck_core::validate::occupancy;
use cudacheck_core::{Arch, ArchLimits, KernelResources};
use cudacheck_tests::{nvrtc_or_skip, repo_root};

const STENCIL: &str = "bench/kernels/stencil.cu";
const NORM: &str = "bench/kernels/norm.cu";
const REDUCE: &str = "bench/kernels/reduce.cu";
const LINALG: &str = "bench/kernels/linalg.cu";
const LOOPS2: &str = "bench/kernels/loops2.cu";

/// The benchmark set's kernels with shared accesses (`examples/bench_set.rs`): name, file,
/// block, dynamic shared bytes of the timed launch.
const KERNELS: &[(&str, &str, [u32; 3], u32)] = &[
    ("blur5x5_tiled", STENCIL, [32, 8, 1], 0),
    ("layernorm_rows", NORM, [256, 1, 1], 0),
    ("softmax_smem_row", NORM, [256, 1, 1], 4096 * 4),
    ("block_reduce_sum<256>", REDUCE, [256, 1, 1], 0),
    ("absmax_warp", REDUCE, [256, 1, 1], 0),
    ("scan_block_inclusive", REDUCE, [1024, 1, 1], 0),
    ("row_dot_dynsmem", REDUCE, [256, 1, 1], 256 * 4),
    ("histogram256_shared", REDUCE, [256, 1, 1], 0),
    ("sgemm_tiled_4x4", LINALG, [16, 16, 1], 0),
    ("transpose_padded", LINALG, [32, 8, 1], 0),
    ("attention_small_tiles", LINALG, [64, 1, 1], 0),
    ("row_mean_pitched", LOOPS2, [256, 1, 1], 0),
    ("histogram_range", LOOPS2, [256, 1, 1], 1000 * 4),
    ("rmsnorm_block_f16", LOOPS2, [1024, 1, 1], 0),
    ("softmax_rows_3pass", LOOPS2, [512, 1, 1], 0),
];

/// What one build of a kernel takes from an SM.
struct Fit {
    registers: u32,
    blocks_per_sm: u32,
}

fn fit(
    ptx: &str,
    symbol: &str,
    arch: Arch,
    threads: u32,
    dynamic: u32,
    what: &str,
) -> (Fit, KernelResources) {
    let cubin = cudacheck::nvrtc::assemble_ptx(ptx, arch, what)
        .unwrap_or_else(|e| panic!("{what}: {e}"))
        .cubin;
    let res = read_cubin(&cubin)
        .unwrap()
        .kernel(symbol)
        .unwrap_or_else(|| panic!("{what}: no `{symbol}` in the CUBIN"))
        .clone();
    let occ = occupancy(&res, threads, dynamic, &ArchLimits::for_arch(arch));
    (
        Fit {
            registers: res.registers,
            blocks_per_sm: occ.blocks_per_sm,
        },
        res,
    )
}

/// The race-checked build of `name` for its launch shape, as a launch builds it, with its cost,
/// and the plain, bounds-checked and race-checked builds' fit on an sm_90 SM.
fn cost_of(name: &str, file: &str, block: [u32; 3], dynamic: u32) -> (RaceCost, [Fit; 3]) {
    let arch: Arch = "sm_90".parse().unwrap();
    let threads = block.iter().product::<u32>();
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
    let (r, costs) = race_ptx_costed(&inst.ptx, &RaceOptions::new(dynamic).block(block)).unwrap();
    let k = r
        .kernels
        .iter()
        .find(|k| k.name == name || k.symbol == name)
        .unwrap_or_else(|| panic!("{file}: no kernel `{name}`"));
    assert!(k.coverage.is_complete(), "{name}: {:?}", k.coverage);
    let (plain, res) = fit(&ptx, &k.symbol, arch, threads, dynamic, name);
    let (bounds, _) = fit(&inst.ptx, &k.symbol, arch, threads, dynamic, name);
    let shadow = k.shadow_bytes(res.static_shared_bytes, dynamic);
    let (race, _) = fit(&r.ptx, &k.symbol, arch, threads, dynamic + shadow, name);
    let cost = costs.into_iter().find(|c| c.symbol == k.symbol).unwrap();
    (cost, [plain, bounds, race])
}

#[test]
fn nvrtc_race_cost_of_the_benchmark_sets_shared_kernels() {
    if !nvrtc_or_skip() {
        return;
    }
    let mut table = format!(
        "{} registers plain / bounds / race-checked | blocks per SM plain / bounds / race-checked |\n{}---:|---:|\n",
        COST_HEADER.lines().next().unwrap(),
        COST_HEADER.lines().nth(1).unwrap()
    );
    for &(name, file, block, dynamic) in KERNELS {
        let (c, [plain, bounds, race]) = cost_of(name, file, block, dynamic);
        let threads = block.iter().product::<u32>();
        assert!(c.prologue > 0, "{name}: no shadow");
        assert!(
            !c.accesses.is_empty() || !c.barriers.is_empty(),
            "{name}: nothing race-checked"
        );
        // Every word of the block's shared memory a checked access can touch has its
        // records: all of it, or the static arrays where no checked access touches the
        // dynamic ones.
        let covered = c.static_shared_bytes + if c.shadow_dynamic { dynamic } else { 0 };
        assert!(
            c.shadow_bytes(dynamic) >= covered,
            "{name}: shadow {} for {covered} bytes",
            c.shadow_bytes(dynamic),
        );
        // Every barrier of these kernels is met in one order (straight-line code, one barrier
        // per loop round): none folds itself into the divergence slots.
        assert!(
            c.barriers.iter().all(|&n| n < 30),
            "{name}: a barrier with the divergence check: {:?}",
            c.barriers
        );
        // A launch that fits plain fits race-checked too (or it would run unchecked).
        assert!(
            race.blocks_per_sm >= 1,
            "{name}: the race-checked build does not fit"
        );
        assert!(race.blocks_per_sm <= plain.blocks_per_sm, "{name}");
        table.push_str(&cost_row(name, &c, threads, dynamic));
        table.push_str(&format!(
            " {} / {} / {} | {} / {} / {} |\n",
            plain.registers,
            bounds.registers,
            race.registers,
            plain.blocks_per_sm,
            bounds.blocks_per_sm,
            race.blocks_per_sm
        ));
    }
    println!("{table}");
}
