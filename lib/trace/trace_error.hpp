// moehub::trace::TraceError -- the one exception type of the trace library: every
// error names the file it concerns and what is wrong (field, line, expected value).
#pragma once

#include <stdexcept>
#include <string>

namespace moehub::trace {

class TraceError : public std::runtime_error {
 public:
  /// what() reads "<file>: <msg>".
  TraceError(std::string file, const std::string& msg);
  const std::string& file() const;

 private:
  std::string file_;
};

}  // namespace moehub::trace
