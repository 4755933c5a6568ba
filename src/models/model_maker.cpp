#include "models/model_maker.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numbers>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "gguf/gguf_file.h"
#include "kernels/thread_pool.h"
#include "models/model_config.h"
#include "models/presets.h"
#include "models/quantize_model.h"

namespace minfer {

namespace {

// ---- the built-in tokenizer ----

// Text the merges are learned from (written for this purpose): common English words, so that
// ordinary prompts tokenize into a realistic mix of whole words and pieces.
constexpr const char* kMergeCorpus =
    "Once upon a time there was a little girl who lived in a small house near the forest. "
    "Every morning she walked to the river with her dog, and they watched the water run over "
    "the stones. The sun was warm and the birds were singing in the trees. One day she found a "
    "shiny key under an old bridge. She wondered what it could open, so she took it home and "
    "showed it to her mother. Her mother smiled and said that the key belonged to a box that "
    "had been lost for many years. They looked for the box in every room of the house, under "
    "the beds, behind the doors and inside the kitchen. At last they found it in the garden, "
    "where the flowers were growing around a tall tree. When they opened the box, they saw "
    "letters, pictures and a small book of stories. The girl read the stories to her friends, "
    "and they all wanted to hear more. People think that language models learn from a large "
    "amount of text, and that a model with more parameters can remember more of what it has "
    "seen. A computer program reads the input, splits it into tokens, and then predicts the "
    "next token again and again until the answer is complete. This is how the system works: "
    "the question comes first, then the model thinks, then it writes the response for the user. "
    "Numbers such as 1, 2, 3, 10, 42 and 2024 appear in code and data; functions return values, "
    "and the result should be correct, clear and fast.";

// GPT-2's byte-to-unicode map: printable bytes stand for themselves, the others are moved to
// U+0100 and up, in byte order, so every byte has a visible one-character spelling.
std::vector<std::string> byte_spellings() {
  std::vector<std::string> out(256);
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    const int cp = printable ? b : next++;
    std::string s;
    if (cp < 0x80) {
      s.push_back(static_cast<char>(cp));
    } else {
      s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
    out[static_cast<size_t>(b)] = s;
  }
  return out;
}

bool is_letter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// Learns up to max_merges BPE merges from the corpus: words (a run of letters with its leading
// space, or one other character) are split into byte symbols; the most frequent adjacent pair
// (ties: the smallest pair in byte order) is merged, until no pair occurs twice.
std::vector<std::pair<std::string, std::string>> learn_merges(size_t max_merges) {
  const std::vector<std::string> spell = byte_spellings();
  std::map<std::string, int64_t> word_counts;
  const std::string_view text = kMergeCorpus;
  for (size_t i = 0; i < text.size();) {
    size_t j = i;
    if (text[j] == ' ' && j + 1 < text.size() && is_letter(text[j + 1])) ++j;
    if (is_letter(text[j])) {
      while (j < text.size() && is_letter(text[j])) ++j;
    } else {
      j = i + 1;
    }
    ++word_counts[std::string(text.substr(i, j - i))];
    i = j;
  }
  std::vector<std::pair<std::vector<std::string>, int64_t>> words;
  for (const auto& [word, count] : word_counts) {
    std::vector<std::string> symbols;
    for (char c : word) symbols.push_back(spell[static_cast<uint8_t>(c)]);
    words.emplace_back(std::move(symbols), count);
  }
  std::vector<std::pair<std::string, std::string>> merges;
  while (merges.size() < max_merges) {
    std::map<std::pair<std::string, std::string>, int64_t> pairs;
    for (const auto& [symbols, count] : words) {
      for (size_t k = 0; k + 1 < symbols.size(); ++k) pairs[{symbols[k], symbols[k + 1]}] += count;
    }
    auto best = pairs.end();
    for (auto it = pairs.begin(); it != pairs.end(); ++it) {
      if (best == pairs.end() || it->second > best->second) best = it;
    }
    if (best == pairs.end()) break;
    const auto [a, b] = best->first;
    merges.emplace_back(a, b);
    for (auto& [symbols, count] : words) {
      std::vector<std::string> merged;
      for (size_t k = 0; k < symbols.size(); ++k) {
        if (k + 1 < symbols.size() && symbols[k] == a && symbols[k + 1] == b) {
          merged.push_back(a + b);
          ++k;
        } else {
          merged.push_back(symbols[k]);
        }
      }
      symbols = std::move(merged);
    }
  }
  return merges;
}

constexpr const char* kChatMlTemplate =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|im_start|>assistant\\n' }}{% endif %}";

// ---- weights ----

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (char c : s) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001B3ull;
  }
  return h;
}

enum class Fill { kNormal, kOnes };

// One row of normal(0, std) values (Box-Muller on pairs of 24-bit uniforms in (0, 1]).
void fill_normal_row(uint64_t state, float stddev, float* out, int64_t n) {
  constexpr float kTwoPi = 2.0f * std::numbers::pi_v<float>;
  for (int64_t i = 0; i < n; i += 2) {
    const uint64_t bits = splitmix64(state);
    const float u1 = (static_cast<float>(bits >> 40) + 1.0f) * 0x1p-24f;
    const float u2 = static_cast<float>((bits >> 8) & 0xFFFFFF) * 0x1p-24f;
    const float r = stddev * std::sqrt(-2.0f * std::log(u1));
    out[i] = r * std::cos(kTwoPi * u2);
    if (i + 1 < n) out[i + 1] = r * std::sin(kTwoPi * u2);
  }
}

struct TensorSpec {
  std::string name;
  std::vector<uint64_t> shape;  // ggml order
  Fill fill;
};

std::vector<TensorSpec> model_tensors(const ModelPreset& p, const ArchSpec& arch, int64_t n_vocab) {
  const uint64_t n_embd = static_cast<uint64_t>(p.n_embd);
  const uint64_t head_dim =
      static_cast<uint64_t>(p.head_dim > 0 ? p.head_dim : p.n_embd / p.n_head);
  const uint64_t q_width = static_cast<uint64_t>(p.n_head) * head_dim;
  const uint64_t kv_width = static_cast<uint64_t>(p.n_head_kv) * head_dim;
  const uint64_t n_ff = static_cast<uint64_t>(p.n_ff);
  std::vector<TensorSpec> t;
  t.push_back({"token_embd.weight", {n_embd, static_cast<uint64_t>(n_vocab)}, Fill::kNormal});
  t.push_back({"output_norm.weight", {n_embd}, Fill::kOnes});
  if (!p.tied_output) {
    t.push_back({"output.weight", {n_embd, static_cast<uint64_t>(n_vocab)}, Fill::kNormal});
  }
  for (int64_t il = 0; il < p.n_layer; ++il) {
    const std::string b = fmt::format("blk.{}.", il);
    t.push_back({b + "attn_norm.weight", {n_embd}, Fill::kOnes});
    t.push_back({b + "attn_q.weight", {n_embd, q_width}, Fill::kNormal});
    t.push_back({b + "attn_k.weight", {n_embd, kv_width}, Fill::kNormal});
    t.push_back({b + "attn_v.weight", {n_embd, kv_width}, Fill::kNormal});
    if (arch.qkv_bias) {
      t.push_back({b + "attn_q.bias", {q_width}, Fill::kNormal});
      t.push_back({b + "attn_k.bias", {kv_width}, Fill::kNormal});
      t.push_back({b + "attn_v.bias", {kv_width}, Fill::kNormal});
    }
    if (arch.qk_norm) {
      t.push_back({b + "attn_q_norm.weight", {head_dim}, Fill::kOnes});
      t.push_back({b + "attn_k_norm.weight", {head_dim}, Fill::kOnes});
    }
    t.push_back({b + "attn_output.weight", {q_width, n_embd}, Fill::kNormal});
    t.push_back({b + "ffn_norm.weight", {n_embd}, Fill::kOnes});
    t.push_back({b + "ffn_gate.weight", {n_embd, n_ff}, Fill::kNormal});
    t.push_back({b + "ffn_up.weight", {n_embd, n_ff}, Fill::kNormal});
    t.push_back({b + "ffn_down.weight", {n_ff, n_embd}, Fill::kNormal});
  }
  return t;
}

void set_hparams(GgufWriter& w, const ModelPreset& p, const std::string& name, int64_t n_vocab,
                 uint32_t file_type) {
  const std::string a = p.arch;
  w.set_string("general.architecture", a);
  w.set_string("general.type", "model");
  w.set_string("general.name", name);
  w.set_scalar<uint32_t>(a + ".vocab_size", static_cast<uint32_t>(n_vocab));
  w.set_scalar<uint32_t>(a + ".context_length", static_cast<uint32_t>(p.n_ctx_train));
  w.set_scalar<uint32_t>(a + ".embedding_length", static_cast<uint32_t>(p.n_embd));
  w.set_scalar<uint32_t>(a + ".block_count", static_cast<uint32_t>(p.n_layer));
  w.set_scalar<uint32_t>(a + ".feed_forward_length", static_cast<uint32_t>(p.n_ff));
  w.set_scalar<uint32_t>(a + ".attention.head_count", static_cast<uint32_t>(p.n_head));
  w.set_scalar<uint32_t>(a + ".attention.head_count_kv", static_cast<uint32_t>(p.n_head_kv));
  const int64_t head_dim = p.head_dim > 0 ? p.head_dim : p.n_embd / p.n_head;
  if (p.head_dim > 0) {
    w.set_scalar<uint32_t>(a + ".attention.key_length", static_cast<uint32_t>(head_dim));
    w.set_scalar<uint32_t>(a + ".attention.value_length", static_cast<uint32_t>(head_dim));
  }
  w.set_scalar<uint32_t>(a + ".rope.dimension_count", static_cast<uint32_t>(head_dim));
  w.set_scalar<float>(a + ".rope.freq_base", p.rope_freq_base);
  w.set_scalar<float>(a + ".attention.layer_norm_rms_epsilon", p.rms_eps);
  w.set_scalar<uint32_t>("general.file_type", file_type);
  w.set_scalar<uint32_t>("general.quantization_version", 2);
}

}  // namespace

int64_t add_builtin_tokenizer(GgufWriter& w, const std::string& arch) {
  const std::vector<std::string> spell = byte_spellings();
  const auto merges = learn_merges(600);
  std::vector<std::string> tokens(spell);
  std::vector<int32_t> types(tokens.size(), 1);  // NORMAL
  std::vector<std::string> merge_texts;
  std::set<std::string> seen(tokens.begin(), tokens.end());
  for (const auto& [a, b] : merges) {
    merge_texts.push_back(a + " " + b);
    // Two merges can spell the same token ("a bc" and "ab c"); the vocabulary lists it once.
    if (seen.insert(a + b).second) {
      tokens.push_back(a + b);
      types.push_back(1);
    }
  }
  const int32_t endoftext = static_cast<int32_t>(tokens.size());
  for (const char* special : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
    tokens.push_back(special);
    types.push_back(3);  // CONTROL
  }
  const int64_t n_vocab = static_cast<int64_t>(tokens.size());
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", arch == "llama" ? "llama-bpe" : "qwen2");
  w.set("tokenizer.ggml.tokens", GgufValue::string_array(std::move(tokens)));
  w.set("tokenizer.ggml.token_type", GgufValue::array(types));
  w.set("tokenizer.ggml.merges", GgufValue::string_array(std::move(merge_texts)));
  w.set_scalar<uint32_t>("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(endoftext));
  w.set_scalar<uint32_t>("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(endoftext + 2));
  w.set_scalar<uint32_t>("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(endoftext));
  // Llama 3 puts BOS in front of every prompt; Qwen does not.
  w.set_scalar<bool>("tokenizer.ggml.add_bos_token", arch == "llama");
  w.set_string("tokenizer.chat_template", kChatMlTemplate);
  return n_vocab;
}

namespace {

// Everything about the file but the weights: metadata, tensors in file order, their types.
struct Prepared {
  GgufWriter meta;
  std::vector<TensorSpec> specs;  // in file order
  ModelLayout layout;
};

Result<Prepared> prepare(const MakeModelOptions& o) {
  MINFER_ASSIGN_OR_RETURN(ArchSpec arch, find_arch(o.arch));
  MINFER_ASSIGN_OR_RETURN(ModelPreset preset, find_preset(o.arch, o.preset));
  MINFER_ASSIGN_OR_RETURN(QuantMix mix, find_quant_mix(o.type));

  // Hyperparameters first, then the tokenizer keys, as in files from llama.cpp's converter;
  // vocab_size is filled in (in place) once the tokenizer is known.
  Prepared p;
  GgufWriter& meta = p.meta;
  const std::string name = fmt::format("random-{}-{}", o.arch, o.preset);
  set_hparams(meta, preset, name, 0, mix.file_type);
  int64_t n_vocab = 0;
  if (o.tokenizer_from.empty()) {
    n_vocab = add_builtin_tokenizer(meta, o.arch);
  } else {
    MINFER_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> other, GgufFile::open(o.tokenizer_from));
    MINFER_ASSIGN_OR_RETURN(const std::vector<std::string>* tokens,
                            other->get_string_array("tokenizer.ggml.tokens"));
    n_vocab = static_cast<int64_t>(tokens->size());
    for (const GgufKeyValue& kv : other->metadata()) {
      if (kv.key.rfind("tokenizer.", 0) == 0) meta.set(kv.key, kv.value);
    }
  }
  meta.set_scalar<uint32_t>(std::string(preset.arch) + ".vocab_size",
                            static_cast<uint32_t>(n_vocab));

  const std::vector<TensorSpec> specs = model_tensors(preset, arch, n_vocab);
  std::vector<TensorDesc> descs;
  for (const TensorSpec& s : specs) descs.push_back({s.name, GgmlType::kF32, s.shape});
  const std::vector<size_t> order = llama_tensor_order(descs);
  std::vector<TensorDesc> ordered;
  for (size_t i : order) ordered.push_back(descs[i]);
  const TypePlan plan =
      plan_tensor_types(mix, ordered, o.arch, preset.n_layer, preset.n_head, preset.n_head_kv);
  for (size_t k = 0; k < ordered.size(); ++k) {
    p.specs.push_back(specs[order[k]]);
    p.layout.tensors.push_back({ordered[k].name, plan.types[k], ordered[k].shape});
  }
  p.layout.n_vocab = n_vocab;
  return p;
}

}  // namespace

Result<ModelLayout> make_model_layout(const MakeModelOptions& o) {
  MINFER_ASSIGN_OR_RETURN(Prepared p, prepare(o));
  return std::move(p.layout);
}

Result<MakeModelReport> make_model(const MakeModelOptions& o) {
  MINFER_ASSIGN_OR_RETURN(Prepared p, prepare(o));
  const std::vector<TensorSpec>& specs = p.specs;
  const std::vector<GgufStreamWriter::TensorLayout> layout = p.layout.tensors;
  MINFER_ASSIGN_OR_RETURN(GgufStreamWriter out, GgufStreamWriter::create(o.output, p.meta, layout));

  MakeModelReport report;
  report.n_vocab = p.layout.n_vocab;
  report.n_tensors = static_cast<int64_t>(specs.size());
  for (const TensorSpec& spec : specs) {
    int64_t n = 1;
    for (uint64_t x : spec.shape) n *= static_cast<int64_t>(x);
    report.n_params += n;
  }
  kernels::ThreadPool pool(o.n_threads > 0 ? o.n_threads : kernels::default_thread_count());
  Progress progress("make-model", report.n_params, o.progress);
  int64_t done = 0;
  std::vector<float> values;       // [n_rows, n_per_row] of the tensor being made
  std::vector<uint8_t> converted;  // the same in its target type
  for (size_t k = 0; k < specs.size(); ++k) {
    const TensorSpec& spec = specs[k];
    const int64_t n_per_row = static_cast<int64_t>(spec.shape[0]);
    const int64_t n_rows = spec.shape.size() > 1 ? static_cast<int64_t>(spec.shape[1]) : 1;
    values.resize(static_cast<size_t>(n_per_row * n_rows));
    const uint64_t tensor_seed = o.seed ^ fnv1a(spec.name);
    pool.parallel_for(n_rows, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        float* row = values.data() + r * n_per_row;
        if (spec.fill == Fill::kOnes) {
          std::fill(row, row + n_per_row, 1.0f);
        } else {
          // Distinct, well-mixed generator states per (seed, tensor, row).
          uint64_t state = tensor_seed + 0x632BE59BD9B4E019ull * static_cast<uint64_t>(r + 1);
          fill_normal_row(splitmix64(state), 0.02f, row, n_per_row);
        }
      }
    });
    const std::span<const uint8_t> f32_bytes(reinterpret_cast<const uint8_t*>(values.data()),
                                             values.size() * sizeof(float));
    convert_tensor(GgmlType::kF32, f32_bytes, layout[k].type, n_per_row, n_rows, pool, converted);
    MINFER_RETURN_IF_ERROR(out.write_next(converted));
    report.n_tensor_bytes += converted.size();
    done += n_per_row * n_rows;
    progress.update(done, spec.name);
  }
  MINFER_RETURN_IF_ERROR(out.close());
  progress.finish();
  return report;
}

}  // namespace minfer
