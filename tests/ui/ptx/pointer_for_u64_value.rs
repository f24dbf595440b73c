use cudacheck::checked_kernel;
use cudacheck::cudarc::driver::CudaSlice;

// `n` is a 64-bit count the kernel only compares: same size as a pointer, but a value.
#[checked_kernel(
    ptx = r#"
.version 8.0
.target sm_80
.address_size 64
.visible .entry fill(.param .u64 out, .param .u64 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<2>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [n];
    mov.u32 %r1, %tid.x;
    cvt.u64.u32 %rd3, %r1;
    setp.ge.u64 %p1, %rd3, %rd2;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd4, %rd1;
    shl.b64 %rd5, %rd3, 2;
    add.s64 %rd4, %rd4, %rd5;
    st.global.u32 [%rd4], %r1;
DONE:
    ret;
}
"#,
    block = 256
)]
pub fn fill(out: &mut CudaSlice<u32>, n: &CudaSlice<u64>);

fn main() {}
