// Structured logging: one event per line in logfmt (`ts=... level=info msg="..." job=mnist
// replica=worker-0 step=120 loss=0.41`), so humans read it and tools (the UI's log viewer, grep,
// Loki) split it into fields.
//
// A Logger is a cheap value holding context fields; `With` returns a copy with more context, so a
// component passes a logger down instead of repeating job/replica/step at each call. Thread-safe:
// each event is written with a single call under the stream's lock.
#pragma once

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace taas {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// One `key=value` pair. Values are formatted once, when the field is built.
struct LogField {
  LogField(std::string_view key, std::string_view value);
  LogField(std::string_view key, const char* value);
  LogField(std::string_view key, const std::string& value);
  LogField(std::string_view key, std::int64_t value);
  LogField(std::string_view key, int value);
  LogField(std::string_view key, double value);
  LogField(std::string_view key, bool value);

  std::string key;
  std::string value;
};

class Logger {
 public:
  // Writes to `out` (not owned; stdout by default) events at `min_level` and above.
  explicit Logger(std::FILE* out = stdout, LogLevel min_level = LogLevel::kInfo);

  // A copy of this logger whose every event also carries `fields`.
  Logger With(std::initializer_list<LogField> fields) const;

  void Debug(std::string_view message, std::initializer_list<LogField> fields = {}) const;
  void Info(std::string_view message, std::initializer_list<LogField> fields = {}) const;
  void Warning(std::string_view message, std::initializer_list<LogField> fields = {}) const;
  void Error(std::string_view message, std::initializer_list<LogField> fields = {}) const;

  void Log(LogLevel level, std::string_view message,
           std::initializer_list<LogField> fields = {}) const;

  // The line `Log` would write, without the timestamp; exposed for tests.
  std::string Format(LogLevel level, std::string_view message,
                     std::initializer_list<LogField> fields) const;

 private:
  std::FILE* out_;
  LogLevel min_level_;
  std::vector<LogField> context_;
};

}  // namespace taas
