// ARMv8.0 NEON matmul tiles for every quantized weight type: the kinds of
// kernels/quant_tile_impl.h on the 4-lane policy NeonVec (neon_quant_vec.h). Bit-identical to
// the reference tiles (see quant_tile_impl.h for why).

// Separate multiplies and adds, as the reference.
#pragma GCC optimize("fp-contract=off")

#include "kernels/arm64/neon_kernels.h"
#include "kernels/arm64/neon_quant_vec.h"
#include "kernels/quant_tile_impl.h"

namespace minfer::kernels::neon {

#define MINFER_ARM64_VEC ::minfer::kernels::arm64::NeonVec
#include "kernels/arm64/arm64_quant_tiles.h"
#undef MINFER_ARM64_VEC

}  // namespace minfer::kernels::neon
