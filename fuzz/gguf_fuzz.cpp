// libFuzzer target for the GGUF reader. Properties checked on every input:
//  - parse never crashes, leaks or trips a sanitizer;
//  - a failure is one line starting "[gguf] '<name>': ";
//  - on success, every metadata value and every tensor's data span can be touched, the summary
//    reads or fails cleanly, and writing the file back with GgufWriter and parsing it again gives
//    the same metadata and tensors (reader and writer agree on every layout).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_summary.h"
#include "gguf/gguf_writer.h"
#include "gguf_walk.h"

namespace {

[[noreturn]] void property_failed(const char* what, const std::string& detail) {
  std::fprintf(stderr, "gguf_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

void check_error_message(const minfer::Status& status) {
  const std::string& m = status.message();
  if (m.rfind("[gguf] 'fuzz': ", 0) != 0) property_failed("error without the component", m);
  if (m.find('\n') != std::string::npos) property_failed("multi-line error", m);
}

// Writes `file` again with the writer and checks the reader reads back the same thing.
void check_rewrite(const minfer::GgufFile& file) {
  minfer::GgufWriter writer;
  for (const minfer::GgufKeyValue& kv : file.metadata()) writer.set(kv.key, kv.value);
  for (const minfer::GgufTensorInfo& t : file.tensors()) {
    const std::span<const uint8_t> data = file.tensor_data(t);
    const minfer::Status added =
        writer.add_tensor(t.name, t.type, t.shape, std::vector<uint8_t>(data.begin(), data.end()));
    if (!added.is_ok())
      property_failed("writer refused a tensor the reader accepted", added.message());
  }
  minfer::Result<std::vector<uint8_t>> image = writer.serialize();
  if (!image.is_ok()) property_failed("writer failed", image.status().message());
  auto again = minfer::GgufFile::parse(*image, "rewrite");
  if (!again.is_ok()) property_failed("rewritten file does not parse", again.status().message());
  const minfer::GgufFile& b = **again;
  if (b.metadata().size() != file.metadata().size()) property_failed("metadata count", "");
  for (size_t i = 0; i < file.metadata().size(); ++i) {
    if (b.metadata()[i].key != file.metadata()[i].key ||
        !(b.metadata()[i].value == file.metadata()[i].value)) {
      property_failed("metadata differs after rewrite", file.metadata()[i].key);
    }
  }
  if (b.tensors().size() != file.tensors().size()) property_failed("tensor count", "");
  for (size_t i = 0; i < file.tensors().size(); ++i) {
    const minfer::GgufTensorInfo& x = file.tensors()[i];
    const minfer::GgufTensorInfo& y = b.tensors()[i];
    const std::span<const uint8_t> dx = file.tensor_data(x);
    const std::span<const uint8_t> dy = b.tensor_data(y);
    if (x.name != y.name || x.type != y.type || x.shape != y.shape ||
        !std::equal(dx.begin(), dx.end(), dy.begin(), dy.end())) {
      property_failed("tensor differs after rewrite", x.name);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = minfer::GgufFile::parse(std::span<const uint8_t>(data, size), "fuzz");
  if (!file.is_ok()) {
    check_error_message(file.status());
    return 0;
  }
  volatile uint64_t sink = minfer::test::walk_gguf(**file);
  (void)sink;
  minfer::Result<minfer::GgufSummary> summary = minfer::summarize_gguf(**file);
  if (!summary.is_ok()) check_error_message(summary.status());
  check_rewrite(**file);
  return 0;
}
