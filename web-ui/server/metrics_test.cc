#include "taas/ui_server/metrics.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>

#include "taas/ui_server/api.h"
#include "taas/ui_server/server.h"
#include "taas/ui_server/views.h"

namespace taas::ui_server {
namespace {

using nlohmann::json;

TEST_CASE("reported devices: labels in page order, value 1, a device label, bounded") {
  const auto samples = ParsePrometheusSamples(
      "taas_replica_device_info{device=\"cuda:0\",name=\"NVIDIA H100 80GB HBM3\"} 1\n"
      "taas_replica_device_info{ device = \"cuda:1\" , name=\"a \\\"quoted\\\" \\\\ name\\n\", } 1 "
      "1700000000000\n");
  CHECK(ReportedDevices(samples) ==
        std::vector<std::string>{"cuda:0 NVIDIA H100 80GB HBM3", "cuda:1 a \"quoted\" \\ name\n"});

  // A device label is needed, the value must be 1, and at most kMaxReportedDevices.
  std::string info;
  for (std::size_t i = 0; i < kMaxReportedDevices + 3; ++i) {
    info += "taas_replica_device_info{device=\"cuda:" + std::to_string(i) + "\"} 1\n";
  }
  info += "taas_replica_device_info{name=\"no device\"} 1\n";
  const auto devices =
      ReportedDevices(ParsePrometheusSamples("taas_replica_device_info{device=\"cpu\"} 0\n"
                                             "taas_replica_device_info{device=\"cpu\"} 1\n" +
                                             info));
  REQUIRE(devices.size() == kMaxReportedDevices);
  CHECK(devices[0] == "cpu");
  CHECK(devices[1] == "cuda:0");
}

TEST_CASE("the device book: one answer per replica run, bounded, and a bounded queue") {
  DeviceBook book(2, 2);
  CHECK_FALSE(book.Devices("default/a", "t1").has_value());
  book.Put("default/a", "t1", {"cpu"});
  CHECK(*book.Devices("default/a", "t1") == std::vector<std::string>{"cpu"});
  CHECK_FALSE(book.Devices("default/a", "t2").has_value());  // restarted: asked anew
  book.Put("default/b", "t1", {});
  book.Put("default/c", "t1", {"cuda:0 X"});
  CHECK_FALSE(book.Devices("default/a", "t1").has_value());  // the oldest answer, dropped
  CHECK(book.Devices("default/c", "t1").has_value());

  book.Want({"default", "c", "t1", nullptr});  // known: not asked for
  book.Want({"default", "d", "t1", nullptr});
  book.Want({"default", "d", "t1", nullptr});  // already asked for
  book.Want({"default", "e", "t1", nullptr});
  book.Want({"default", "f", "t1", nullptr});  // the queue is full
  auto wanted = book.TakeWanted(10);
  REQUIRE(wanted.size() == 2);
  CHECK(wanted[0].replica == "d");
  CHECK(wanted[1].replica == "e");
  CHECK(book.TakeWanted(10).empty());
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
  const json j = schema::ToJson(store.HistoryAnswer("default/c"));
  CHECK(j["points"][0]["step"].is_null());
  CHECK(j["latest"]["time"] == 0);
}

TEST_CASE("a stalled job's progress says whom it waits for instead of the rate, on the job page") {
  MetricsStore store;
  MetricsPoint running;
  running.time_ms = 0;
  running.global_step = 100;
  running.max_steps = 1000;
  running.examples_per_second = 2668;
  store.Add("default/a", running);
  MetricsPoint frozen = running;
  frozen.time_ms = 10000;
  frozen.stall = tfjob::ProgressStall{12, "ps-0"};
  store.Add("default/a", frozen);
  const auto scraped = store.Progress("default/a");
  REQUIRE(scraped);
  CHECK(scraped->stall == tfjob::ProgressStall{12, "ps-0"});
  CHECK(!scraped->examples_per_second);
  // The operator's status.progress, written before the stall, still has the rate: the scrape is
  // the fresher word.
  tfjob::JobProgress status;
  status.global_step = 100;
  status.examples_per_second = 2668;
  status.eta_seconds = 30;
  const auto merged = MergeProgress(status, scraped);
  REQUIRE(merged);
  CHECK(!merged->examples_per_second);
  CHECK(!merged->eta_seconds);
  const ProgressRow row = ProgressRowOf(*merged);
  CHECK(row.stall == "stalled 12s, waiting on ps-0");
  CHECK(schema::ToJson(row)["stall"] == "stalled 12s, waiting on ps-0");
  // Resumed: no stall, the rate is back.
  MetricsPoint resumed = running;
  resumed.time_ms = 20000;
  resumed.global_step = 150;
  store.Add("default/a", resumed);
  const auto again = MergeProgress(std::nullopt, store.Progress("default/a"));
  CHECK(!again->stall);
  CHECK(again->examples_per_second == 2668);
  CHECK(ProgressRowOf(*again).stall.empty());
}

// A JobSource that lists one TFJob in "default" and serves nothing else.
class OneJobSource : public JobSource {
 public:
  explicit OneJobSource(json job, std::vector<ReplicaRow> replicas = {})
      : job_(std::move(job)), replicas_(std::move(replicas)) {}
  absl::StatusOr<std::vector<json>> ListJobObjects(const std::string& ns) override {
    if (ns == "default") return std::vector<json>{job_};
    return absl::NotFoundError(ns);
  }
  absl::StatusOr<std::vector<JobRecord>> ListJobs(const std::string&) override {
    return absl::UnimplementedError("list");
  }
  absl::StatusOr<JobDetail> GetJob(const std::string& ns, const std::string& name) override {
    if (ns != "default" || name != job_["metadata"]["name"]) return absl::NotFoundError(name);
    JobDetail detail;
    detail.record = {job_, replicas_};
    return detail;
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
  std::vector<ReplicaRow> replicas_;
};

// Prometheus endpoints for a scraper test: one HTTP server per name, each serving a `metrics`
// file with the given text from a folder of its own; stopped and removed with the object.
class MetricsPages {
 public:
  explicit MetricsPages(const std::map<std::string, std::string>& pages)
      : dir_(std::filesystem::temp_directory_path() /
             ("taas-ui-metrics-" + std::to_string(std::random_device{}()))) {
    for (const auto& [name, text] : pages) {
      std::filesystem::create_directories(dir_ / name);
      std::ofstream(dir_ / name / "metrics") << text;
      auto server = std::make_unique<HttpServer>(
          &no_api_, ServerOptions{"127.0.0.1", 0, (dir_ / name).string()}, Logger(stderr));
      REQUIRE(server->Start().ok());
      servers_[name] = std::move(server);
    }
  }
  ~MetricsPages() {
    for (auto& [name, server] : servers_) server->Stop();
    std::filesystem::remove_all(dir_);
  }
  MetricsPages(const MetricsPages&) = delete;
  MetricsPages& operator=(const MetricsPages&) = delete;

  // "127.0.0.1:<port>" of the server for `name`.
  std::string Address(const std::string& name) const {
    return "127.0.0.1:" + std::to_string(servers_.at(name)->port());
  }

 private:
  const std::filesystem::path dir_;
  Api no_api_{{}, nullptr, nullptr, Logger(stderr)};
  std::map<std::string, std::unique_ptr<HttpServer>> servers_;
};

TEST_CASE(
    "the scraper reads the chief's and evaluator's endpoints, and every worker's rate, into the "
    "job's history") {
  MetricsPages pages(
      {{"chief", "taas_global_step 420\ntaas_loss 0.5\ntaas_examples_per_second 1234\n"},
       {"eval", "taas_eval_accuracy 0.87\ntaas_global_step 400\n"},
       // Worker 1 counts for its rate only: its step and loss are not the job's.
       {"worker", "taas_global_step 419\ntaas_loss 9\ntaas_examples_per_second 766\n"}});

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
  options.overrides = {{"default/mnist-worker-0", pages.Address("chief")},
                       {"default/mnist-evaluator-0", pages.Address("eval")},
                       {"default/mnist-worker-1", pages.Address("worker")}};
  MetricsScraper scraper(&source, {"default"}, &store, options, Logger(stderr));

  // Without overrides, replicas are reached through their headless service.
  MetricsScraper plain(&source, {"default"}, &store, ScraperOptions{}, Logger(stderr));
  const auto targets = plain.Targets(job);
  REQUIRE(targets.size() == 3);
  CHECK(targets[0].first == "mnist-worker-0");
  CHECK(targets[0].second == "mnist-worker-0.default.svc:9191");
  CHECK(targets[1].second == "mnist-evaluator-0.default.svc:9090");
  CHECK(targets[2].second == "mnist-worker-1.default.svc:9191");

  scraper.ScrapeOnce();
  const auto history = store.History("default/mnist");
  REQUIRE(history.size() == 1);
  CHECK(*history[0].global_step == 420);  // the chief's step wins over the evaluator's
  CHECK(*history[0].loss == doctest::Approx(0.5));
  // The job's rate: every training replica's (tfjob::JobExamplesRate), not the chief's alone.
  CHECK(*history[0].examples_per_second == 2000);
  CHECK(*history[0].eval_accuracy == doctest::Approx(0.87));
  CHECK_FALSE(history[0].learning_rate.has_value());

  // A finished job is not scraped any more.
  json done = job;
  done["status"]["conditions"] = {{{"type", "Succeeded"}, {"status", "True"}}};
  OneJobSource done_source(done);
  MetricsScraper done_scraper(&done_source, {"default"}, &store, options, Logger(stderr));
  done_scraper.ScrapeOnce();
  CHECK(store.History("default/mnist").size() == 1);
}

TEST_CASE("the job page shows the devices each Running replica reported, read once per run") {
  MetricsPages pages(
      {{"w0",
        "# TYPE taas_replica_device_info gauge\n"
        "taas_replica_device_info{device=\"cuda:0\",name=\"NVIDIA H100 80GB HBM3\"} 1\n"
        "taas_replica_device_info{device=\"cuda:1\",name=\"NVIDIA H100 80GB HBM3\"} 1\n"
        "taas_global_step 3\n"},
       {"w1", "taas_replica_device_info{device=\"cpu\",name=\"\"} 1\n"},
       // A replica still choosing its devices (or an image without the metric) states none yet.
       {"w2", "taas_global_step 0\n"}});

  const json job = {{"metadata", {{"name", "mnist"}, {"namespace", "default"}}},
                    {"spec", {{"tfReplicaSpecs", {{"Worker", {{"replicas", 4}}}}}}}};
  auto row = [](int index, const std::string& phase) {
    ReplicaRow r;
    r.name = "mnist-worker-" + std::to_string(index);
    r.replica_type = "worker";
    r.index = index;
    r.node = "n";
    r.phase = phase;
    r.ready = phase == "Running";
    r.gpus = 2;
    r.start_time = "2026-11-22T00:00:00Z";
    return r;
  };
  OneJobSource source(job,
                      {row(0, "Running"), row(1, "Running"), row(2, "Pending"), row(3, "Running")});
  MetricsStore store;
  DeviceBook book;
  ScraperOptions options;
  options.overrides = {{"default/mnist-worker-0", pages.Address("w0")},
                       {"default/mnist-worker-1", pages.Address("w1")},
                       {"default/mnist-worker-3", pages.Address("w2")}};
  MetricsScraper scraper(&source, {"default"}, &store, options, Logger(stderr), &book);
  ApiOptions api_options;
  api_options.namespaces = {"default"};
  api_options.allow_anonymous_read = true;
  Api api(api_options, &source, &store, Logger(stderr), nullptr, &book);
  auto pods = [&] {
    const HttpResponse r = api.Handle({"GET", "/api/v1/namespaces/default/tfjobs/mnist", "", ""});
    REQUIRE(r.status == 200);
    return json::parse(r.body)["job"]["pods"];
  };

  // Unknown until the scraper's round after the page asked: null, then the devices.
  json before = pods();
  CHECK(before[0]["devices"].is_null());
  CHECK(before[2]["devices"].is_null());
  scraper.ScrapeOnce();
  json after = pods();
  CHECK(after[0]["devices"] ==
        json{"cuda:0 NVIDIA H100 80GB HBM3", "cuda:1 NVIDIA H100 80GB HBM3"});
  CHECK(after[1]["devices"] == json{"cpu"});
  CHECK(after[2]["devices"].is_null());  // Pending: not asked for
  CHECK(after[3]["devices"].is_null());  // no devices stated yet: asked for again
  const auto wanted = book.TakeWanted(10);
  REQUIRE(wanted.size() == 1);  // known replicas are not asked for again
  CHECK(wanted[0].replica == "mnist-worker-3");
  // Later rounds reach the replicas elsewhere (the servers keep the pages they started with):
  // worker 3 now states its device; worker 1, known, is not read again.
  ScraperOptions moved = options;
  moved.overrides["default/mnist-worker-1"] = pages.Address("w0");
  moved.overrides["default/mnist-worker-3"] = pages.Address("w1");
  MetricsScraper later(&source, {"default"}, &store, moved, Logger(stderr), &book);
  pods();
  later.ScrapeOnce();
  const json last = pods();
  CHECK(last[3]["devices"] == json{"cpu"});
  CHECK(last[1]["devices"] == json{"cpu"});
}

}  // namespace
}  // namespace taas::ui_server
