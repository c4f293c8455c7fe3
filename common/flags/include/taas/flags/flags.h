// The one command-line parser of every taas binary (taas-operator, taas-ui, `taas run`), so they
// read the same spellings and fail the same way on the same mistakes.
//
// Spellings: `--name VALUE` or `--name=VALUE`; a switch is `--name`, or `--name=true|false`.
// Every error starts with the flag and says what it expects:
//   --ui-port: expected a number from 0 to 65535, got http
//   --bogus: unknown option
// Numbers are range-checked without narrowing; `--help` and `-h` ask for the usage.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "taas/base/status.h"

namespace taas::flags {

class FlagSet {
 public:
  FlagSet() = default;
  FlagSet(const FlagSet&) = delete;
  FlagSet& operator=(const FlagSet&) = delete;

  // Each call declares `--name` and where its value goes; `*out` keeps its value (the default)
  // unless the flag is given.
  void String(const std::string& name, std::string* out);
  // One of `choices`, spelled exactly.
  void Choice(const std::string& name, std::vector<std::string> choices, std::string* out);
  // One of the names in `choices`, spelled exactly; `*out` gets the value beside it
  // (`--log-level debug` -> LogLevel::kDebug).
  template <typename T>
  void Choice(const std::string& name, std::vector<std::pair<std::string, T>> choices, T* out) {
    std::vector<std::string> names;
    for (const auto& choice : choices) names.push_back(choice.first);
    AddChoice(name, std::move(names),
              [out, choices = std::move(choices)](std::size_t i) { *out = choices[i].second; });
  }
  void Switch(const std::string& name, bool* out);
  // A whole number from `min` to `max`; out's type must hold both.
  void Int(const std::string& name, std::int64_t min, std::int64_t max, std::int64_t* out);
  void Int(const std::string& name, int min, int max, int* out);
  // A whole number of `out`'s unit from `min` to `max`, which the flag's name should say
  // (`--resync-seconds 300` into std::chrono::seconds, `--child-event-delay-ms 250` into
  // milliseconds); the same spelling and errors as an int.
  template <typename Rep, typename Period>
  void Int(const std::string& name, std::int64_t min, std::int64_t max,
           std::chrono::duration<Rep, Period>* out) {
    AddInt(name, min, max,
           [out](std::int64_t value) { *out = std::chrono::duration<Rep, Period>(value); });
  }
  // A number (`0.5`, `30`) from `min` to `max`.
  void Double(const std::string& name, double min, double max, double* out);
  // Seconds from `min` to `max`, as milliseconds.
  void Seconds(const std::string& name, double min, double max, std::chrono::milliseconds* out);
  // A comma-separated list; empty items are dropped.
  void List(const std::string& name, std::vector<std::string>* out);
  // `KEY=VALUE`, repeatable: KEY non-empty, VALUE may hold '='.
  void KeyValues(const std::string& name, std::map<std::string, std::string>* out);

  struct Parsed {
    std::vector<std::string> positional;  // arguments not starting with "--", in order
    bool help = false;                    // --help or -h was given
    std::vector<std::string> given;       // the flags given, by name without "--"
  };
  // Parses `args` (without the program name). InvalidArgument on an unknown option, a missing
  // or malformed value, naming the flag as above.
  absl::StatusOr<Parsed> Parse(const std::vector<std::string>& args) const;

 private:
  enum class Kind { kValue, kSwitch };
  struct Flag {
    Kind kind;
    // Stores a value; an error message without the flag's name.
    std::function<absl::Status(const std::string&)> set;
  };
  void Add(const std::string& name, Kind kind, std::function<absl::Status(const std::string&)> set);
  // A whole number from `min` to `max`, handed to `store`.
  void AddInt(const std::string& name, std::int64_t min, std::int64_t max,
              std::function<void(std::int64_t)> store);
  // One of `names`; `store` gets its index.
  void AddChoice(const std::string& name, std::vector<std::string> names,
                 std::function<void(std::size_t)> store);

  std::map<std::string, Flag> flags_;
};

// argv[1..argc) as strings.
std::vector<std::string> Args(int argc, char** argv);

}  // namespace taas::flags
