#include <doctest/doctest.h>

#include "internal.h"
#include "taas/contract/metric_names.h"

namespace taas {
namespace {

TEST_CASE("skipped records: the sum of every stream's count is served as a counter") {
  metrics::Gauges gauges;
  SkippedRecords sum;
  ModelBuilder::State state;
  state.gauges = &gauges;
  state.skipped_records = &sum;
  ModelBuilder builder(&state);
  auto first = builder.SkippedRecordsCounter();
  auto second = builder.SkippedRecordsCounter();
  const std::string name(contract::kSkippedRecordsTotalMetric);
  CHECK(gauges.Render().find("# TYPE " + name + " counter\n" + name + " 0\n") != std::string::npos);
  first(1);
  first(2);
  second(3);  // each call is the stream's own count so far, not an increment
  first(4);
  CHECK(sum.total == 7);
  CHECK(gauges.Render().find(name + " 7\n") != std::string::npos);
  // A stream made later starts from the sum, not from 0.
  auto third = builder.SkippedRecordsCounter();
  CHECK(gauges.Render().find(name + " 7\n") != std::string::npos);
  third(1);
  CHECK(gauges.Render().find(name + " 8\n") != std::string::npos);
}

}  // namespace
}  // namespace taas
