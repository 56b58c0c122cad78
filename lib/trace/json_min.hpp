// A small JSON value, parser and string escaper for the trace manifest and the timeline
// check (the trace library must build with the C++ standard library only).
// Internal to moehub_trace.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace moehub::trace::json {

struct Value {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0.0;
  bool integral = false;  ///< the number was written without fraction or exponent
  std::string text;       ///< string value
  std::vector<Value> items;                 ///< array
  std::map<std::string, Value> members;     ///< object

  const Value* find(const std::string& key) const;  ///< object member or nullptr
};

const char* kind_name(Value::Kind);

/// Parses one JSON document. Throws std::runtime_error("line L column C: ...").
Value parse(const std::string& text);

/// The JSON string literal (with quotes) for s.
std::string quote(const std::string& s);

}  // namespace moehub::trace::json
