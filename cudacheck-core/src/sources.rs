//! The texts of the source files whose output caches keep (`build.rs` lists them from their
//! directories): a cache key holds a digest of the code that made the entry, so a build stored
//! by one version of that code never answers for another.
//!
//! - `INSTRUMENT`: every file of `instrument/` (the bounds-checking rewrite) and of `site/` (what
//!   the three rewrites share: source places, names, the record block's layout, the tables).
//! - `RACE`: every file of `race/` (the race-checking rewrite and its interval analysis).
//! - `INIT`: every file of `init/` (the init-checking rewrite and its shadow layout).
//! - `IR`: every file of `ir/` (the PTX reader and editor both rewrites stand on).
//! - `TEXT`: every file of `text/` (the CUDA text layer: lexing, directives, macros, includes).
//! - `TRANSFORM`: every file of `source/host/` and `source/macros.rs` (the host-code transform
//!   applied before NVRTC sees a file).
//!
//! Subdirectories are included (`instrument/guard/`). Files named `tests.rs` are left out:
//! they change no output.

include!(concat!(env!("OUT_DIR"), "/sources.rs"));

#[cfg(test)]
mod tests {
    use super::*;

    /// Each list holds every file of its directory: the race checker's interval analysis,
    /// which decides which checks are dropped, once missing from the hand-kept list, is in.
    #[test]
    fn each_list_holds_every_file_of_its_directory() {
        assert!(RACE.contains(&include_str!("race/intervals.rs")));
        assert!(!RACE.contains(&include_str!("race/tests.rs")));
        assert!(TRANSFORM.contains(&include_str!("source/macros.rs")));
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        fn count_in(dir: &std::path::Path) -> usize {
            std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .map(|p| {
                    if p.is_dir() {
                        count_in(&p)
                    } else {
                        usize::from(
                            p.extension().is_some_and(|e| e == "rs") && !p.ends_with("tests.rs"),
                        )
                    }
                })
                .sum()
        }
        let count = |dir: &str| count_in(&src.join(dir));
        // A module split into a directory is in by its every file.
        assert!(INSTRUMENT.contains(&include_str!("instrument/guard/facts.rs")));
        assert!(!INSTRUMENT.contains(&include_str!("instrument/guard/tests.rs")));
        assert_eq!(RACE.len(), count("race"));
        // The shared layer under the three rewrites keys every checked build with them.
        assert!(INSTRUMENT.contains(&include_str!("site/names.rs")));
        assert_eq!(INSTRUMENT.len(), count("instrument") + count("site"));
        assert_eq!(INIT.len(), count("init"));
        assert_eq!(IR.len(), count("ir"));
        assert_eq!(TEXT.len(), count("text"));
        assert_eq!(TRANSFORM.len(), count("source/host") + 1);
    }
}
