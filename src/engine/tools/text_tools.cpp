// tokenize_text, printable_piece and render_chat_template (minfer/tools.h): a model's tokenizer
// and chat template read from its file alone (a vocabulary-only file will do for the tokenizer),
// as `minfer tokenize` and `minfer template` show them.
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "engine/conversation.h"
#include "gguf/gguf_file.h"
#include "minfer/tools.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace minfer {

Result<std::vector<TokenPiece>> tokenize_text(const TokenizeOptions& options) {
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::open(options.model));
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tok, Tokenizer::from_gguf(*file));
  std::vector<TokenPiece> out;
  for (int32_t id : tok->encode(options.text, options.add_bos, options.parse_special)) {
    out.push_back({id, tok->token_to_piece(id, true)});
  }
  return out;
}

// A token may hold half of a UTF-8 character: its bytes are escaped, not printed.
std::string printable_piece(std::string_view piece) {
  std::string out;
  for (size_t i = 0; i < piece.size();) {
    const auto c = static_cast<uint8_t>(piece[i]);
    const size_t n = utf8::valid_sequence_length(piece.substr(i));
    if (c >= 0x80 && n > 0) {
      out.append(piece.substr(i, n));
      i += n;
      continue;
    }
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        if (c < 0x20 || c >= 0x7F) {
          out += fmt::format("\\x{:02x}", c);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  return out;
}

namespace {

// Error messages of one line (a render error may quote template lines).
std::string one_line(std::string message) {
  for (char& c : message) {
    if (c == '\n') c = ' ';
  }
  return message;
}

}  // namespace

Result<std::string> render_chat_template(const ChatTemplateOptions& options) {
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::open(options.model));
  std::ifstream in(options.request_file, std::ios::binary);
  if (!in) {
    return make_error(ErrorCode::kNotFound, "[template] cannot open request file '{}'",
                      options.request_file);
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  nlohmann::ordered_json body;
  try {
    body = nlohmann::ordered_json::parse(buffer.str());
  } catch (const nlohmann::json::exception& e) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[template] request file '{}' is not valid JSON: {}", options.request_file,
                      one_line(e.what()));
  }
  MINFER_ASSIGN_OR_RETURN(chat::ChatTemplate tmpl, engine::load_chat_template(*file));
  Result<std::string> prompt = tmpl.render_request(body);
  if (!prompt.is_ok()) return Status(prompt.status().code(), one_line(prompt.status().message()));
  return prompt;
}

}  // namespace minfer
