#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "kernel_test_util.h"
#include "kernels/dispatch.h"

namespace minfer::kernels {
namespace {

TEST(CpuFeatures, AgreesWithProcCpuinfo) {
  std::ifstream in("/proc/cpuinfo");
  if (!in) GTEST_SKIP() << "no /proc/cpuinfo";
  std::string line, flags;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) {
      // Built with append: GCC 12's -O3 -Wrestrict misfires on `" " + str + " "`.
      flags.append(1, ' ').append(line, line.find(':') + 1).append(1, ' ');
      break;
    }
  }
  if (flags.empty()) GTEST_SKIP() << "no flags line in /proc/cpuinfo";
  auto has = [&flags](const char* name) {
    return flags.find(std::string(" ") + name + " ") != std::string::npos;
  };
  // /proc/cpuinfo lists what the kernel enabled, which is what detection must report.
  const CpuFeatures& f = cpu_features();
  EXPECT_EQ(f.avx2 && f.os_saves_ymm, has("avx2"));
  EXPECT_EQ(f.fma && f.os_saves_ymm, has("fma"));
  EXPECT_EQ(f.avx512f && f.os_saves_zmm, has("avx512f"));
  EXPECT_EQ(f.avx512bw && f.os_saves_zmm, has("avx512bw"));
  EXPECT_EQ(f.avx512vnni && f.os_saves_zmm, has("avx512_vnni"));
}

TEST(Dispatch, TablesNameTheirIsa) {
  EXPECT_STREQ(table_for(Isa::kRef).name, "ref");
  EXPECT_STREQ(table_for(Isa::kAvx2).name, "avx2");
  EXPECT_STREQ(table_for(Isa::kAvx512).name, "avx512");
  EXPECT_EQ(table_for(Isa::kAvx512).isa, Isa::kAvx512);
}

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

  CpuFeatures all = avx2_only;
  all.avx512f = all.avx512dq = all.avx512bw = all.avx512vl = all.avx512vnni = true;
  all.os_saves_zmm = true;
  Result<const KernelTable*> avx512 = select_table("", all);
  ASSERT_TRUE(avx512.is_ok());
  EXPECT_EQ((*avx512)->isa, Isa::kAvx512);
  // AVX-512 in the CPU but not enabled by the OS is not usable.
  all.os_saves_zmm = false;
  EXPECT_EQ(best_isa(all), Isa::kAvx2);
}

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
  EXPECT_NE(msg.find("ref, avx2, avx512"), std::string::npos) << msg;
  EXPECT_NE(msg.find(cpu_feature_names(cpu_features())), std::string::npos) << msg;
  EXPECT_NE(msg.find("MINFER_FORCE_ISA='avx1024'"), std::string::npos) << msg;
  // The message names where the name came from.
  Result<const KernelTable*> option = select_table("avx1024", cpu_features(), "--isa");
  ASSERT_FALSE(option.is_ok());
  EXPECT_NE(option.status().message().find("--isa='avx1024'"), std::string::npos)
      << option.status().message();
}

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
