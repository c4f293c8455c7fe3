#include "taas/ps/placement.h"

#include <doctest/doctest.h>

#include <algorithm>

namespace taas::ps {
namespace {

TEST_CASE("small variables go whole to the least-loaded PS, largest first") {
  // Sizes in floats; threshold far above them all.
  auto p = PlaceVariables({{"a", 100}, {"b", 300}, {"c", 200}, {"d", 50}}, 2, 1 << 30);
  REQUIRE(p.size() == 4);
  CHECK(p[0].name == "a");  // result keeps the input order
  // Largest first: b(300)->ps0, c(200)->ps1, a(100)->ps1 (200<300), d(50)->ps0 (300 vs 300: 0)
  CHECK(p[1].shards.at(0).ps == 0);
  CHECK(p[2].shards.at(0).ps == 1);
  CHECK(p[0].shards.at(0).ps == 1);
  CHECK(p[3].shards.at(0).ps == 0);
  CHECK(p[3].shards.at(0).name == "d");
  CHECK(BytesPerPs(p, 2) == std::vector<std::int64_t>{1400, 1200});
}

TEST_CASE("large variables are partitioned across every PS, covering all elements") {
  auto p = PlaceVariables({{"embed", 1003}, {"bias", 10}}, 3, 400);
  REQUIRE(p[0].shards.size() == 3);
  std::int64_t next = 0;
  for (int i = 0; i < 3; ++i) {
    const auto& s = p[0].shards[static_cast<std::size_t>(i)];
    CHECK(s.ps == i);
    CHECK(s.offset == next);
    CHECK(s.name == "embed/part_" + std::to_string(i));
    next += s.size;
  }
  CHECK(next == 1003);
  CHECK(p[0].shards[0].size == 335);
  CHECK(p[0].shards[2].size == 334);
  // The bias goes to the PS the partition left lightest (ps 1 and 2 tie: lowest index).
  REQUIRE(p[1].shards.size() == 1);
  CHECK(p[1].shards[0].ps == 1);
  CHECK(p[1].shards[0].name == "bias");
}

TEST_CASE("one PS holds everything whole; placement is deterministic") {
  std::vector<VariableInfo> vars = {{"w", 1 << 20}, {"b", 3}};
  auto p = PlaceVariables(vars, 1, 16);
  CHECK(p[0].shards.size() == 1);
  CHECK(p[0].shards[0].name == "w");
  auto a = PlaceVariables(vars, 4, 16), b = PlaceVariables(vars, 4, 16);
  for (std::size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i].shards.size() == b[i].shards.size());
    for (std::size_t s = 0; s < a[i].shards.size(); ++s) {
      CHECK(a[i].shards[s].ps == b[i].shards[s].ps);
    }
  }
}

TEST_CASE("with lanes, large variables split over every lane and small ones stay on lane 0") {
  // 2 PS tasks of 2 lanes: PS 0 and 2 are lane 0 of task 0 and 1.
  auto p = PlaceVariables({{"embed", 1000}, {"a", 30}, {"b", 20}, {"c", 10}}, 4, 400, 2);
  REQUIRE(p[0].shards.size() == 4);
  for (int i = 0; i < 4; ++i) CHECK(p[0].shards[static_cast<std::size_t>(i)].ps == i);
  CHECK(p[1].shards.at(0).ps == 0);  // a(30) -> task 0 (tie: lowest index)
  CHECK(p[2].shards.at(0).ps == 2);  // b(20) -> task 1
  CHECK(p[3].shards.at(0).ps == 2);  // c(10) -> task 1 (1000+80 < 1000+120 bytes)
  // One task, two lanes, nothing large: lane 1 holds nothing.
  auto small = PlaceVariables({{"w", 100}, {"b", 10}}, 2, 1 << 20, 2);
  CHECK(BytesPerPs(small, 2) == std::vector<std::int64_t>{440, 0});
}

TEST_CASE("balances bytes across PS within one variable's size") {
  std::vector<VariableInfo> vars;
  for (int i = 0; i < 40; ++i) vars.push_back({"v" + std::to_string(i), 100 + i * 37 % 500});
  auto bytes = BytesPerPs(PlaceVariables(vars, 3, 1 << 30), 3);
  auto [lo, hi] = std::minmax_element(bytes.begin(), bytes.end());
  CHECK(*hi - *lo <= 600 * 4);
}

}  // namespace
}  // namespace taas::ps
