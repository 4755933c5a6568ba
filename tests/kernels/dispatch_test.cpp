#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "kernel_test_util.h"
#include "kernels/dispatch.h"

namespace minfer::kernels {
namespace {

// The first line of /proc/cpuinfo that starts with `key` ("flags" on x86, "Features" on ARM64),
// as " name name … " (empty when there is none).
std::string cpuinfo_names(const char* key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line, names;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      // Built with append: GCC 12's -O3 -Wrestrict misfires on `" " + str + " "`.
      names.append(1, ' ').append(line, line.find(':') + 1).append(1, ' ');
      break;
    }
  }
  return names;
}

bool has_name(const std::string& names, const char* name) {
  return names.find(std::string(" ") + name + " ") != std::string::npos;
}

#if defined(__x86_64__)
TEST(CpuFeatures, AgreesWithProcCpuinfo) {
  const std::string flags = cpuinfo_names("flags");
  if (flags.empty()) GTEST_SKIP() << "no flags line in /proc/cpuinfo";
  auto has = [&flags](const char* name) { return has_name(flags, name); };
  // /proc/cpuinfo lists what the kernel enabled, which is what detection must report.
  const CpuFeatures& f = cpu_features();
  EXPECT_EQ(f.avx2 && f.os_saves_ymm, has("avx2"));
  EXPECT_EQ(f.fma && f.os_saves_ymm, has("fma"));
  EXPECT_EQ(f.avx512f && f.os_saves_zmm, has("avx512f"));
  EXPECT_EQ(f.avx512bw && f.os_saves_zmm, has("avx512bw"));
  EXPECT_EQ(f.avx512vnni && f.os_saves_zmm, has("avx512_vnni"));
  EXPECT_EQ(f.avxvnni && f.os_saves_ymm, has("avx_vnni"));
  // The kernel lists amx_tile / amx_int8 where it manages the tile state (XCR0 bits 17, 18).
  EXPECT_EQ(f.amx_tile && f.os_grants_amx, has("amx_tile"));
  EXPECT_EQ(f.amx_int8 && f.os_grants_amx, has("amx_int8"));
}

// AMX is named only where the OS grants the tile data; a CPU with AMX whose OS does not is
// named with the reason, so that an error refusing MINFER_FORCE_ISA=amx explains itself.
TEST(CpuFeatures, NamesAmxAndWhyItIsNotUsable) {
  CpuFeatures f;
  f.amx_tile = f.amx_int8 = true;
  EXPECT_NE(cpu_feature_names(f).find("amx-int8(not granted by the OS"), std::string::npos)
      << cpu_feature_names(f);
  f.os_grants_amx = true;
  EXPECT_EQ(cpu_feature_names(f), "amx-tile amx-int8");
}
#elif defined(__aarch64__)
// Under qemu-user /proc/cpuinfo is the build machine's (no "Features" line): skipped there.
TEST(CpuFeatures, AgreesWithProcCpuinfo) {
  const std::string features = cpuinfo_names("Features");
  if (features.empty()) GTEST_SKIP() << "no Features line in /proc/cpuinfo";
  const CpuFeatures& f = cpu_features();
  EXPECT_EQ(f.asimd, has_name(features, "asimd"));
  EXPECT_EQ(f.asimddp, has_name(features, "asimddp"));
  EXPECT_EQ(f.i8mm, has_name(features, "i8mm"));
}

// Every ARM64 Linux CPU has Advanced SIMD (the AArch64 ABI requires it); the names say so.
TEST(CpuFeatures, Arm64HasAdvancedSimd) {
  EXPECT_TRUE(cpu_features().asimd);
  EXPECT_NE(cpu_feature_names(cpu_features()).find("asimd"), std::string::npos);
  EXPECT_FALSE(cpu_features().can_run_avx2());
}
#endif

// The ARM64 capabilities are named like the x86 ones, on any build (the names are data).
TEST(CpuFeatures, NamesArm64Capabilities) {
  CpuFeatures f;
  EXPECT_EQ(cpu_feature_names(f), "none");
  f.asimd = f.asimddp = true;
  EXPECT_EQ(cpu_feature_names(f), "asimd asimddp");
  f.i8mm = true;
  EXPECT_EQ(cpu_feature_names(f), "asimd asimddp i8mm");
}

TEST(Dispatch, TablesNameTheirIsa) {
  EXPECT_STREQ(table_for(Isa::kRef).name, "ref");
  ASSERT_FALSE(compiled_isas().empty());
  EXPECT_EQ(compiled_isas()[0], Isa::kRef);
  for (Isa isa : compiled_isas()) {
    EXPECT_EQ(table_for(isa).isa, isa);
    EXPECT_TRUE(isa_compiled(isa));
  }
#if defined(__x86_64__)
  EXPECT_STREQ(table_for(Isa::kAvx2).name, "avx2");
  EXPECT_STREQ(table_for(Isa::kAvxVnni).name, "avxvnni");
  EXPECT_STREQ(table_for(Isa::kAvx512).name, "avx512");
  EXPECT_EQ(table_for(Isa::kAvx512).isa, Isa::kAvx512);
  EXPECT_STREQ(table_for(Isa::kAmx).name, "amx");
  EXPECT_EQ(table_for(Isa::kAmx).isa, Isa::kAmx);
#else
#if defined(__aarch64__)
  EXPECT_STREQ(table_for(Isa::kNeon).name, "neon");
  EXPECT_STREQ(table_for(Isa::kDotprod).name, "dotprod");
  EXPECT_EQ(table_for(Isa::kDotprod).isa, Isa::kDotprod);
  EXPECT_STREQ(table_for(Isa::kI8mm).name, "i8mm");
#endif
  // x86 tables are not built for other architectures, and no CPU features make them available.
  EXPECT_FALSE(isa_compiled(Isa::kAvx2));
  EXPECT_FALSE(isa_compiled(Isa::kAvxVnni));
  EXPECT_FALSE(isa_compiled(Isa::kAvx512));
  EXPECT_FALSE(isa_compiled(Isa::kAmx));
  CpuFeatures x86_like;
  x86_like.avx2 = x86_like.fma = x86_like.f16c = x86_like.os_saves_ymm = true;
  EXPECT_FALSE(isa_available(Isa::kAvx2, x86_like));
  EXPECT_EQ(best_isa(x86_like), Isa::kRef);
#endif
}

#if defined(__x86_64__)
TEST(Dispatch, EmptyNameSelectsBestAvailable) {
  CpuFeatures none;
  Result<const KernelTable*> ref = select_table("", none);
  ASSERT_TRUE(ref.is_ok());
  EXPECT_EQ((*ref)->isa, Isa::kRef);

  CpuFeatures avx2_only;
  avx2_only.avx2 = avx2_only.fma = avx2_only.f16c = avx2_only.os_saves_ymm = true;
  Result<const KernelTable*> avx2 = select_table("", avx2_only);
  ASSERT_TRUE(avx2.is_ok());
  EXPECT_EQ((*avx2)->isa, Isa::kAvx2);

  CpuFeatures vnni = avx2_only;
  vnni.avxvnni = true;
  Result<const KernelTable*> avxvnni = select_table("", vnni);
  ASSERT_TRUE(avxvnni.is_ok());
  EXPECT_EQ((*avxvnni)->isa, Isa::kAvxVnni);
  // AVX-VNNI without AVX2 (no such CPU, but the flags are separate) is not usable.
  vnni.avx2 = false;
  EXPECT_EQ(best_isa(vnni), Isa::kRef);

  CpuFeatures all = avx2_only;
  all.avx512f = all.avx512dq = all.avx512bw = all.avx512vl = all.avx512vnni = true;
  all.os_saves_zmm = true;
  Result<const KernelTable*> avx512 = select_table("", all);
  ASSERT_TRUE(avx512.is_ok());
  EXPECT_EQ((*avx512)->isa, Isa::kAvx512);
  // AVX-512 in the CPU but not enabled by the OS is not usable.
  all.os_saves_zmm = false;
  EXPECT_EQ(best_isa(all), Isa::kAvx2);
  // AVX-512 preferred to AVX-VNNI where both run.
  all.os_saves_zmm = true;
  all.avxvnni = true;
  EXPECT_EQ(best_isa(all), Isa::kAvx512);
  // AMX preferred to AVX-512 where the CPU has AMX-TILE and AMX-INT8 and the OS grants the
  // tile data; any of the three missing leaves avx512.
  all.amx_tile = all.amx_int8 = all.os_grants_amx = true;
  Result<const KernelTable*> amx = select_table("", all);
  ASSERT_TRUE(amx.is_ok());
  EXPECT_EQ((*amx)->isa, Isa::kAmx);
  for (bool CpuFeatures::*missing :
       {&CpuFeatures::amx_tile, &CpuFeatures::amx_int8, &CpuFeatures::os_grants_amx}) {
    CpuFeatures without = all;
    without.*missing = false;
    EXPECT_EQ(best_isa(without), Isa::kAvx512);
  }
  // AMX's table is avx512's with tiles: no AVX-512, no amx (AVX-VNNI is the best then).
  all.os_saves_zmm = false;
  EXPECT_EQ(best_isa(all), Isa::kAvxVnni);
}
#elif defined(__aarch64__)
TEST(Dispatch, EmptyNameSelectsBestAvailable) {
  CpuFeatures none;
  EXPECT_EQ(best_isa(none), Isa::kRef);
  CpuFeatures asimd_only;
  asimd_only.asimd = true;
  Result<const KernelTable*> neon = select_table("", asimd_only);
  ASSERT_TRUE(neon.is_ok());
  EXPECT_EQ((*neon)->isa, Isa::kNeon);
  CpuFeatures dotprod = asimd_only;
  dotprod.asimddp = true;
  Result<const KernelTable*> best = select_table("", dotprod);
  ASSERT_TRUE(best.is_ok());
  EXPECT_EQ((*best)->isa, Isa::kDotprod);
  CpuFeatures i8mm = dotprod;
  i8mm.i8mm = true;
  EXPECT_EQ(best_isa(i8mm), Isa::kI8mm);
  // i8mm's table uses dotprod's tiles too: i8mm alone is not enough.
  i8mm.asimddp = false;
  EXPECT_EQ(best_isa(i8mm), Isa::kNeon);
  // This CPU (qemu -cpu max has dotprod and i8mm, -cpu cortex-a53 neither: neon).
  const CpuFeatures& f = cpu_features();
  const Isa expected = !f.asimddp ? Isa::kNeon : (f.i8mm ? Isa::kI8mm : Isa::kDotprod);
  EXPECT_EQ(best_isa(f), expected);
}
#endif

TEST(Dispatch, ForcedNameSelectsIt) {
  Result<const KernelTable*> ref = select_table("ref", cpu_features());
  ASSERT_TRUE(ref.is_ok());
  EXPECT_EQ((*ref)->isa, Isa::kRef);
  for (const KernelTable* t : test::simd_tables()) {
    Result<const KernelTable*> forced = select_table(t->name, cpu_features());
    ASSERT_TRUE(forced.is_ok()) << forced.status().message();
    EXPECT_EQ(*forced, t);
  }
}

TEST(Dispatch, UnknownNameIsAnErrorNamingItAndTheCpu) {
  Result<const KernelTable*> r = select_table("avx1024", cpu_features());
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  const std::string& msg = r.status().message();
  EXPECT_NE(msg.find("avx1024"), std::string::npos) << msg;
#if defined(__x86_64__)
  EXPECT_NE(msg.find("ref, avx2, avxvnni, avx512, amx"), std::string::npos) << msg;
#elif defined(__aarch64__)
  EXPECT_NE(msg.find("ref, neon, dotprod, i8mm"), std::string::npos) << msg;
#else
  EXPECT_NE(msg.find("expected one of ref "), std::string::npos) << msg;
#endif
  EXPECT_NE(msg.find(cpu_feature_names(cpu_features())), std::string::npos) << msg;
  EXPECT_NE(msg.find("MINFER_FORCE_ISA='avx1024'"), std::string::npos) << msg;
  // The message names where the name came from.
  Result<const KernelTable*> option = select_table("avx1024", cpu_features(), "--isa");
  ASSERT_FALSE(option.is_ok());
  EXPECT_NE(option.status().message().find("--isa='avx1024'"), std::string::npos)
      << option.status().message();
}

#if defined(__x86_64__)
TEST(Dispatch, UnavailableIsaIsAnError) {
  CpuFeatures avx2_only;
  avx2_only.avx2 = avx2_only.fma = avx2_only.f16c = avx2_only.os_saves_ymm = true;
  Result<const KernelTable*> r = select_table("avx512", avx2_only);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(r.status().message().find("avx512"), std::string::npos);
  EXPECT_NE(r.status().message().find("avx2 fma f16c"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("best available: avx2"), std::string::npos);
}

// MINFER_FORCE_ISA=amx where the OS does not grant the tile data: refused, saying why.
TEST(Dispatch, AmxWithoutOsPermissionIsAnErrorSayingWhy) {
  CpuFeatures f;
  f.avx2 = f.fma = f.f16c = f.os_saves_ymm = true;
  f.avx512f = f.avx512dq = f.avx512bw = f.avx512vl = f.avx512vnni = f.os_saves_zmm = true;
  f.amx_tile = f.amx_int8 = true;
  Result<const KernelTable*> r = select_table("amx", f);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
  const std::string& msg = r.status().message();
  EXPECT_NE(msg.find("MINFER_FORCE_ISA=amx"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not granted by the OS"), std::string::npos) << msg;
  EXPECT_NE(msg.find("best available: avx512"), std::string::npos) << msg;
}
#else
#if defined(__aarch64__)
TEST(Dispatch, UnavailableIsaIsAnError) {
  CpuFeatures asimd_only;
  asimd_only.asimd = true;
  Result<const KernelTable*> r = select_table("dotprod", asimd_only);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(r.status().message().find("MINFER_FORCE_ISA=dotprod"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("best available: neon"), std::string::npos)
      << r.status().message();
}
#endif

// An x86 ISA named on another architecture is refused as no ISA of this build.
TEST(Dispatch, X86IsaOnOtherArchitectureIsAnError) {
  Result<const KernelTable*> r = select_table("avx2", cpu_features());
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("MINFER_FORCE_ISA='avx2'"), std::string::npos)
      << r.status().message();
}
#endif

// CI runs this suite once per MINFER_FORCE_ISA value; the active table must follow it.
TEST(Dispatch, ActiveTableFollowsForceIsa) {
  const char* forced = std::getenv("MINFER_FORCE_ISA");
  ASSERT_TRUE(init_kernels().is_ok()) << init_kernels().message();
  if (forced != nullptr && forced[0] != '\0') {
    EXPECT_STREQ(active_table().name, forced);
  } else {
    EXPECT_EQ(active_table().isa, best_isa(cpu_features()));
  }
}

// A bad MINFER_FORCE_ISA never falls back silently: the first kernel use stops the process
// with the error. ("threadsafe" re-runs the test binary, so the child selects afresh.)
TEST(DispatchDeathTest, BadForceIsaStopsTheProcessWithTheError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        setenv("MINFER_FORCE_ISA", "sse2", 1);
        (void)active_table();
      },
      "MINFER_FORCE_ISA='sse2' is not an ISA");
}

}  // namespace
}  // namespace minfer::kernels
