#include "kernels/avx2/avx2_kernels.h"

#define MINFER_SIMD_KERNEL_NAMESPACE avx2
#include "kernels/simd_table_impl.h"
#undef MINFER_SIMD_KERNEL_NAMESPACE

namespace minfer::kernels {

constinit const KernelTable avx2_table = avx2::make_table(Isa::kAvx2, "avx2");

}  // namespace minfer::kernels
