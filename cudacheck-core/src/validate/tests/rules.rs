//! One test per validation rule: the variant, its fields, and the words a person reads.

use super::*;

#[test]
fn a_valid_launch_returns_its_occupancy() {
    let o = validate(
        &kernel(32),
        &LaunchConfig::new(1000, 256),
        &lim("sm_90"),
        &ValidateOptions::default(),
    )
    .unwrap();
    assert_eq!(o.blocks_per_sm, 8);
}

#[test]
fn zero_extents_are_reported_per_part() {
    let v = check(
        &kernel(32),
        LaunchConfig::new((0, 1, 1), (32, 0, 1)),
        "sm_90",
    );
    assert_eq!(v.len(), 2, "{v:#?}");
    assert_eq!(
        v[0],
        Violation::ZeroExtent {
            part: LaunchPart::Grid,
            dims: Dim3::new(0, 1, 1),
            axis: Axis::X
        }
    );
    assert!(matches!(
        v[1],
        Violation::ZeroExtent {
            part: LaunchPart::Block,
            axis: Axis::Y,
            ..
        }
    ));
    assert_eq!(
        v[1].to_string(),
        "block (32, 0, 1) is 0 along y; every block dimension must be at least 1 (CUDA rejects \
         a zero extent with CUDA_ERROR_INVALID_VALUE). Skip the launch when there is no work, \
         or use at least 1 along each axis."
    );
    let mut cfg = LaunchConfig::new(8, 32);
    cfg.cluster = Some(Dim3::new(2, 1, 0));
    let v = one(check(&kernel(32), cfg, "sm_90"));
    assert!(
        v.to_string().starts_with("cluster (2, 1, 0) is 0 along z"),
        "{v}"
    );
}

#[test]
fn block_axis_over_its_maximum() {
    let v = one(check(
        &kernel(32),
        LaunchConfig::new(1, (1, 1, 128)),
        "sm_90",
    ));
    assert!(matches!(
        v,
        Violation::BlockDimTooLarge {
            axis: Axis::Z,
            requested: 128,
            allowed: 64,
            ..
        }
    ));
    assert_eq!(
        v.to_string(),
        "block (1, 1, 128) is 128 along z; sm_90 allows at most 64 \
         (CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z). Spread the threads over the other axes, or use \
         fewer threads per block and more blocks."
    );
}

#[test]
fn too_many_threads_per_block() {
    let v = one(check(
        &kernel(32),
        LaunchConfig::new(1, (32, 64, 1)),
        "sm_90",
    ));
    assert!(matches!(
        v,
        Violation::TooManyThreadsPerBlock {
            requested: 2048,
            allowed: 1024,
            ..
        }
    ));
    assert_eq!(
        v.to_string(),
        "block (32, 64, 1) has 2048 threads; sm_90 allows at most 1024 per block \
         (CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK). Use fewer threads per block and more blocks."
    );
}

#[test]
fn huge_blocks_report_each_axis_and_the_total_in_64_bits() {
    // 4e9 x 4e9 threads would wrap a u32 product; the total must still be right.
    let v = check(
        &kernel(32),
        LaunchConfig::new(1, (u32::MAX, u32::MAX, 1)),
        "sm_90",
    );
    assert_eq!(v.len(), 3, "{v:#?}");
    assert!(matches!(
        v[0],
        Violation::BlockDimTooLarge { axis: Axis::X, .. }
    ));
    assert!(matches!(
        v[1],
        Violation::BlockDimTooLarge { axis: Axis::Y, .. }
    ));
    let Violation::TooManyThreadsPerBlock { requested, .. } = v[2] else {
        panic!("{:?}", v[2])
    };
    assert_eq!(requested, u64::from(u32::MAX) * u64::from(u32::MAX));
}

#[test]
fn grid_y_over_65535() {
    let v = one(check(
        &kernel(32),
        LaunchConfig::new((1, 70000, 1), 256),
        "sm_80",
    ));
    assert!(matches!(
        v,
        Violation::GridDimTooLarge {
            axis: Axis::Y,
            requested: 70000,
            allowed: 65535,
            ..
        }
    ));
    assert_eq!(
        v.to_string(),
        "grid (1, 70000, 1) is 70000 along y; sm_80 allows at most 65535 \
         (CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y). Put the large extent on x (up to 2147483647), or \
         loop over it inside the kernel (a grid-stride loop)."
    );
}

#[test]
fn grid_x_over_2_pow_31() {
    let v = one(check(
        &kernel(32),
        LaunchConfig::new(1u32 << 31, 256),
        "sm_90",
    ));
    assert!(matches!(
        v,
        Violation::GridDimTooLarge {
            axis: Axis::X,
            allowed: 2_147_483_647,
            ..
        }
    ));
    assert!(v.to_string().contains("grid-stride loop"), "{v}");
}

#[test]
fn registers_times_threads_over_the_block_limit() {
    let v = one(check(&kernel(72), LaunchConfig::new(1, 1024), "sm_90"));
    assert_eq!(
        v,
        Violation::TooManyRegistersPerBlock {
            registers_per_thread: 72,
            threads: 1024,
            product: 73728,
            registers_per_warp: 2304,
            warps: 32,
            requested: 73728,
            allowed: 65536,
            max_threads: 896,
            max_registers: 64,
            target: LimitsOrigin::Arch(Arch::new(9, 0)),
        }
    );
    assert_eq!(
        v.to_string(),
        "72 registers per thread x 1024 threads = 73728 registers per block (allocated per \
         warp: 2304 registers x 32 warps = 73728); sm_90 allows at most 65536 per block \
         (CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK). The largest block that fits is 896 \
         threads; or compile with at most 64 registers per thread (`__launch_bounds__(1024)` or \
         `--maxrregcount=64`)."
    );
}

#[test]
fn register_rounding_alone_can_break_the_limit() {
    // 65 x 992 = 64480 fits on paper, but 65 x 32 = 2080 rounds to 2304 per warp, and 31 warps
    // are checked as 32: 73728.
    let v = one(check(&kernel(65), LaunchConfig::new(1, 992), "sm_90"));
    let Violation::TooManyRegistersPerBlock {
        product,
        requested,
        max_threads,
        max_registers,
        ..
    } = v
    else {
        panic!("{v:?}")
    };
    assert_eq!(
        (product, requested, max_threads, max_registers),
        (64480, 73728, 896, 64)
    );
}

#[test]
fn static_shared_over_48_kib() {
    let k = KernelResources {
        static_shared_bytes: 50000,
        ..kernel(32)
    };
    let v = one(check(&k, LaunchConfig::new(1, 256), "sm_90"));
    assert_eq!(
        v,
        Violation::StaticSharedTooLarge {
            static_bytes: 50000,
            allowed: 49152
        }
    );
    assert!(v.to_string().contains("even after opting in"), "{v}");
    assert!(v.to_string().contains("extern __shared__"), "{v}");
    // Even with opt-in forbidden, the static rule speaks alone (no duplicate opt-in advice).
    let v = validate(
        &k,
        &LaunchConfig::new(1, 256),
        &lim("sm_90"),
        &ValidateOptions {
            shared_opt_in: false,
        },
    )
    .unwrap_err();
    assert_eq!(v.len(), 1, "{v:#?}");
}

#[test]
fn shared_over_48_kib_without_opt_in() {
    let cfg = LaunchConfig {
        dynamic_shared_bytes: 65536,
        ..LaunchConfig::new(1, 256)
    };
    let no_opt_in = ValidateOptions {
        shared_opt_in: false,
    };
    let v = one(validate(&kernel(32), &cfg, &lim("sm_90"), &no_opt_in).unwrap_err());
    assert!(matches!(
        v,
        Violation::SharedMemoryNeedsOptIn {
            requested: 65536,
            allowed: 49152,
            opt_in_allowed: 232448,
            ..
        }
    ));
    assert_eq!(
        v.to_string(),
        "a block uses 65536 bytes of shared memory (0 static + 65536 dynamic); without opting \
         in, sm_90 allows at most 49152 per block (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK). \
         Opt in with cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536) \
         (sm_90 allows up to 232448 bytes per block that way), or use less shared memory."
    );
    // With opt-in (the default) the same launch is fine: 233472 / (65536 + 1024) = 3 blocks.
    let o = validate(
        &kernel(32),
        &cfg,
        &lim("sm_90"),
        &ValidateOptions::default(),
    )
    .unwrap();
    assert_eq!(o.blocks_per_sm, 3);
}

#[test]
fn shared_over_the_opt_in_maximum() {
    let k = KernelResources {
        static_shared_bytes: 4096,
        ..kernel(32)
    };
    let cfg = LaunchConfig {
        dynamic_shared_bytes: 98304,
        ..LaunchConfig::new(1, 256)
    };
    let v = one(check(&k, cfg, "sm_86"));
    assert!(matches!(
        v,
        Violation::SharedMemoryTooLarge {
            requested: 102400,
            allowed: 101376,
            ..
        }
    ));
    assert_eq!(
        v.to_string(),
        "a block uses 102400 bytes of shared memory (4096 static + 98304 dynamic); sm_86 allows \
         at most 101376 per block even after opting in \
         (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN). Use less shared memory per \
         block, for example smaller tiles."
    );
    // The same launch fits an H100.
    assert!(validate(&k, &cfg, &lim("sm_90"), &ValidateOptions::default()).is_ok());
}

#[test]
fn launch_bounds_exceeded() {
    let k = KernelResources {
        max_threads_per_block: Some(256),
        ..kernel(32)
    };
    let v = one(check(&k, LaunchConfig::new(4, 512), "sm_90"));
    assert_eq!(
        v,
        Violation::LaunchBoundsExceeded {
            block: Dim3::x(512),
            requested: 512,
            allowed: 256
        }
    );
    assert_eq!(
        v.to_string(),
        "block (512, 1, 1) has 512 threads; the kernel was compiled with __launch_bounds__(256), \
         so it runs at most 256 threads per block (CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK). \
         Launch with at most 256 threads per block, or raise the bound and recompile."
    );
    assert!(validate(
        &k,
        &LaunchConfig::new(4, 256),
        &lim("sm_90"),
        &ValidateOptions::default()
    )
    .is_ok());
}

#[test]
fn three_dimensional_maxntid_bounds_the_total() {
    let k = KernelResources {
        max_block: Some(Dim3::new(16, 16, 1)),
        ..kernel(32)
    };
    let v = one(check(&k, LaunchConfig::new(1, (32, 16, 1)), "sm_90"));
    assert!(matches!(
        v,
        Violation::LaunchBoundsExceeded {
            requested: 512,
            allowed: 256,
            ..
        }
    ));
}

#[test]
fn required_block_mismatch() {
    let k = KernelResources {
        required_block: Some(Dim3::new(16, 16, 1)),
        ..kernel(32)
    };
    // Same thread count, different shape: still wrong.
    let v = one(check(&k, LaunchConfig::new(1, 256), "sm_90"));
    assert_eq!(
        v,
        Violation::RequiredBlockMismatch {
            block: Dim3::x(256),
            required: Dim3::new(16, 16, 1)
        }
    );
    assert_eq!(
        v.to_string(),
        "block (256, 1, 1) differs from the block (16, 16, 1) the kernel was compiled for \
         (`.reqntid`); CUDA refuses any other block shape. Launch with block (16, 16, 1)."
    );
}

fn clustered(grid: impl Into<Dim3>, cluster: Dim3) -> LaunchConfig {
    LaunchConfig {
        cluster: Some(cluster),
        ..LaunchConfig::new(grid, 128)
    }
}

#[test]
fn clusters_before_hopper() {
    let v = one(check(&kernel(32), clustered(8, Dim3::x(2)), "sm_80"));
    assert!(matches!(v, Violation::ClustersUnsupported { .. }));
    assert_eq!(
        v.to_string(),
        "the launch asks for cluster (2, 1, 1), but sm_80 has no thread block clusters (they \
         need compute capability 9.0; CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH). Launch without a \
         cluster, or target sm_90 or newer."
    );
}

#[test]
fn cluster_over_the_portable_size() {
    let v = one(check(
        &kernel(32),
        clustered((16, 16, 1), Dim3::new(4, 4, 1)),
        "sm_90",
    ));
    assert!(matches!(
        v,
        Violation::ClusterTooLarge {
            requested: 16,
            allowed: 8,
            ..
        }
    ));
    assert!(
        v.to_string().starts_with(
            "cluster (4, 4, 1) has 16 blocks; sm_90 allows at most 8 blocks per cluster portably"
        ),
        "{v}"
    );
    assert!(
        v.to_string().ends_with("Use at most 8 blocks per cluster."),
        "{v}"
    );
}

#[test]
fn grid_not_a_multiple_of_the_cluster() {
    let v = one(check(&kernel(32), clustered(10, Dim3::x(4)), "sm_90"));
    assert!(matches!(
        v,
        Violation::GridNotClusterMultiple {
            axis: Axis::X,
            remainder: 2,
            rounded_up: 12,
            ..
        }
    ));
    assert_eq!(
        v.to_string(),
        "grid (10, 1, 1) is not a multiple of cluster (4, 1, 1) along x (10 % 4 = 2); every \
         cluster must be complete. Round the grid up to 12 along x and return early in the \
         extra blocks."
    );
}

#[test]
fn compile_time_cluster_is_checked_even_when_the_launch_gives_none() {
    let k = KernelResources {
        cluster_dims: Some(Dim3::x(4)),
        ..kernel(32)
    };
    let v = one(check(&k, LaunchConfig::new(6, 128), "sm_90"));
    assert!(matches!(
        v,
        Violation::GridNotClusterMultiple { remainder: 2, .. }
    ));
    assert!(validate(
        &k,
        &LaunchConfig::new(8, 128),
        &lim("sm_90"),
        &ValidateOptions::default()
    )
    .is_ok());
}

#[test]
fn launch_cluster_differs_from_compile_time_cluster() {
    let k = KernelResources {
        cluster_dims: Some(Dim3::x(4)),
        ..kernel(32)
    };
    let v = one(check(&k, clustered(8, Dim3::x(2)), "sm_90"));
    assert_eq!(
        v,
        Violation::ClusterMismatch {
            requested: Dim3::x(2),
            compiled: Dim3::x(4)
        }
    );
    assert_eq!(
        v.to_string(),
        "the launch asks for cluster (2, 1, 1), but the kernel was compiled with \
         __cluster_dims__(4, 1, 1), which a launch cannot change. Launch without a cluster \
         dimension, or with cluster (4, 1, 1)."
    );
    // Repeating the compiled cluster is fine.
    assert!(validate(
        &k,
        &clustered(8, Dim3::x(4)),
        &lim("sm_90"),
        &ValidateOptions::default()
    )
    .is_ok());
}

#[test]
fn no_block_fits_with_hand_made_limits() {
    // A device whose SM has fewer registers than one block may use (not real hardware, but
    // the runtime fills limits from the driver, and the validator must not return Ok(0 blocks)).
    let mut l = lim("sm_90");
    l.registers_per_sm = 16384;
    let v = one(validate(
        &kernel(64),
        &LaunchConfig::new(1, 1024),
        &l,
        &ValidateOptions::default(),
    )
    .unwrap_err());
    assert!(matches!(
        v,
        Violation::NoBlockFits {
            limiter: Limiter::Registers,
            ..
        }
    ));
    assert_eq!(
        v.to_string(),
        "not even one block of 1024 threads fits on an SM of sm_90: its registers allow 0 \
         blocks. Use fewer threads, registers or shared memory per block."
    );
}

#[test]
fn every_violation_is_reported_not_only_the_first() {
    let k = KernelResources {
        max_threads_per_block: Some(128),
        static_shared_bytes: 60000,
        ..kernel(32)
    };
    let cfg = LaunchConfig {
        grid: Dim3::new(3, 70000, 1),
        block: Dim3::new(256, 1, 1),
        dynamic_shared_bytes: 200_000,
        cluster: Some(Dim3::new(2, 1, 1)),
    };
    let v = check(&k, cfg, "sm_90");
    let kinds: Vec<&str> = v
        .iter()
        .map(|v| match v {
            Violation::GridDimTooLarge { .. } => "grid",
            Violation::StaticSharedTooLarge { .. } => "static",
            Violation::SharedMemoryTooLarge { .. } => "shared",
            Violation::LaunchBoundsExceeded { .. } => "bounds",
            Violation::GridNotClusterMultiple { .. } => "cluster-multiple",
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        ["grid", "static", "shared", "bounds", "cluster-multiple"]
    );
}

#[test]
fn device_origins_name_the_device() {
    let mut l = lim("sm_90");
    l.origin = LimitsOrigin::Device {
        ordinal: 0,
        name: "NVIDIA H100 80GB HBM3".into(),
    };
    let v = one(validate(
        &kernel(32),
        &LaunchConfig::new(1, 2048),
        &l,
        &ValidateOptions::default(),
    )
    .unwrap_err()
    .into_iter()
    .filter(|v| matches!(v, Violation::TooManyThreadsPerBlock { .. }))
    .collect());
    assert!(
        v.to_string()
            .contains("device 0 (NVIDIA H100 80GB HBM3) allows at most 1024 per block"),
        "{v}"
    );
}

#[test]
fn occupancy_and_launch_config_serialize_to_json() {
    let o = occ("sm_80", 64, 256, 0, 0);
    let json = serde_json::to_value(o).unwrap();
    assert_eq!(json["blocks_per_sm"], 4);
    assert_eq!(json["limiter"], "Registers");
    let cfg = serde_json::to_value(LaunchConfig::new(10, 256)).unwrap();
    assert_eq!(cfg["block"]["x"], 256);
    assert_eq!(cfg["cluster"], serde_json::Value::Null);
}

#[test]
fn limiter_reads_as_words() {
    assert_eq!(Limiter::Warps.to_string(), "warp slots");
    assert_eq!(Limiter::SharedMemory.to_string(), "shared memory");
}
