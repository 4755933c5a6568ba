// ARMv8.2 dotprod matmul tiles for every quantized weight type: the kinds of
// kernels/quant_tile_impl.h on the 4-lane policy DotprodVec (neon_quant_vec.h, sdot). Compiled
// with -march=armv8.2-a+dotprod (src/CMakeLists.txt): called only through dotprod_table after
// dispatch has checked the CPU. Bit-identical to the reference tiles.

// Separate multiplies and adds, as the reference.
#pragma GCC optimize("fp-contract=off")

#include "kernels/arm64/dotprod_kernels.h"
#include "kernels/arm64/neon_quant_vec.h"
#include "kernels/quant_tile_impl.h"

namespace minfer::kernels::dotprod {

#define MINFER_ARM64_VEC ::minfer::kernels::arm64::DotprodVec
#include "kernels/arm64/arm64_quant_tiles.h"
#undef MINFER_ARM64_VEC

}  // namespace minfer::kernels::dotprod
