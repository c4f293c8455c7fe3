#include "taas/data/example.h"

#include <algorithm>
#include <climits>
#include <utility>

#include "example.pb.h"
#include "example_shape.h"

namespace taas::data {
namespace {

absl::Status ParseWire(std::string_view record, wire::Example& example) {
  if (record.size() > static_cast<std::size_t>(INT_MAX) ||
      !example.ParseFromArray(record.data(), static_cast<int>(record.size()))) {
    return absl::DataLossError(
        "the record is not a tf.train.Example (" + std::to_string(record.size()) +
        " bytes that do not parse): the files hold other records, or are corrupt");
  }
  return absl::OkStatus();
}

const char* KindName(const wire::Feature& feature) {
  switch (feature.kind_case()) {
    case wire::Feature::kBytesList:
      return "a bytes_list";
    case wire::Feature::kFloatList:
      return "a float_list";
    case wire::Feature::kInt64List:
      return "an int64_list";
    case wire::Feature::KIND_NOT_SET:
      break;
  }
  return "an empty feature";
}

// The feature named `name` (the last entry of that name, as in a map), or DataLoss listing the
// names the record has.
absl::StatusOr<const wire::Feature*> Find(const wire::Example& example, const std::string& name) {
  const auto& entries = example.features().feature();
  for (int i = entries.size() - 1; i >= 0; --i) {
    if (entries[i].key() == name) return &entries[i].value();
  }
  std::vector<std::string> names;
  for (const wire::FeatureEntry& entry : entries) names.push_back(entry.key());
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  constexpr std::size_t kNamesShown = 20;  // a hostile record may have millions
  std::string have;
  for (std::size_t i = 0; i < names.size() && i < kNamesShown; ++i) {
    have += (have.empty() ? "" : ", ") + names[i];
  }
  if (names.size() > kNamesShown) {
    have += ", and " + std::to_string(names.size() - kNamesShown) + " more";
  }
  return absl::DataLossError("the Example has no feature \"" + name +
                             "\" (it has: " + (have.empty() ? "none" : have) +
                             "): set the spec's feature names to the records' own");
}

absl::Status WrongSize(const std::string& name, const char* kind, std::int64_t got,
                       std::int64_t want) {
  return absl::DataLossError("feature \"" + name + "\" is " + kind + " of " + std::to_string(got) +
                             " values, but example_shape holds " + std::to_string(want));
}

class ExampleDecoder {
 public:
  explicit ExampleDecoder(ExampleSpec spec)
      : spec_(std::move(spec)), elements_(NumElements(spec_.example_shape)) {}

  absl::StatusOr<DecodedExample> operator()(std::string_view record) const {
    wire::Example example;
    TAAS_RETURN_IF_ERROR(ParseWire(record, example));
    DecodedExample out;
    TAAS_ASSIGN_OR_RETURN(const wire::Feature* input, Find(example, spec_.input_feature));
    TAAS_RETURN_IF_ERROR(DecodeInput(*input, out.input));
    TAAS_ASSIGN_OR_RETURN(const wire::Feature* label, Find(example, spec_.label_feature));
    TAAS_ASSIGN_OR_RETURN(out.label, DecodeLabel(*label));
    return out;
  }

 private:
  absl::Status DecodeInput(const wire::Feature& feature, std::vector<float>& out) const {
    const std::string& name = spec_.input_feature;
    switch (feature.kind_case()) {
      case wire::Feature::kFloatList: {
        const auto& values = feature.float_list().value();
        if (values.size() != elements_)
          return WrongSize(name, "a float_list", values.size(), elements_);
        out.assign(values.begin(), values.end());
        return absl::OkStatus();
      }
      case wire::Feature::kInt64List: {
        const auto& values = feature.int64_list().value();
        if (values.size() != elements_) {
          return WrongSize(name, "an int64_list", values.size(), elements_);
        }
        out.resize(static_cast<std::size_t>(elements_));
        for (int i = 0; i < values.size(); ++i) out[i] = static_cast<float>(values[i]);
        return absl::OkStatus();
      }
      case wire::Feature::kBytesList:
        return DecodeBytes(feature.bytes_list(), out);
      case wire::Feature::KIND_NOT_SET:
        break;
    }
    return WrongSize(name, "an empty feature", 0, elements_);
  }

  absl::Status DecodeBytes(const wire::BytesList& list, std::vector<float>& out) const {
    const std::string& name = spec_.input_feature;
    if (list.value_size() != 1) {
      return absl::DataLossError("feature \"" + name + "\" is a bytes_list of " +
                                 std::to_string(list.value_size()) +
                                 " values; an input in bytes is one value");
    }
    const std::string& bytes = list.value(0);
    out.resize(static_cast<std::size_t>(elements_));
    if (spec_.image_decoder) {
      absl::Status decoded = spec_.image_decoder(bytes, std::span<float>(out));
      if (!decoded.ok()) {
        return absl::Status(decoded.code(),
                            "feature \"" + name + "\": " + std::string(decoded.message()));
      }
      return absl::OkStatus();
    }
    if (static_cast<std::int64_t>(bytes.size()) != elements_) {
      return absl::DataLossError("feature \"" + name + "\" holds " + std::to_string(bytes.size()) +
                                 " bytes, but example_shape holds " + std::to_string(elements_) +
                                 " elements of one byte each (an encoded image needs the "
                                 "spec's image_decoder)");
    }
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      out[i] = static_cast<float>(static_cast<unsigned char>(bytes[i])) * spec_.bytes_scale;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::int32_t> DecodeLabel(const wire::Feature& feature) const {
    const std::string& name = spec_.label_feature;
    if (feature.kind_case() != wire::Feature::kInt64List ||
        feature.int64_list().value_size() != 1) {
      const int count =
          feature.kind_case() == wire::Feature::kInt64List ? feature.int64_list().value_size() : -1;
      return absl::DataLossError(
          "label feature \"" + name + "\" is " + KindName(feature) +
          (count >= 0 ? " of " + std::to_string(count) + " values" : std::string()) +
          ", expected an int64_list of one class");
    }
    const std::int64_t label = feature.int64_list().value(0);
    const std::int64_t limit = spec_.num_classes > 0 ? spec_.num_classes : INT32_MAX;
    if (label < 0 || label >= limit) {
      return absl::DataLossError("label feature \"" + name + "\" is " + std::to_string(label) +
                                 ", outside [0, " + std::to_string(limit) + ")" +
                                 (spec_.num_classes > 0 ? " (the model's classes)" : ""));
    }
    return static_cast<std::int32_t>(label);
  }

  const ExampleSpec spec_;
  const std::int64_t elements_;
};

}  // namespace

absl::StatusOr<Features> ParseExample(std::string_view record) {
  wire::Example example;
  TAAS_RETURN_IF_ERROR(ParseWire(record, example));
  Features out;
  for (const wire::FeatureEntry& entry : example.features().feature()) {
    const wire::Feature& feature = entry.value();
    Feature& value = out[entry.key()];
    value = std::monostate();  // a later entry of the same name replaces an earlier one
    switch (feature.kind_case()) {
      case wire::Feature::kBytesList:
        value = BytesList(feature.bytes_list().value().begin(), feature.bytes_list().value().end());
        break;
      case wire::Feature::kFloatList:
        value = FloatList(feature.float_list().value().begin(), feature.float_list().value().end());
        break;
      case wire::Feature::kInt64List:
        value = Int64List(feature.int64_list().value().begin(), feature.int64_list().value().end());
        break;
      case wire::Feature::KIND_NOT_SET:
        break;
    }
  }
  return out;
}

std::string SerializeExample(const Features& features) {
  wire::Example example;
  for (const auto& [name, value] : features) {
    wire::FeatureEntry& entry = *example.mutable_features()->add_feature();
    entry.set_key(name);
    wire::Feature& feature = *entry.mutable_value();
    if (const auto* bytes = std::get_if<BytesList>(&value)) {
      auto* list = feature.mutable_bytes_list();  // set even when empty: the kind is kept
      for (const std::string& v : *bytes) list->add_value(v);
    } else if (const auto* floats = std::get_if<FloatList>(&value)) {
      auto* list = feature.mutable_float_list();
      list->mutable_value()->Add(floats->begin(), floats->end());
    } else if (const auto* ints = std::get_if<Int64List>(&value)) {
      auto* list = feature.mutable_int64_list();
      list->mutable_value()->Add(ints->begin(), ints->end());
    }
  }
  return example.SerializeAsString();
}

absl::StatusOr<DecodeFn> MakeExampleDecoder(ExampleSpec spec) {
  if (spec.input_feature.empty()) {
    return absl::InvalidArgumentError("example spec: input_feature must name a feature");
  }
  if (spec.label_feature.empty()) {
    return absl::InvalidArgumentError("example spec: label_feature must name a feature");
  }
  TAAS_RETURN_IF_ERROR(internal::CheckExampleShape(spec.example_shape, "example spec"));
  return DecodeFn(ExampleDecoder(std::move(spec)));
}

}  // namespace taas::data
