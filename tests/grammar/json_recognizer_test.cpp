// The JSON recognizer byte by byte: documents it must accept (and complete), documents it must
// refuse at a named byte, every prefix of a valid document accepted, UTF-8 and \u surrogate rules,
// the nesting limit as a clear error (no recursion, no stack overflow), and agreement with
// nlohmann::json on random mutations of valid documents.
#include "grammar/json_recognizer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "grammar/json_constraint.h"

namespace minfer::grammar {
namespace {

// Feeds the whole text; true when every byte was accepted and the object closed.
bool accepts_document(std::string_view text, const JsonOptions& options = {}) {
  JsonRecognizer r(options);
  return r.advance(text) && r.complete();
}

// The offset of the first refused byte, or -1 when all were accepted.
int64_t refused_at(std::string_view text, const JsonOptions& options = {}) {
  JsonRecognizer r(options);
  for (size_t i = 0; i < text.size(); ++i) {
    if (!r.advance(static_cast<uint8_t>(text[i]))) return static_cast<int64_t>(i);
  }
  return -1;
}

TEST(JsonRecognizer, AcceptsValidObjectsAndEveryPrefixOfThem) {
  const std::vector<std::string> docs = {
      "{}",
      " \t\r\n{ }",
      R"({"a":1})",
      R"({"a": -0.5e+10, "b": [1, 2.25, -3E-2, 0, 10], "c": {"d": null}})",
      R"({"t":true,"f":false,"n":null,"s":"x"})",
      R"({"esc": "\" \\ \/ \b \f \n \r \t \u0041 \u00e9 \uD83D\uDE00"})",
      "{\"utf8\": \"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xE4\xB8\xAD\"}",
      R"({"nested": [[[], {}], [{"a": [{"b": {}}]}]]})",
      R"({"":""})",
      R"({"a": [true, false, null, "", 0.0, 1e5, -1]})",
      "{\n  \"pretty\": {\n    \"x\": 1\n  }\n}",
  };
  for (const std::string& doc : docs) {
    SCOPED_TRACE(doc);
    JsonRecognizer r;
    for (size_t i = 0; i < doc.size(); ++i) {
      ASSERT_FALSE(r.complete()) << "complete before byte " << i;
      ASSERT_TRUE(r.advance(static_cast<uint8_t>(doc[i]))) << "refused byte " << i;
    }
    EXPECT_TRUE(r.complete());
    EXPECT_EQ(r.depth(), 0);
    // The reference parser agrees that it is one JSON object.
    EXPECT_TRUE(nlohmann::json::parse(doc).is_object());
  }
}

TEST(JsonRecognizer, RefusesInvalidDocumentsAtTheRightByte) {
  struct Case {
    std::string text;
    int64_t refused;  // offset of the first refused byte
  };
  const std::vector<Case> cases = {
      {"[1]", 0},                       // the top level must be an object
      {"\"s\"", 0},                     //
      {"1", 0},                         //
      {"x{}", 0},                       //
      {"{} ", 2},                       // nothing after the object, not even whitespace
      {"{}{}", 2},                      //
      {R"({"a":1,})", 7},               // trailing comma
      {R"({"a" 1})", 5},                // missing colon
      {R"({a:1})", 1},                  // unquoted key
      {R"({1:1})", 1},                  // non-string key
      {R"({"a":01})", 6},               // leading zero
      {R"({"a":-})", 6},                // '-' without digits
      {R"({"a":1.})", 7},               // '.' without digits
      {R"({"a":.5})", 5},               // no integer part
      {R"({"a":1e})", 7},               // exponent without digits
      {R"({"a":1e+})", 8},              //
      {R"({"a":+1})", 5},               // no '+' sign on numbers
      {R"({"a":tru})", 8},              // broken literal
      {R"({"a":True})", 5},             //
      {R"({"a":nul1})", 8},             //
      {R"({"a":[1,]})", 8},             // trailing comma in an array
      {R"({"a":[1}})", 7},              // mismatched bracket
      {R"({"a":{]})", 6},               //
      {R"({"a":"\x"})", 7},             // unknown escape
      {R"({"a":"\u12G4"})", 10},        // bad hex digit
      {R"({"a":"\uDC00"})", 9},         // lone low surrogate: known at its second digit
      {R"({"a":"\uD800x"})", 12},       // high surrogate not followed by \u
      {R"({"a":"\uD800\u0041"})", 14},  // high surrogate followed by a non-low one
      {R"({"a":"\uD800\uDB00"})", 15},  // … refused at the first digit that rules a low one out
      {"{\"a\":\"\x01\"}", 6},          // raw control character in a string
      {"{\"a\":\"\n\"}", 6},            //
      {"{\"a\":\"\x80\"}", 6},          // continuation byte without a lead
      {"{\"a\":\"\xC0\xAF\"}", 6},      // overlong 2-byte lead
      {"{\"a\":\"\xE0\x80\x80\"}", 7},  // overlong 3-byte form
      {"{\"a\":\"\xED\xA0\x80\"}", 7},  // UTF-8 encoded surrogate
      {"{\"a\":\"\xF4\x90\x80\x80\"}", 7},  // past U+10FFFF
      {"{\"a\":\"\xF5\"}", 6},              // never a lead byte
      {"{\"a\":\"\xC3\"}", 7},              // a character cut short by the closing quote
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(refused_at(c.text), c.refused);
    // nlohmann agrees the text is not one JSON object (or not JSON at all), except that it
    // allows whitespace after the object, which generation must not add.
    const nlohmann::json parsed = nlohmann::json::parse(c.text, nullptr, false);
    if (c.text != "{} ") {
      EXPECT_TRUE(parsed.is_discarded() || !parsed.is_object());
    }
  }
}

TEST(JsonRecognizer, FailureIsFinalAndFeedNamesTheByteAndTheExpectation) {
  JsonRecognizer r;
  EXPECT_TRUE(r.advance(std::string_view(R"({"a")")));
  JsonRecognizer copy = r;  // trying on a copy leaves the original untouched
  EXPECT_FALSE(copy.advance(std::string_view("}")));
  EXPECT_TRUE(copy.failed());
  EXPECT_FALSE(copy.advance(std::string_view(":")));  // stays failed
  EXPECT_FALSE(r.failed());
  EXPECT_TRUE(r.advance(std::string_view(":1}")));
  EXPECT_TRUE(r.complete());

  JsonRecognizer f;
  const Status st = f.feed(R"({"a":1,})");
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("[grammar]"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("'}'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("offset 7"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("expected a key string"), std::string::npos) << st.message();
}

TEST(JsonRecognizer, UnfinishedDocumentsAreNotComplete) {
  for (const std::string_view text : {"", " ", "{", R"({"a")", R"({"a":)", R"({"a":1)",
                                      R"({"a":[1]})"
                                      "X",
                                      R"({"a":{}})"}) {
    JsonRecognizer r;
    const bool ok = r.advance(text);
    if (text == R"({"a":{}})") {
      EXPECT_TRUE(ok && r.complete());
    } else {
      EXPECT_FALSE(ok && r.complete()) << text;
    }
  }
  // A number at the end of an object is only known to end at the next byte.
  JsonRecognizer r;
  ASSERT_TRUE(r.advance(std::string_view(R"({"a":12)")));
  EXPECT_FALSE(r.complete());
  ASSERT_TRUE(r.advance(std::string_view("}")));
  EXPECT_TRUE(r.complete());
}

TEST(JsonRecognizer, NestingPastTheLimitIsAClearErrorNotACrash) {
  JsonOptions options;
  options.max_depth = 8;
  // 8 levels are fine.
  std::string ok = R"({"a":)";
  ok.append(7, '[').append(7, ']').append("}");
  EXPECT_TRUE(accepts_document(ok, options));
  // The 9th is refused with a message naming the limit.
  std::string deep = R"({"a":)";
  deep.append(8, '[');
  JsonRecognizer r(options);
  const Status st = r.feed(deep);
  ASSERT_FALSE(st.is_ok());
  EXPECT_TRUE(r.too_deep());
  EXPECT_NE(st.message().find("nesting too deep"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("at most 8 levels"), std::string::npos) << st.message();

  // A hostile million-level document is refused at the default limit (128) without recursion.
  std::string hostile = R"({"a":)";
  hostile.append(1'000'000, '[');
  JsonRecognizer big;
  EXPECT_EQ(refused_at(hostile), 5 + 127);  // the object is level 1; the 128th '[' is level 129
  EXPECT_FALSE(big.feed(hostile).is_ok());
  EXPECT_TRUE(big.too_deep());

  // The limit cannot exceed the stack's capacity; levels past 64 use the later words.
  JsonOptions most;
  most.max_depth = 100'000;
  // Level i (1-based past the top object) is an object holding "k" every third level, else an
  // array; the innermost is an empty array.
  auto is_object_level = [](int i) { return i % 3 == 0 && i != kMaxJsonDepth - 1; };
  std::string at_capacity = R"({"k":)";
  for (int i = 1; i < kMaxJsonDepth; ++i) at_capacity += is_object_level(i) ? R"({"k":)" : "[";
  for (int i = kMaxJsonDepth - 1; i >= 1; --i) at_capacity += is_object_level(i) ? "}" : "]";
  at_capacity += "}";
  EXPECT_TRUE(accepts_document(at_capacity, most));
  EXPECT_TRUE(nlohmann::json::parse(at_capacity).is_object());
  JsonRecognizer over(most);
  std::string over_text = R"({"k":)";
  over_text.append(kMaxJsonDepth, '[');
  EXPECT_FALSE(over.advance(over_text));
  EXPECT_TRUE(over.too_deep());
}

TEST(JsonRecognizer, WhitespaceRunLimit) {
  JsonOptions options;
  options.max_whitespace_run = 4;
  EXPECT_TRUE(accepts_document("    {    \"a\"    :    1    }", options));
  EXPECT_EQ(refused_at("{     }", options), 5);
  // Whitespace inside strings is text, not counted.
  EXPECT_TRUE(accepts_document("{\"a\":\"          \"}", options));
  // Line breaks in one run.
  JsonOptions pretty;
  pretty.max_line_breaks = 1;
  EXPECT_TRUE(accepts_document("{\n  \"a\": [\r\n    1,\n    2\n  ]\n}", pretty));
  EXPECT_EQ(refused_at("{\"a\":1,\n\n\"b\":2}", pretty), 8);
  EXPECT_TRUE(accepts_document(R"({"a":"\n\n"})", pretty));  // escaped, inside a string
  // 0: no limit.
  std::string spaced = "{";
  spaced.append(10000, ' ').append("}");
  EXPECT_TRUE(accepts_document(spaced));
}

TEST(JsonRecognizer, NumberDigitLimits) {
  JsonOptions options;
  options.max_integer_digits = 3;
  options.max_exponent_digits = 2;
  EXPECT_TRUE(
      accepts_document(R"({"a":[999, -999, 0.123456789, 1e99, 1E-99, 1e+05, 123.4e1]})", options));
  EXPECT_EQ(refused_at(R"({"a":1234})", options), 8);
  EXPECT_EQ(refused_at(R"({"a":-1234})", options), 9);
  EXPECT_EQ(refused_at(R"({"a":1e100})", options), 9);
  EXPECT_EQ(refused_at(R"({"a":1e-100})", options), 10);
  // The limit is per number: the next one counts from zero.
  EXPECT_TRUE(accepts_document(R"({"a":[123,456],"b":1e12,"c":3e45})", options));
  // No limit by default: RFC 8259 numbers of any length.
  EXPECT_TRUE(accepts_document(R"({"a":123456789012345678901234567890e12345})"));
}

// Significant digits: the integer part and the fraction together (a leading "0." not counted), so
// that kGenerationJsonOptions' 15 keeps every number exact in a double.
TEST(JsonRecognizer, SignificantDigitLimit) {
  JsonOptions options;
  options.max_significant_digits = 4;
  EXPECT_TRUE(accepts_document(R"({"a":[1234, 12.34, 0.1234, -1.234e99, 0, 0.0]})", options));
  EXPECT_EQ(refused_at(R"({"a":12345})", options), 9);
  EXPECT_EQ(refused_at(R"({"a":123.45})", options), 10);
  EXPECT_EQ(refused_at(R"({"a":0.12345})", options), 11);
  EXPECT_TRUE(
      accepts_document(R"({"a":123456789012345,"b":0.123456789012345})", kGenerationJsonOptions));
  EXPECT_EQ(refused_at(R"({"a":1234567890123456})", kGenerationJsonOptions), 20);
  EXPECT_EQ(refused_at(R"({"a":1.234567890123456})", kGenerationJsonOptions), 21);
}

// No dead ends: from every accepted prefix some byte continues (or the object is complete), under
// the default options and under generation-style limits. Constrained sampling relies on it: a
// dead end would leave no token to sample. Random byte walks, drawn among the accepted bytes.
TEST(JsonRecognizer, EveryAcceptedPrefixCanContinue) {
  JsonOptions limited;
  limited.max_depth = 6;
  limited.max_whitespace_run = 2;
  limited.max_line_breaks = 1;
  limited.max_integer_digits = 3;
  limited.max_exponent_digits = 1;
  limited.max_significant_digits = 5;
  std::mt19937 rng(7);
  int64_t n_steps = 0;
  for (const JsonOptions& options : {JsonOptions{}, limited}) {
    for (int walk = 0; walk < 300; ++walk) {
      JsonRecognizer r(options);
      std::string text;
      for (int step = 0; step < 400 && !r.complete(); ++step) {
        std::vector<uint8_t> next;
        for (int b = 0; b < 256; ++b) {
          JsonRecognizer trial = r;
          if (trial.advance(static_cast<uint8_t>(b))) next.push_back(static_cast<uint8_t>(b));
        }
        ASSERT_FALSE(next.empty()) << "dead end after: " << text;
        // Prefer closing bytes late in the walk so that many walks complete.
        uint8_t pick = next[rng() % next.size()];
        if (step > 200) {
          for (const uint8_t b : next) {
            if (b == '}' || b == ']' || b == '"') pick = b;
          }
        }
        ASSERT_TRUE(r.advance(pick));
        text += static_cast<char>(pick);
        ++n_steps;
      }
      // (Without digit limits a walk can write 9e438, which nlohmann refuses as an overflow.)
      if (r.complete() && options.max_exponent_digits > 0) {
        EXPECT_TRUE(nlohmann::json::parse(text).is_object()) << text;
      }
    }
  }
  EXPECT_GT(n_steps, 50000);
}

// Random edits of valid documents: the recognizer accepts exactly the texts nlohmann parses as
// one object (without surrogate-free escapes or depth issues, which both handle the same here).
TEST(JsonRecognizer, AgreesWithNlohmannOnMutatedDocuments) {
  const std::vector<std::string> seeds = {
      R"({"a": [1, -2.5e3, true, null, {"b": "c\u00e9\n"}], "d": {}})",
      R"({"k": "v", "n": 0, "x": [[], [{}], "s", 1E+2]})",
      "{\"u\": \"\xE2\x82\xAC\xF0\x9F\x98\x80\", \"e\": \"\\uD83D\\uDE00\"}",
  };
  const std::string alphabet = "{}[]:,\"\\0123456789.eE+-tfnrul \n\xC3\xA9\x80";
  std::mt19937 rng(1234);
  int n_valid = 0;
  int n_invalid = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::string text = seeds[rng() % seeds.size()];
    const int n_edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < n_edits && !text.empty(); ++e) {
      const size_t pos = rng() % text.size();
      switch (rng() % 3) {
        case 0:
          text.erase(pos, 1);
          break;
        case 1:
          text.insert(pos, 1, alphabet[rng() % alphabet.size()]);
          break;
        default:
          text[pos] = alphabet[rng() % alphabet.size()];
      }
    }
    // nlohmann refuses numbers that overflow a double (1E428), which RFC 8259 allows: those
    // count as valid here (the generation limits are tested on their own).
    bool reference = false;
    try {
      reference = nlohmann::json::parse(text).is_object();
    } catch (const nlohmann::json::out_of_range& e) {
      reference = std::string(e.what()).find("number overflow") != std::string::npos;
    } catch (const nlohmann::json::exception&) {
      reference = false;
    }
    reference = reference && text.find_last_not_of(" \t\r\n") == text.size() - 1;
    ASSERT_EQ(accepts_document(text), reference) << text;
    (reference ? n_valid : n_invalid)++;
  }
  // Both kinds were exercised.
  EXPECT_GT(n_valid, 500);
  EXPECT_GT(n_invalid, 5000);
}

}  // namespace
}  // namespace minfer::grammar
