//! GPU architectures named the way `nvcc` and NVRTC name them (`sm_90`, `compute_80`, ...).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// A compute capability, `major.minor`, such as 9.0 for Hopper (`sm_90`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Arch {
    pub major: u32,
    pub minor: u32,
}

/// The architectures cudacheck has a limits table for, oldest first.
pub const SUPPORTED_ARCHES: &[Arch] = &[
    Arch::new(7, 0),
    Arch::new(7, 2),
    Arch::new(7, 5),
    Arch::new(8, 0),
    Arch::new(8, 6),
    Arch::new(8, 7),
    Arch::new(8, 9),
    Arch::new(9, 0),
    Arch::new(10, 0),
    Arch::new(10, 1),
    Arch::new(10, 3),
    Arch::new(11, 0),
    Arch::new(12, 0),
    Arch::new(12, 1),
];

impl Arch {
    pub const fn new(major: u32, minor: u32) -> Self {
        Self { major, minor }
    }

    /// The `sm_XY` name NVRTC's `--gpu-architecture` takes for real machine code (CUBIN).
    pub fn sm_name(self) -> String {
        format!("sm_{}{}", self.major, self.minor)
    }

    /// The `compute_XY` name for the virtual architecture (PTX).
    pub fn compute_name(self) -> String {
        format!("compute_{}{}", self.major, self.minor)
    }

    /// Whether cudacheck has a limits table for this architecture.
    pub fn is_supported(self) -> bool {
        SUPPORTED_ARCHES.contains(&self)
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}{}", self.major, self.minor)
    }
}

/// A string that does not name an architecture cudacheck knows.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ArchParseError {
    #[error(
        "`{input}` is not an architecture name: write it as `sm_90`, `compute_90`, `90` or `9.0`"
    )]
    Malformed { input: String },
    #[error(
        "`{input}` is compute capability {arch_major}.{arch_minor}, which cudacheck has no limits \
         table for; supported: {supported}"
    )]
    Unsupported {
        input: String,
        arch_major: u32,
        arch_minor: u32,
        supported: String,
    },
}

/// The supported architectures as a comma-separated list of `sm_XY` names.
pub fn supported_list() -> String {
    SUPPORTED_ARCHES
        .iter()
        .map(|a| a.sm_name())
        .collect::<Vec<_>>()
        .join(", ")
}

impl FromStr for Arch {
    type Err = ArchParseError;

    /// Parses `sm_90`, `sm_90a`, `compute_90`, `90`, `9.0`. The `a`/`f` suffixes of
    /// architecture-specific targets are accepted and do not change the limits.
    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let malformed = || ArchParseError::Malformed {
            input: input.to_string(),
        };
        let s = input.trim().to_ascii_lowercase();
        let arch = if let Some((maj, min)) = s.split_once('.') {
            Arch::new(
                maj.parse().map_err(|_| malformed())?,
                min.parse().map_err(|_| malformed())?,
            )
        } else {
            let digits = s
                .strip_prefix("sm_")
                .or_else(|| s.strip_prefix("compute_"))
                .unwrap_or(&s);
            let digits = digits.trim_end_matches(['a', 'f']);
            if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(malformed());
            }
            let (maj, min) = digits.split_at(digits.len() - 1);
            Arch::new(
                maj.parse().map_err(|_| malformed())?,
                min.parse().map_err(|_| malformed())?,
            )
        };
        if !arch.is_supported() {
            return Err(ArchParseError::Unsupported {
                input: input.to_string(),
                arch_major: arch.major,
                arch_minor: arch.minor,
                supported: supported_list(),
            });
        }
        Ok(arch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_spelling() {
        for s in ["sm_90", "SM_90", "sm_90a", "compute_90", "90", "9.0"] {
            assert_eq!(s.parse::<Arch>().unwrap(), Arch::new(9, 0), "{s}");
        }
        assert_eq!("sm_120".parse::<Arch>().unwrap(), Arch::new(12, 0));
        assert_eq!("sm_100a".parse::<Arch>().unwrap(), Arch::new(10, 0));
    }

    #[test]
    fn rejects_garbage_with_the_accepted_forms() {
        let e = "hopper".parse::<Arch>().unwrap_err();
        assert!(matches!(e, ArchParseError::Malformed { .. }));
        assert!(e.to_string().contains("sm_90"), "{e}");
        assert!("sm_".parse::<Arch>().is_err());
        assert!("".parse::<Arch>().is_err());
    }

    #[test]
    fn rejects_unknown_arches_listing_the_known_ones() {
        let e = "sm_35".parse::<Arch>().unwrap_err();
        assert!(matches!(
            e,
            ArchParseError::Unsupported {
                arch_major: 3,
                arch_minor: 5,
                ..
            }
        ));
        assert!(e.to_string().contains("sm_70"), "{e}");
    }
}
