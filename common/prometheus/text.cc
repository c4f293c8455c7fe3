#include "taas/prometheus/text.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace taas::prometheus {
namespace {

bool IsNameStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':';
}
bool IsNameChar(char c) { return IsNameStart(c) || std::isdigit(static_cast<unsigned char>(c)); }

void SkipBlanks(std::string_view* s) {
  while (!s->empty() && (s->front() == ' ' || s->front() == '\t')) s->remove_prefix(1);
}

// A metric or label name at the front of `s` (consumed); empty when there is none or it is too
// long.
std::string_view TakeName(std::string_view* s) {
  if (s->empty() || !IsNameStart(s->front())) return {};
  std::size_t end = 1;
  while (end < s->size() && IsNameChar((*s)[end])) ++end;
  if (end > kMaxPrometheusNameBytes) return {};
  std::string_view name = s->substr(0, end);
  s->remove_prefix(end);
  return name;
}

// `{name="value",...}` at the front of `s` (consumed, the brace included) into `labels`; false
// when malformed or over the bounds.
bool TakeLabels(std::string_view* s, std::vector<std::pair<std::string, std::string>>* labels) {
  s->remove_prefix(1);  // '{'
  while (true) {
    SkipBlanks(s);
    if (!s->empty() && s->front() == '}') {
      s->remove_prefix(1);
      return true;
    }
    if (labels->size() == kMaxPrometheusLabels) return false;
    const std::string_view name = TakeName(s);
    if (name.empty()) return false;
    SkipBlanks(s);
    if (s->empty() || s->front() != '=') return false;
    s->remove_prefix(1);
    SkipBlanks(s);
    if (s->empty() || s->front() != '"') return false;
    s->remove_prefix(1);
    std::string value;
    std::size_t i = 0;
    for (;; ++i) {
      if (i >= s->size()) return false;  // unterminated
      const char c = (*s)[i];
      if (c == '"') break;
      if (i >= kMaxPrometheusLabelBytes) return false;  // too long, escaped (value is no longer)
      if (c != '\\') {
        value += c;
        continue;
      }
      if (++i >= s->size()) return false;
      switch ((*s)[i]) {
        case '\\':
          value += '\\';
          break;
        case '"':
          value += '"';
          break;
        case 'n':
          value += '\n';
          break;
        default:
          return false;  // the text format knows no other escape
      }
    }
    s->remove_prefix(i + 1);
    for (const auto& [existing, unused] : *labels) {
      if (existing == name) return false;
    }
    labels->emplace_back(std::string(name), std::move(value));
    SkipBlanks(s);
    if (!s->empty() && s->front() == ',') {
      s->remove_prefix(1);
    } else if (s->empty() || s->front() != '}') {
      return false;
    }
  }
}

}  // namespace

std::vector<PrometheusSample> ParsePrometheusSamples(std::string_view text) {
  std::vector<PrometheusSample> samples;
  std::size_t start = 0;
  while (start < text.size() && samples.size() < kMaxPrometheusSamples) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    SkipBlanks(&line);
    if (line.empty() || line.front() == '#') continue;
    PrometheusSample sample;
    const std::string_view name = TakeName(&line);
    if (name.empty()) continue;
    sample.name = std::string(name);
    if (!line.empty() && line.front() == '{') {
      if (!TakeLabels(&line, &sample.labels)) continue;
    } else if (line.empty() || (line.front() != ' ' && line.front() != '\t')) {
      continue;  // the name runs into something that is neither labels nor a blank
    }
    SkipBlanks(&line);
    const std::size_t value_end = line.find_first_of(" \t\r");
    const std::string value(line.substr(0, value_end));
    if (value.empty()) continue;
    char* parsed_end = nullptr;
    sample.value = std::strtod(value.c_str(), &parsed_end);
    if (parsed_end != value.c_str() + value.size() || std::isnan(sample.value)) continue;
    samples.push_back(std::move(sample));
  }
  return samples;
}

std::map<std::string, double> ParsePrometheusText(std::string_view text) {
  std::map<std::string, double> samples;
  for (PrometheusSample& sample : ParsePrometheusSamples(text)) {
    samples.emplace(std::move(sample.name), sample.value);
  }
  return samples;
}

}  // namespace taas::prometheus
