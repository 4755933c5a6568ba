#include "engine/gemma4_grammar.h"

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "core/input_limits.h"
#include "engine/xml_tool_calls.h"
#include "grammar/json_schema_parts.h"

namespace minfer::engine {

namespace {

using Json = nlohmann::ordered_json;

// Nested objects and arrays deeper than this are refused (a bound on the rules written).
constexpr int kMaxSchemaDepth = 16;

class RuleWriter {
 public:
  RuleWriter(std::string function, std::string prefix, std::string& rules)
      : function_(std::move(function)), prefix_(std::move(prefix)), rules_(rules) {}

  Result<std::string> object(const Json& schema, int depth) {
    if (depth > kMaxSchemaDepth) return error("nests deeper than {} levels", kMaxSchemaDepth);
    const Json properties = schema.value("properties", Json::object());
    if (!properties.is_object()) return error("'properties' must be an object");
    std::set<std::string> required;
    if (schema.contains("required") && schema["required"].is_array()) {
      for (const Json& r : schema["required"]) {
        if (r.is_string()) required.insert(r.get<std::string>());
      }
    }
    std::vector<std::string> keys;
    for (const auto& [key, value] : properties.items()) keys.push_back(key);
    std::sort(keys.begin(), keys.end());  // the template writes keys sorted (dictsort)
    // first_i: the members from i on, none written yet; rest_i: after one was written.
    const std::string base = next_name();
    std::string first_next = "\"\"";
    std::string rest_next = "\"\"";
    for (size_t i = keys.size(); i-- > 0;) {
      const std::string& key = keys[i];
      if (key.empty() || key.find_first_of(":,{}[]<\" ") != std::string::npos) {
        return error("property name '{}' cannot be written bare", key);
      }
      MINFER_ASSIGN_OR_RETURN(const std::string value, value_rule(properties[key], depth + 1));
      const std::string member = fmt::format("{} {}", grammar::gbnf_literal(key + ":"), value);
      const std::string first = fmt::format("{}-f{}", base, i);
      const std::string rest = fmt::format("{}-r{}", base, i);
      if (required.count(key) != 0) {
        rules_ += fmt::format("{} ::= {} {}\n", first, member, rest_next);
        rules_ += fmt::format("{} ::= \",\" {} {}\n", rest, member, rest_next);
      } else {
        rules_ += fmt::format("{} ::= {} {} | {}\n", first, member, rest_next, first_next);
        rules_ += fmt::format("{} ::= ( \",\" {} )? {}\n", rest, member, rest_next);
      }
      first_next = first;
      rest_next = rest;
    }
    rules_ += fmt::format("{} ::= \"{{\" {} \"}}\"\n", base, first_next);
    return base;
  }

 private:
  template <typename... Args>
  Status error(fmt::format_string<Args...> what, Args&&... args) {
    return make_error(ErrorCode::kInvalidArgument, "[tools] function '{}' (Gemma 4 calls): {}",
                      function_, fmt::format(what, std::forward<Args>(args)...));
  }

  std::string next_name() { return fmt::format("{}g{}", prefix_, n_++); }

  static std::string literal_of(const Json& v) {
    if (v.is_string()) return grammar::gbnf_literal("<|\"|>" + v.get<std::string>() + "<|\"|>");
    if (v.is_null()) return grammar::gbnf_literal("None");
    return grammar::gbnf_literal(v.dump());
  }

  Result<std::string> value_rule(const Json& schema, int depth) {
    if (depth > kMaxSchemaDepth) return error("nests deeper than {} levels", kMaxSchemaDepth);
    if (!schema.is_object()) return error("a property's schema must be an object");
    static const std::set<std::string> kKnown = {
        "type",      "description", "enum",    "const",   "properties",
        "required",  "items",       "title",   "default", "additionalProperties",
        "minLength", "maxLength",   "minimum", "maximum", "minItems",
        "maxItems"};
    for (const auto& [keyword, v] : schema.items()) {
      if (kKnown.count(keyword) == 0) return error("'{}' is not supported", keyword);
    }
    std::vector<Json> values;
    if (schema.contains("const")) values.push_back(schema["const"]);
    if (schema.contains("enum") && schema["enum"].is_array()) {
      values.assign(schema["enum"].begin(), schema["enum"].end());
    }
    std::vector<std::string> alternatives;
    for (const Json& v : values) {
      if (v.is_object() || v.is_array()) return error("an enum of objects or arrays");
      alternatives.push_back(literal_of(v));
    }
    std::vector<std::string> types = schema_types(schema);
    if (alternatives.empty() && types.empty()) {
      if (!schema.contains("properties")) return error("a property without a 'type'");
      types.push_back("object");
    }
    for (const std::string& type : alternatives.empty() ? types : std::vector<std::string>{}) {
      MINFER_ASSIGN_OR_RETURN(std::string rule, type_rule(schema, type, depth));
      alternatives.push_back(std::move(rule));
    }
    std::string out;
    for (const std::string& a : alternatives) out += (out.empty() ? "( " : " | ") + a;
    return out + " )";
  }

  // The bounds `lo_key` / `hi_key` of `schema` (unset when absent): integers in [0, cap], or
  // any integer when cap < 0.
  Status bounds(const Json& schema, const char* lo_key, const char* hi_key, int64_t cap,
                std::optional<int64_t>& lo, std::optional<int64_t>& hi) {
    for (const char* key : {lo_key, hi_key}) {
      if (!schema.contains(key)) continue;
      const Json& v = schema[key];
      if (!v.is_number_integer() ||
          (cap >= 0 && (v.get<int64_t>() < 0 || v.get<int64_t>() > cap))) {
        return error("'{}' must be an integer{}", key,
                     cap >= 0 ? fmt::format(" in 0..{}", cap) : std::string());
      }
      (key == lo_key ? lo : hi) = v.get<int64_t>();
    }
    if (lo && hi && *hi < *lo) return error("'{}' is below '{}'", hi_key, lo_key);
    return Status::ok();
  }

  // A repetition count {lo,hi} ("{lo,}" without hi).
  static std::string repeat(std::optional<int64_t> lo, std::optional<int64_t> hi) {
    return hi ? fmt::format("{{{},{}}}", lo.value_or(0), *hi)
              : fmt::format("{{{},}}", lo.value_or(0));
  }

  Result<std::string> type_rule(const Json& schema, const std::string& type, int depth) {
    constexpr int64_t kCap = limits::kMaxGbnfRepetition;
    std::optional<int64_t> lo, hi;
    if (type == "string") {
      MINFER_RETURN_IF_ERROR(bounds(schema, "minLength", "maxLength", kCap, lo, hi));
      if (!lo && !hi) return std::string("gemma-string");
      // Bounded text holds no '<' at all, so each character counts as one.
      return fmt::format("\"<|\\\"|>\" [^<]{} \"<|\\\"|>\"", repeat(lo, hi));
    }
    if (type == "integer") {
      MINFER_RETURN_IF_ERROR(bounds(schema, "minimum", "maximum", -1, lo, hi));
      return lo || hi ? "( " + grammar::integer_range(lo, hi) + " )" : std::string("integer");
    }
    if (type == "number" || type == "boolean") {
      if (schema.contains("minimum") || schema.contains("maximum")) {
        return error("'minimum' / 'maximum' on a {} is not supported", type);
      }
      return type;
    }
    if (type == "null") return grammar::gbnf_literal("None");
    if (type == "object") return object(schema, depth);
    if (type == "array") {
      std::string item = "gemma-any";
      if (schema.contains("items")) {
        MINFER_ASSIGN_OR_RETURN(item, value_rule(schema["items"], depth + 1));
      }
      MINFER_RETURN_IF_ERROR(bounds(schema, "minItems", "maxItems", kCap, lo, hi));
      if (hi && *hi == 0) return std::string("\"[\" \"]\"");
      const std::string more =
          repeat(lo ? std::optional<int64_t>(std::max<int64_t>(*lo - 1, 0)) : lo,
                 hi ? std::optional<int64_t>(*hi - 1) : hi);
      const std::string items = fmt::format("{0} ( \",\" {0} ){1}", item, more);
      return lo.value_or(0) > 0 ? fmt::format("\"[\" {} \"]\"", items)
                                : fmt::format("\"[\" ( {} )? \"]\"", items);
    }
    return error("type '{}' is not supported", type);
  }

  std::string function_;
  std::string prefix_;
  std::string& rules_;
  int n_ = 0;
};

}  // namespace

Result<std::string> gemma4_arguments_rule(const Json& parameters, const std::string& function,
                                          const std::string& prefix, std::string& rules) {
  if (!parameters.is_object()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[tools] function '{}': 'parameters' must be an object", function);
  }
  RuleWriter writer(function, prefix, rules);
  return writer.object(parameters, 0);
}

}  // namespace minfer::engine
