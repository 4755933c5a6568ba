// Writes the request fuzzer's seed corpus (fuzz/corpus/requests in the repo is its output):
// request bodies of the node tests (tests/server/node/*.test.js) for every endpoint, on the
// models the tests use, some as pairs (a slot saved then restored), and the hostile requests of
// issue #44 (a 100,000-deep array, a grammar of 50,000 nested parentheses, deep JSON Schemas and
// tools, huge stop and logit_bias lists, an object of 90,000 keys), each kept at most
// kMaxSeedBytes (CI's -max_len).
// Usage: minfer_request_fuzz_seeds OUT_DIR
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "request_fuzz_input.h"

namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxSeedBytes = 1 << 20;

// Header bytes that read as text: the index itself is what counts (byte % count).
enum Route : char {
  kChat,
  kCompletions,
  kMessages,
  kCountTokens,
  kResponses,
  kEmbeddings,
  kTokenize,
  kDetokenize,
  kApplyTemplate,
  kSlotSave,
  kSlotRestore,
  kSlotErase,
  kSlotNone,
  kSlotsList,
  kProps,
  kMetrics,
};
static_assert(kMetrics + 1 == minfer::fuzz::kRouteCount, "a route per entry of kRoutes");
enum Model : char { kStories, kQwen3, kQwen25 };

struct Request {
  Route route;
  Model model;
  std::string body;
  char variant = 0;
};

std::string header(const Request& r) {
  // '@' + route is printable and ('@' + route) % 16 == route, as % 3 of '0' + model is model.
  static_assert('@' % minfer::fuzz::kRouteCount == 0 && '0' % minfer::fuzz::kModelCount == 0);
  return std::string{static_cast<char>('@' + r.route), static_cast<char>('0' + r.model),
                     static_cast<char>('0' + r.variant)};
}

int n_written = 0;
bool ok = true;

void write(const fs::path& dir, const std::string& name, const std::vector<Request>& requests) {
  std::string bytes;
  for (const Request& r : requests) {
    if (!bytes.empty()) bytes += '\0';
    bytes += header(r) + r.body;
  }
  if (bytes.size() > kMaxSeedBytes) {
    std::fprintf(stderr, "seed '%s' is %zu bytes: over %zu\n", name.c_str(), bytes.size(),
                 kMaxSeedBytes);
    ok = false;
    return;
  }
  std::ofstream out(dir / name, std::ios::binary);
  out << bytes;
  ok &= static_cast<bool>(out);
  ++n_written;
}

void write(const fs::path& dir, const std::string& name, Request r) {
  write(dir, name, std::vector<Request>{std::move(r)});
}

std::string repeat(std::string_view s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

constexpr const char* kHi = R"([{"role":"user","content":"Hi there"}])";
constexpr const char* kOpenAiTools =
    R"([{"type":"function","function":{"name":"get_weather","description":"The weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{}}}}])";
constexpr const char* kWeather = R"([{"role":"user","content":"Weather in Paris?"}])";
constexpr const char* kRecordGrammar =
    R"(root ::= name \": \" [1-9] [0-9]{0,2} (\" kg\" | \" g\") \" [\" item (\",\" item){0,3} \"]\"\nname ::= [A-Z] [a-z\u00e9]{2,8}\nitem ::= \"\\\"\" [a-z]{1,6} \"\\\"\")";

std::string chat(const std::string& fields) {
  return std::string(R"({"messages":)") + kHi + (fields.empty() ? "" : ",") + fields + "}";
}

void chat_seeds(const fs::path& d) {
  write(d, "chat-basic", {kChat, kQwen25, chat(R"("model":"x","max_tokens":7,"temperature":0)")});
  write(
      d, "chat-sampling",
      {kChat, kQwen25,
       chat(
           R"("max_tokens":4,"presence_penalty":1.5,"frequency_penalty":0.5,"repeat_penalty":1.3,"min_p":0.1,"top_p":0.5,"top_k":0,"seed":1234,"user":"someone","response_format":{"type":"text"})")});
  write(
      d, "chat-stream-usage",
      {kChat, kQwen25,
       chat(
           R"("max_tokens":6,"temperature":0,"stream":true,"stream_options":{"include_usage":true})")});
  write(d, "chat-logprobs",
        {kChat, kStories,
         chat(R"("max_tokens":5,"temperature":0,"logprobs":true,"top_logprobs":3)")});
  write(d, "chat-n3-stream",
        {kChat, kQwen25, chat(R"("max_tokens":12,"temperature":1,"seed":7,"n":3,"stream":true)")});
  write(
      d, "chat-system-cached",
      {kChat, kStories,
       R"({"messages":[{"role":"system","content":")" + repeat("You are a careful assistant. ", 6) +
           R"("},{"role":"user","content":"First question?"}],"max_tokens":2,"temperature":0})",
       1});
  write(d, "chat-grammar-record",
        {kChat, kQwen25,
         std::string(R"({"messages":[{"role":"user","content":"Answer."}],"grammar":")") +
             kRecordGrammar + R"(","temperature":1,"seed":4,"max_tokens":60})"});
  write(d, "chat-grammar-bad", {kChat, kQwen25, chat(R"("grammar":"root ::= \"a\"\nx ::= [a-z")")});
  write(d, "chat-json-object",
        {kChat, kStories, chat(R"("response_format":{"type":"json_object"},"max_tokens":30)")});
  write(
      d, "chat-json-schema",
      {kChat, kStories,
       R"({"messages":[{"role":"system","content":"You answer in JSON."},{"role":"user","content":"Tell me about Lily."}],"temperature":1,"seed":8,"max_tokens":80,"response_format":{"type":"json_schema","json_schema":{"name":"s1","strict":true,"schema":{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":100},"kids":{"type":"array","items":{"$ref":"#/$defs/node"},"maxItems":2}},"required":["v"],"additionalProperties":false}},"type":"object","properties":{"root":{"$ref":"#/$defs/node"}},"required":["root"],"additionalProperties":false}}}})"});
  write(
      d, "chat-json-schema-keywords",
      {kChat, kStories,
       R"({"messages":[{"role":"user","content":"JSON"}],"max_tokens":60,"response_format":{"type":"json_schema","json_schema":{"name":"s0","schema":{"type":"object","properties":{"title":{"type":"string","minLength":1,"maxLength":10},"code":{"type":"string","pattern":"^[A-Z]{2}-[0-9]{2,4}$"},"level":{"type":"integer","minimum":-3,"maximum":3},"ratio":{"type":"number"},"flag":{"type":["boolean","null"]},"kind":{"enum":["a","b",7]},"fixed":{"const":{"v":1}},"when":{"type":"string","format":"date-time"},"at":{"type":"string","format":"time"},"id":{"type":"string","format":"uuid"},"tags":{"type":"array","prefixItems":[{"type":"string","maxLength":4}],"items":{"anyOf":[{"type":"boolean"},{"type":"string","maxLength":3}]},"minItems":1,"maxItems":4},"both":{"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{"oneOf":[{"type":"integer"},{"type":"null"}]}}}]}},"required":["title","code","level","kind","fixed","when","at"],"additionalProperties":false}}}})"});
  write(
      d, "chat-json-schema-unsupported",
      {kChat, kStories,
       chat(
           R"("max_tokens":8,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"array","uniqueItems":true}}})")});
  write(d, "chat-tools-auto",
        {kChat, kQwen3,
         std::string(R"({"model":"m","messages":)") + kWeather + R"(,"tools":)" + kOpenAiTools +
             R"(,"tool_choice":"auto","max_tokens":8,"temperature":0,"stream":true})"});
  write(
      d, "chat-tools-required",
      {kChat, kQwen3,
       std::string(R"({"messages":)") + kWeather + R"(,"tools":)" + kOpenAiTools +
           R"(,"tool_choice":"required","parallel_tool_calls":false,"max_tokens":40,"temperature":1,"seed":1})"});
  write(
      d, "chat-tools-named",
      {kChat, kQwen25,
       std::string(R"({"messages":)") + kWeather + R"(,"tools":)" + kOpenAiTools +
           R"(,"tool_choice":{"type":"function","function":{"name":"get_time"}},"max_tokens":30,"temperature":1,"seed":4})"});
  write(
      d, "chat-tools-forced-reply",
      {kChat, kQwen3,
       std::string(R"({"messages":)") + kWeather + R"(,"tools":)" + kOpenAiTools +
           R"(,"grammar":"root ::= \"<think>\\nThe user wants the weather.\\n</think>\\n\\nLet me check.\\n<tool_call>\\n{\\\"name\\\": \\\"get_weather\\\", \\\"arguments\\\": {\\\"city\\\": \\\"Paris\\\"}}\\n</tool_call>\"","max_tokens":100,"temperature":0,"stream":true})"});
  write(
      d, "chat-tool-history",
      {kChat, kQwen25,
       std::string(
           R"({"messages":[{"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"21 C"}],"tools":)") +
           kOpenAiTools + R"(,"max_tokens":8,"temperature":0,"logit_bias":{"151645":100}})"});
  write(
      d, "chat-thinking",
      {kChat, kQwen3,
       chat(
           R"("grammar":"root ::= \"<think>\\nhm\\n</think>\\n\\nHello.\"","reasoning_format":"deepseek","max_tokens":50,"chat_template_kwargs":{"enable_thinking":true})"),
       1});
  write(
      d, "chat-spec",
      {kChat, kStories,
       R"({"messages":[{"role":"user","content":"Tell me about the sea."}],"max_tokens":32,"temperature":0,"spec_ngram":1,"speculative.n_max":3,"speculative.n_min":2})"});
  write(
      d, "chat-wrong-types",
      {kChat, kStories,
       R"({"messages":[{"role":5,"content":"x"}],"max_tokens":"5","stop":["a",3],"logit_bias":{"abc":1}})"});
  write(d, "chat-malformed", {kChat, kStories, R"({"messages": [})"});
}

void completion_seeds(const fs::path& d) {
  write(
      d, "completion-stop",
      {kCompletions, kStories,
       R"({"prompt":"The sky is","max_tokens":24,"temperature":0,"stop":["ky", "never-appears"]})"});
  write(
      d, "completion-ids",
      {kCompletions, kStories,
       R"({"prompt":[1,403,407,261,378],"max_tokens":8,"temperature":0,"logprobs":2,"echo":false})"});
  write(
      d, "completion-stream-n2",
      {kCompletions, kQwen25,
       R"({"prompt":"Once upon a time","max_tokens":8,"temperature":1,"seed":3,"n":2,"stream":true,"stream_options":{"include_usage":true}})"});
  write(d, "completion-logit-bias",
        {kCompletions, kQwen25,
         R"({"prompt":"Hello","max_tokens":3,"temperature":0,"logit_bias":{"43543":100}})"});
  write(d, "completion-grammar-stream",
        {kCompletions, kQwen25,
         std::string(R"({"prompt":"Weight:","grammar":")") + kRecordGrammar +
             R"(","temperature":1,"seed":9,"max_tokens":40,"stream":true})"});
  write(
      d, "completion-context-shift",
      {kCompletions, kStories,
       R"({"prompt":"Once upon a time","max_tokens":300,"temperature":0,"ignore_eos":true,"logit_bias":{"2":-100}})",
       1});
  write(d, "completion-spec",
        {kCompletions, kStories,
         R"({"prompt":")" + repeat("Once upon a time there was a little cat. ", 4) +
             R"(","max_tokens":48,"temperature":0,"spec_ngram":1})"});
  write(d, "completion-bad", {kCompletions, kStories, R"({"prompt":[1,"a"],"logprobs":true})"});
}

void anthropic_seeds(const fs::path& d) {
  constexpr const char* kTools =
      R"([{"name":"get_weather","description":"The weather in a city","input_schema":{"type":"object","properties":{"city":{"type":"string","enum":["Paris","Oslo"]}},"required":["city"]}},{"name":"get_time","input_schema":{"type":"object","properties":{}}}])";
  write(d, "messages-create",
        {kMessages, kQwen3,
         std::string(
             R"({"model":"m","max_tokens":6,"temperature":0,"system":"Be brief.","messages":)") +
             kWeather + R"(,"metadata":{"user_id":"u"},"stop_sequences":["STOP"]})"});
  write(
      d, "messages-stream-thinking",
      {kMessages, kQwen3,
       std::string(R"({"model":"m","max_tokens":60,"stream":true,"messages":)") + kWeather +
           R"(,"thinking":{"type":"enabled","budget_tokens":1024},"grammar":"root ::= \"<think>\\nHmm.\\n</think>\\n\\nSunny.\""})"});
  write(
      d, "messages-tool-use",
      {kMessages, kQwen3,
       std::string(R"({"model":"m","max_tokens":40,"temperature":1,"seed":1,"messages":)") +
           kWeather + R"(,"tools":)" + kTools +
           R"(,"tool_choice":{"type":"tool","name":"get_weather","disable_parallel_tool_use":true},"stream":true})"});
  write(
      d, "messages-tool-result",
      {kMessages, kQwen25,
       std::string(
           R"({"model":"m","max_tokens":8,"temperature":0,"messages":[{"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"sunny"}]}]}],"tools":)") +
           kTools + "}"});
  write(
      d, "messages-bad",
      {kMessages, kQwen3,
       R"({"model":"m","max_tokens":4,"messages":[{"role":"user","content":[{"type":"image","source":{}}]}],"tool_choice":{"type":"sometimes"}})"});
  write(
      d, "count-tokens",
      {kCountTokens, kQwen3,
       std::string(R"({"model":"m","system":"Be brief.","tools":)") + kTools +
           R"(,"messages":[{"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny"}]}]})"});
}

void responses_seeds(const fs::path& d) {
  constexpr const char* kTools =
      R"([{"type":"function","name":"get_weather","description":"The weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string","enum":["Paris","Oslo"]}},"required":["city"]}},{"type":"function","name":"get_time","parameters":{"type":"object","properties":{}}}])";
  write(
      d, "responses-create",
      {kResponses, kQwen3,
       R"({"model":"m","instructions":"Be brief.","input":"Hello!","max_output_tokens":6,"temperature":0,"store":false})"});
  write(
      d, "responses-items-stream",
      {kResponses, kQwen3,
       R"({"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"Hello!"}]}],"max_output_tokens":40,"grammar":"root ::= \"Hi there.\"","stream":true})"});
  write(
      d, "responses-tools",
      {kResponses, kQwen3,
       std::string(R"({"model":"m","input":"Weather in Paris?","tools":)") + kTools +
           R"(,"tool_choice":"required","parallel_tool_calls":false,"max_output_tokens":40,"temperature":1,"seed":1,"stream":true})"});
  write(
      d, "responses-call-output",
      {kResponses, kQwen25,
       std::string(R"({"model":"m","tools":)") + kTools +
           R"(,"max_output_tokens":6,"temperature":0,"input":[{"role":"user","content":"Weather in Paris?"},{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},{"type":"function_call_output","call_id":"call_1","output":"21 C, sunny"}]})"});
  write(
      d, "responses-json-schema",
      {kResponses, kQwen3,
       R"({"model":"m","input":"A person as JSON.","max_output_tokens":60,"temperature":1,"seed":3,"reasoning":{"effort":"low"},"text":{"format":{"type":"json_schema","name":"person","strict":true,"schema":{"type":"object","properties":{"name":{"type":"string","maxLength":8},"age":{"type":"integer"}},"required":["name","age"],"additionalProperties":false}}}})"});
  write(d, "responses-bad",
        {kResponses, kQwen3, R"({"model":"m","input":[{"type":"input_image"}],"store":true})"});
}

void other_seeds(const fs::path& d) {
  write(
      d, "embeddings-texts",
      {kEmbeddings, kStories,
       R"({"model":"m","input":["Once upon a time","The cat sat",""],"encoding_format":"float","dimensions":16})"});
  write(d, "embeddings-ids-base64",
        {kEmbeddings, kQwen25, R"({"input":[[9707,11,1879],[9707]],"encoding_format":"base64"})"});
  write(d, "embeddings-bad", {kEmbeddings, kStories, R"({"input":["a",[1]],"dimensions":100000})"});
  write(
      d, "tokenize",
      {kTokenize, kQwen25,
       R"({"content":"Hello, world! h\u00e9llo <|im_start|>","with_pieces":true,"add_special":true,"parse_special":true})"});
  write(d, "tokenize-stories", {kTokenize, kStories, R"({"content":"Once upon a time"})"});
  write(d, "detokenize", {kDetokenize, kQwen25, R"({"tokens":[9707,11,1879,0,151644]})"});
  write(d, "detokenize-bad", {kDetokenize, kStories, R"({"tokens":[-1]})"});
  write(
      d, "apply-template",
      {kApplyTemplate, kQwen3,
       std::string(
           R"({"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello."},{"role":"user","content":"Weather?"}],"tools":)") +
           kOpenAiTools + R"(,"chat_template_kwargs":{"enable_thinking":false}})"});
  write(d, "apply-template-bad", {kApplyTemplate, kQwen25, R"({"messages":"hi"})"});
  write(d, "slots-list-props-metrics",
        std::vector<Request>{
            {kSlotsList, kStories, ""}, {kProps, kQwen3, ""}, {kMetrics, kQwen25, ""}});
  // The slot API's round trip: a pinned completion, saved, restored into the other slot and
  // continued there; then names that would leave the folder.
  write(d, "slots-save-restore",
        std::vector<Request>{
            {kCompletions, kStories,
             R"({"prompt":"The quick brown fox","max_tokens":8,"temperature":0,"id_slot":0})"},
            {kSlotSave, kStories, R"({"filename":"fox.bin"})"},
            {kSlotRestore, kStories, R"({"filename":"fox.bin"})"},
            {kCompletions, kStories,
             R"({"prompt":"The quick brown fox","max_tokens":8,"temperature":0,"id_slot":1})"}});
  write(d, "slots-bad-names",
        std::vector<Request>{{kSlotSave, kQwen25, R"({"filename":"../escape.bin"})"},
                             {kSlotRestore, kQwen25, R"({"filename":"never-saved.bin"})"},
                             {kSlotErase, kQwen25, ""},
                             {kSlotNone, kQwen25, R"({"filename":"x.bin"})"}});
}

// Issue #44's hostile requests: each one a crash or a hang before the parsers had budgets.
void hostile_seeds(const fs::path& d) {
  const std::string deep_array = repeat("[", 100'000) + repeat("]", 100'000);
  write(d, "hostile-chat-deep-array",
        {kChat, kStories, chat(R"("max_tokens":2,"x":)" + deep_array)});
  write(
      d, "hostile-chat-deep-object",
      {kChat, kStories,
       chat(R"("max_tokens":2,"x":)" + repeat(R"({"a":)", 100'000) + "1" + repeat("}", 100'000))});
  write(d, "hostile-apply-template-deep-array",
        {kApplyTemplate, kQwen25, chat(R"("x":)" + deep_array)});
  write(d, "hostile-grammar-nested-parens",
        {kCompletions, kStories,
         R"({"prompt":"a","max_tokens":2,"grammar":"root ::= )" + repeat("(", 50'000) + R"(\"a\")" +
             repeat(")", 50'000) + "\"}"});
  std::string rules = "root ::= r0\\n";
  for (int i = 0; i < 30'000; ++i) {
    rules +=
        "r" + std::to_string(i) + " ::= \\\"a\\\" r" + std::to_string(i + 1) + " | \\\"b\\\"\\n";
  }
  rules += "r30000 ::= \\\"c\\\"";
  write(d, "hostile-grammar-rule-chain",
        {kCompletions, kStories, R"({"prompt":"a","max_tokens":2,"grammar":")" + rules + "\"}"});
  write(
      d, "hostile-json-schema-deep",
      {kChat, kStories,
       chat(
           R"("max_tokens":2,"response_format":{"type":"json_schema","json_schema":{"name":"d","schema":)" +
           repeat(R"({"items":)", 100'000) + "{}" + repeat("}", 100'000) + "}}")});
  std::string defs;
  for (int i = 0; i < 16'000; ++i) {
    defs += (i ? "," : "") + std::string(R"("d)") + std::to_string(i) +
            R"(":{"type":"array","items":{"$ref":"#/$defs/d)" + std::to_string(i + 1) + R"("}})";
  }
  defs += R"(,"d16000":{"type":"integer"})";
  write(
      d, "hostile-json-schema-ref-chain",
      {kChat, kStories,
       chat(
           R"("max_tokens":2,"response_format":{"type":"json_schema","json_schema":{"name":"r","schema":{"$defs":{)" +
           defs + R"(},"$ref":"#/$defs/d0"}}})")});
  write(d, "hostile-tools-deep",
        {kChat, kQwen3,
         std::string(R"({"messages":)") + kWeather +
             R"(,"max_tokens":2,"tools":[{"type":"function","function":{"name":"f","parameters":)" +
             repeat(R"({"type":"object","properties":{"a":)", 25'000) + "{}" +
             repeat("}}", 25'000) + "}}]}"});
  std::string stops;
  for (int i = 0; i < 20'000; ++i) stops += (i ? ",\"" : "\"") + std::to_string(i) + "\"";
  write(d, "hostile-stop-strings",
        {kCompletions, kStories, R"({"prompt":"a","max_tokens":4,"stop":[)" + stops + "]}"});
  // An object of 90,000 keys in a field no handler reads: the body's parse alone.
  std::string keys;
  for (int i = 0; i < 90'000; ++i) keys += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":0";
  write(d, "hostile-object-many-keys",
        {kChat, kStories, chat(R"("max_tokens":2,"x":{)" + keys + "}")});
  std::string bias;
  for (int i = 0; i < 40'000; ++i) bias += (i ? ",\"" : "\"") + std::to_string(i) + "\":1";
  write(d, "hostile-logit-bias",
        {kCompletions, kQwen25, R"({"prompt":"a","max_tokens":4,"logit_bias":{)" + bias + "}}"});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const fs::path dir = argv[1];
  std::error_code ec;
  fs::create_directories(dir, ec);
  chat_seeds(dir);
  completion_seeds(dir);
  anthropic_seeds(dir);
  responses_seeds(dir);
  other_seeds(dir);
  hostile_seeds(dir);
  std::printf("request seeds: %d files in %s\n", n_written, dir.string().c_str());
  return ok ? 0 : 1;
}
