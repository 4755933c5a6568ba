#include "engine/state_file.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <type_traits>

#include "core/check.h"
#include "core/hash.h"

namespace minfer::engine {

namespace {

constexpr char kMagic[8] = {'M', 'I', 'N', 'F', 'E', 'R', 'K', 'V'};
constexpr uint32_t kMaxArchBytes = 256;  // caps on what a file may claim
constexpr int64_t kMaxDim = int64_t{1} << 31;

// Appends little-endian values (the hosts minfer runs on are little-endian).
class ByteWriter {
 public:
  template <typename T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  void put_bytes(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    bytes_.insert(bytes_.end(), p, p + n);
  }
  template <typename T>
  void put_array(const std::vector<T>& v) {
    put_bytes(v.data(), v.size() * sizeof(T));
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

// Reads what ByteWriter wrote, bounds-checked: reading past the end is an error naming the field.
class ByteReader {
 public:
  ByteReader(std::span<const uint8_t> bytes, const std::string& name)
      : bytes_(bytes), name_(name) {}

  template <typename T>
  Result<T> get(const char* field) {
    T v{};
    MINFER_RETURN_IF_ERROR(get_bytes(&v, sizeof(T), field));
    return v;
  }
  Status get_bytes(void* out, size_t n, const char* field) {
    if (n > bytes_.size() - pos_) {
      return make_error(ErrorCode::kCorrupt,
                        "[state] '{}': {} ({} bytes) runs past the end of the data at byte {} of "
                        "{}",
                        name_, field, n, pos_, bytes_.size());
    }
    if (n > 0) std::memcpy(out, bytes_.data() + pos_, n);
    pos_ += n;
    return Status::ok();
  }
  size_t pos() const { return pos_; }

 private:
  std::span<const uint8_t> bytes_;
  const std::string& name_;
  size_t pos_ = 0;
};

void put_fingerprint(ByteWriter& w, const ModelFingerprint& f) {
  w.put(static_cast<uint32_t>(f.arch.size()));
  w.put_bytes(f.arch.data(), f.arch.size());
  for (const int64_t v : f.shape) w.put(v);
  w.put(f.tensor_hash);
}

Result<ModelFingerprint> get_fingerprint(ByteReader& r, const std::string& name) {
  ModelFingerprint f;
  MINFER_ASSIGN_OR_RETURN(const uint32_t arch_len, r.get<uint32_t>("architecture length"));
  if (arch_len > kMaxArchBytes) {
    return make_error(ErrorCode::kCorrupt,
                      "[state] '{}': architecture name of {} bytes, expected at most {}", name,
                      arch_len, kMaxArchBytes);
  }
  f.arch.resize(arch_len);
  MINFER_RETURN_IF_ERROR(r.get_bytes(f.arch.data(), arch_len, "architecture"));
  for (int64_t& d : f.shape) {
    MINFER_ASSIGN_OR_RETURN(d, r.get<int64_t>("model shape"));
    if (d <= 0 || d > kMaxDim) {
      return make_error(ErrorCode::kCorrupt,
                        "[state] '{}': a model dimension is {}, expected 1 to {}", name, d,
                        kMaxDim);
    }
  }
  MINFER_ASSIGN_OR_RETURN(f.tensor_hash, r.get<uint64_t>("tensor hash"));
  return f;
}

// Bytes of n positions' cells for the shape and cell type a file states (KvCache::cells_bytes);
// nullopt when a head dim is not a whole number of cell blocks or the size overflows.
std::optional<uint64_t> cells_bytes_of(const ModelFingerprint& f, int64_t n_recurrent_layers,
                                       GgmlType type, int64_t n) {
  using F = ModelFingerprint;
  const auto k_row = ggml_row_bytes(type, static_cast<uint64_t>(f.shape[F::kHeadDim]));
  const auto v_row = ggml_row_bytes(type, static_cast<uint64_t>(f.shape[F::kHeadDimV]));
  if (!k_row || !v_row) return std::nullopt;
  uint64_t total = *k_row + *v_row;
  for (const uint64_t factor :
       {static_cast<uint64_t>(f.shape[F::kNLayer] - n_recurrent_layers),
        static_cast<uint64_t>(f.shape[F::kNHeadKv]), static_cast<uint64_t>(n)}) {
    if (__builtin_mul_overflow(total, factor, &total)) return std::nullopt;
  }
  return total;
}

// The version field of bytes that begin with the magic and hold the header.
uint32_t file_version(std::span<const uint8_t> bytes) {
  uint32_t version = 0;
  std::memcpy(&version, bytes.data() + sizeof(kMagic), sizeof(version));
  return version;
}

Status check_header(std::span<const uint8_t> bytes, const std::string& name) {
  constexpr size_t kFixed = sizeof(kMagic) + 4 + 4 + 8;
  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return make_error(ErrorCode::kCorrupt,
                      "[state] '{}' is not a minfer state file: expected it to begin with "
                      "\"MINFERKV\"",
                      name);
  }
  if (bytes.size() < kFixed + 8) {
    return make_error(ErrorCode::kCorrupt,
                      "[state] '{}' is truncated: {} bytes, shorter than the header", name,
                      bytes.size());
  }
  uint64_t file_bytes = 0;
  const uint32_t version = file_version(bytes);
  std::memcpy(&file_bytes, bytes.data() + sizeof(kMagic) + 8, sizeof(file_bytes));
  if (version < kOldestStateFileVersion || version > kStateFileVersion) {
    return make_error(ErrorCode::kUnsupported,
                      "[state] '{}' is a state file of version {}, this build reads versions {} "
                      "to {}",
                      name, version, kOldestStateFileVersion, kStateFileVersion);
  }
  if (file_bytes != bytes.size()) {
    return make_error(ErrorCode::kCorrupt, "[state] '{}' is {}: expected {} bytes, got {}", name,
                      bytes.size() < file_bytes ? "truncated" : "longer than written", file_bytes,
                      bytes.size());
  }
  uint64_t stored = 0;
  std::memcpy(&stored, bytes.data() + bytes.size() - 8, sizeof(stored));
  const uint64_t actual = hash64(bytes.first(bytes.size() - 8));
  if (stored != actual) {
    return make_error(ErrorCode::kCorrupt,
                      "[state] '{}' is corrupt: checksum {:016x} expected, the data hashes to "
                      "{:016x}",
                      name, stored, actual);
  }
  return Status::ok();
}

// The cache part: cell type, its block size, the saving cache's block size.
Status get_cache_fields(ByteReader& r, KvState& s, const std::string& name) {
  MINFER_ASSIGN_OR_RETURN(const uint32_t type_id, r.get<uint32_t>("cell type"));
  MINFER_ASSIGN_OR_RETURN(const uint32_t cell_block, r.get<uint32_t>("cell block size"));
  MINFER_ASSIGN_OR_RETURN(s.block_size, r.get<int64_t>("KV block size"));
  const std::optional<GgmlTypeInfo> info = ggml_type_info(type_id);
  if (!info || !is_kv_cell_type(info->type)) {
    return make_error(ErrorCode::kCorrupt,
                      "[state] '{}': cell type id {} is not a KV cell type (f32, f16, bf16, q8_0)",
                      name, type_id);
  }
  s.cell_type = info->type;
  if (cell_block != info->block_size) {
    return make_error(ErrorCode::kCorrupt,
                      "[state] '{}': cell type {} has blocks of {} elements, the file says {}",
                      name, info->name, info->block_size, cell_block);
  }
  return Status::ok();
}

Status get_tokens(ByteReader& r, KvState& s, const std::string& name) {
  MINFER_ASSIGN_OR_RETURN(const int64_t n, r.get<int64_t>("token count"));
  if (n < 0 || n > kMaxDim) {
    return make_error(ErrorCode::kCorrupt, "[state] '{}': {} tokens, expected 0 to {}", name, n,
                      kMaxDim);
  }
  s.tokens.resize(static_cast<size_t>(n));
  s.positions.resize(static_cast<size_t>(n));
  MINFER_RETURN_IF_ERROR(r.get_bytes(s.tokens.data(), s.tokens.size() * 4, "tokens"));
  MINFER_RETURN_IF_ERROR(r.get_bytes(s.positions.data(), s.positions.size() * 4, "positions"));
  const int64_t n_vocab = s.model.shape[ModelFingerprint::kNVocab];
  for (int64_t i = 0; i < n; ++i) {
    const int32_t t = s.tokens[static_cast<size_t>(i)];
    if (t < 0 || t >= n_vocab) {
      return make_error(ErrorCode::kCorrupt, "[state] '{}': token {} is id {}, expected 0..{}",
                        name, i, t, n_vocab - 1);
    }
    if (s.positions[static_cast<size_t>(i)] != i) {
      return make_error(ErrorCode::kUnsupported,
                        "[state] '{}': token {} is at position {}, expected {} (states hold "
                        "positions 0..n-1)",
                        name, i, s.positions[static_cast<size_t>(i)], i);
    }
  }
  return Status::ok();
}

// The shape of the cache's recurrent layers' state (all zero without them).
RecurrentShape recurrent_shape_of(const KvCache& cache) {
  const KvCacheConfig& c = cache.config();
  if (!cache.has_recurrent()) return {};
  return {.n_layers = static_cast<int64_t>(
              std::count(c.recurrent_layers.begin(), c.recurrent_layers.end(), true)),
          .conv_floats = c.conv_state_floats,
          .delta_floats = c.delta_state_floats};
}

// The recurrent state's shape (version 2, after the cache fields).
Status get_recurrent_shape(ByteReader& r, KvState& s, const std::string& name) {
  RecurrentShape& shape = s.recurrent_shape;
  for (int64_t* d : {&shape.n_layers, &shape.conv_floats, &shape.delta_floats}) {
    MINFER_ASSIGN_OR_RETURN(*d, r.get<int64_t>("recurrent state shape"));
    if (*d < 0 || *d > kMaxDim) {
      return make_error(ErrorCode::kCorrupt,
                        "[state] '{}': a recurrent state dimension is {}, expected 0 to {}", name,
                        *d, kMaxDim);
    }
  }
  if (shape.n_layers > s.model.shape[ModelFingerprint::kNLayer]) {
    return make_error(ErrorCode::kCorrupt,
                      "[state] '{}': {} recurrent layers in a model of {} layers", name,
                      shape.n_layers, s.model.shape[ModelFingerprint::kNLayer]);
  }
  return Status::ok();
}

// The recurrent state's floats (version 2, after the cells): none, or the shape's count.
Status get_recurrent_state(ByteReader& r, KvState& s, size_t file_bytes, const std::string& name) {
  const RecurrentShape& shape = s.recurrent_shape;
  MINFER_ASSIGN_OR_RETURN(const uint64_t n, r.get<uint64_t>("recurrent state length"));
  // Each dimension is below 2^31: the product of the three fits in 64 bits.
  const auto expected = static_cast<uint64_t>(shape.floats());
  if (n != 0 && (n != expected || n > file_bytes / sizeof(float))) {
    return make_error(ErrorCode::kCorrupt,
                      "[state] '{}': {} floats of recurrent state, expected 0 or {} ({} layers of "
                      "{} + {})",
                      name, n, expected, shape.n_layers, shape.conv_floats, shape.delta_floats);
  }
  s.recurrent.resize(static_cast<size_t>(n));
  return r.get_bytes(s.recurrent.data(), s.recurrent.size() * sizeof(float), "recurrent state");
}

// The recurrent part of a state against the cache's recurrent layers.
Status check_recurrent_fits(const KvState& state, const KvCache& cache, const std::string& name) {
  const RecurrentShape want = recurrent_shape_of(cache);
  if (want.n_layers == 0) {
    if (state.recurrent.empty()) return Status::ok();
    return make_error(ErrorCode::kInvalidArgument,
                      "[state] '{}' holds the state of {} recurrent layers, this model has none",
                      name, state.recurrent_shape.n_layers);
  }
  if (state.n_tokens() > 0 && state.recurrent.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[state] '{}' holds no recurrent state: this model's {} recurrent layers "
                      "need theirs after the cells",
                      name, want.n_layers);
  }
  if (!state.recurrent.empty() && state.recurrent_shape != want) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[state] '{}' holds a recurrent state of {} layers of {} + {} floats, this "
                      "model's is {} layers of {} + {}",
                      name, state.recurrent_shape.n_layers, state.recurrent_shape.conv_floats,
                      state.recurrent_shape.delta_floats, want.n_layers, want.conv_floats,
                      want.delta_floats);
  }
  return Status::ok();
}

}  // namespace

ModelFingerprint model_fingerprint(const Model& model) {
  const ModelConfig& c = model.config();
  return ModelFingerprint{
      c.arch,
      {c.n_layer, c.n_embd, c.n_head, c.n_head_kv, c.head_dim, c.head_dim_v, c.n_vocab},
      model.tensor_hash()};
}

KvState capture_state(const ModelFingerprint& fingerprint, const KvCache& cache, int32_t seq,
                      std::span<const int32_t> tokens, std::string app_data) {
  KvState s;
  s.model = fingerprint;
  s.cell_type = cache.config().cell_type;
  s.block_size = cache.config().block_size;
  s.tokens.assign(tokens.begin(), tokens.end());
  s.positions.resize(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) s.positions[i] = static_cast<int32_t>(i);
  s.app_data = std::move(app_data);
  const int64_t n = static_cast<int64_t>(tokens.size());
  s.cells.resize(cache.cells_bytes(n));
  cache.read_cells(seq, n, s.cells);
  s.recurrent_shape = recurrent_shape_of(cache);
  if (cache.has_recurrent() && n > 0) {
    // The state is after the whole length: the tokens must be all of them.
    MINFER_CHECK(n == cache.length(seq), "capture of a recurrent state short of its length");
    s.recurrent.resize(static_cast<size_t>(cache.state_floats()));
    cache.read_state(seq, s.recurrent);
  }
  return s;
}

std::vector<uint8_t> encode_state(const KvState& s) {
  ByteWriter w;
  w.put_bytes(kMagic, sizeof(kMagic));
  w.put(kStateFileVersion);
  w.put(uint32_t{0});  // flags
  w.put(uint64_t{0});  // file_bytes, set below
  put_fingerprint(w, s.model);
  w.put(static_cast<uint32_t>(s.cell_type));
  w.put(ggml_type_info(s.cell_type).block_size);
  w.put(s.block_size);
  w.put(s.recurrent_shape.n_layers);
  w.put(s.recurrent_shape.conv_floats);
  w.put(s.recurrent_shape.delta_floats);
  w.put(s.n_tokens());
  w.put_array(s.tokens);
  w.put_array(s.positions);
  w.put(static_cast<uint64_t>(s.app_data.size()));
  w.put_bytes(s.app_data.data(), s.app_data.size());
  w.put(static_cast<uint64_t>(s.cells.size()));
  w.put_array(s.cells);
  w.put(static_cast<uint64_t>(s.recurrent.size()));
  w.put_array(s.recurrent);
  std::vector<uint8_t>& bytes = w.bytes();
  const uint64_t file_bytes = bytes.size() + 8;
  std::memcpy(bytes.data() + sizeof(kMagic) + 8, &file_bytes, sizeof(file_bytes));
  w.put(hash64(bytes));
  return std::move(bytes);
}

Result<KvState> decode_state(std::span<const uint8_t> bytes, const std::string& name) {
  MINFER_RETURN_IF_ERROR(check_header(bytes, name));
  ByteReader r(bytes.first(bytes.size() - 8), name);
  uint8_t fixed[sizeof(kMagic) + 16];
  MINFER_RETURN_IF_ERROR(r.get_bytes(fixed, sizeof(fixed), "header"));
  KvState s;
  MINFER_ASSIGN_OR_RETURN(s.model, get_fingerprint(r, name));
  MINFER_RETURN_IF_ERROR(get_cache_fields(r, s, name));
  s.file_version = file_version(bytes);
  const bool has_recurrent_part = s.file_version >= 2;
  if (has_recurrent_part) MINFER_RETURN_IF_ERROR(get_recurrent_shape(r, s, name));
  MINFER_RETURN_IF_ERROR(get_tokens(r, s, name));
  MINFER_ASSIGN_OR_RETURN(const uint64_t app_len, r.get<uint64_t>("app data length"));
  if (app_len > bytes.size()) {
    return make_error(ErrorCode::kCorrupt, "[state] '{}': app data of {} bytes in a file of {}",
                      name, app_len, bytes.size());
  }
  s.app_data.resize(static_cast<size_t>(app_len));
  MINFER_RETURN_IF_ERROR(r.get_bytes(s.app_data.data(), s.app_data.size(), "app data"));
  MINFER_ASSIGN_OR_RETURN(const uint64_t cells_len, r.get<uint64_t>("cells length"));
  const std::optional<uint64_t> expected =
      cells_bytes_of(s.model, s.recurrent_shape.n_layers, s.cell_type, s.n_tokens());
  if (!expected || cells_len != *expected) {
    return make_error(ErrorCode::kCorrupt,
                      "[state] '{}': {} bytes of cells, expected {} for {} positions of {} cells",
                      name, cells_len, expected.value_or(0), s.n_tokens(),
                      kv_cell_type_name(s.cell_type));
  }
  s.cells.resize(static_cast<size_t>(cells_len));
  MINFER_RETURN_IF_ERROR(r.get_bytes(s.cells.data(), s.cells.size(), "cells"));
  if (has_recurrent_part) {
    MINFER_RETURN_IF_ERROR(get_recurrent_state(r, s, bytes.size(), name));
  }
  if (r.pos() != bytes.size() - 8) {
    return make_error(ErrorCode::kCorrupt, "[state] '{}': {} bytes after the cells", name,
                      bytes.size() - 8 - r.pos());
  }
  return s;
}

Result<int64_t> write_state_file(const std::string& path, const KvState& state) {
  const std::vector<uint8_t> bytes = encode_state(state);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (out)
      out.write(reinterpret_cast<const char*>(bytes.data()),
                static_cast<std::streamsize>(bytes.size()));
    if (out) out.flush();
    if (!out) {
      const int err = errno;
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      return make_error(ErrorCode::kIo, "[state] cannot write '{}': {}", tmp, std::strerror(err));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return make_error(ErrorCode::kIo, "[state] cannot rename '{}' to '{}': {}", tmp, path,
                      ec.message());
  }
  return static_cast<int64_t>(bytes.size());
}

Result<KvState> read_state_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    return make_error(ErrorCode::kNotFound, "[state] cannot read '{}': {}", path,
                      std::strerror(errno));
  }
  const std::streamsize size = in.tellg();
  std::vector<uint8_t> bytes(static_cast<size_t>(std::max<std::streamsize>(size, 0)));
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(bytes.data()), size)) {
    return make_error(ErrorCode::kIo, "[state] cannot read '{}' ({} bytes)", path, size);
  }
  return decode_state(bytes, path);
}

Status check_state_fits(const KvState& state, const ModelFingerprint& model, const KvCache& cache,
                        const std::string& name) {
  const ModelFingerprint& f = state.model;
  auto differs = [&](const char* field, const auto& in_file, const auto& in_model) -> Status {
    if (in_file == in_model) return Status::ok();
    return make_error(ErrorCode::kInvalidArgument,
                      "[state] '{}' was saved from another model: {} is {} in the file, {} in "
                      "this model",
                      name, field, in_file, in_model);
  };
  MINFER_RETURN_IF_ERROR(differs("architecture", f.arch, model.arch));
  for (size_t i = 0; i < f.shape.size(); ++i) {
    MINFER_RETURN_IF_ERROR(differs(ModelFingerprint::kShapeNames[i], f.shape[i], model.shape[i]));
  }
  MINFER_RETURN_IF_ERROR(differs("the tensor hash (names, types, shapes, data samples)",
                                 fmt::format("{:016x}", f.tensor_hash),
                                 fmt::format("{:016x}", model.tensor_hash)));
  const GgmlType cell = cache.config().cell_type;
  if (state.cell_type != cell) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[state] '{}' holds {} KV cells, this cache holds {} (--cache-type {})", name,
                      kv_cell_type_name(state.cell_type), kv_cell_type_name(cell),
                      kv_cell_type_name(state.cell_type));
  }
  if (cell == GgmlType::kQ8_0 && state.file_version < 3 &&
      (cache.k_rotation() > 0 || cache.v_rotation() > 0)) {
    return make_error(ErrorCode::kUnsupported,
                      "[state] '{}' is a state file of version {}, whose q8_0 cells are not "
                      "Hadamard-rotated as this build stores them (since version 3): compute "
                      "the prompt again and save it anew",
                      name, state.file_version);
  }
  MINFER_RETURN_IF_ERROR(check_recurrent_fits(state, cache, name));
  if (state.n_tokens() > cache.config().n_ctx) {
    return make_error(ErrorCode::kOutOfRange,
                      "[state] '{}' holds {} positions, past this context of {}", name,
                      state.n_tokens(), cache.config().n_ctx);
  }
  return Status::ok();
}

Status restore_state(KvCache& cache, int32_t seq, const KvState& state) {
  cache.free_sequence(seq);
  MINFER_RETURN_IF_ERROR(cache.write_cells(seq, state.n_tokens(), state.cells));
  // write_cells took the sequence's state slot with its blocks (none for 0 tokens).
  if (!state.recurrent.empty()) cache.write_state(seq, state.recurrent);
  return Status::ok();
}

}  // namespace minfer::engine
