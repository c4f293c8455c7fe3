#include "taas/prometheus/text.h"

#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

namespace taas::prometheus {
namespace {

TEST_CASE("Prometheus text: names, labels, comments, bad lines") {
  const auto samples = ParsePrometheusText(
      "# HELP taas_loss Training loss\n"
      "# TYPE taas_loss gauge\n"
      "taas_loss 0.25\n"
      "taas_global_step{role=\"chief\"} 1200 1700000000000\n"
      "taas_examples_per_second 3.5e3\n"
      "# TYPE taas_stalled_seconds_total counter\n"
      "taas_stalled_seconds_total 9.5\n"
      "broken{ 1\n"
      "taas_nan NaN\n"
      "taas_word abc\n");
  CHECK(samples.at("taas_loss") == doctest::Approx(0.25));
  CHECK(samples.at("taas_global_step") == 1200);
  CHECK(samples.at("taas_examples_per_second") == 3500);
  CHECK(samples.at("taas_stalled_seconds_total") == doctest::Approx(9.5));  // a counter reads alike
  CHECK(samples.count("broken") == 0);
  CHECK(samples.count("taas_nan") == 0);
  CHECK(samples.count("taas_word") == 0);
}

TEST_CASE("Prometheus samples: labels, escapes, timestamps") {
  const auto samples = ParsePrometheusSamples(
      "taas_replica_device_info{device=\"cuda:0\",name=\"NVIDIA H100 80GB HBM3\"} 1\n"
      "taas_replica_device_info{ device = \"cuda:1\" , name=\"a \\\"quoted\\\" \\\\ name\\n\", } 1 "
      "1700000000000\n"
      "braces{v=\"}{,=\"} 2\n"
      "empty{} 3\r\n");
  REQUIRE(samples.size() == 4);
  CHECK(samples[0].name == "taas_replica_device_info");
  CHECK(samples[0].labels == std::vector<std::pair<std::string, std::string>>{
                                 {"device", "cuda:0"}, {"name", "NVIDIA H100 80GB HBM3"}});
  CHECK(samples[1].labels[1].second == "a \"quoted\" \\ name\n");
  CHECK(samples[1].value == 1);
  CHECK(samples[2].labels[0].second == "}{,=");
  CHECK(samples[2].value == 2);
  CHECK(samples[3].labels.empty());
  CHECK(samples[3].value == 3);
}

TEST_CASE("Prometheus samples: hostile lines are skipped, the rest kept") {
  std::string many_labels = "m{";
  for (std::size_t i = 0; i <= kMaxPrometheusLabels; ++i) {
    many_labels += "l" + std::to_string(i) + "=\"x\",";
  }
  many_labels += "} 1\n";
  const std::string long_value =
      "m{v=\"" + std::string(kMaxPrometheusLabelBytes + 1, 'x') + "\"} 1\n";
  const std::string long_name = std::string(kMaxPrometheusNameBytes + 1, 'n') + " 1\n";
  const auto samples = ParsePrometheusSamples(
      "bad_escape{v=\"\\t\"} 1\n"
      "unterminated{v=\"abc} 1\n"
      "no_close{v=\"a\" 1\n"
      "no_quote{v=abc} 1\n"
      "duplicate{v=\"a\",v=\"b\"} 1\n"
      "no_equals{v\"a\"} 1\n"
      "trailing_escape{v=\"\\\n"
      "missing_comma{a=\"1\"b=\"2\"} 1\n"
      "9digit_first 1\n"
      "no_value{v=\"a\"}\n"
      "glued1\n" +
      many_labels + long_value + long_name + "kept{v=\"ok\"} 7\n");
  REQUIRE(samples.size() == 1);
  CHECK(samples[0].name == "kept");
  const auto longest =
      ParsePrometheusSamples("m{v=\"" + std::string(kMaxPrometheusLabelBytes, 'x') + "\"} 1\n");
  REQUIRE(longest.size() == 1);
  CHECK(longest[0].labels[0].second.size() == kMaxPrometheusLabelBytes);
  CHECK(samples[0].value == 7);

  // At most kMaxPrometheusSamples samples of a page are read.
  std::string page;
  for (std::size_t i = 0; i < kMaxPrometheusSamples + 5; ++i) page += "s 1\n";
  CHECK(ParsePrometheusSamples(page).size() == kMaxPrometheusSamples);
}

}  // namespace
}  // namespace taas::prometheus
