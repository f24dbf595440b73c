//! A bounds-checked build as the cache keeps it.
//!
//! A checked build is NVRTC's PTX of the module, rewritten by the instrumenter for one launch
//! shape and assembled by nvJitLink (ptxas): the PTX is a module entry of its own, but the
//! rewrite and the assembly (a few hundred milliseconds) are what a debug build's first
//! launch of each shape waits for. This entry keeps their result under a key derived from the
//! module's ([`KeyBuilder::checked_from`](super::KeyBuilder)), the shape, the kernel, the
//! instrumenter's code and nvJitLink's identity: the assembled CUBIN and the kernel's site
//! table, which a fault report is named through. The site table is stored as JSON (serde);
//! the framing, checksum and key are the module entries' (`entry.rs`), so a damaged file is a
//! miss and is rebuilt.

use cudacheck_core::instrument::InstrumentedKernel;

use super::entry::{put_bytes, EntryError, Frame, Reader};
use super::Key;

const FRAME: Frame = Frame {
    magic: b"CUDACHB\x01",
    // 2: the instrumented PTX is kept beside the CUBIN.
    version: 2,
};

/// What a checked launch needs: the instrumented PTX (which a launch hands the driver's JIT,
/// see `cudacheck`'s `build.rs`), the CUBIN nvJitLink assembled from it, the kernel's symbol
/// and site table, and NVRTC's log of the compile it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckedBuild {
    pub ptx: String,
    pub cubin: Vec<u8>,
    pub symbol: String,
    pub log: String,
    pub sites: InstrumentedKernel,
}

impl CheckedBuild {
    pub fn encode(&self, key: &Key) -> Vec<u8> {
        let sites = serde_json::to_vec(&self.sites).expect("a site table serializes");
        let mut p = Vec::with_capacity(
            self.ptx.len() + self.cubin.len() + sites.len() + self.log.len() + 64,
        );
        put_bytes(&mut p, self.ptx.as_bytes());
        put_bytes(&mut p, &self.cubin);
        put_bytes(&mut p, self.symbol.as_bytes());
        put_bytes(&mut p, self.log.as_bytes());
        put_bytes(&mut p, &sites);
        FRAME.seal(key, &p)
    }

    /// # Errors
    /// [`EntryError`] for a file that is not `key`'s checked build, whole and undamaged.
    pub fn decode(bytes: &[u8], key: &Key) -> Result<Self, EntryError> {
        let mut r = Reader(FRAME.open(bytes, key)?);
        let ptx = r.string()?;
        let cubin = r.bytes()?.to_vec();
        let symbol = r.string()?;
        let log = r.string()?;
        let sites = serde_json::from_slice(r.bytes()?).map_err(|_| EntryError::Malformed)?;
        if !r.0.is_empty() {
            return Err(EntryError::Malformed);
        }
        Ok(CheckedBuild {
            ptx,
            cubin,
            symbol,
            log,
            sites,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::key::KeyBuilder;
    use cudacheck_core::instrument::instrument_ptx;

    const PTX: &str = r#"
.version 9.0
.target sm_90
.address_size 64
.visible .entry scale(.param .u64 scale_param_0, .param .u32 scale_param_1)
{
    .reg .b32 %r<3>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [scale_param_0];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.f32 %f1, [%rd4];
    add.f32 %f2, %f1, %f1;
    st.global.f32 [%rd4], %f2;
    ret;
}
"#;

    fn sample() -> CheckedBuild {
        let inst = instrument_ptx(PTX).unwrap();
        CheckedBuild {
            ptx: PTX.to_string(),
            cubin: b"\x7fELF checked".to_vec(),
            symbol: "scale".into(),
            log: "ptxas info".into(),
            sites: inst.kernels[0].clone(),
        }
    }

    #[test]
    fn a_checked_build_round_trips_with_its_site_table() {
        let k = KeyBuilder::new().variant(b"checked").build();
        let b = sample();
        assert_eq!(b.sites.sites.len(), 2);
        assert_eq!(CheckedBuild::decode(&b.encode(&k), &k), Ok(b));
    }

    #[test]
    fn a_damaged_checked_build_is_refused() {
        let k = KeyBuilder::new().variant(b"checked").build();
        let mut bytes = sample().encode(&k);
        let at = bytes.len() - 3;
        bytes[at] ^= 4;
        assert_eq!(CheckedBuild::decode(&bytes, &k), Err(EntryError::Checksum));
        let module = crate::cache::Entry::failed(String::new()).encode(&k);
        assert_eq!(
            CheckedBuild::decode(&module, &k),
            Err(EntryError::NotAnEntry),
            "a module entry is not a checked build"
        );
    }
}
