#include "tools/bpe_trainer.h"

#include <map>
#include <set>
#include <string_view>
#include <utility>

namespace minfer {

namespace {

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

constexpr const char* kChatMlTemplate =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|im_start|>assistant\\n' }}{% endif %}";

bool is_letter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

}  // namespace

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

std::vector<std::pair<std::string, std::string>> learn_merges(std::string_view text,
                                                              size_t max_merges) {
  const std::vector<std::string> spell = byte_spellings();
  std::map<std::string, int64_t> word_counts;
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

int64_t add_builtin_tokenizer(GgufWriter& w, const std::string& arch) {
  const std::vector<std::string> spell = byte_spellings();
  const auto merges = learn_merges(kMergeCorpus, 600);
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

}  // namespace minfer
