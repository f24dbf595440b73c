//! The fuzz targets' properties (`fuzz.rs`) on every truncation and on a few thousand fixed
//! random mutations of the fixtures in tests/data, so that CI keeps checking them without
//! nightly. A failure names the fixture and the cut or the round; the mutation is then
//! reproduced by running the test again (the stream of numbers is fixed).

use std::path::Path;

use super::elf::Elf;
use super::fuzz::{check_nv_info, check_ptxas, check_read_cubin};

/// xorshift64: a fixed, reproducible stream of numbers, with no dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }

    /// Replaces, removes or inserts a byte, one to four times; new bytes come from `alphabet`.
    fn mutate(&mut self, bytes: &mut Vec<u8>, alphabet: &[u8]) {
        for _ in 0..1 + self.below(4) {
            let at = self.below(bytes.len());
            let byte = alphabet[self.below(alphabet.len())];
            match self.below(3) {
                0 if at < bytes.len() => bytes[at] = byte,
                1 if at < bytes.len() => drop(bytes.remove(at)),
                _ => bytes.insert(at, byte),
            }
        }
    }
}

/// Every file of tests/data ending in `suffix`, as (name, contents).
fn fixtures(suffix: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().ends_with(suffix))
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect();
    out.sort();
    assert_eq!(out.len(), 7, "{suffix} fixtures");
    out
}

/// The `.nv.info` and `.nv.info.<kernel>` sections of every CUBIN fixture.
fn nv_info_sections() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for (file, bytes) in fixtures(".cubin") {
        let elf = Elf::parse(&bytes).unwrap();
        for s in &elf.sections {
            if s.name == ".nv.info" || s.name.starts_with(".nv.info.") {
                out.push((format!("{file} {}", s.name), elf.data(s).to_vec()));
            }
        }
    }
    assert!(out.len() >= 20, "{} sections", out.len());
    out
}

#[test]
fn random_mutations_of_every_cubin_fixture_are_read_or_rejected() {
    // Whole-value writes rather than single bytes, half of them into the headers at the end
    // of the file (sections, program headers) where a count or an offset decides what is read,
    // and the values that break readers: 0, 1, all ones, the file's length and one less.
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut rejected = 0;
    for (file, bytes) in fixtures(".cubin") {
        let shoff = u64::from_le_bytes(bytes[40..48].try_into().unwrap()) as usize;
        for round in 0..600 {
            let mut b = bytes.clone();
            for _ in 0..1 + rng.below(4) {
                let at = match rng.below(2) {
                    0 => shoff + rng.below(b.len() - shoff),
                    _ => rng.below(b.len()),
                };
                let len = b.len() as u64;
                let value = [0, 1, 0xff, len, len - 1, u64::MAX][rng.below(6)];
                let width = [1, 2, 4, 8][rng.below(4)].min(b.len() - at);
                b[at..at + width].copy_from_slice(&value.to_le_bytes()[..width]);
            }
            if let Err(why) = check_read_cubin(&b) {
                panic!("{file} round {round}: {why}");
            }
            rejected += usize::from(super::read_cubin(&b).is_err());
        }
    }
    assert!(
        rejected > 600,
        "only {rejected} of 3600 mutants were rejected"
    );
}

#[test]
fn every_truncation_of_every_nv_info_section_is_framed_or_fails_at_a_record() {
    for (at, data) in nv_info_sections() {
        for cut in 0..=data.len() {
            if let Err(why) = check_nv_info(&data[..cut]) {
                panic!("{at} cut at {cut}: {why}");
            }
        }
    }
}

#[test]
fn random_mutations_of_every_nv_info_section_are_framed_or_fail_at_a_record() {
    // Inserted bytes are the four format bytes, and lengths and attributes records use.
    const BYTES: &[u8] = &[0x01, 0x02, 0x03, 0x04, 0x00, 0x0c, 0xff, 0x17];
    let mut rng = Rng(0x853c_49e6_748f_ea9b);
    let mut failed = 0;
    for (at, data) in nv_info_sections() {
        for round in 0..300 {
            let mut b = data.clone();
            rng.mutate(&mut b, BYTES);
            if let Err(why) = check_nv_info(&b) {
                panic!("{at} round {round}: {why}");
            }
            failed += usize::from(super::nvinfo::records(&b).is_err());
        }
    }
    assert!(failed > 100, "only {failed} mutants failed to frame");
}

#[test]
fn every_truncation_of_every_ptxas_log_is_read_or_an_error() {
    for (file, bytes) in fixtures(".ptxas.txt") {
        let log = String::from_utf8(bytes).unwrap();
        for cut in (0..=log.len()).filter(|&c| log.is_char_boundary(c)) {
            if let Err(why) = check_ptxas(&log[..cut]) {
                panic!("{file} cut at {cut}: {why}");
            }
        }
    }
}

#[test]
fn random_mutations_of_every_ptxas_log_are_read_or_an_error() {
    // Inserted bytes are what the grammar reads, and one that is not UTF-8.
    const GRAMMAR: &[u8] = b"'0123456789 ,.:[]\nUsedbytes\xff";
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut kernels = 0;
    for (file, bytes) in fixtures(".ptxas.txt") {
        for round in 0..500 {
            let mut b = bytes.clone();
            rng.mutate(&mut b, GRAMMAR);
            let log = String::from_utf8_lossy(&b);
            if let Err(why) = check_ptxas(&log) {
                panic!("{file} round {round}: {why}");
            }
            kernels += super::parse_ptxas_info(&log).map_or(0, |k| k.len());
        }
    }
    assert!(kernels > 1000, "the mutants held only {kernels} kernels");
}
