//! The validator's tests: occupancy against NVIDIA's calculator, and one test per rule.

use super::*;
use crate::arch::Arch;
use crate::limits::LimitsOrigin;

fn lim(s: &str) -> ArchLimits {
    ArchLimits::for_arch(s.parse().unwrap())
}

fn kernel(registers: u32) -> KernelResources {
    KernelResources::with_registers("k", registers)
}

fn occ(arch: &str, registers: u32, threads: u32, static_bytes: u32, dynamic: u32) -> Occupancy {
    let k = KernelResources {
        static_shared_bytes: static_bytes,
        ..kernel(registers)
    };
    occupancy(&k, threads, dynamic, &lim(arch))
}

fn check(k: &KernelResources, cfg: LaunchConfig, arch: &str) -> Vec<Violation> {
    validate(k, &cfg, &lim(arch), &ValidateOptions::default()).unwrap_err()
}

fn one(v: Vec<Violation>) -> Violation {
    assert_eq!(v.len(), 1, "expected exactly one violation, got {v:#?}");
    v.into_iter().next().unwrap()
}

mod calculator;
mod rules;
