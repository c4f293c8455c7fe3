// The status write's optimistic concurrency (status_write.h) against a scripted API server: a
// 409 Conflict makes the writer read the job again, decide again and PUT the new status onto the
// fresh object; a run of 409s ends after kStatusWriteAttempts with a logged error.
#include "status_write.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "taas/kube/client.h"

namespace {

using nlohmann::json;
using taas::controller::kStatusWriteAttempts;
using taas::controller::StatusWrite;
using taas::controller::StatusWriteOps;
using taas::controller::WriteStatusRetryingConflicts;

absl::Status Conflict() {
  return taas::kube::StatusFromHttp(
      409,
      R"({"kind":"Status","reason":"Conflict","code":409,"message":"the object has been modified; please apply your changes to the latest version and try again"})");
}

json Job(const std::string& uid, const std::string& rv) {
  return json{{"apiVersion", "kubeflow.org/v1"},
              {"kind", "TFJob"},
              {"metadata",
               {{"name", "j"},
                {"namespace", "ns"},
                {"uid", uid},
                {"resourceVersion", rv},
                {"labels", {{"team", "a"}}}}},
              {"spec", {{"tfReplicaSpecs", {{"Worker", {{"replicas", 2}}}}}}},
              {"status", {{"conditions", json::array()}}}};
}

json Decided(const std::string& type) {
  return json{{"conditions", {{{"type", type}, {"status", "True"}}}}};
}

// The API server as the writer sees it: scripted answers to PUTs and GETs, every call recorded.
struct FakeApi {
  std::deque<absl::StatusOr<json>> put_answers;  // empty: the PUT is stored (resourceVersion+1)
  std::deque<absl::StatusOr<json>> get_answers;
  std::vector<json> puts;
  int gets = 0;
  std::vector<json> redecided_from;
  // What the controller decides from a fresh job (default: Running).
  std::function<absl::StatusOr<StatusWriteOps::Redecision>(const json&)> decide =
      [](const json&) -> absl::StatusOr<StatusWriteOps::Redecision> {
    return StatusWriteOps::Redecision{false, Decided("Running")};
  };

  StatusWriteOps Ops() {
    StatusWriteOps ops;
    ops.put = [this](const json& body) -> absl::StatusOr<json> {
      puts.push_back(body);
      if (put_answers.empty()) {
        json stored = body;
        stored["metadata"]["resourceVersion"] =
            std::to_string(std::stoi(body["metadata"]["resourceVersion"].get<std::string>()) + 1);
        return stored;
      }
      auto answer = put_answers.front();
      put_answers.pop_front();
      return answer;
    };
    ops.get = [this]() -> absl::StatusOr<json> {
      ++gets;
      REQUIRE_FALSE(get_answers.empty());
      auto answer = get_answers.front();
      get_answers.pop_front();
      return answer;
    };
    ops.redecide = [this](const json& fresh) {
      redecided_from.push_back(fresh);
      return decide(fresh);
    };
    return ops;
  }
};

// A logger writing into memory, for checking what was logged.
struct CapturedLog {
  char* data = nullptr;
  std::size_t size = 0;
  std::FILE* file = open_memstream(&data, &size);
  taas::Logger logger{file, taas::LogLevel::kInfo};
  ~CapturedLog() {
    std::fclose(file);
    std::free(data);
  }
  std::string Text() {
    std::fflush(file);
    return std::string(data, size);
  }
};

}  // namespace

TEST_CASE(
    "status write: a 409 re-reads the job and writes the new decision onto the fresh object") {
  FakeApi api;
  api.put_answers.push_back(Conflict());
  // Someone else changed the job since the controller read it: a label, the spec, a newer
  // resourceVersion.
  json fresh = Job("uid-1", "8");
  fresh["metadata"]["labels"]["owner"] = "someone-else";
  fresh["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 3;
  api.get_answers.push_back(fresh);
  CapturedLog log;
  std::atomic<std::uint64_t> conflicts{0};

  auto result = WriteStatusRetryingConflicts(Job("uid-1", "5"), Decided("Created"), api.Ops(),
                                             log.logger, conflicts);

  REQUIRE(result.ok());
  CHECK_FALSE(result->gone);
  REQUIRE(api.puts.size() == 2);
  // The first PUT: the job as last read, with the decided status.
  CHECK(api.puts[0]["metadata"]["resourceVersion"] == "5");
  CHECK(api.puts[0]["status"] == Decided("Created"));
  // One fresh read, decided again from exactly that object.
  CHECK(api.gets == 1);
  REQUIRE(api.redecided_from.size() == 1);
  CHECK(api.redecided_from[0] == fresh);
  // The second PUT: the fresh object (its resourceVersion, others' label and spec change) with
  // the status decided again.
  const json& second = api.puts[1];
  CHECK(second["metadata"]["resourceVersion"] == "8");
  CHECK(second["metadata"]["labels"]["owner"] == "someone-else");
  CHECK(second["metadata"]["labels"]["team"] == "a");
  CHECK(second["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == 3);
  CHECK(second["status"] == Decided("Running"));
  CHECK(second["apiVersion"] == "kubeflow.org/v1");
  CHECK(second["kind"] == "TFJob");
  REQUIRE(result->written.has_value());
  CHECK((*result->written)["metadata"]["resourceVersion"] == "9");
  CHECK(conflicts.load() == 1);
  CHECK(log.Text().find("level=error") == std::string::npos);
}

TEST_CASE("status write: a run of 409s ends after the bounded number of attempts, logged") {
  FakeApi api;
  for (int i = 0; i < kStatusWriteAttempts + 5; ++i) {
    api.put_answers.push_back(Conflict());
    api.get_answers.push_back(Job("uid-1", std::to_string(10 + i)));
  }
  CapturedLog log;
  std::atomic<std::uint64_t> conflicts{0};

  auto result = WriteStatusRetryingConflicts(Job("uid-1", "5"), Decided("Created"), api.Ops(),
                                             log.logger, conflicts);

  REQUIRE_FALSE(result.ok());
  CHECK(result.status().code() == absl::StatusCode::kAborted);
  CHECK(api.puts.size() == static_cast<std::size_t>(kStatusWriteAttempts));
  CHECK(api.gets == kStatusWriteAttempts - 1);
  CHECK(conflicts.load() == static_cast<std::uint64_t>(kStatusWriteAttempts));
  // Each retry went onto the object just read.
  for (int i = 1; i < kStatusWriteAttempts; ++i)
    CHECK(api.puts[static_cast<std::size_t>(i)]["metadata"]["resourceVersion"] ==
          std::to_string(10 + i - 1));
  const std::string text = log.Text();
  CHECK(text.find("level=error") != std::string::npos);
  CHECK(text.find("attempts=" + std::to_string(kStatusWriteAttempts)) != std::string::npos);
}

TEST_CASE("status write: after a 409 the job is gone, replaced, invalid or needs no write") {
  CapturedLog log;
  std::atomic<std::uint64_t> conflicts{0};

  SUBCASE("deleted: the fresh read is 404") {
    FakeApi api;
    api.put_answers.push_back(Conflict());
    api.get_answers.push_back(absl::NotFoundError("tfjobs \"j\" not found"));
    auto result = WriteStatusRetryingConflicts(Job("uid-1", "5"), Decided("Created"), api.Ops(),
                                               log.logger, conflicts);
    REQUIRE(result.ok());
    CHECK(result->gone);
    CHECK(api.puts.size() == 1);
    CHECK(api.redecided_from.empty());
  }
  SUBCASE("recreated under the same name: another uid is not written") {
    FakeApi api;
    api.put_answers.push_back(Conflict());
    api.get_answers.push_back(Job("uid-2", "9"));
    auto result = WriteStatusRetryingConflicts(Job("uid-1", "5"), Decided("Created"), api.Ops(),
                                               log.logger, conflicts);
    REQUIRE(result.ok());
    CHECK(result->gone);
    CHECK(api.puts.size() == 1);
  }
  SUBCASE("the fresh job is invalid: the controller reports it, nothing more is written") {
    FakeApi api;
    api.put_answers.push_back(Conflict());
    api.get_answers.push_back(Job("uid-1", "9"));
    api.decide = [](const json&) -> absl::StatusOr<StatusWriteOps::Redecision> {
      return StatusWriteOps::Redecision{true, std::nullopt};
    };
    auto result = WriteStatusRetryingConflicts(Job("uid-1", "5"), Decided("Created"), api.Ops(),
                                               log.logger, conflicts);
    REQUIRE(result.ok());
    CHECK(result->gone);
    CHECK(api.puts.size() == 1);
  }
  SUBCASE("the fresh job already has the decided status: no second write") {
    FakeApi api;
    api.put_answers.push_back(Conflict());
    api.get_answers.push_back(Job("uid-1", "9"));
    api.decide = [](const json&) -> absl::StatusOr<StatusWriteOps::Redecision> {
      return StatusWriteOps::Redecision{};
    };
    auto result = WriteStatusRetryingConflicts(Job("uid-1", "5"), Decided("Created"), api.Ops(),
                                               log.logger, conflicts);
    REQUIRE(result.ok());
    CHECK_FALSE(result->gone);
    CHECK_FALSE(result->written.has_value());
    CHECK(api.puts.size() == 1);
  }
}

TEST_CASE("status write: other errors are returned at once, without a re-read") {
  FakeApi api;
  api.put_answers.push_back(taas::kube::StatusFromHttp(500, "etcd timeout"));
  CapturedLog log;
  std::atomic<std::uint64_t> conflicts{0};
  auto result = WriteStatusRetryingConflicts(Job("uid-1", "5"), Decided("Created"), api.Ops(),
                                             log.logger, conflicts);
  REQUIRE_FALSE(result.ok());
  CHECK(result.status().code() == absl::StatusCode::kInternal);
  CHECK(api.puts.size() == 1);
  CHECK(api.gets == 0);
  CHECK(conflicts.load() == 0);
}
