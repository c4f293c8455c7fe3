#include "taas/flags/flags.h"

#include <charconv>
#include <cmath>
#include <sstream>
#include <system_error>

namespace taas::flags {
namespace {

absl::Status Expected(const std::string& what, const std::string& got) {
  return absl::InvalidArgumentError("expected " + what + ", got " + got);
}

std::string Number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// A whole number, without a sign other than '-' and without trailing characters.
absl::StatusOr<std::int64_t> ParseInt(const std::string& text, std::int64_t min, std::int64_t max) {
  const std::string range = "a number from " + std::to_string(min) + " to " + std::to_string(max);
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < min ||
      value > max) {
    return Expected(range, text);
  }
  return value;
}

absl::StatusOr<double> ParseDouble(const std::string& text, double min, double max) {
  const std::string range = "a number from " + Number(min) + " to " + Number(max);
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() ||
      !std::isfinite(value) || value < min || value > max) {
    return Expected(range, text);
  }
  return value;
}

}  // namespace

void FlagSet::Add(const std::string& name, Kind kind,
                  std::function<absl::Status(const std::string&)> set) {
  flags_[name] = Flag{kind, std::move(set)};
}

void FlagSet::String(const std::string& name, std::string* out) {
  Add(name, Kind::kValue, [out](const std::string& value) {
    *out = value;
    return absl::OkStatus();
  });
}

void FlagSet::AddChoice(const std::string& name, std::vector<std::string> names,
                        std::function<void(std::size_t)> store) {
  Add(name, Kind::kValue,
      [names = std::move(names), store = std::move(store)](const std::string& value) {
        for (std::size_t i = 0; i < names.size(); ++i) {
          if (value == names[i]) {
            store(i);
            return absl::OkStatus();
          }
        }
        std::string all;
        for (const std::string& choice : names) all += (all.empty() ? "" : "|") + choice;
        return Expected(all, value);
      });
}

void FlagSet::Choice(const std::string& name, std::vector<std::string> choices, std::string* out) {
  std::vector<std::string> names = choices;
  AddChoice(name, std::move(names),
            [out, choices = std::move(choices)](std::size_t i) { *out = choices[i]; });
}

void FlagSet::Switch(const std::string& name, bool* out) {
  Add(name, Kind::kSwitch, [out](const std::string& value) {
    if (value != "true" && value != "false") return Expected("true or false", value);
    *out = value == "true";
    return absl::OkStatus();
  });
}

void FlagSet::AddInt(const std::string& name, std::int64_t min, std::int64_t max,
                     std::function<void(std::int64_t)> store) {
  Add(name, Kind::kValue,
      [min, max, store = std::move(store)](const std::string& value) -> absl::Status {
        TAAS_ASSIGN_OR_RETURN(std::int64_t parsed, ParseInt(value, min, max));
        store(parsed);
        return absl::OkStatus();
      });
}

void FlagSet::Int(const std::string& name, std::int64_t min, std::int64_t max, std::int64_t* out) {
  AddInt(name, min, max, [out](std::int64_t value) { *out = value; });
}

void FlagSet::Int(const std::string& name, int min, int max, int* out) {
  // Within [min, max], so within int.
  AddInt(name, min, max, [out](std::int64_t value) { *out = static_cast<int>(value); });
}

void FlagSet::Double(const std::string& name, double min, double max, double* out) {
  Add(name, Kind::kValue, [out, min, max](const std::string& value) -> absl::Status {
    TAAS_ASSIGN_OR_RETURN(*out, ParseDouble(value, min, max));
    return absl::OkStatus();
  });
}

void FlagSet::Seconds(const std::string& name, double min, double max,
                      std::chrono::milliseconds* out) {
  Add(name, Kind::kValue, [out, min, max](const std::string& value) -> absl::Status {
    TAAS_ASSIGN_OR_RETURN(double seconds, ParseDouble(value, min, max));
    *out = std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(seconds * 1000)));
    return absl::OkStatus();
  });
}

void FlagSet::List(const std::string& name, std::vector<std::string>* out) {
  Add(name, Kind::kValue, [out](const std::string& value) {
    out->clear();
    std::stringstream in(value);
    std::string part;
    while (std::getline(in, part, ',')) {
      if (!part.empty()) out->push_back(part);
    }
    return absl::OkStatus();
  });
}

void FlagSet::KeyValues(const std::string& name, std::map<std::string, std::string>* out) {
  Add(name, Kind::kValue, [out](const std::string& value) {
    const auto eq = value.find('=');
    if (eq == std::string::npos || eq == 0) return Expected("KEY=VALUE", value);
    (*out)[value.substr(0, eq)] = value.substr(eq + 1);
    return absl::OkStatus();
  });
}

absl::StatusOr<FlagSet::Parsed> FlagSet::Parse(const std::vector<std::string>& args) const {
  Parsed parsed;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      parsed.help = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      parsed.positional.push_back(arg);
      continue;
    }
    const auto eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const auto flag = flags_.find(name);
    if (flag == flags_.end()) return absl::InvalidArgumentError("--" + name + ": unknown option");
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (flag->second.kind == Kind::kSwitch) {
      value = "true";
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return absl::InvalidArgumentError("--" + name + ": needs a value");
    }
    if (absl::Status set = flag->second.set(value); !set.ok()) {
      return absl::InvalidArgumentError("--" + name + ": " + std::string(set.message()));
    }
    parsed.given.push_back(name);
  }
  return parsed;
}

std::vector<std::string> Args(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return args;
}

}  // namespace taas::flags
