// cudacheck compatibility header: <cub/cub.cuh> for NVRTC. CUB's umbrella header also pulls in
// the device-wide algorithms (cub::DeviceReduce, cub::DeviceScan, ...), which are host code that
// launches kernels through Thrust's launcher: NVRTC rejects those host functions, so a kernel
// file that includes the umbrella for cub::BlockLoad cannot compile. Device code can use the
// block-, warp- and thread-level parts and the iterators; this header includes exactly those.
// The device-wide calls live in the file's host code, which cudacheck sets aside.
#ifndef CUDACHECK_COMPAT_CUB_CUB_CUH
#define CUDACHECK_COMPAT_CUB_CUB_CUH

#include <cub/config.cuh>

// First, the two that include CUB's iterators: CUB 2.3 (CUDA 12.4) has those include Thrust's
// iterator_facade, whose host functions NVRTC rejects, whenever THRUST_VERSION is defined, and
// block_histogram and the radix sorts include Thrust's config, which defines it.
#include <cub/block/block_load.cuh>
#include <cub/warp/warp_load.cuh>

#include <cub/block/block_adjacent_difference.cuh>
#include <cub/block/block_discontinuity.cuh>
#include <cub/block/block_exchange.cuh>
#include <cub/block/block_histogram.cuh>
#include <cub/block/block_merge_sort.cuh>
#include <cub/block/block_radix_rank.cuh>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>

#include <cub/thread/thread_load.cuh>
#include <cub/thread/thread_operators.cuh>
#include <cub/thread/thread_reduce.cuh>
#include <cub/thread/thread_scan.cuh>
#include <cub/thread/thread_store.cuh>

#include <cub/warp/warp_exchange.cuh>
#include <cub/warp/warp_merge_sort.cuh>
#include <cub/warp/warp_reduce.cuh>
#include <cub/warp/warp_scan.cuh>
#include <cub/warp/warp_store.cuh>

#include <cub/util_ptx.cuh>
#include <cub/util_type.cuh>

#endif // CUDACHECK_COMPAT_CUB_CUB_CUH
