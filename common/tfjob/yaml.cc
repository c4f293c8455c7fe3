// YAML manifests -> JSON, resolving plain scalars the way kubectl's YAML 1.1 decoder does, then
// JSON -> TFJob. yaml-cpp throws; its exceptions stop here.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

#include "taas/tfjob/serialization.h"
#include "taas/tfjob/validation.h"

namespace taas::tfjob {
namespace {

using nlohmann::json;

template <std::size_t N>
bool OneOf(const std::string& text, const std::array<std::string_view, N>& words) {
  return std::find(words.begin(), words.end(), text) != words.end();
}

constexpr std::array<std::string_view, 5> kNulls = {"", "~", "null", "Null", "NULL"};
constexpr std::array<std::string_view, 11> kTrues = {"y",    "Y",    "yes", "Yes", "YES", "true",
                                                     "True", "TRUE", "on",  "On",  "ON"};
constexpr std::array<std::string_view, 11> kFalses = {"n",     "N",     "no",  "No",  "NO", "false",
                                                      "False", "FALSE", "off", "Off", "OFF"};

// An integer as Go's strconv.ParseInt(text, 0, 64) reads it after YAML 1.1 drops '_':
// optional sign, then 0x hex, 0b binary, a leading 0 for octal, or decimal.
std::optional<json> ResolveInteger(std::string text) {
  text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
  if (text.empty()) return std::nullopt;
  bool negative = false;
  std::size_t pos = 0;
  if (text[0] == '+' || text[0] == '-') {
    negative = text[0] == '-';
    pos = 1;
  }
  int base = 10;
  if (text.compare(pos, 2, "0x") == 0 || text.compare(pos, 2, "0X") == 0) {
    base = 16;
    pos += 2;
  } else if (text.compare(pos, 2, "0b") == 0 || text.compare(pos, 2, "0B") == 0) {
    base = 2;
    pos += 2;
  } else if (text.size() - pos > 1 && text[pos] == '0') {
    base = 8;
    pos += 1;
  }
  if (pos >= text.size()) return std::nullopt;
  std::uint64_t magnitude = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data() + pos, end, magnitude, base);
  if (error != std::errc() || ptr != end) return std::nullopt;
  if (!negative) {
    if (magnitude <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return json(static_cast<std::int64_t>(magnitude));
    }
    return json(magnitude);
  }
  if (magnitude > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + 1) {
    return std::nullopt;
  }
  return json(static_cast<std::int64_t>(0 - magnitude));
}

// A float matching YAML's ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ or .inf/.nan.
std::optional<json> ResolveFloat(const std::string& text) {
  if (OneOf(text, std::array<std::string_view, 3>{".nan", ".NaN", ".NAN"})) {
    return json(std::numeric_limits<double>::quiet_NaN());
  }
  for (std::string_view sign : {"", "+", "-"}) {
    for (std::string_view inf : {".inf", ".Inf", ".INF"}) {
      if (text == std::string(sign) + std::string(inf)) {
        return json(sign == "-" ? -std::numeric_limits<double>::infinity()
                                : std::numeric_limits<double>::infinity());
      }
    }
  }
  std::size_t pos = 0;
  auto digits = [&] {
    const std::size_t start = pos;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
    return pos - start;
  };
  if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) ++pos;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    if (digits() == 0) return std::nullopt;
  } else {
    if (digits() == 0) return std::nullopt;
    if (pos < text.size() && text[pos] == '.') {
      ++pos;
      digits();
    }
  }
  if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
    ++pos;
    if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) ++pos;
    if (digits() == 0) return std::nullopt;
  }
  if (pos != text.size()) return std::nullopt;
  try {
    return json(std::stod(text));
  } catch (const std::out_of_range&) {
    return std::nullopt;
  }
}

json ResolvePlainScalar(const std::string& text) {
  if (OneOf(text, kNulls)) return nullptr;
  if (OneOf(text, kTrues)) return true;
  if (OneOf(text, kFalses)) return false;
  if (auto integer = ResolveInteger(text)) return *integer;
  if (auto number = ResolveFloat(text)) return *number;
  return text;
}

json ResolveScalar(const YAML::Node& node) {
  const std::string& tag = node.Tag();
  const std::string& text = node.Scalar();
  // "!" marks a quoted or block scalar, which is always a string; so does an explicit !!str.
  if (tag == "!" || tag == "tag:yaml.org,2002:str") return text;
  return ResolvePlainScalar(text);
}

bool IsMergeKey(const YAML::Node& key) {
  return key.IsScalar() && key.Tag() != "!" && key.Scalar() == "<<";
}

// The maps a merge key's value brings in: one map, or a sequence of maps.
void AddMergeSources(const json& value, std::vector<json>& sources) {
  if (value.is_object()) {
    sources.push_back(value);
  } else if (value.is_array()) {
    for (const json& item : value) {
      if (item.is_object()) sources.push_back(item);
    }
  }
}

// YAML -> JSON within bounds: aliases are expanded by copying, so a few lines of anchors can
// describe a document exponentially large ("billion laughs"), and an alias can even name its own
// ancestor. Every converted node counts against kMaxYamlNodes and nesting against kMaxYamlDepth;
// past either the conversion stops with an error instead of exhausting memory or the stack.
class Converter {
 public:
  absl::StatusOr<json> Convert(const YAML::Node& node) {
    json out = ToJson(node, 0);
    if (!error_.ok()) return error_;
    return out;
  }

 private:
  json ToJson(const YAML::Node& node, int depth) {
    if (!error_.ok()) return nullptr;
    if (++nodes_ > kMaxYamlNodes) {
      error_ = absl::InvalidArgumentError(
          "YAML expands to more than " + std::to_string(kMaxYamlNodes) +
          " values (aliases are expanded); write the manifest out without so many aliases");
      return nullptr;
    }
    if (depth >= kMaxYamlDepth) {
      error_ = absl::InvalidArgumentError("YAML nests deeper than " +
                                          std::to_string(kMaxYamlDepth) + " levels");
      return nullptr;
    }
    switch (node.Type()) {
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        return nullptr;
      case YAML::NodeType::Scalar:
        return ResolveScalar(node);
      case YAML::NodeType::Sequence: {
        json array = json::array();
        for (const auto& item : node) array.push_back(ToJson(item, depth + 1));
        return array;
      }
      case YAML::NodeType::Map:
        return MapToJson(node, depth);
    }
    return nullptr;
  }

  json MapToJson(const YAML::Node& node, int depth) {
    json object = json::object();
    std::vector<json> merged;
    for (const auto& entry : node) {
      if (IsMergeKey(entry.first)) {
        AddMergeSources(ToJson(entry.second, depth + 1), merged);
        continue;
      }
      const json key = ToJson(entry.first, depth + 1);
      object[key.is_string() ? key.get<std::string>() : key.dump()] =
          ToJson(entry.second, depth + 1);
    }
    // YAML 1.1 merge keys (`<<: *defaults`): explicit keys win, then earlier sources.
    for (const json& source : merged) {
      for (const auto& [key, value] : source.items()) {
        if (!object.contains(key)) object[key] = value;
      }
    }
    return object;
  }

  std::size_t nodes_ = 0;
  absl::Status error_;
};

// yaml-cpp 0.7 (Debian bookworm's) loops forever, allocating until the machine runs out of memory,
// when a document's root node is a flow collection or a quoted scalar followed by more content
// (`[{}],` or `"b",` is enough).
// YAML allows nothing but comments after a document's root node, so such text is an error anyway:
// this finds it first, and unclosed flow collections and quoted scalars at the root too. Not
// covered: an unclosed quoted scalar inside a block mapping (`"":"` then `,` on the next line)
// loops the same way; only `taas run` hands YAML to yaml-cpp, and only the user's own manifest.
// Documents are split at `---`/`...` lines, as kubectl's reader splits them; a root flow collection
// is scanned with YAML's flow rules (quoted scalars, comments, nesting).
class RootFlowCheck {
 public:
  explicit RootFlowCheck(std::string_view text) : text_(text) {}

  absl::Status Run() {
    while (pos_ < text_.size()) {
      TAAS_RETURN_IF_ERROR(CheckDocument());
    }
    return absl::OkStatus();
  }

 private:
  bool AtLineStart() const { return pos_ == 0 || text_[pos_ - 1] == '\n'; }
  bool StartsWith(std::string_view marker) const {
    return text_.substr(pos_, marker.size()) == marker &&
           (pos_ + marker.size() == text_.size() ||
            std::isspace(static_cast<unsigned char>(text_[pos_ + marker.size()])));
  }
  bool AtDocumentMarker() const {
    return AtLineStart() && (StartsWith("---") || StartsWith("..."));
  }

  // Skips spaces, line breaks and comments; stops at a document marker.
  void SkipBlank() {
    while (pos_ < text_.size() && !AtDocumentMarker()) {
      const char c = text_[pos_];
      if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++pos_;
      } else {
        return;
      }
    }
  }

  absl::Status CheckDocument() {
    if (AtDocumentMarker()) pos_ += 3;  // Content after `--- ` belongs to the new document.
    SkipBlank();
    // Node properties (an anchor `&a`, a tag `!!seq`) may stand before the root node.
    while (pos_ < text_.size() && (text_[pos_] == '&' || text_[pos_] == '!')) {
      while (pos_ < text_.size() && !std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      SkipBlank();
    }
    const char first = pos_ < text_.size() ? text_[pos_] : ' ';
    if (first == '[' || first == '{' || first == '"' || first == '\'') {
      const std::size_t start = pos_;
      const bool closed = first == '"' || first == '\'' ? SkipQuoted(first) : SkipFlowCollection();
      if (!closed) {
        pos_ = start;
        return absl::InvalidArgumentError(
            "invalid YAML at " + Where() +
            ": the flow collection or quoted scalar that starts here is not closed");
      }
      // `"key": value` or `{a: 1}: value`: the node was the first key of a block mapping.
      if (pos_ < text_.size() && text_[pos_] == ':') return SkipToNextDocument();
      SkipBlank();
      if (pos_ < text_.size() && !AtDocumentMarker()) {
        return absl::InvalidArgumentError("invalid YAML at " + Where() +
                                          ": only comments may follow a document's root node");
      }
      return absl::OkStatus();
    }
    return SkipToNextDocument();  // A block document: nothing to check.
  }

  absl::Status SkipToNextDocument() {
    while (pos_ < text_.size() && !AtDocumentMarker()) ++pos_;
    return absl::OkStatus();
  }

  // From an opening bracket to just after its match; false when the text ends first (yaml-cpp
  // loops on that too, e.g. on `{:"},`).
  bool SkipFlowCollection() {
    int depth = 0;
    char previous = ' ';  // The last character that was not a space.
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      const bool scalar_start = std::string_view("[{,:?").find(previous) != std::string_view::npos;
      if ((c == '"' || c == '\'') && scalar_start) {
        if (!SkipQuoted(c)) return false;
        previous = c;
        continue;
      }
      if (c == '#' && pos_ > 0 && std::isspace(static_cast<unsigned char>(text_[pos_ - 1]))) {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
        continue;
      }
      ++pos_;
      if (c == '[' || c == '{') ++depth;
      if ((c == ']' || c == '}') && --depth == 0) return true;
      if (!std::isspace(static_cast<unsigned char>(c))) previous = c;
    }
    return false;
  }

  // A quoted scalar: '' escapes a single quote, a backslash escapes in double quotes. False when
  // the text ends before the closing quote.
  bool SkipQuoted(char quote) {
    ++pos_;
    while (pos_ < text_.size()) {
      const char c = text_[pos_++];
      if (quote == '"' && c == '\\') {
        ++pos_;
      } else if (c == quote) {
        if (quote == '\'' && pos_ < text_.size() && text_[pos_] == '\'') {
          ++pos_;
        } else {
          return true;
        }
      }
    }
    return false;
  }

  std::string Where() const {
    const std::string_view before = text_.substr(0, pos_);
    const std::size_t line = std::count(before.begin(), before.end(), '\n') + 1;
    const std::size_t line_start = before.rfind('\n');
    const std::size_t column = line_start == std::string_view::npos ? pos_ + 1 : pos_ - line_start;
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

// JSON text must be UTF-8 (the API server and nlohmann::json::dump insist); YAML bytes may not be.
bool IsValidUtf8(const json& value) {
  try {
    (void)value.dump();
    return true;
  } catch (const json::type_error&) {
    return false;
  }
}

absl::Status WithDocumentPrefix(const absl::Status& status, std::size_t index) {
  absl::Status prefixed(status.code(),
                        "document " + std::to_string(index) + ": " + std::string(status.message()));
  status.ForEachPayload([&](absl::string_view type_url, const absl::Cord& payload) {
    prefixed.SetPayload(type_url, payload);
  });
  return prefixed;
}

}  // namespace

absl::StatusOr<std::vector<nlohmann::json>> YamlToJson(std::string_view yaml) {
  if (yaml.size() > kMaxYamlBytes) {
    return absl::InvalidArgumentError("YAML of " + std::to_string(yaml.size()) +
                                      " bytes is over the maximum of " +
                                      std::to_string(kMaxYamlBytes) + " bytes");
  }
  TAAS_RETURN_IF_ERROR(RootFlowCheck(yaml).Run());
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(std::string(yaml));
  } catch (const YAML::Exception& error) {
    return absl::InvalidArgumentError("invalid YAML at line " +
                                      std::to_string(error.mark.line + 1) + ", column " +
                                      std::to_string(error.mark.column + 1) + ": " + error.msg);
  } catch (const std::exception& error) {  // yaml-cpp may throw others (bad_alloc) too.
    return absl::InvalidArgumentError(std::string("cannot read the YAML: ") + error.what());
  }
  std::vector<nlohmann::json> out;
  Converter converter;  // One budget for every document of the stream.
  for (const auto& document : documents) {
    TAAS_ASSIGN_OR_RETURN(json converted, converter.Convert(document));
    if (converted.is_null()) continue;
    if (!IsValidUtf8(converted)) {
      return absl::InvalidArgumentError("invalid YAML in document " + std::to_string(out.size()) +
                                        ": text is not valid UTF-8");
    }
    out.push_back(std::move(converted));
  }
  return out;
}

absl::StatusOr<std::vector<TFJob>> TFJobsFromYaml(std::string_view yaml) {
  TAAS_ASSIGN_OR_RETURN(std::vector<nlohmann::json> documents, YamlToJson(yaml));
  std::vector<TFJob> jobs;
  for (std::size_t i = 0; i < documents.size(); ++i) {
    absl::StatusOr<TFJob> job = TFJobFromJson(documents[i]);
    if (!job.ok()) {
      return documents.size() > 1 ? WithDocumentPrefix(job.status(), i) : job.status();
    }
    jobs.push_back(*std::move(job));
  }
  return jobs;
}

}  // namespace taas::tfjob
