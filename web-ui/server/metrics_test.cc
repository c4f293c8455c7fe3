#include "taas/ui_server/metrics.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "taas/ui_server/api.h"
#include "taas/ui_server/server.h"

namespace taas::ui_server {
namespace {

using nlohmann::json;

TEST_CASE("Prometheus text: names, labels, comments, bad lines") {
  const auto samples = ParsePrometheusText(
      "# HELP taas_loss Training loss\n"
      "# TYPE taas_loss gauge\n"
      "taas_loss 0.25\n"
      "taas_global_step{role=\"chief\"} 1200 1700000000000\n"
      "taas_examples_per_second 3.5e3\n"
      "broken{ 1\n"
      "taas_nan NaN\n"
      "taas_word abc\n");
  CHECK(samples.at("taas_loss") == doctest::Approx(0.25));
  CHECK(samples.at("taas_global_step") == 1200);
  CHECK(samples.at("taas_examples_per_second") == 3500);
  CHECK(samples.count("broken") == 0);
  CHECK(samples.count("taas_nan") == 0);
  CHECK(samples.count("taas_word") == 0);
}

TEST_CASE("the metrics store keeps a bounded history per job and a bounded number of jobs") {
  MetricsStore store(3, 2);
  for (int i = 0; i < 5; ++i) {
    MetricsPoint p;
    p.time_ms = i;
    p.global_step = i * 10;
    store.Add("default/a", p);
  }
  auto history = store.History("default/a");
  REQUIRE(history.size() == 3);
  CHECK(history.front().time_ms == 2);
  store.Add("default/b", {});
  store.Add("default/c", {});
  CHECK(store.History("default/a").empty());  // least recently updated, dropped
  CHECK(store.History("default/c").size() == 1);
  const json j = store.HistoryJson("default/c");
  CHECK(j["points"][0]["step"].is_null());
  CHECK(j["latest"]["time"] == 0);
}

// A JobSource that lists one TFJob in "default" and serves nothing else.
class OneJobSource : public JobSource {
 public:
  explicit OneJobSource(json job) : job_(std::move(job)) {}
  absl::StatusOr<std::vector<json>> ListJobObjects(const std::string& ns) override {
    if (ns == "default") return std::vector<json>{job_};
    return absl::NotFoundError(ns);
  }
  absl::StatusOr<std::vector<JobRecord>> ListJobs(const std::string&) override {
    return absl::UnimplementedError("list");
  }
  absl::StatusOr<JobDetail> GetJob(const std::string&, const std::string&) override {
    return absl::UnimplementedError("get");
  }
  absl::StatusOr<json> CreateJob(const std::string&, const json&, bool) override {
    return absl::UnimplementedError("create");
  }
  absl::Status DeleteJob(const std::string&, const std::string&) override {
    return absl::UnimplementedError("delete");
  }
  absl::Status FindReplica(const std::string&, const std::string&, const std::string&) override {
    return absl::UnimplementedError("replica");
  }
  absl::StatusOr<std::string> Logs(const LogRequest&) override {
    return absl::UnimplementedError("logs");
  }
  absl::Status FollowLogs(const LogRequest&, const std::function<bool(std::string_view)>&,
                          Cancellation*) override {
    return absl::UnimplementedError("follow");
  }
  absl::StatusOr<std::vector<NodeUsage>> Nodes() override {
    return absl::UnimplementedError("nodes");
  }
  absl::StatusOr<ClusterPage> Cluster(const std::vector<std::string>&) override {
    return absl::UnimplementedError("cluster");
  }

 private:
  json job_;
};

TEST_CASE("the scraper reads the chief's and evaluator's endpoints into the job's history") {
  // Two Prometheus endpoints: HTTP servers that serve a file named `metrics`.
  const auto dir = std::filesystem::temp_directory_path() /
                   ("taas-ui-metrics-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir / "chief");
  std::filesystem::create_directories(dir / "eval");
  std::ofstream(dir / "chief" / "metrics")
      << "taas_global_step 420\ntaas_loss 0.5\ntaas_examples_per_second 1234\n";
  std::ofstream(dir / "eval" / "metrics") << "taas_eval_accuracy 0.87\ntaas_global_step 400\n";
  Api no_api({}, nullptr, nullptr, Logger(stderr));
  HttpServer chief(&no_api, {"127.0.0.1", 0, (dir / "chief").string()}, Logger(stderr));
  HttpServer eval(&no_api, {"127.0.0.1", 0, (dir / "eval").string()}, Logger(stderr));
  REQUIRE(chief.Start().ok());
  REQUIRE(eval.Start().ok());

  const json job = {
      {"metadata", {{"name", "mnist"}, {"namespace", "default"}}},
      {"spec",
       {{"tfReplicaSpecs",
         {{"Worker",
           {{"replicas", 2},
            {"template",
             {{"spec",
               {{"containers",
                 {{{"name", "tensorflow"},
                   {"ports", {{{"name", "metrics"}, {"containerPort", 9191}}}}}}}}}}}}},
          {"Evaluator", {{"replicas", 1}}}}}}}};
  OneJobSource source(job);
  MetricsStore store;
  ScraperOptions options;
  options.overrides = {{"default/mnist-worker-0", "127.0.0.1:" + std::to_string(chief.port())},
                       {"default/mnist-evaluator-0", "127.0.0.1:" + std::to_string(eval.port())}};
  MetricsScraper scraper(&source, {"default"}, &store, options, Logger(stderr));

  // Without overrides, replicas are reached through their headless service.
  MetricsScraper plain(&source, {"default"}, &store, ScraperOptions{}, Logger(stderr));
  const auto targets = plain.Targets(job);
  REQUIRE(targets.size() == 2);
  CHECK(targets[0].first == "mnist-worker-0");
  CHECK(targets[0].second == "mnist-worker-0.default.svc:9191");
  CHECK(targets[1].second == "mnist-evaluator-0.default.svc:9090");

  scraper.ScrapeOnce();
  const auto history = store.History("default/mnist");
  REQUIRE(history.size() == 1);
  CHECK(*history[0].global_step == 420);  // the chief's step wins over the evaluator's
  CHECK(*history[0].loss == doctest::Approx(0.5));
  CHECK(*history[0].examples_per_second == 1234);
  CHECK(*history[0].eval_accuracy == doctest::Approx(0.87));
  CHECK_FALSE(history[0].learning_rate.has_value());

  // A finished job is not scraped any more.
  json done = job;
  done["status"]["conditions"] = {{{"type", "Succeeded"}, {"status", "True"}}};
  OneJobSource done_source(done);
  MetricsScraper done_scraper(&done_source, {"default"}, &store, options, Logger(stderr));
  done_scraper.ScrapeOnce();
  CHECK(store.History("default/mnist").size() == 1);

  chief.Stop();
  eval.Stop();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace taas::ui_server
