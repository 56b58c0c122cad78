// The trace library's JSON parser (manifests, timelines): every kind of value, every
// escape, and each malformed document rejected with its line, column and reason.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "trace/json_min.hpp"

namespace {

using moehub::trace::json::kind_name;
using moehub::trace::json::parse;
using moehub::trace::json::quote;
using moehub::trace::json::Value;

// The message of the error that parse(text) throws ("" if it throws none).
std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(JsonMin, ParsesEveryKindOfValue) {
  const Value v = parse(R"( {"a": [1, -2, 3.5, -0.25e2, 1E+2, 0, -0],
                            "b": {"t": true, "f": false, "n": null, "s": "x"}, "e": [], "o": {}} )");
  ASSERT_EQ(v.kind, Value::Kind::kObject);
  const Value* a = v.find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->kind, Value::Kind::kArray);
  const std::vector<std::pair<double, bool>> numbers = {{1, true}, {-2, true},   {3.5, false}, {-25, false},
                                                        {100, false}, {0, true}, {0, true}};
  ASSERT_EQ(a->items.size(), numbers.size());
  for (std::size_t i = 0; i < numbers.size(); ++i) {
    EXPECT_EQ(a->items[i].kind, Value::Kind::kNumber) << i;
    EXPECT_DOUBLE_EQ(a->items[i].number, numbers[i].first) << i;
    EXPECT_EQ(a->items[i].integral, numbers[i].second) << i;
  }
  const Value* b = v.find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->find("t")->kind, Value::Kind::kBool);
  EXPECT_TRUE(b->find("t")->boolean);
  EXPECT_FALSE(b->find("f")->boolean);
  EXPECT_EQ(b->find("n")->kind, Value::Kind::kNull);
  EXPECT_EQ(b->find("s")->text, "x");
  EXPECT_EQ(b->find("missing"), nullptr);
  EXPECT_TRUE(v.find("e")->items.empty());
  EXPECT_TRUE(v.find("o")->members.empty());
  EXPECT_EQ(a->find("a"), nullptr) << "find on an array";
  EXPECT_STREQ(kind_name(Value::Kind::kObject), "an object");
  EXPECT_STREQ(kind_name(Value::Kind::kNumber), "a number");
}

TEST(JsonMin, DecodesEveryEscape) {
  EXPECT_EQ(parse(R"("q\" b\\ s\/ \b\f\n\r\t")").text, "q\" b\\ s/ \b\f\n\r\t");
  EXPECT_EQ(parse(R"("\u0041\u00e9\u20AC")").text, "A\xC3\xA9\xE2\x82\xAC");  // A, e acute, euro sign
  EXPECT_EQ(parse(R"("\ud83d\ude00")").text, "\xF0\x9F\x98\x80");             // a surrogate pair: U+1F600
  EXPECT_EQ(parse(R"("\u0000")").text, std::string(1, '\0'));
  EXPECT_EQ(parse("\"caf\xC3\xA9\"").text, "caf\xC3\xA9") << "UTF-8 passes through";
}

TEST(JsonMin, RejectsMalformedDocumentsWithLineColumnAndReason) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "line 1 column 1: unexpected end of input"},
      {"   ", "line 1 column 4: unexpected end of input"},
      {"@", "line 1 column 1: unexpected character '@'"},
      {"{\n  \"a\": tru\n}", "line 2 column 8: unexpected character 't'"},
      {"{\"a\":1,}", "line 1 column 8: expected a member name"},
      {"{\"a\" 1}", "line 1 column 6: expected ':'"},
      {"{\"a\":1 \"b\":2}", "line 1 column 8: expected '}'"},
      {"{\"a\":1,\"a\":2}", "duplicate member \"a\""},
      {"[1 2]", "line 1 column 4: expected ']'"},
      {"[1,]", "line 1 column 4: unexpected character ']'"},
      {"[1] x", "line 1 column 5: trailing characters after the JSON value"},
      {"-", "malformed number"},
      {"1.", "malformed number"},
      {"1.e3", "malformed number"},
      {"1e", "malformed number"},
      {"1e+", "malformed number"},
      {"01", "number with a leading zero"},
      {"-012", "number with a leading zero"},
      {"1e999", "number out of range"},
      {"-1e999", "number out of range"},
      {"\"abc", "unterminated string"},
      {"\"abc\\", "unterminated escape"},
      {"\"a\nb\"", "line 1 column 3: control character in string"},
      {"\"\\x\"", "bad escape '\\x'"},
      {"\"\\u12\"", "truncated \\u escape"},
      {"\"\\u12g4\"", "bad hex digit in \\u escape"},
      {"\"\\ud800\"", "unpaired surrogate"},
      {"\"\\ud800\\u0041\"", "unpaired surrogate"},
      {"\"\\udc00\"", "unpaired surrogate"},
      {"nul", "unexpected character 'n'"},
  };
  for (const auto& [text, message] : cases) {
    const std::string got = error_of(text);
    EXPECT_NE(got.find(message), std::string::npos) << "input: " << text << "\n  error: " << got;
    EXPECT_EQ(got.rfind("line ", 0), 0u) << "input: " << text << "\n  error: " << got;
  }
}

TEST(JsonMin, NestingIsBounded) {
  // arrays at depths 0..n-1: 257 levels are taken, 258 refused (the parser recurses)
  auto nested = [](int n) { return std::string(static_cast<std::size_t>(n), '[') + std::string(static_cast<std::size_t>(n), ']'); };
  EXPECT_NO_THROW(parse(nested(257)));
  EXPECT_NE(error_of(nested(258)).find("nesting deeper than 256"), std::string::npos);
  EXPECT_NE(error_of(nested(100000)).find("nesting deeper than 256"), std::string::npos);
}

TEST(JsonMin, QuoteEscapesAndRoundTrips) {
  EXPECT_EQ(quote("a\"b\\c\n\r\t\x01\x1f"), R"("a\"b\\c\n\r\t\u0001\u001f")");
  EXPECT_EQ(quote(""), "\"\"");
  std::string every;  // every byte but NUL, UTF-8 sequences included
  for (int c = 1; c < 256; ++c) every += static_cast<char>(c);
  EXPECT_EQ(parse(quote(every)).text, every);
}

}  // namespace
