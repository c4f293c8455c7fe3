#include "taas/base/log.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace taas {
namespace {

bool NeedsQuotes(std::string_view value) {
  if (value.empty()) return true;
  for (char c : value) {
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || static_cast<unsigned char>(c) < 0x20) {
      return true;
    }
  }
  return false;
}

void AppendValue(std::string& line, std::string_view value) {
  if (!NeedsQuotes(value)) {
    line += value;
    return;
  }
  line += '"';
  for (char c : value) {
    switch (c) {
      case '"':
        line += "\\\"";
        break;
      case '\\':
        line += "\\\\";
        break;
      case '\n':
        line += "\\n";
        break;
      case '\t':
        line += "\\t";
        break;
      default:
        line += c;
    }
  }
  line += '"';
}

void AppendField(std::string& line, std::string_view key, std::string_view value) {
  line += ' ';
  line += key;
  line += '=';
  AppendValue(line, value);
}

std::string_view LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

}  // namespace

LogField::LogField(std::string_view k, std::string_view v) : key(k), value(v) {}
LogField::LogField(std::string_view k, const char* v) : key(k), value(v) {}
LogField::LogField(std::string_view k, const std::string& v) : key(k), value(v) {}
LogField::LogField(std::string_view k, std::int64_t v) : key(k), value(std::to_string(v)) {}
LogField::LogField(std::string_view k, int v) : key(k), value(std::to_string(v)) {}
LogField::LogField(std::string_view k, double v) : key(k) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", v);
  value = buffer;
}
LogField::LogField(std::string_view k, bool v) : key(k), value(v ? "true" : "false") {}

Logger::Logger(std::FILE* out, LogLevel min_level) : out_(out), min_level_(min_level) {}

Logger Logger::With(std::initializer_list<LogField> fields) const {
  Logger copy = *this;
  copy.context_.insert(copy.context_.end(), fields.begin(), fields.end());
  return copy;
}

void Logger::Debug(std::string_view m, std::initializer_list<LogField> f) const {
  Log(LogLevel::kDebug, m, f);
}
void Logger::Info(std::string_view m, std::initializer_list<LogField> f) const {
  Log(LogLevel::kInfo, m, f);
}
void Logger::Warning(std::string_view m, std::initializer_list<LogField> f) const {
  Log(LogLevel::kWarning, m, f);
}
void Logger::Error(std::string_view m, std::initializer_list<LogField> f) const {
  Log(LogLevel::kError, m, f);
}

std::string Logger::Format(LogLevel level, std::string_view message,
                           std::initializer_list<LogField> fields) const {
  std::string line = "level=";
  line += LevelName(level);
  AppendField(line, "msg", message);
  for (const auto& field : context_) AppendField(line, field.key, field.value);
  for (const auto& field : fields) AppendField(line, field.key, field.value);
  return line;
}

void Logger::Log(LogLevel level, std::string_view message,
                 std::initializer_list<LogField> fields) const {
  if (level < min_level_ || out_ == nullptr) return;
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char stamp[40];
  const std::size_t length = std::strftime(stamp, sizeof stamp, "ts=%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(stamp + length, sizeof stamp - length, ".%03dZ ", static_cast<int>(millis));
  std::string line = stamp + Format(level, message, fields) + '\n';
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fflush(out_);
}

}  // namespace taas
