#include "kernels/avx512/avx512_kernels.h"

#define MINFER_SIMD_KERNEL_NAMESPACE avx512
#include "kernels/simd_table_impl.h"
#undef MINFER_SIMD_KERNEL_NAMESPACE

namespace minfer::kernels {

constinit const KernelTable avx512_table = avx512::make_table(Isa::kAvx512, "avx512");

}  // namespace minfer::kernels
