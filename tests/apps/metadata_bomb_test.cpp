// Metadata bombs: GGUF files whose counts and lengths ask for far more than the file holds (a
// 10-million-entry merges array, a vocabulary of 2^31 tokens, a 1 GB chat template) or whose
// identifiers are absurd (a 1 MB architecture). `minfer info` refuses each with an error naming
// the key, and its peak RSS stays a small multiple of the file's size.
// GCC 12 at -O3 reports a false stringop-overflow inside vector::insert (RawGguf::put) once the
// builder is inlined here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

#include "apps/child_process.h"
#include "gguf/gguf_file.h"
#include "gguf/raw_gguf.h"

namespace minfer::test {
namespace {

constexpr uint32_t kTypeString = 8;
constexpr uint32_t kTypeArray = 9;

struct Bomb {
  const char* name;
  std::vector<uint8_t> bytes;
  const char* error;
};

// A string array header claiming `count` strings, followed by a few real ones.
std::vector<uint8_t> string_array_bomb(const char* key, uint64_t count) {
  RawGguf g;
  g.header(3, 0, 2).kv_string("general.architecture", "llama");
  g.key(key, kTypeArray).u32(kTypeString).u64(count);
  for (int i = 0; i < 100; ++i) g.text("a");
  return g.bytes;
}

std::vector<Bomb> bombs() {
  std::vector<Bomb> out;
  out.push_back({"merges", string_array_bomb("tokenizer.ggml.merges", 10'000'000),
                 "key 'tokenizer.ggml.merges': array of 10000000 string values cannot fit in the "
                 "900 bytes left"});
  out.push_back({"vocab", string_array_bomb("tokenizer.ggml.tokens", uint64_t{1} << 31),
                 "key 'tokenizer.ggml.tokens': array length 2147483648 exceeds the cap of "
                 "67108864"});
  RawGguf huge_template;
  huge_template.header(3, 0, 1).key("tokenizer.chat_template", kTypeString).u64(uint64_t{1} << 30);
  huge_template.zeros(64);
  out.push_back({"template-1g", huge_template.bytes,
                 "key 'tokenizer.chat_template': string length 1073741824 exceeds the cap"});
  RawGguf big_template;
  big_template.header(3, 0, 1).kv_string("tokenizer.chat_template", std::string(5 << 20, 'x'));
  out.push_back({"template-5m", big_template.bytes,
                 "key 'tokenizer.chat_template': a chat template of 5242880 bytes exceeds the cap "
                 "of 4194304 bytes"});
  RawGguf arch;
  arch.header(3, 0, 1).kv_string("general.architecture", std::string(1 << 20, 'a'));
  out.push_back({"arch-1m", arch.bytes,
                 "key 'general.architecture': a string of 1048576 bytes, expected an identifier "
                 "of at most 256 bytes"});
  RawGguf keys;
  keys.header(3, 0, uint64_t{1} << 40).kv_u32("a", 1);
  out.push_back({"kv-count", keys.bytes, "metadata key/value count 1099511627776 cannot fit"});
  return out;
}

TEST(MetadataBomb, InfoRefusesEachWithAClearErrorInBoundedMemory) {
  TempDir dir;
  // What `minfer info` needs on a tiny file (the binary, its libraries, the heap's first MiBs).
  ChildRun baseline = run_child({minfer_binary(), "info", "--architectures"});
  ASSERT_EQ(baseline.exit_code, 0) << baseline.err;
  for (const Bomb& b : bombs()) {
    SCOPED_TRACE(b.name);
    const std::string path = dir.file(std::string(b.name) + ".gguf");
    write_file_bytes(path, b.bytes);
    ChildRun r = run_child({minfer_binary(), "info", path});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find(b.error), std::string::npos) << r.err;
    EXPECT_LT(r.err.size(), 2000u) << "the error quotes the file at length";
    const long file_kb = static_cast<long>(b.bytes.size() / 1024);
    EXPECT_LT(r.max_rss_kb, baseline.max_rss_kb + 4 * file_kb + 8 * 1024)
        << "file " << file_kb << " KiB, baseline " << baseline.max_rss_kb << " KiB";
    std::printf("%s: %zu bytes, exit %d in %.3f s, peak RSS %ld KiB (baseline %ld KiB)\n", b.name,
                b.bytes.size(), r.exit_code, r.seconds, r.max_rss_kb, baseline.max_rss_kb);
  }
}

TEST(MetadataBomb, RealTemplatesAndIdentifiersAreFarBelowTheCaps) {
  MINFER_REQUIRE_TEST_DATA();
  for (const char* name : {"qwen3-qwentok-tiny-q8_0.gguf", "llama3-llamatok-tiny-q8_0.gguf"}) {
    auto file = GgufFile::open(test_data_path(std::string("models/") + name));
    ASSERT_TRUE(file.is_ok()) << file.status().message();
    EXPECT_LT((*file)->get_string("tokenizer.chat_template").value().size(),
              kGgufMaxChatTemplateLength / 16);
  }
}

}  // namespace
}  // namespace minfer::test
