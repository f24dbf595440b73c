//! The interposer: what runs inside a program started by `cudacheck run`, between it and the
//! CUDA driver. Layers, bottom up: `ffi` (the driver's types, the real driver, the exported
//! hooks and `dlsym`), `stack` and `alloc` (call stacks, the allocation table), `module`
//! (what the program loaded), `state` (the process-wide state), `report` (findings), `records`
//! (fault records of launches in flight), `builds` (checked builds, made and loaded), `launch`
//! (the launch path), `shadow` (what `--init` knows was written), `handlers` and `copies` (what
//! each hooked entry point does).

pub(crate) mod ffi;

mod alloc;
mod builds;
mod copies;
mod handlers;
mod launch;
mod module;
mod records;
mod report;
mod shadow;
mod stack;
mod state;
