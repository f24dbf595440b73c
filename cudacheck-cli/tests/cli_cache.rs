//! The module cache as `cudacheck` uses it: `cudacheck cache`, and `cudacheck check` on a cold,
//! warm, damaged, unwritable and shared cache. Tests that compile are named `nvrtc_cli_cache_*`
//! (the NVRTC tier); the others run in the pure tier.
//!
//! Every run gets its own cache directory through `CUDACHECK_CACHE_DIR`, so tests never share
//! entries with each other or with the user's cache.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cudacheck::cache::{Entry, Key, ModuleCache};
use cudacheck_tests::nvrtc_or_skip;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// `cudacheck ARGS` with `vars` set (and the cache variables cleared first).
fn cudacheck(args: &[&str], vars: &[(&str, &Path)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cudacheck"));
    cmd.args(args)
        .current_dir(repo())
        .env_remove("CUDACHECK_CACHE")
        .env_remove("CUDACHECK_CACHE_DIR")
        .env_remove("CUDACHECK_CACHE_MAX_BYTES");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out: Output = cmd.output().expect("cudacheck runs");
    Run {
        code: out.status.code().expect("exited, not killed by a signal"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A fresh, empty directory for this test.
fn fresh_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cudacheck-cli-cache-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The entry files of the cache in `dir`.
fn entry_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("v1"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "entry"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Files with a kernel each, one with a compile error, one including a header of its own.
const FILES: [&str; 4] = [
    "kernels/saxpy.cu",
    "kernels/reduce.cu",
    "cudacheck-cli/tests/data/syntax_error.cu",
    "cudacheck-cli/tests/data/third_party_style.cu",
];

fn check(dir: &Path) -> Run {
    let mut args = vec!["check", "--arch", "sm_90"];
    args.extend(FILES);
    cudacheck(&args, &[("CUDACHECK_CACHE_DIR", dir)])
}

/// The output of the same check with no cache at all.
fn uncached() -> Run {
    let mut args = vec!["check", "--arch", "sm_90"];
    args.extend(FILES);
    cudacheck(&args, &[("CUDACHECK_CACHE", Path::new("0"))])
}

fn assert_same(a: &Run, b: &Run, what: &str) {
    assert_eq!(
        a.code, b.code,
        "{what}: exit status\n{}\n{}",
        a.stderr, b.stderr
    );
    assert_eq!(a.stdout, b.stdout, "{what}: output differs");
}

#[test]
fn nvrtc_cli_cache_warm_check_prints_what_the_cold_one_did() {
    if !nvrtc_or_skip() {
        return;
    }
    let dir = fresh_dir("warm");
    let reference = uncached();
    assert_eq!(
        reference.code, 2,
        "syntax_error.cu fails: {}",
        reference.stdout
    );
    let cold = check(&dir);
    assert_same(&cold, &reference, "cold");
    // Every file is kept, the one that failed to compile included.
    assert_eq!(entry_files(&dir).len(), FILES.len());
    let warm = check(&dir);
    assert_same(&warm, &reference, "warm");
    assert!(!warm.stderr.contains("warning"), "{}", warm.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Fills a cache, rewrites every entry file with `damage(i, contents of all entries)`, and
/// checks twice more: both runs must print what an uncached run prints.
fn check_after_damage(tag: &str, damage: impl Fn(usize, &[Vec<u8>]) -> Vec<u8>) {
    let dir = fresh_dir(tag);
    let reference = uncached();
    check(&dir);
    let files = entry_files(&dir);
    assert_eq!(files.len(), FILES.len());
    let contents: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    for (i, f) in files.iter().enumerate() {
        std::fs::write(f, damage(i, &contents)).unwrap();
    }
    assert_same(&check(&dir), &reference, "after the damage");
    // The damaged entries were replaced by good ones, which the next run uses.
    assert_same(&check(&dir), &reference, "after the repair");
    assert_eq!(entry_files(&dir).len(), FILES.len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn nvrtc_cli_cache_corrupted_entries_are_recompiled() {
    if !nvrtc_or_skip() {
        return;
    }
    check_after_damage("corrupt", |i, all| {
        // The case of every word after the header: the log's words among them, which the
        // output shows for the file that does not compile (a flipped CUBIN byte need not change
        // the report; tests/nvrtc_cache.rs compares the CUBIN itself).
        let mut bytes = all[i].clone();
        let word: Vec<bool> = (0..bytes.len())
            .map(|j| {
                j >= 84
                    && j + 4 <= bytes.len()
                    && bytes[j..j + 4].iter().all(u8::is_ascii_alphabetic)
            })
            .collect();
        for j in 0..bytes.len() {
            if word[j] {
                bytes[j..j + 4]
                    .iter_mut()
                    .for_each(|b| *b = b.to_ascii_uppercase());
            }
        }
        bytes
    });
}

#[test]
fn nvrtc_cli_cache_truncated_entries_are_recompiled() {
    if !nvrtc_or_skip() {
        return;
    }
    check_after_damage("truncated", |i, all| {
        let bytes = &all[i];
        // Cut at several places: inside the header, at its end, inside the payload.
        let cut = [10, 84, bytes.len() / 2, bytes.len() - 1][i % 4];
        bytes[..cut].to_vec()
    });
}

#[test]
fn nvrtc_cli_cache_entry_copied_over_another_is_not_trusted() {
    if !nvrtc_or_skip() {
        return;
    }
    // Every entry then holds another file's module: a valid file, checksum and all.
    check_after_damage("swapped", |i, all| all[(i + 1) % all.len()].clone());
}

/// A directory the process cannot write to. Permission bits do not bind root (CI runs as
/// root), so there the cache directory is put below a regular file, which no one can create
/// directories in: the same "cannot write" the cache must survive.
fn unwritable_dir(tag: &str) -> PathBuf {
    let d = fresh_dir(tag);
    std::fs::create_dir_all(d.join("ro")).unwrap();
    let ro = d.join("ro");
    let mut perms = std::fs::metadata(&ro).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o555);
    std::fs::set_permissions(&ro, perms).unwrap();
    if std::fs::write(ro.join("probe"), b"").is_err() {
        return ro;
    }
    let _ = std::fs::remove_file(ro.join("probe"));
    let file = d.join("a-file");
    std::fs::write(&file, b"").unwrap();
    file.join("cache")
}

#[test]
fn nvrtc_cli_cache_unwritable_directory_means_uncached_and_one_warning() {
    if !nvrtc_or_skip() {
        return;
    }
    let dir = unwritable_dir("readonly");
    let reference = uncached();
    let run = check(&dir);
    assert_same(&run, &reference, "unwritable cache");
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("module cache"))
        .collect();
    assert_eq!(warnings.len(), 1, "one warning for 4 files: {}", run.stderr);
    assert!(warnings[0].starts_with("warning: "), "{}", warnings[0]);
    assert!(
        warnings[0].contains("CUDACHECK_CACHE_DIR"),
        "{}",
        warnings[0]
    );
}

#[test]
fn nvrtc_cli_cache_read_only_cache_still_serves_its_entries() {
    if !nvrtc_or_skip() {
        return;
    }
    let dir = fresh_dir("serves");
    let reference = uncached();
    check(&dir);
    let v1 = dir.join("v1");
    let mut perms = std::fs::metadata(&v1).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o555);
    std::fs::set_permissions(&v1, perms.clone()).unwrap();
    let again = check(&dir);
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&v1, perms).unwrap();
    assert_same(&again, &reference, "read-only, warm");
    // Every module came from the cache: nothing needed storing, so nothing to warn about.
    assert!(!again.stderr.contains("warning"), "{}", again.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn nvrtc_cli_cache_changed_header_is_a_new_key_and_a_new_result() {
    if !nvrtc_or_skip() {
        return;
    }
    let dir = fresh_dir("header");
    let src = fresh_dir("header-src");
    std::fs::write(
        src.join("k.cu"),
        "#include \"inc/tile.cuh\"\n\
         extern \"C\" __global__ void k(float* out) { __shared__ float s[TILE]; \
         s[threadIdx.x % TILE] = 1.0f; __syncthreads(); out[threadIdx.x] = s[(threadIdx.x + 1) % TILE]; }\n",
    )
    .unwrap();
    std::fs::create_dir_all(src.join("inc")).unwrap();
    let header = src.join("inc/tile.cuh");
    let k = src.join("k.cu");
    let k = k.to_str().unwrap();
    let run = |dir: &Path| {
        cudacheck(
            &["check", "--arch", "sm_90", k],
            &[("CUDACHECK_CACHE_DIR", dir)],
        )
    };

    std::fs::write(&header, "#define TILE 64\n").unwrap();
    let small = run(&dir);
    assert!(
        small.stdout.contains("shared (static)  256 B"),
        "{}",
        small.stdout
    );
    std::fs::write(&header, "#define TILE 512\n").unwrap();
    let large = run(&dir);
    assert!(
        large.stdout.contains("shared (static)  2048 B"),
        "{}",
        large.stdout
    );
    assert_eq!(entry_files(&dir).len(), 2, "one entry per header content");
    // Back to the first content: the first entry answers, with the first result.
    std::fs::write(&header, "#define TILE 64\n").unwrap();
    assert_eq!(run(&dir).stdout, small.stdout);
    assert_eq!(entry_files(&dir).len(), 2);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&src);
}

#[test]
fn nvrtc_cli_cache_several_processes_fill_one_cache_at_once() {
    if !nvrtc_or_skip() {
        return;
    }
    let dir = fresh_dir("processes");
    let reference = uncached();
    let mut args = vec!["check", "--arch", "sm_90"];
    args.extend(FILES);
    // All four start before any is waited for.
    let spawned: Vec<_> = (0..4)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_cudacheck"))
                .args(&args)
                .current_dir(repo())
                .env_remove("CUDACHECK_CACHE")
                .env("CUDACHECK_CACHE_DIR", &dir)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("cudacheck starts")
        })
        .collect();
    for child in spawned {
        let out = child.wait_with_output().expect("cudacheck runs");
        assert_eq!(out.status.code(), Some(reference.code));
        assert_eq!(String::from_utf8_lossy(&out.stdout), reference.stdout);
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("warning"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(entry_files(&dir).len(), FILES.len());
    let warm = check(&dir);
    assert_same(&warm, &reference, "warm after the race");
    let _ = std::fs::remove_dir_all(&dir);
}

fn prefilled(tag: &str, n: u8) -> PathBuf {
    let dir = fresh_dir(tag);
    let cache = ModuleCache::at(&dir, 1 << 20);
    for i in 0..n {
        let key = Key::builder().variant(&[i]).build();
        cache.put(&key, &Entry::failed(format!("log {i}"))).unwrap();
    }
    dir
}

#[test]
fn cache_info_json_names_the_directory_and_counts_entries() {
    let dir = prefilled("info", 3);
    let run = cudacheck(
        &["cache", "info", "--json"],
        &[("CUDACHECK_CACHE_DIR", &dir)],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(v["dir"], dir.display().to_string());
    assert_eq!(v["entries"], 3);
    assert_eq!(v["enabled"], true);
    let bytes = v["bytes"].as_u64().unwrap();
    assert!(bytes > 3 * 84, "{bytes}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cache_without_subcommand_is_info_in_words() {
    let dir = prefilled("words", 2);
    let run = cudacheck(&["cache"], &[("CUDACHECK_CACHE_DIR", &dir)]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains(&dir.display().to_string()),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("entries: 2"), "{}", run.stdout);
    assert!(run.stdout.contains("status:  on"), "{}", run.stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cache_clear_removes_every_entry() {
    let dir = prefilled("clear", 3);
    // A file of the user's own in the directory is left alone.
    std::fs::write(dir.join("notes.txt"), b"mine").unwrap();
    let run = cudacheck(&["cache", "clear"], &[("CUDACHECK_CACHE_DIR", &dir)]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("removed 3 entries"), "{}", run.stdout);
    assert!(entry_files(&dir).is_empty());
    assert!(dir.join("notes.txt").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cache_info_says_when_the_cache_is_off() {
    let dir = fresh_dir("off");
    let run = cudacheck(
        &["cache", "info", "--json"],
        &[
            ("CUDACHECK_CACHE_DIR", &dir),
            ("CUDACHECK_CACHE", Path::new("0")),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(v["enabled"], false);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cache_bad_size_setting_is_an_error_saying_how_to_write_it() {
    let dir = fresh_dir("badsize");
    let run = cudacheck(
        &["cache", "info"],
        &[
            ("CUDACHECK_CACHE_DIR", &dir),
            ("CUDACHECK_CACHE_MAX_BYTES", Path::new("1G")),
        ],
    );
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("CUDACHECK_CACHE_MAX_BYTES"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("whole number"), "{}", run.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn nvrtc_cli_cache_parallel_check_prints_the_sequential_output() {
    if !nvrtc_or_skip() {
        return;
    }
    let off = [("CUDACHECK_CACHE", Path::new("0"))];
    let args = |jobs: &'static str| {
        [
            "check",
            "--arch",
            "sm_90",
            "-j",
            jobs,
            "kernels",
            "cudacheck-cli/tests/data",
        ]
    };
    let sequential = cudacheck(&args("1"), &off);
    let parallel = cudacheck(&args("4"), &off);
    assert_same(&parallel, &sequential, "-j 4 against -j 1");
    assert!(
        sequential.stdout.contains("summary: "),
        "{}",
        sequential.stdout
    );
    // Not a terminal: no progress bar, nothing at all on stderr.
    assert_eq!(parallel.stderr, "");
}
