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
#include <cstdint>
#include <functional>
#include <map>
#include <string>
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
  void Switch(const std::string& name, bool* out);
  // A whole number from `min` to `max`; out's type must hold both.
  void Int(const std::string& name, std::int64_t min, std::int64_t max, std::int64_t* out);
  void Int(const std::string& name, int min, int max, int* out);
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

  std::map<std::string, Flag> flags_;
};

// argv[1..argc) as strings.
std::vector<std::string> Args(int argc, char** argv);

}  // namespace taas::flags
