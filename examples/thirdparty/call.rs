//! One kernel launch as data: the grid, the block, and the arguments in order, buffers with the
//! host contents they start from. A [`Call`] uploads fresh buffers for every launch, so the
//! plain and the bounds-checked launch of a differential start from the same bytes.

use std::sync::Arc;

use cudacheck::cudarc::driver::{CudaSlice, CudaStream, DeviceRepr};
use cudacheck::{Error, Kernel, Launch};
use half::{bf16, f16};

/// Host contents of one buffer, typed: the element type is what a fault's index is counted in.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    F32(Vec<f32>),
    F64(Vec<f64>),
    F16(Vec<f16>),
    Bf16(Vec<bf16>),
    U8(Vec<u8>),
    U32(Vec<u32>),
    I64(Vec<i64>),
    U64(Vec<u64>),
}

/// The element types of [`Data`], for poisoned outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    F32,
    F64,
    F16,
    Bf16,
    U8,
    U32,
}

impl Data {
    /// `n` elements of `ty` whose every byte is 0xFF (a NaN for the float types): what a kernel
    /// did not write is still recognisable after it ran.
    pub fn poison(ty: Ty, n: usize) -> Data {
        match ty {
            Ty::F32 => Data::F32(vec![f32::from_bits(u32::MAX); n]),
            Ty::F64 => Data::F64(vec![f64::from_bits(u64::MAX); n]),
            Ty::F16 => Data::F16(vec![f16::from_bits(u16::MAX); n]),
            Ty::Bf16 => Data::Bf16(vec![bf16::from_bits(u16::MAX); n]),
            Ty::U8 => Data::U8(vec![u8::MAX; n]),
            Ty::U32 => Data::U32(vec![u32::MAX; n]),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Data::F32(v) => v.len(),
            Data::F64(v) => v.len(),
            Data::F16(v) => v.len(),
            Data::Bf16(v) => v.len(),
            Data::U8(v) => v.len(),
            Data::U32(v) => v.len(),
            Data::I64(v) => v.len(),
            Data::U64(v) => v.len(),
        }
    }

    pub fn elem_bytes(&self) -> usize {
        match self {
            Data::F32(_) | Data::U32(_) => 4,
            Data::F64(_) | Data::I64(_) | Data::U64(_) => 8,
            Data::F16(_) | Data::Bf16(_) => 2,
            Data::U8(_) => 1,
        }
    }

    /// The bytes, little-endian: what the differential compares.
    pub fn to_bytes(&self) -> Vec<u8> {
        fn flat<const N: usize, T>(v: &[T], f: impl Fn(&T) -> [u8; N]) -> Vec<u8> {
            v.iter().flat_map(f).collect()
        }
        match self {
            Data::F32(v) => flat(v, |x| x.to_bits().to_le_bytes()),
            Data::F64(v) => flat(v, |x| x.to_bits().to_le_bytes()),
            Data::F16(v) => flat(v, |x| x.to_bits().to_le_bytes()),
            Data::Bf16(v) => flat(v, |x| x.to_bits().to_le_bytes()),
            Data::U8(v) => v.clone(),
            Data::U32(v) => flat(v, |x| x.to_le_bytes()),
            Data::I64(v) => flat(v, |x| x.to_le_bytes()),
            Data::U64(v) => flat(v, |x| x.to_le_bytes()),
        }
    }

    /// How many elements still have every byte 0xFF (were not written over the poison).
    pub fn poisoned(&self) -> usize {
        self.to_bytes()
            .chunks(self.elem_bytes())
            .filter(|e| e.iter().all(|&b| b == 0xFF))
            .count()
    }
}

/// A value passed by value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// `size_t`, `uint64_t`.
    U64(u64),
    I64(i64),
    I32(i32),
    U32(u32),
    F32(f32),
    F64(f64),
    F16(f16),
}

/// How the kernel uses a buffer argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Read only.
    In,
    /// Written; starts poisoned (every byte 0xFF); read back and compared.
    Out,
    /// Read and written (`out[i] += ...`); starts from the given contents; read back and
    /// compared.
    InOut,
}

/// One argument, in the kernel's parameter order.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Buf(Role, Data),
    /// A null pointer: what candle passes as `info` for a contiguous layout.
    Null,
    Val(Scalar),
}

impl Arg {
    pub fn input(d: Data) -> Arg {
        Arg::Buf(Role::In, d)
    }
    pub fn output(ty: Ty, n: usize) -> Arg {
        Arg::Buf(Role::Out, Data::poison(ty, n))
    }
    pub fn in_out(d: Data) -> Arg {
        Arg::Buf(Role::InOut, d)
    }
    /// `size_t`.
    pub fn size(v: usize) -> Arg {
        Arg::Val(Scalar::U64(v as u64))
    }
    pub fn i32(v: i32) -> Arg {
        Arg::Val(Scalar::I32(v))
    }
    pub fn u32(v: u32) -> Arg {
        Arg::Val(Scalar::U32(v))
    }
    pub fn f32(v: f32) -> Arg {
        Arg::Val(Scalar::F32(v))
    }
    /// A candle `info` array (`size_t` dims, then strides, ...), as a device buffer.
    pub fn info(words: &[usize]) -> Arg {
        Arg::input(Data::U64(words.iter().map(|&w| w as u64).collect()))
    }
}

/// A launch: configuration and arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared: u32,
    pub args: Vec<Arg>,
}

/// cudarc's `LaunchConfig::for_num_elems`, which candle's host code uses for its elementwise
/// kernels: blocks of 1024 threads, as many as `n` needs.
pub fn for_num_elems(n: usize) -> ((u32, u32, u32), (u32, u32, u32)) {
    ((n.div_ceil(1024) as u32, 1, 1), (1024, 1, 1))
}

impl Call {
    pub fn new(cfg: ((u32, u32, u32), (u32, u32, u32)), args: Vec<Arg>) -> Call {
        Call {
            grid: cfg.0,
            block: cfg.1,
            shared: 0,
            args,
        }
    }

    pub fn shared(mut self, bytes: u32) -> Call {
        self.shared = bytes;
        self
    }

    /// The same launch with argument `i` replaced: how a planted bug is made from a healthy
    /// launch.
    pub fn with(mut self, i: usize, a: Arg) -> Call {
        self.args[i] = a;
        self
    }

    pub fn grid(mut self, g: (u32, u32, u32)) -> Call {
        self.grid = g;
        self
    }

    /// Per argument: the length in elements of a buffer, `None` for a value or a null pointer.
    pub fn buffer_lens(&self) -> Vec<Option<u64>> {
        self.args
            .iter()
            .map(|a| match a {
                Arg::Buf(_, d) => Some(d.len() as u64),
                _ => None,
            })
            .collect()
    }

    /// The buffers the kernel writes, in argument order, as they start.
    pub fn outputs(&self) -> Vec<&Data> {
        self.args
            .iter()
            .filter_map(|a| match a {
                Arg::Buf(Role::Out | Role::InOut, d) => Some(d),
                _ => None,
            })
            .collect()
    }

    /// Uploads the buffers, launches (bounds-checked when `checked`), and returns the written
    /// buffers as they are afterwards.
    ///
    /// # Safety
    ///
    /// A plain launch (`checked == false`) must stay inside its buffers: the healthy calls of
    /// `cases.rs` size every buffer the way the kernel's owners do (see there). A planted bug is
    /// only ever launched bounds-checked, where an out-of-bounds access is skipped.
    pub unsafe fn run(
        &self,
        k: &Kernel,
        s: &Arc<CudaStream>,
        checked: bool,
    ) -> Result<Vec<Data>, Error> {
        let mut devs = Vec::with_capacity(self.args.len());
        for a in &self.args {
            devs.push(match a {
                Arg::Buf(_, d) => Some(Dev::upload(s, d)?),
                Arg::Null | Arg::Val(_) => None,
            });
        }
        let mut l = k.launch(s);
        l.grid(self.grid)
            .block(self.block)
            .shared_bytes(self.shared)
            .instrument(checked);
        for (a, d) in self.args.iter().zip(devs.iter_mut()) {
            match (a, d) {
                (Arg::Val(v), _) => v.push(&mut l),
                (Arg::Null, _) => {
                    l.arg(&NULL);
                }
                (Arg::Buf(Role::In, _), Some(d)) => d.push(&mut l),
                (Arg::Buf(_, _), Some(d)) => d.push_mut(&mut l),
                (Arg::Buf(_, _), None) => unreachable!("every buffer was uploaded"),
            }
        }
        // SAFETY: the caller's promise (see `# Safety`).
        unsafe { l.run() }?;
        // Records cudarc's ordering events and ends the borrows of the buffers.
        drop(l);
        let mut out = Vec::new();
        for (a, d) in self.args.iter().zip(&devs) {
            if let (Arg::Buf(Role::Out | Role::InOut, _), Some(d)) = (a, d) {
                out.push(d.download(s)?);
            }
        }
        Ok(out)
    }
}

/// A null device pointer, passed as the 8-byte value it is.
static NULL: u64 = 0;

impl Scalar {
    fn push<'a>(&'a self, l: &mut Launch<'a>) {
        match self {
            Scalar::U64(v) => {
                l.arg(v);
            }
            Scalar::I64(v) => {
                l.arg(v);
            }
            Scalar::I32(v) => {
                l.arg(v);
            }
            Scalar::U32(v) => {
                l.arg(v);
            }
            Scalar::F32(v) => {
                l.arg(v);
            }
            Scalar::F64(v) => {
                l.arg(v);
            }
            Scalar::F16(v) => {
                l.arg(v);
            }
        }
    }
}

/// A buffer on the device.
enum Dev {
    F32(CudaSlice<f32>),
    F64(CudaSlice<f64>),
    F16(CudaSlice<f16>),
    Bf16(CudaSlice<bf16>),
    U8(CudaSlice<u8>),
    U32(CudaSlice<u32>),
    I64(CudaSlice<i64>),
    U64(CudaSlice<u64>),
}

fn up<T: DeviceRepr>(s: &Arc<CudaStream>, v: &[T]) -> Result<CudaSlice<T>, Error> {
    cudacheck::alloc_copy(s, v)
}

fn down<T: DeviceRepr + Default + Clone>(
    s: &Arc<CudaStream>,
    d: &CudaSlice<T>,
) -> Result<Vec<T>, Error> {
    s.clone_dtoh(d)
        .map_err(|e| Error::from(cudacheck::DriverError::from_cudarc("cuMemcpyDtoH", e)))
}

impl Dev {
    fn upload(s: &Arc<CudaStream>, d: &Data) -> Result<Dev, Error> {
        Ok(match d {
            Data::F32(v) => Dev::F32(up(s, v)?),
            Data::F64(v) => Dev::F64(up(s, v)?),
            Data::F16(v) => Dev::F16(up(s, v)?),
            Data::Bf16(v) => Dev::Bf16(up(s, v)?),
            Data::U8(v) => Dev::U8(up(s, v)?),
            Data::U32(v) => Dev::U32(up(s, v)?),
            Data::I64(v) => Dev::I64(up(s, v)?),
            Data::U64(v) => Dev::U64(up(s, v)?),
        })
    }

    fn download(&self, s: &Arc<CudaStream>) -> Result<Data, Error> {
        Ok(match self {
            Dev::F32(d) => Data::F32(down(s, d)?),
            Dev::F64(d) => Data::F64(down(s, d)?),
            Dev::F16(d) => Data::F16(down(s, d)?),
            Dev::Bf16(d) => Data::Bf16(down(s, d)?),
            Dev::U8(d) => Data::U8(down(s, d)?),
            Dev::U32(d) => Data::U32(down(s, d)?),
            Dev::I64(d) => Data::I64(down(s, d)?),
            Dev::U64(d) => Data::U64(down(s, d)?),
        })
    }

    fn push<'a>(&'a self, l: &mut Launch<'a>) {
        match self {
            Dev::F32(d) => {
                l.arg(d);
            }
            Dev::F64(d) => {
                l.arg(d);
            }
            Dev::F16(d) => {
                l.arg(d);
            }
            Dev::Bf16(d) => {
                l.arg(d);
            }
            Dev::U8(d) => {
                l.arg(d);
            }
            Dev::U32(d) => {
                l.arg(d);
            }
            Dev::I64(d) => {
                l.arg(d);
            }
            Dev::U64(d) => {
                l.arg(d);
            }
        }
    }

    fn push_mut<'a>(&'a mut self, l: &mut Launch<'a>) {
        match self {
            Dev::F32(d) => {
                l.arg_mut(d);
            }
            Dev::F64(d) => {
                l.arg_mut(d);
            }
            Dev::F16(d) => {
                l.arg_mut(d);
            }
            Dev::Bf16(d) => {
                l.arg_mut(d);
            }
            Dev::U8(d) => {
                l.arg_mut(d);
            }
            Dev::U32(d) => {
                l.arg_mut(d);
            }
            Dev::I64(d) => {
                l.arg_mut(d);
            }
            Dev::U64(d) => {
                l.arg_mut(d);
            }
        }
    }
}
