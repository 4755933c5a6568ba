// Separate multiplies and adds, as the reference kernels: GCC (and clang within an expression)
// contract a * b + c to one fused multiply-add by default for C++ when FMA is enabled, which
// rounds once where the reference rounds twice. Include first in a SIMD kernel translation unit
// that must match the reference bit for bit: the pragmas hold to the end of the translation unit,
// so the tile headers included after this one are compiled under them too.
#pragma once

#if defined(__clang__)
#pragma clang fp contract(off)
#else
#pragma GCC optimize("fp-contract=off")
#endif
