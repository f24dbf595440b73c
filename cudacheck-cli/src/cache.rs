//! `cudacheck cache`: where the module cache is, how big, and clearing it.

use std::process::ExitCode;

use cudacheck::cache::{CacheSettings, ModuleCache, ENV_DIR, ENV_ENABLE, ENV_MAX_BYTES};
use serde::Serialize;

use crate::args::{CacheAction, CacheArgs};

/// `cache info --json`.
#[derive(Debug, Serialize)]
struct Info {
    dir: String,
    enabled: bool,
    entries: u64,
    bytes: u64,
    max_bytes: u64,
}

pub fn run(args: &CacheArgs) -> ExitCode {
    // `clear` and `info` work on the directory even when CUDACHECK_CACHE=0 turns the cache
    // off: a person clearing it wants the files gone either way.
    let settings = match CacheSettings::from_env() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let cache = ModuleCache::at(&settings.dir, settings.max_bytes);
    match &args.action {
        None => info(&settings, &cache, args.json),
        Some(CacheAction::Info { json }) => info(&settings, &cache, *json || args.json),
        Some(CacheAction::Clear) => match cache.clear() {
            Ok(removed) => {
                println!(
                    "removed {} {} ({}) from {}",
                    removed.entries,
                    if removed.entries == 1 {
                        "entry"
                    } else {
                        "entries"
                    },
                    human_bytes(removed.bytes),
                    settings.dir.display()
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        },
    }
}

fn info(settings: &CacheSettings, cache: &ModuleCache, json: bool) -> ExitCode {
    let found = match cache.info() {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let info = Info {
        dir: settings.dir.display().to_string(),
        enabled: settings.enabled,
        entries: found.entries,
        bytes: found.bytes,
        max_bytes: found.max_bytes,
    };
    if json {
        match serde_json::to_string_pretty(&info) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("error: cannot write the cache info as JSON: {e}");
                return ExitCode::from(2);
            }
        }
        return ExitCode::SUCCESS;
    }
    let source = if std::env::var_os(ENV_DIR).is_some() {
        ENV_DIR
    } else {
        "the platform cache directory; set CUDACHECK_CACHE_DIR to move it"
    };
    println!("module cache: {} ({source})", info.dir);
    if info.enabled {
        println!("  status:  on ({ENV_ENABLE}=0 turns it off)");
    } else {
        println!(
            "  status:  off ({ENV_ENABLE}=0); `cudacheck check` and kernels compile every time"
        );
    }
    println!("  entries: {}", info.entries);
    println!(
        "  size:    {} of at most {} ({ENV_MAX_BYTES}); least recently used entries go first",
        human_bytes(info.bytes),
        human_bytes(info.max_bytes)
    );
    ExitCode::SUCCESS
}

/// `1536` -> `1.5 KiB`.
fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(1 << 30), "1.0 GiB");
    }
}
