//! NVRTC tier: the styles benchmark set (`bench/styles/`, `examples/bench_set.rs --set
//! styles`). Every kernel of it builds bounds-checked for sm_90, has a planted twin (its code
//! differs when its file is built with `PLANTED` defined: the twin `--planted` launches), and
//! is listed with its half in `bench/styles/README.md`. Needs NVRTC and nvJitLink, no GPU.

use cudacheck::nvrtc::{compile, CompileOptions, CudaSource};
use cudacheck::Kernel;
use cudacheck_core::Arch;
use cudacheck_tests::{nvrtc_or_skip, repo_root};

/// The PTX of each entry point: (name, body from `.entry name(` to its closing brace).
fn entries(ptx: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = ptx;
    while let Some(at) = rest.find(".entry ") {
        let body = &rest[at + ".entry ".len()..];
        let name = body[..body.find('(').expect("an entry's parameters")]
            .trim()
            .to_string();
        let end = body.find("\n}").map_or(body.len(), |e| e + 2);
        out.push((name, body[..end].to_string()));
        rest = &body[end..];
    }
    out
}

fn ptx(src: &CudaSource, arch: Arch, planted: bool) -> String {
    let mut opts = CompileOptions {
        ptx: true,
        line_info: false,
        ..CompileOptions::new(arch)
    };
    if planted {
        opts.defines.push(("PLANTED".into(), None));
    }
    compile(src, &opts)
        .unwrap_or_else(|e| panic!("{} (planted: {planted}): {e}", src.name))
        .ptx
        .expect("asked for PTX")
}

#[test]
fn nvrtc_styles_set_builds_checked_each_kernel_with_a_planted_twin_and_a_half() {
    if !nvrtc_or_skip() {
        return;
    }
    let arch: Arch = "sm_90".parse().unwrap();
    let dir = repo_root().join("bench/styles");
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cu"))
        .collect();
    files.sort();
    let (mut kernels, mut tune) = (0usize, 0usize);
    for f in &files {
        let src = CudaSource::from_file(f).unwrap();
        let plain = entries(&ptx(&src, arch, false));
        // A report names a buffer by its parameter's name, read from the source: each kernel
        // has one for every parameter (the `#ifdef PLANTED` twins inside bodies included).
        let model = cudacheck_core::source::parse_source(&src.text, &src.name).unwrap();
        let planted = entries(&ptx(&src, arch, true));
        assert!(!plain.is_empty(), "{}: no kernels", src.name);
        for (name, body) in &plain {
            let twin = planted.iter().find(|(n, _)| n == name);
            assert!(
                twin.is_some_and(|(_, b)| b != body),
                "{}: {name} has no planted twin (the same code with PLANTED defined)",
                src.name
            );
            let decl = model
                .kernel(name)
                .unwrap_or_else(|| panic!("{}: the source model misses {name}", src.name));
            assert!(
                decl.params.iter().all(|p| p.name.is_some()),
                "{}: {name} has unnamed parameters: {:?}",
                src.name,
                decl.params
            );
            let k = Kernel::new(src.clone(), name.as_str()).arch(arch).build();
            k.check_offline_checked(arch, (256, 1, 1), 0)
                .unwrap_or_else(|e| panic!("{}: {name}: {e}", src.name));
            let cov = k
                .coverage()
                .unwrap()
                .expect("the kernel in the checked build");
            assert!(
                cov.checked + cov.host_checked + cov.proven > 0,
                "{name}: no access checked: {cov:?}"
            );
            let row = readme
                .lines()
                .find(|l| l.starts_with(&format!("| `{name}` |")))
                .unwrap_or_else(|| panic!("{name} is not listed in bench/styles/README.md"));
            match (row.contains("| tune |"), row.contains("| held-out |")) {
                (true, false) => tune += 1,
                (false, true) => {}
                _ => panic!("{name}: no single half in its README row: {row}"),
            }
            kernels += 1;
        }
    }
    assert!(kernels >= 24, "{kernels} kernels in bench/styles");
    // About half each (the halves are fixed in the README and the specs).
    assert!(
        tune * 2 >= kernels - 2 && tune * 2 <= kernels + 2,
        "{tune} of {kernels} kernels in the tune half"
    );
}
