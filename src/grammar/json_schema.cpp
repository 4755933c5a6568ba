#include "grammar/json_schema.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/input_limits.h"
#include "grammar/json_schema_parts.h"

namespace minfer::grammar {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kAnnotations[] = {"title",    "description", "default",  "examples",
                                             "$schema",  "$id",         "$comment", "deprecated",
                                             "readOnly", "writeOnly",   "$defs",    "definitions"};
constexpr std::string_view kKeywords[] = {"type",
                                          "properties",
                                          "required",
                                          "additionalProperties",
                                          "enum",
                                          "const",
                                          "anyOf",
                                          "oneOf",
                                          "allOf",
                                          "$ref",
                                          "items",
                                          "prefixItems",
                                          "minItems",
                                          "maxItems",
                                          "minLength",
                                          "maxLength",
                                          "pattern",
                                          "format",
                                          "minimum",
                                          "maximum",
                                          "exclusiveMinimum",
                                          "exclusiveMaximum"};
constexpr int kMaxDepth = limits::kMaxSchemaDepth;

bool one_of(std::string_view key, std::span<const std::string_view> set) {
  return std::find(set.begin(), set.end(), key) != set.end();
}

// The keywords of `s` that constrain a document, other than `except`.
std::vector<std::string> constraints_besides(const Json& s, std::string_view except) {
  std::vector<std::string> out;
  for (const auto& [key, value] : s.items()) {
    if (key != except && !one_of(key, kAnnotations)) out.push_back(key);
  }
  return out;
}

constexpr std::string_view kFormats[] = {"date", "time", "date-time", "uuid"};

// a + " " + b, leaving out an empty side.
std::string join(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return a + b;
  return a + " " + b;
}

// `item` lo to hi times ("" when it may not appear).
std::string repeat(const std::string& item, int64_t lo, std::optional<int64_t> hi) {
  if (hi && *hi == 0) return "";
  if (hi && *hi == lo) return lo == 1 ? item : fmt::format("( {} ){{{}}}", item, lo);
  if (!hi) return fmt::format("( {} ){{{},}}", item, lo);
  return fmt::format("( {} ){{{},{}}}", item, lo, *hi);
}

// True when `value` is of the schema's "type" (a string or an array of them), or there is none.
bool of_type(const Json& value, const Json& schema) {
  const Json type = schema.value("type", Json());
  if (type.is_null()) return true;
  auto is = [&](const Json& t) {
    if (!t.is_string()) return false;
    const std::string name = t.get<std::string>();
    return (name == "string" && value.is_string()) || (name == "number" && value.is_number()) ||
           (name == "integer" && value.is_number_integer()) ||
           (name == "boolean" && value.is_boolean()) || (name == "null" && value.is_null()) ||
           (name == "object" && value.is_object()) || (name == "array" && value.is_array());
  };
  if (!type.is_array()) return is(type);
  return std::any_of(type.begin(), type.end(), is);
}

class Converter {
 public:
  Converter(const Json& root, const JsonSchemaGbnfOptions& options)
      : root_(root), options_(options) {}

  Result<std::string> convert() {
    Result<std::string> root = expr(root_, "#", 0);
    if (!root.is_ok()) return root;
    std::string out = options_.rule_prefix + "root ::= " + *root + "\n";
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    if (options_.with_primitives) out += json_primitive_rules();
    return out;
  }

 private:
  Status error(const std::string& path, std::string_view what) const {
    return make_error(ErrorCode::kInvalidArgument, "[json_schema] {} at {}", what, path);
  }

  std::string add_rule(std::string_view hint, std::string body) {
    std::string name = fmt::format("{}{}-{}", options_.rule_prefix, hint, rules_.size() + 1);
    rules_.emplace_back(name, std::move(body));
    return name;
  }

  Result<std::string> expr(const Json& s, const std::string& path, int depth) {
    if (depth > kMaxDepth)
      return error(path, fmt::format("nesting deeper than the limit of {}", kMaxDepth));
    if (s.is_boolean()) {
      if (s.get<bool>()) return std::string("value");
      return error(path, "the schema 'false' (no document is valid)");
    }
    if (!s.is_object()) {
      return error(path,
                   fmt::format("a schema must be an object or a boolean, got {}", s.type_name()));
    }
    for (const auto& [key, value] : s.items()) {
      if (!one_of(key, kKeywords) && !one_of(key, kAnnotations)) {
        return error(path, fmt::format("unsupported JSON Schema keyword '{}'", key));
      }
    }
    for (std::string_view alone : {"$ref", "anyOf", "oneOf", "allOf", "const", "enum"}) {
      if (!s.contains(alone)) continue;
      std::vector<std::string> others = constraints_besides(s, alone);
      // A type beside const or enum only restates it (zod writes {"type": "string", "enum": …}).
      const bool literal = alone == "const" || alone == "enum";
      std::erase_if(others, [&](const std::string& k) { return literal && k == "type"; });
      if (alone == "allOf" || others.empty()) return combinator(s, alone, path, depth);
      return error(path, fmt::format("'{}' beside '{}' is not supported", others[0], alone));
    }
    return typed(s, path, depth);
  }

  Result<std::string> combinator(const Json& s, std::string_view key, const std::string& path,
                                 int depth) {
    const Json& v = s.at(std::string(key));
    if (key == "$ref") {
      if (!v.is_string()) return error(path, "'$ref' must be a string");
      return ref(v.get<std::string>(), path, depth);
    }
    if (key == "const") {
      if (!of_type(v, s)) return error(path, "'const' is not of the schema's 'type'");
      return gbnf_literal(v.dump());
    }
    if (!v.is_array() || v.empty()) {
      return error(path, fmt::format("'{}' must be a non-empty array", key));
    }
    if (key == "allOf") return all_of(s, path, depth);
    std::vector<std::string> alts;
    for (size_t i = 0; i < v.size(); ++i) {
      if (key == "enum") {
        if (of_type(v[i], s)) alts.push_back(gbnf_literal(v[i].dump()));
        continue;
      }
      Result<std::string> e = expr(v[i], fmt::format("{}/{}/{}", path, key, i), depth + 1);
      if (!e.is_ok()) return e;
      alts.push_back(std::move(*e));
    }
    if (alts.empty()) return error(path, "no 'enum' value is of the schema's 'type'");
    std::string out = "( " + alts[0];
    for (size_t i = 1; i < alts.size(); ++i) out += " | " + alts[i];
    return out + " )";
  }

  // The schema an allOf of object schemas amounts to: properties in order, required merged. A
  // part's additionalProperties (other than true) covers only the properties it names itself, so
  // one that would refuse another part's property is an error; no other property is generated.
  Result<std::string> all_of(const Json& s, const std::string& path, int depth) {
    Json merged = s;
    merged.erase("allOf");
    std::vector<std::pair<std::string, const Json*>> parts = {{path, &s}};
    const Json& list = s.at("allOf");
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string at = fmt::format("{}/allOf/{}", path, i);
      Result<const Json*> part = resolve_refs(list[i], at);
      if (!part.is_ok()) return part.status();
      const Json& p = **part;
      const bool object = p.is_object() && (p.value("type", Json("object")) == "object");
      if (!object || p.contains("anyOf") || p.contains("oneOf") || p.contains("allOf")) {
        return error(at, "allOf of anything but object schemas is not supported");
      }
      parts.emplace_back(at, &p);
      for (const auto& [key, value] : p.items()) {
        if (key == "properties") {
          for (const auto& [name, prop] : value.items()) merged["properties"][name] = prop;
        } else if (key == "required") {
          for (const Json& name : value) merged["required"].push_back(name);
        } else if (!merged.contains(key)) {
          merged[key] = value;
        }
      }
    }
    const Json names = merged.value("properties", Json::object());
    for (const auto& [at, part] : parts) {
      const Json additional = part->value("additionalProperties", Json(true));
      if (additional == Json(true)) continue;
      const Json own = part->value("properties", Json::object());
      for (const auto& [name, prop] : names.items()) {
        if (!own.contains(name)) {
          return error(at, fmt::format("its additionalProperties refuses property '{}' of "
                                       "another allOf part",
                                       name));
        }
      }
    }
    merged.erase("additionalProperties");
    merged["type"] = "object";
    return expr(merged, path, depth + 1);
  }

  // Follows $ref until a schema that is not one.
  Result<const Json*> resolve_refs(const Json& s, const std::string& path) const {
    const Json* at = &s;
    for (int hops = 0; at->is_object() && at->contains("$ref"); ++hops) {
      if (hops > kMaxDepth) return error(path, "a cycle of $ref");
      Result<const Json*> target = pointer((*at)["$ref"], path);
      if (!target.is_ok()) return target;
      at = *target;
    }
    return at;
  }

  Result<const Json*> pointer(const Json& ref, const std::string& path) const {
    if (!ref.is_string() || ref.get<std::string>().rfind('#', 0) != 0) {
      return error(
          path, fmt::format("$ref {}: only references into this document ('#/...')", ref.dump()));
    }
    const std::string text = ref.get<std::string>();
    const Json* at = &root_;
    size_t i = 1;
    while (i < text.size()) {
      if (text[i] != '/') return error(path, fmt::format("$ref '{}': not a JSON pointer", text));
      const size_t next = std::min(text.find('/', i + 1), text.size());
      std::string token;  // the reference token with ~1 → / and ~0 → ~
      for (size_t k = i + 1; k < next; ++k) {
        const bool escape = text[k] == '~' && k + 1 < next;
        token += escape ? (text[k + 1] == '1' ? '/' : '~') : text[k];
        if (escape) ++k;
      }
      if (!at->is_object() || !at->contains(token)) {
        return error(path, fmt::format("$ref '{}' points at nothing", text));
      }
      at = &(*at)[token];
      i = next;
    }
    return at;
  }

  Result<std::string> ref(const std::string& target, const std::string& path, int depth) {
    if (auto it = refs_.find(target); it != refs_.end()) return it->second;
    Result<const Json*> schema = pointer(Json(target), path);
    if (!schema.is_ok()) return schema.status();
    const std::string name = add_rule("ref", "");
    const size_t index = rules_.size() - 1;
    refs_[target] = name;
    Result<std::string> body = expr(**schema, target, depth + 1);
    if (!body.is_ok()) return body;
    rules_[index].second = std::move(*body);
    return name;
  }

  Result<std::string> typed(const Json& s, const std::string& path, int depth) {
    Json type = s.value("type", Json());
    if (type.is_null()) type = inferred_type(s);
    if (type.is_null()) return std::string("value");
    if (type.is_string()) return one_type(s, type.get<std::string>(), path, depth);
    if (!type.is_array() || type.empty()) {
      return error(path, "'type' must be a string or a non-empty array of strings");
    }
    std::string out = "(";
    for (size_t i = 0; i < type.size(); ++i) {
      if (!type[i].is_string()) return error(path, "'type' must hold strings");
      Result<std::string> e = one_type(s, type[i].get<std::string>(), path, depth);
      if (!e.is_ok()) return e;
      out += (i == 0 ? " " : " | ") + *e;
    }
    return out + " )";
  }

  static Json inferred_type(const Json& s) {
    auto has = [&](std::initializer_list<const char*> keys) {
      return std::any_of(keys.begin(), keys.end(), [&](const char* k) { return s.contains(k); });
    };
    if (has({"properties", "required", "additionalProperties"})) return "object";
    if (has({"items", "prefixItems", "minItems", "maxItems"})) return "array";
    if (has({"minLength", "maxLength", "pattern", "format"})) return "string";
    if (has({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})) return "number";
    return Json();
  }

  Result<std::string> one_type(const Json& s, const std::string& type, const std::string& path,
                               int depth) {
    if (type == "object") return object_rule(s, path, depth);
    if (type == "array") return array_rule(s, path, depth);
    if (type == "string") return string_rule(s, path);
    if (type == "integer") return integer_rule(s, path);
    if (type == "number") {
      for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
        if (s.contains(k)) {
          return error(path, fmt::format("unsupported JSON Schema keyword '{}' on a number "
                                         "(bounds are supported on integers)",
                                         k));
        }
      }
      return std::string("number");
    }
    if (type == "boolean" || type == "null") return type;
    return error(path, fmt::format("unknown type '{}'", type));
  }

  Result<std::string> object_rule(const Json& s, const std::string& path, int depth);
  Result<std::string> array_rule(const Json& s, const std::string& path, int depth);
  Result<std::string> string_rule(const Json& s, const std::string& path);
  Result<std::string> integer_rule(const Json& s, const std::string& path);

  const Json& root_;
  const JsonSchemaGbnfOptions& options_;
  std::vector<std::pair<std::string, std::string>> rules_;  // after root, in creation order
  std::map<std::string, std::string> refs_;                 // $ref target → its rule
};

// One property of an object: its member text ("key" ws ":" ws value ws) and whether it must be
// there.
struct Member {
  std::string text;
  bool required;
};

// "{" ws then the members in order, each optional one possibly left out, then the other keys.
std::string object_body(const std::vector<Member>& members, const std::string& extra) {
  // after[i]: what may follow once a member is written, from member i on.
  std::vector<std::string> after(members.size() + 1);
  after[members.size()] = extra.empty() ? "" : "( \",\" ws " + extra + " )*";
  for (size_t i = members.size(); i-- > 0;) {
    const std::string item = "\",\" ws " + members[i].text;
    after[i] = join(members[i].required ? item : "( " + item + " )?", after[i + 1]);
  }
  // start: the first member written is any optional one before the first required one.
  std::string start = extra.empty() ? "" : "( " + join(extra, after[members.size()]) + " )?";
  for (size_t i = members.size(); i-- > 0;) {
    const std::string here = join(members[i].text, after[i + 1]);
    if (members[i].required) {
      start = here;
    } else {
      start = start.empty() ? "( " + here + " )?" : "( " + here + " | " + start + " )";
    }
  }
  return join(join("\"{\" ws", start), "\"}\"");
}

Result<std::string> Converter::object_rule(const Json& s, const std::string& path, int depth) {
  const Json properties = s.value("properties", Json::object());
  const Json required = s.value("required", Json::array());
  if (!properties.is_object()) return error(path, "'properties' must be an object");
  if (!required.is_array()) return error(path, "'required' must be an array of strings");
  std::vector<std::string> names;
  std::vector<const Json*> schemas;
  for (const auto& [name, prop] : properties.items()) {
    names.push_back(name);
    schemas.push_back(&prop);
  }
  static const Json kAny = true;
  for (const Json& r : required) {
    if (!r.is_string()) return error(path, "'required' must be an array of strings");
    if (std::find(names.begin(), names.end(), r.get<std::string>()) == names.end()) {
      names.push_back(r.get<std::string>());
      schemas.push_back(&kAny);
    }
  }
  std::vector<Member> members;
  for (size_t i = 0; i < names.size(); ++i) {
    Result<std::string> value =
        expr(*schemas[i], fmt::format("{}/properties/{}", path, names[i]), depth + 1);
    if (!value.is_ok()) return value;
    const bool is_required =
        std::find(required.begin(), required.end(), Json(names[i])) != required.end();
    members.push_back(
        {gbnf_literal(Json(names[i]).dump()) + " ws \":\" ws " + *value + " ws", is_required});
  }
  std::string extra;
  const Json additional = s.value("additionalProperties", Json(false));
  if (!(additional.is_boolean() && !additional.get<bool>())) {
    Result<std::string> value = expr(additional, path + "/additionalProperties", depth + 1);
    if (!value.is_ok()) return value;
    Result<std::string> key = key_other_than(names);
    if (!key.is_ok()) return error(path, key.status().message());
    extra = add_rule("key", *key) + " ws \":\" ws " + *value + " ws";
  }
  return add_rule("object", object_body(members, extra));
}

Result<std::string> Converter::array_rule(const Json& s, const std::string& path, int depth) {
  auto count = [&](const char* key) -> Result<std::optional<int64_t>> {
    if (!s.contains(key)) return std::optional<int64_t>();
    if (!s[key].is_number_unsigned()) return error(path, fmt::format("'{}' must be >= 0", key));
    return std::optional<int64_t>(s[key].get<int64_t>());
  };
  Result<std::optional<int64_t>> min_items = count("minItems"), max_items = count("maxItems");
  if (!min_items.is_ok()) return min_items.status();
  if (!max_items.is_ok()) return max_items.status();
  const int64_t lo = min_items->value_or(0);
  const std::optional<int64_t> hi = *max_items;
  if (hi && *hi < lo) return error(path, "'maxItems' is below 'minItems'");
  // The tuple (prefixItems, or draft-07's array form of items), then the rest (items).
  const Json tuple = s.contains("prefixItems")                      ? s["prefixItems"]
                     : s.contains("items") && s["items"].is_array() ? s["items"]
                                                                    : Json::array();
  if (!tuple.is_array()) return error(path, "'prefixItems' must be an array");
  std::vector<std::string> elements;
  for (size_t i = 0; i < tuple.size() && (!hi || static_cast<int64_t>(i) < *hi); ++i) {
    Result<std::string> e = expr(tuple[i], fmt::format("{}/prefixItems/{}", path, i), depth + 1);
    if (!e.is_ok()) return e;
    elements.push_back(*e + " ws");
  }
  std::string rest;
  const bool no_rest = s.contains("items") && s["items"].is_boolean() && !s["items"].get<bool>();
  const bool rest_schema = s.contains("items") && !s["items"].is_array() && !no_rest;
  if (!no_rest && (rest_schema || tuple.empty() || lo > static_cast<int64_t>(tuple.size()))) {
    Result<std::string> e = rest_schema ? expr(s["items"], path + "/items", depth + 1)
                                        : Result<std::string>(std::string("value"));
    if (!e.is_ok()) return e;
    rest = *e + " ws";
  }
  const auto n = static_cast<int64_t>(elements.size());
  if (rest.empty() && lo > n) return error(path, "'minItems' exceeds the items allowed");
  // From the last element back: each tuple element past minItems may end the array.
  const int64_t rest_lo = std::max<int64_t>(0, lo - n);
  const std::optional<int64_t> rest_hi = hi ? std::optional<int64_t>(*hi - n) : std::nullopt;
  std::string tail;
  if (!rest.empty() && (!rest_hi || *rest_hi > 0)) {
    const std::string next = "\",\" ws " + rest;
    if (n > 0) {
      tail = repeat(next, rest_lo, rest_hi);
    } else {
      // The first item has no comma.
      tail = join(rest, repeat(next, std::max<int64_t>(rest_lo - 1, 0),
                               rest_hi ? std::optional<int64_t>(*rest_hi - 1) : rest_hi));
      if (rest_lo == 0) tail = "( " + tail + " )?";
    }
  }
  for (int64_t i = n; i-- > 0;) {
    const std::string item = (i > 0 ? "\",\" ws " : "") + elements[static_cast<size_t>(i)];
    const std::string here = join(item, tail);
    tail = i < lo ? here : "( " + here + " )?";
  }
  return add_rule("array", join(join("\"[\" ws", tail), "\"]\""));
}

Result<std::string> Converter::string_rule(const Json& s, const std::string& path) {
  const bool lengths = s.contains("minLength") || s.contains("maxLength");
  const int n_shapes =
      (lengths ? 1 : 0) + (s.contains("pattern") ? 1 : 0) + (s.contains("format") ? 1 : 0);
  if (n_shapes > 1) {
    return error(path, "more than one of minLength/maxLength, pattern and format");
  }
  if (s.contains("format")) {
    const std::string format = s["format"].is_string() ? s["format"].get<std::string>() : "";
    if (!one_of(format, kFormats)) {
      return error(path, fmt::format("unsupported format {} (date, time, date-time, uuid)",
                                     s["format"].dump()));
    }
    return "\"\\\"\" format-" + format + " \"\\\"\"";
  }
  if (s.contains("pattern")) {
    if (!s["pattern"].is_string()) return error(path, "'pattern' must be a string");
    Result<std::string> body = pattern_to_gbnf(s["pattern"].get<std::string>());
    if (!body.is_ok()) return error(path, body.status().message());
    return add_rule("pattern", "\"\\\"\" " + *body + " \"\\\"\"");
  }
  if (lengths) {
    for (const char* k : {"minLength", "maxLength"}) {
      if (s.contains(k) && !s[k].is_number_unsigned()) {
        return error(path, fmt::format("'{}' must be >= 0", k));
      }
    }
    const int64_t lo = s.value("minLength", int64_t{0});
    const std::optional<int64_t> hi = s.contains("maxLength")
                                          ? std::optional<int64_t>(s["maxLength"].get<int64_t>())
                                          : std::nullopt;
    if (hi && *hi < lo) return error(path, "'maxLength' is below 'minLength'");
    return "\"\\\"\" " + (hi && *hi == 0 ? std::string() : repeat("char", lo, hi) + " ") +
           "\"\\\"\"";
  }
  return std::string("string");
}

Result<std::string> Converter::integer_rule(const Json& s, const std::string& path) {
  std::optional<int64_t> lo, hi;
  constexpr double kLimit = 9.2e18;
  for (const char* key : {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}) {
    if (!s.contains(key)) continue;
    if (!s[key].is_number()) return error(path, fmt::format("'{}' must be a number", key));
    const double v = s[key].get<double>();
    if (!(std::fabs(v) < kLimit)) return error(path, fmt::format("'{}' is out of range", key));
    const std::string_view k = key;
    if (k == "minimum" || k == "exclusiveMinimum") {
      const auto b = static_cast<int64_t>(k == "minimum" ? std::ceil(v) : std::floor(v) + 1);
      lo = lo ? std::max(*lo, b) : b;
    } else {
      const auto b = static_cast<int64_t>(k == "maximum" ? std::floor(v) : std::ceil(v) - 1);
      hi = hi ? std::min(*hi, b) : b;
    }
  }
  if (!lo && !hi) return std::string("integer");
  if (lo && hi && *lo > *hi) return error(path, "no integer lies within the bounds");
  return add_rule("integer", integer_range(lo, hi));
}

}  // namespace

Result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema,
                                        const JsonSchemaGbnfOptions& options) {
  return Converter(schema, options).convert();
}

}  // namespace minfer::grammar
