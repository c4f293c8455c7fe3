#include "taas/config/config.h"

#include <doctest/doctest.h>

#include "taas/contract/env.h"

namespace taas::config {
namespace {

using Env = std::map<std::string, std::string>;

const char* kCluster =
    R"({"cluster":{"ps":["127.0.0.1:1000","127.0.0.1:1001"],"worker":["127.0.0.1:2000",)"
    R"("127.0.0.1:2001"]},"task":{"type":"worker","index":1},"environment":"cloud"})";

std::string ErrorOf(const std::vector<std::string>& args, const Env& env) {
  auto c = ParseConfig(args, env);
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().code() == absl::StatusCode::kInvalidArgument);
  return std::string(c.status().message());
}

TEST_CASE("TF_CONFIG gives role, index, chief and addresses") {
  auto c = ParseConfig({}, {{"TF_CONFIG", kCluster}});
  REQUIRE(c.ok());
  CHECK(c->info.role == Role::kWorker);
  CHECK(c->info.task_index == 1);
  CHECK(c->info.worker_rank == 1);
  CHECK_FALSE(c->info.is_chief);
  CHECK(c->info.num_ps == 2);
  CHECK(c->info.num_workers == 2);
  CHECK(c->info.replicas_to_aggregate == 2);  // default: all training replicas
  CHECK(c->listen_address == "127.0.0.1:2001");
  CHECK_FALSE(c->local);
}

TEST_CASE("worker 0 is chief without a chief replica; with one, the chief is") {
  std::string w0 = kCluster;
  w0.replace(w0.find("\"index\":1"), 9, "\"index\":0");
  auto c = ParseConfig({}, {{"TF_CONFIG", w0}});
  REQUIRE(c.ok());
  CHECK(c->info.is_chief);

  auto chief = ParseConfig({}, {{"TF_CONFIG", R"({"cluster":{"chief":["h:1"],"worker":["h:2"],)"
                                              R"("ps":["h:3"]},"task":{"type":"worker",)"
                                              R"("index":0}})"}});
  REQUIRE(chief.ok());
  CHECK_FALSE(chief->info.is_chief);
  CHECK(chief->info.num_workers == 2);
  CHECK(chief->worker_addresses.front() == "h:1");
  CHECK(chief->info.worker_rank == 1);
  auto master = ParseConfig({}, {{"TF_CONFIG", R"({"cluster":{"master":["h:1"],"ps":["h:3"]},)"
                                               R"("task":{"type":"master","index":0}})"}});
  REQUIRE(master.ok());
  CHECK(master->info.role == Role::kChief);
  CHECK(master->info.is_chief);
}

TEST_CASE("no TF_CONFIG is a local single-process run") {
  auto c = ParseConfig({}, {});
  REQUIRE(c.ok());
  CHECK(c->local);
  CHECK(c->info.is_chief);
  CHECK(c->info.num_workers == 1);
  CHECK(c->info.max_steps == 10000);
  CHECK(c->metrics_port == 0);
  auto k8s = ParseConfig({}, {{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}});
  REQUIRE(k8s.ok());
  CHECK(k8s->metrics_port == 9090);
}

TEST_CASE("flags override environment; model args after --") {
  auto c = ParseConfig({"--max_steps=50", "--sync", "--model_dir", "/tmp/m", "--", "--lr=3"},
                       {{"TF_MAX_STEPS", "10"},
                        {"TF_SAVE_CHECKPOINTS_SECS", "2.5"},
                        {"TF_SAVE_SUMMARIES_STEPS", "7"},
                        {"TAAS_METRICS_PORT", "9100"},
                        {"TAAS_PS_LANES", "3"},
                        {"TAAS_EVALUATOR_NICE", "19"},
                        {"TAAS_SUMMARY_HISTOGRAMS", "false"},
                        {"TF_CONFIG", kCluster}});
  REQUIRE(c.ok());
  CHECK(c->info.max_steps == 50);
  CHECK(c->info.sync);
  CHECK(c->info.model_dir == "/tmp/m");
  CHECK(c->save_checkpoints_secs == doctest::Approx(2.5));
  CHECK(c->save_summaries_steps == 7);
  CHECK(c->metrics_port == 9100);
  CHECK(c->ps_lanes == 3);
  CHECK(c->evaluator_nice == 19);
  CHECK_FALSE(c->summary_histograms);
  REQUIRE(c->info.args.size() == 1);
  CHECK(c->info.args[0] == "--lr=3");
  auto env_only = ParseConfig({}, {{"TF_MAX_STEPS", "10"}, {"TF_SYNC", "true"}});
  REQUIRE(env_only.ok());
  CHECK(env_only->ps_lanes == 2);
  CHECK(env_only->evaluator_nice == 0);
  CHECK(env_only->summary_histograms);
  CHECK(env_only->info.max_steps == 10);
  CHECK(env_only->info.sync);
}

TEST_CASE("Kubeflow's sparse TF_CONFIG (enableDynamicWorker) for workers and PS") {
  auto w = ParseConfig({}, {{"TF_CONFIG", R"({"sparseCluster":{"worker":{"2":"h:2"},)"
                                          R"("ps":["p:1","q:1"]},"task":{"type":"worker",)"
                                          R"("index":2}})"}});
  REQUIRE(w.ok());
  CHECK(w->dynamic_workers);
  CHECK(w->info.role == Role::kWorker);
  CHECK(w->info.worker_rank == 2);
  CHECK_FALSE(w->info.is_chief);
  CHECK(w->listen_address == "h:2");
  CHECK(w->ps_addresses == std::vector<std::string>{"p:1", "q:1"});
  CHECK(w->info.num_workers == 3);
  auto ps = ParseConfig({}, {{"TF_CONFIG", R"({"sparseCluster":{"worker":{},"ps":["q:1"]},)"
                                           R"("task":{"type":"ps","index":1}})"}});
  REQUIRE(ps.ok());
  CHECK(ps->info.role == Role::kPs);
  CHECK(ps->listen_address == "q:1");
  const std::string sparse0 = R"({"sparseCluster":{"worker":{"0":"h:2"},"ps":["p:1"]},)"
                              R"("task":{"type":"worker","index":0}})";
  auto chief = ParseConfig({}, {{"TF_CONFIG", sparse0}});
  REQUIRE(chief.ok());
  CHECK(chief->info.is_chief);
  CHECK(ErrorOf({}, {{"TF_CONFIG", sparse0}, {"TF_SYNC", "true"}})
            .find("TF_SYNC: synchronous training needs the whole cluster") == 0);
  CHECK(ErrorOf({}, {{"TF_CONFIG", R"({"sparseCluster":{"worker":{},"ps":["p:1"]},)"
                                   R"("task":{"type":"worker","index":0}})"}})
            .find("TF_CONFIG.sparseCluster.worker.0: must hold this worker's address") == 0);
}

TEST_CASE("bad settings name the flag or variable") {
  CHECK(ErrorOf({}, {{"TF_MAX_STEPS", "ten"}}).find("TF_MAX_STEPS") == 0);
  CHECK(ErrorOf({"--max_steps=0"}, {}).find("--max_steps: must be >= 1") == 0);
  CHECK(ErrorOf({}, {{"TF_SAVE_CHECKPOINTS_SECS", "-1"}}).find("TF_SAVE_CHECKPOINTS_SECS") == 0);
  CHECK(ErrorOf({}, {{"TF_SYNC", "maybe"}}).find("TF_SYNC: must be true or false") == 0);
  CHECK(ErrorOf({}, {{"TAAS_METRICS_PORT", "70000"}}).find("TAAS_METRICS_PORT") == 0);
  CHECK(ErrorOf({}, {{"TAAS_PS_LANES", "0"}}).find("TAAS_PS_LANES: must be >= 1") == 0);
  CHECK(ErrorOf({"--ps_lanes=65"}, {}).find("--ps_lanes: must be <= 64") == 0);
  CHECK(ErrorOf({}, {{"TAAS_EVALUATOR_NICE", "-5"}}).find("TAAS_EVALUATOR_NICE: must be >= 0") ==
        0);
  CHECK(ErrorOf({"--evaluator_nice=20"}, {}).find("--evaluator_nice: must be <= 19") == 0);
  CHECK(ErrorOf({}, {{"TAAS_SUMMARY_HISTOGRAMS", "maybe"}})
            .find("TAAS_SUMMARY_HISTOGRAMS: must be true or false") == 0);
  CHECK(ErrorOf({"--nope=1"}, {}).find("--nope: unknown flag") == 0);
  CHECK(ErrorOf({"stray"}, {}).find("stray: unexpected argument") == 0);
  CHECK(ErrorOf({"--replicas_to_aggregate=3"}, {{"TF_CONFIG", kCluster}})
            .find("--replicas_to_aggregate: 3 exceeds the 2 training replicas") == 0);
  CHECK(ErrorOf({}, {{"TF_CONFIG", kCluster}, {"TF_REPLICAS_TO_AGGREGATE", "9"}})
            .find("TF_REPLICAS_TO_AGGREGATE: 9 exceeds") == 0);
}

TEST_CASE("evaluating on the chief: off by default, at the end, or every N steps too") {
  auto off = ParseConfig({}, {});
  REQUIRE(off.ok());
  CHECK_FALSE(off->eval_on_chief);
  CHECK(off->eval_on_chief_steps == 0);
  auto end = ParseConfig({}, {{"TAAS_EVAL_ON_CHIEF", "end"}});
  REQUIRE(end.ok());
  CHECK(end->eval_on_chief);
  CHECK(end->eval_on_chief_steps == 0);
  auto every = ParseConfig({"--eval_on_chief=500"}, {{"TAAS_EVAL_ON_CHIEF", "end"}});
  REQUIRE(every.ok());
  CHECK(every->eval_on_chief);
  CHECK(every->eval_on_chief_steps == 500);
  auto flag_off = ParseConfig({"--eval_on_chief=off"}, {{"TAAS_EVAL_ON_CHIEF", "100"}});
  REQUIRE(flag_off.ok());
  CHECK_FALSE(flag_off->eval_on_chief);
  for (const char* bad : {"0", "-3", "sometimes", "", " 5"}) {
    CHECK(ErrorOf({}, {{"TAAS_EVAL_ON_CHIEF", bad}})
              .find("TAAS_EVAL_ON_CHIEF: must be off, end or a number of global steps >= 1") == 0);
  }
}

TEST_CASE("malformed or inconsistent TF_CONFIG names the field") {
  CHECK(ErrorOf({}, {{"TF_CONFIG", "{not json"}}).find("TF_CONFIG: is not valid JSON") == 0);
  CHECK(ErrorOf({}, {{"TF_CONFIG", R"({"task":{"type":"worker"}})"}}).find("TF_CONFIG.cluster:") ==
        0);
  CHECK(ErrorOf({}, {{"TF_CONFIG", R"({"cluster":{"ps":["a:1"],"worker":["b:2"]}})"}})
            .find("TF_CONFIG.task:") == 0);
  CHECK(ErrorOf({}, {{"TF_CONFIG", R"({"cluster":{"ps":["a:1"],"worker":["b:2"]},)"
                                   R"("task":{"type":"worker","index":2}})"}})
            .find("TF_CONFIG.task.index: 2 is out of range for TF_CONFIG.cluster.worker") == 0);
  CHECK(ErrorOf({}, {{"TF_CONFIG", R"({"cluster":{"ps":["a:1"],"worker":["b:2"]},)"
                                   R"("task":{"type":"chief","index":0}})"}})
            .find("TF_CONFIG.task.type: \"chief\" is not in TF_CONFIG.cluster") == 0);
  CHECK(ErrorOf({}, {{"TF_CONFIG", R"({"cluster":{"ps":["a"],"worker":["b:2"]},)"
                                   R"("task":{"type":"worker","index":0}})"}})
            .find("TF_CONFIG.cluster.ps[0]: must be \"host:port\"") == 0);
  CHECK(ErrorOf({}, {{"TF_CONFIG", R"({"cluster":{"gpu":["a:1"],"worker":["b:2"]},)"
                                   R"("task":{"type":"worker","index":0}})"}})
            .find("TF_CONFIG.cluster.gpu: unknown replica type") == 0);
  CHECK(ErrorOf({}, {{"TF_CONFIG", R"({"cluster":{"chief":["a:1","c:3"],"ps":["b:2"]},)"
                                   R"("task":{"type":"ps","index":0}})"}})
            .find("TF_CONFIG.cluster.chief: must have exactly 1 replica") == 0);
}

const char* kWorkersOnly =
    R"({"cluster":{"worker":["127.0.0.1:2000","127.0.0.1:2001","127.0.0.1:2002"],)"
    R"("evaluator":["127.0.0.1:3000"]},"task":{"type":"worker","index":1}})";

TEST_CASE("a TF_CONFIG without ps means collective training, synchronous over every worker") {
  auto c = ParseConfig({}, {{"TF_CONFIG", kWorkersOnly}});
  REQUIRE(c.ok());
  CHECK(c->info.strategy == Strategy::kCollective);
  CHECK(c->info.sync);
  CHECK(c->info.num_workers == 3);
  CHECK(c->info.replicas_to_aggregate == 3);
  CHECK(c->info.num_replicas_in_sync() == 3);
  CHECK(c->info.replica_id_in_sync() == 1);
  CHECK(c->worker_addresses.size() == 3);

  auto with_ps = ParseConfig({}, {{"TF_CONFIG", kCluster}});
  REQUIRE(with_ps.ok());
  CHECK(with_ps->info.strategy == Strategy::kParameterServer);
  auto explicit_ps = ParseConfig({"--strategy=parameter_server"}, {{"TF_CONFIG", kCluster}});
  REQUIRE(explicit_ps.ok());
  CHECK(explicit_ps->info.strategy == Strategy::kParameterServer);

  auto replicas = ParseConfig({}, {{"TF_CONFIG", kWorkersOnly}, {"TAAS_REPLICAS_PER_WORKER", "4"}});
  REQUIRE(replicas.ok());
  CHECK(replicas->info.replicas_per_worker == 4);
  CHECK(replicas->info.num_replicas_in_sync() == 12);

  // Without TF_CONFIG the default stays one process with its own PS; the setting chooses all-reduce
  // (a ring of one, with its replicas in process).
  auto local = ParseConfig({"--strategy", "collective", "--replicas_per_worker=2"}, {});
  REQUIRE(local.ok());
  CHECK(local->info.strategy == Strategy::kCollective);
  CHECK(local->info.replicas_per_worker == 2);
  CHECK(ParseConfig({}, {})->info.strategy == Strategy::kParameterServer);
  // Alone with several replicas (a job of one worker has no TF_CONFIG), they all-reduce.
  auto alone = ParseConfig({"--replicas_per_worker=2"}, {});
  REQUIRE(alone.ok());
  CHECK(alone->info.strategy == Strategy::kCollective);
}

TEST_CASE("an evaluator whose TF_CONFIG lists no training replica still aggregates one") {
  // Found by fuzz_runtime_config: replicas_to_aggregate was the count of training replicas, 0.
  auto c = ParseConfig({}, {{"TF_CONFIG", R"({"cluster":{"evaluator":["e:4"]},)"
                                          R"("task":{"type":"evaluator","index":0}})"}});
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  CHECK(c->info.role == Role::kEvaluator);
  CHECK(c->info.num_workers == 0);
  CHECK(c->info.replicas_to_aggregate == 1);
  CHECK(c->listen_address == "e:4");
}

TEST_CASE("a strategy that contradicts TF_CONFIG is an error naming both") {
  CHECK(ErrorOf({}, {{"TF_CONFIG", kWorkersOnly}, {"TAAS_STRATEGY", "parameter_server"}})
            .find("TAAS_STRATEGY=parameter_server: contradicts TF_CONFIG.cluster, which lists no "
                  "ps") == 0);
  CHECK(ErrorOf({"--strategy=collective"}, {{"TF_CONFIG", kCluster}})
            .find("--strategy=collective: contradicts TF_CONFIG.cluster.ps, which lists 2 "
                  "parameter server(s)") == 0);
  CHECK(ErrorOf({}, {{"TAAS_STRATEGY", "mirrored"}})
            .find("TAAS_STRATEGY: must be parameter_server or collective, got \"mirrored\"") == 0);
  CHECK(ErrorOf({}, {{"TF_CONFIG", kCluster}, {"TAAS_REPLICAS_PER_WORKER", "2"}})
            .find("TAAS_REPLICAS_PER_WORKER: several model replicas per worker need collective") ==
        0);
  CHECK(ErrorOf({}, {{"TF_CONFIG", kWorkersOnly}, {"TF_REPLICAS_TO_AGGREGATE", "2"}})
            .find("TF_REPLICAS_TO_AGGREGATE: only parameter-server training aggregates") == 0);
  CHECK(ErrorOf({"--strategy=parameter_server", "--replicas_per_worker=2"}, {})
            .find("TAAS_REPLICAS_PER_WORKER: several model replicas per worker need collective") ==
        0);
  CHECK(ErrorOf({"--replicas_per_worker=0"}, {}).find("--replicas_per_worker: must be >= 1") == 0);
  CHECK(ErrorOf({"--allreduce_chunk_bytes=12"}, {})
            .find("--allreduce_chunk_bytes: must be >= 4096") == 0);
}

TEST_CASE("compute threads: the setting, else the CPUs shared among the process's replicas") {
  const AvailableCpus eight{8, "cgroup cpu limit"};
  auto c = ParseConfig({}, {});
  REQUIRE(c.ok());
  CHECK(c->compute_threads == 0);
  ComputeThreadsChoice choice = ChooseComputeThreads(*c, eight);
  CHECK(choice.threads == 8);
  CHECK(choice.chosen_by == "cgroup cpu limit");
  // Four model replicas in one worker: a quarter each, never oversubscribing the limit.
  c = ParseConfig({"--replicas_per_worker=4"}, {});
  REQUIRE(c.ok());
  CHECK(ChooseComputeThreads(*c, eight).threads == 2);
  CHECK(ChooseComputeThreads(*c, {3, "cpu affinity"}).threads == 1);
  c = ParseConfig({}, {{"TAAS_COMPUTE_THREADS", "3"}, {"TAAS_REPLICAS_PER_WORKER", "4"}});
  REQUIRE(c.ok());
  choice = ChooseComputeThreads(*c, eight);
  CHECK(choice.threads == 3);
  CHECK(choice.chosen_by == "TAAS_COMPUTE_THREADS");
  CHECK(ErrorOf({"--compute_threads=-1"}, {}).find("--compute_threads: must be >= 0") == 0);
  CHECK(ErrorOf({}, {{"TAAS_COMPUTE_THREADS", "many"}}).find("TAAS_COMPUTE_THREADS") == 0);
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("numbers that do not fit their field are errors, never narrowed") {
  CHECK(Has(ErrorOf({"--keep_checkpoints=4294967297"}, {}),
            "--keep_checkpoints: must be <= 100000, got 4294967297"));
  CHECK(Has(ErrorOf({}, {{"TF_REPLICAS_TO_AGGREGATE", "4294967297"}}),
            "TF_REPLICAS_TO_AGGREGATE: must be <= 10000"));
  CHECK(Has(ErrorOf({"--max_steps=99999999999999999999"}, {}), "--max_steps: must be an integer"));
  CHECK(Has(ErrorOf({}, {{"TAAS_METRICS_PORT", "65536"}}), "TAAS_METRICS_PORT: must be <= 65535"));
  CHECK(Has(ErrorOf({"--log_steps= 5"}, {}), "--log_steps: must be an integer"));
  CHECK(Has(ErrorOf({"--log_steps=5x"}, {}), "--log_steps: must be an integer"));
}

TEST_CASE("seconds are finite, written in full and at most 30 days") {
  for (const char* bad : {"nan", "inf", "-inf", "1e300", "2592001", "-1", " 5", "5 ", "0x", ""}) {
    CAPTURE(bad);
    CHECK(Has(ErrorOf({}, {{"TAAS_WAIT_TIMEOUT_SECS", bad}}),
              "TAAS_WAIT_TIMEOUT_SECS: must be a number of seconds in [0, 2592000]"));
  }
  auto c = ParseConfig({"--eval_interval_secs=2592000", "--save_checkpoints_secs=0.5"}, {});
  REQUIRE(c.ok());
  CHECK(c->eval_interval_secs == 2592000);
  CHECK(c->save_checkpoints_secs == 0.5);
}

TEST_CASE("summaries by seconds: a flag and a variable, off by default, checked as seconds") {
  auto defaults = ParseConfig({}, {});
  REQUIRE(defaults.ok());
  CHECK(defaults->save_summaries_secs == 0);
  CHECK(defaults->save_summaries_steps == 100);
  auto env =
      ParseConfig({}, {{"TAAS_SAVE_SUMMARIES_SECS", "30"}, {"TF_SAVE_SUMMARIES_STEPS", "0"}});
  REQUIRE(env.ok());
  CHECK(env->save_summaries_secs == 30);
  CHECK(env->save_summaries_steps == 0);
  auto flag = ParseConfig({"--save_summaries_secs=2.5"}, {{"TAAS_SAVE_SUMMARIES_SECS", "30"}});
  REQUIRE(flag.ok());
  CHECK(flag->save_summaries_secs == 2.5);
  CHECK(Has(ErrorOf({}, {{"TAAS_SAVE_SUMMARIES_SECS", "-1"}}),
            "TAAS_SAVE_SUMMARIES_SECS: must be a number of seconds"));
  CHECK(HelpText().find("--save_summaries_secs / TAAS_SAVE_SUMMARIES_SECS") != std::string::npos);
}

TEST_CASE("the termination grace: 25 s by default, under Kubernetes' 30, set by flag or variable") {
  auto defaults = ParseConfig({}, {});
  REQUIRE(defaults.ok());
  CHECK(defaults->termination_grace_secs == 25);
  CHECK(defaults->termination_grace_secs < contract::kKubernetesTerminationGracePeriodSecs);
  auto env = ParseConfig({}, {{"TAAS_TERMINATION_GRACE_SECS", "110"}});
  REQUIRE(env.ok());
  CHECK(env->termination_grace_secs == 110);
  auto flag = ParseConfig({"--termination_grace_secs=3.5"}, {{"TAAS_TERMINATION_GRACE_SECS", "9"}});
  REQUIRE(flag.ok());
  CHECK(flag->termination_grace_secs == 3.5);
  CHECK(Has(ErrorOf({}, {{"TAAS_TERMINATION_GRACE_SECS", "soon"}}),
            "TAAS_TERMINATION_GRACE_SECS: must be a number of seconds"));
}

// TF_CONFIG with `task` in place of the task, over the two-worker cluster.
std::string WithTask(const std::string& task) {
  return R"({"cluster":{"ps":["a:1"],"worker":["b:2","c:3"]},"task":)" + task + "}";
}

TEST_CASE("any JSON type in any TF_CONFIG field is an error naming the field") {
  const char* values[] = {"null", "true", "1", "1.5", "\"x\"", "[]", "{}", "[[1]]"};
  for (const char* v : values) {
    CAPTURE(v);
    const std::string value = v;
    for (const std::string& text :
         {"{\"cluster\":" + value + "}", "{\"cluster\":{\"ps\":" + value + "}}",
          "{\"cluster\":{\"ps\":[" + value + "]},\"task\":{\"type\":\"ps\"}}", WithTask(value),
          WithTask("{\"type\":" + value + "}"),
          WithTask("{\"type\":\"worker\",\"index\":" + value + "}"),
          "{\"sparseCluster\":" + value + "}",
          "{\"sparseCluster\":{\"ps\":" + value + "},\"task\":{\"type\":\"worker\"}}",
          "{\"sparseCluster\":{\"ps\":[\"a:1\"],\"worker\":" + value +
              "},\"task\":{\"type\":\"worker\"}}",
          "{\"sparseCluster\":{\"ps\":[\"a:1\"],\"worker\":{\"0\":" + value +
              "}},\"task\":{\"type\":\"worker\"}}"}) {
      CAPTURE(text);
      auto c = ParseConfig({}, {{"TF_CONFIG", text}});
      if (!c.ok()) CHECK(Has(std::string(c.status().message()), "TF_CONFIG"));
    }
  }
  CHECK(Has(ErrorOf({}, {{"TF_CONFIG", WithTask(R"({"type":"worker","index":"1"})")}}),
            "TF_CONFIG.task.index must be an integer, got string"));
  CHECK(Has(ErrorOf({}, {{"TF_CONFIG", WithTask(R"({"type":7})")}}),
            "TF_CONFIG.task.type must be a string, got integer"));
  CHECK(Has(ErrorOf({}, {{"TF_CONFIG", R"({"cluster":{"ps":[1]},"task":{"type":"ps"}})"}}),
            "TF_CONFIG.cluster.ps[0]: must be a \"host:port\" string, got integer"));
}

TEST_CASE("TF_CONFIG is bounded: its size, its addresses, ports and the task index") {
  CHECK(Has(ErrorOf({}, {{"TF_CONFIG", std::string(1 << 20 | 1, ' ')}}),
            "TF_CONFIG: is 1048577 bytes, more than the 1048576 allowed"));
  std::string many = R"({"cluster":{"ps":["a:1"],"worker":[)";
  for (int i = 0; i < 10000; ++i) many += R"("w:1",)";
  many += R"("w:1"]},"task":{"type":"ps","index":0}})";
  CHECK(Has(ErrorOf({}, {{"TF_CONFIG", many}}),
            "TF_CONFIG.cluster.worker: TF_CONFIG lists more than 10000 addresses"));
  CHECK(Has(ErrorOf({}, {{"TF_CONFIG", R"({"cluster":{"ps":["a:65536"],"worker":["b:2"]},)"
                                       R"("task":{"type":"worker","index":0}})"}}),
            "TF_CONFIG.cluster.ps[0]: must be \"host:port\" with a port in [1, 65535]"));
  CHECK(Has(ErrorOf({}, {{"TF_CONFIG", WithTask(R"({"type":"worker","index":-1})")}}),
            "TF_CONFIG.task.index: must be in [0, 10000), got -1"));
  // A sparse worker's index sizes the list of known workers: bounded before it is allocated.
  CHECK(Has(ErrorOf({}, {{"TF_CONFIG",
                          R"({"sparseCluster":{"ps":["a:1"],"worker":{"99999999999":"b:2"}},)"
                          R"("task":{"type":"worker","index":99999999999}})"}}),
            "TF_CONFIG.task.index: must be in [0, 10000), got 99999999999"));
  auto c = ParseConfig({}, {{"TF_CONFIG", R"({"sparseCluster":{"ps":["a:1"],"worker":)"
                                          R"({"9999":"b:2"}},"task":{"type":"worker",)"
                                          R"("index":9999}})"}});
  REQUIRE(c.ok());
  CHECK(c->info.task_index == 9999);
  CHECK(c->info.num_workers == 10000);
}

}  // namespace
}  // namespace taas::config

namespace taas::config {
namespace {

// The devices of a process's replicas, as "cpu,cuda:0,...", or the error.
std::string DevicesOf(const Env& env, int cuda_devices) {
  auto c = ParseConfig({}, env);
  REQUIRE(c.ok());
  auto choice = ChooseDevices(*c, cuda_devices);
  if (!choice.ok()) return std::string(choice.status().message());
  std::string out;
  for (const Device& d : choice->devices) out += (out.empty() ? "" : ",") + DeviceName(d);
  return out;
}

TEST_CASE("devices: the visible GPUs by default, one model replica per GPU under all-reduce") {
  const Env collective = {{"TF_CONFIG", kWorkersOnly}, {"CUDA_VISIBLE_DEVICES", "2,3"}};
  CHECK(DevicesOf(collective, 2) == "cuda:0,cuda:1");
  auto c = ParseConfig({}, collective);
  REQUIRE(c.ok());
  auto choice = ChooseDevices(*c, 2);
  REQUIRE(choice.ok());
  CHECK(choice->chosen_by == "visible CUDA devices (CUDA_VISIBLE_DEVICES=\"2,3\", 2 visible)");
  // An explicit replica count may use fewer GPUs, never more than are visible.
  Env fewer = collective;
  fewer["TAAS_REPLICAS_PER_WORKER"] = "1";
  CHECK(DevicesOf(fewer, 2) == "cuda:0");
  fewer["TAAS_REPLICAS_PER_WORKER"] = "3";
  CHECK(DevicesOf(fewer, 2).find("TAAS_REPLICAS_PER_WORKER: 3 model replicas, but 2 CUDA") == 0);
  // Parameter-server training and the evaluator: one replica, on the first GPU.
  CHECK(DevicesOf({{"TF_CONFIG", kCluster}}, 4) == "cuda:0");
  CHECK(DevicesOf({{"TF_CONFIG", R"({"cluster":{"worker":["a:1"],"evaluator":["b:2"]},)"
                                 R"("task":{"type":"evaluator","index":0}})"}},
                  2) == "cuda:0");
  // Parameter servers stay on the host whatever is visible or asked.
  CHECK(DevicesOf({{"TF_CONFIG", R"({"cluster":{"ps":["a:1"],"worker":["b:2"]},)"
                                 R"("task":{"type":"ps","index":0}})"},
                   {"TAAS_DEVICE", "cuda"}},
                  0) == "cpu");
}

TEST_CASE("devices: the CPU without a GPU or when asked, as many replicas as configured") {
  CHECK(DevicesOf({{"TF_CONFIG", kWorkersOnly}}, 0) == "cpu");
  CHECK(DevicesOf({{"TF_CONFIG", kWorkersOnly}}, -1) == "cpu");
  CHECK(DevicesOf({{"TF_CONFIG", kWorkersOnly}, {"TAAS_REPLICAS_PER_WORKER", "2"}}, 0) ==
        "cpu,cpu");
  CHECK(DevicesOf({{"TF_CONFIG", kWorkersOnly}, {"TAAS_DEVICE", "cpu"}}, 8) == "cpu");
  auto c = ParseConfig({"--device=cpu"}, {{"TF_CONFIG", kWorkersOnly}});
  REQUIRE(c.ok());
  CHECK(ChooseDevices(*c, 8)->chosen_by == "--device=cpu");
  c = ParseConfig({}, {{"TF_CONFIG", kWorkersOnly}, {"CUDA_VISIBLE_DEVICES", ""}});
  REQUIRE(c.ok());
  CHECK(ChooseDevices(*c, 0)->chosen_by == "no CUDA device visible (CUDA_VISIBLE_DEVICES=\"\")");
  CHECK(ChooseDevices(*c, -1)->chosen_by == "built without CUDA");
}

TEST_CASE("devices: cuda asked where none is visible is a permanent error naming the fix") {
  auto c = ParseConfig({}, {{"TF_CONFIG", kWorkersOnly}, {"TAAS_DEVICE", "cuda"}});
  REQUIRE(c.ok());
  auto choice = ChooseDevices(*c, 0);
  REQUIRE_FALSE(choice.ok());
  CHECK(choice.status().code() == absl::StatusCode::kFailedPrecondition);
  const std::string message(choice.status().message());
  CHECK(message.find("TAAS_DEVICE=cuda: no CUDA device is visible to this process "
                     "(CUDA_VISIBLE_DEVICES=unset)") == 0);
  CHECK(message.find("nvidia.com/gpu") != std::string::npos);
  CHECK(message.find("TAAS_DEVICE=cpu") != std::string::npos);
  CHECK(std::string(ChooseDevices(*c, -1).status().message()).find("built without CUDA") !=
        std::string::npos);
  // A word that is not a device is the setting's error, at parse time.
  CHECK(ErrorOf({}, {{"TAAS_DEVICE", "gpu"}}) == "TAAS_DEVICE: must be cpu or cuda, got \"gpu\"");
  CHECK(ErrorOf({"--device=tpu"}, {}) == "--device: must be cpu or cuda, got \"tpu\"");
  // A hostile CUDA_VISIBLE_DEVICES or NVIDIA_VISIBLE_DEVICES cannot make the messages unbounded.
  c = ParseConfig({}, {{"CUDA_VISIBLE_DEVICES", std::string(100000, '7')},
                       {"NVIDIA_VISIBLE_DEVICES", std::string(100000, '7')}});
  REQUIRE(c.ok());
  CHECK(c->cuda_visible_devices.size() == 130);
  CHECK(c->nvidia_visible_devices.size() == 130);
}

TEST_CASE("devices: the messages name NVIDIA_VISIBLE_DEVICES, which NVIDIA's device plugin sets") {
  // In a pod the plugin sets NVIDIA_VISIBLE_DEVICES (the container runtime exposes those GPUs),
  // not CUDA_VISIBLE_DEVICES.
  auto c = ParseConfig({}, {{"TF_CONFIG", kWorkersOnly},
                            {"TAAS_DEVICE", "cuda"},
                            {"NVIDIA_VISIBLE_DEVICES", "GPU-5e1c"}});
  REQUIRE(c.ok());
  CHECK(ChooseDevices(*c, 1)->chosen_by ==
        "TAAS_DEVICE=cuda (NVIDIA_VISIBLE_DEVICES=\"GPU-5e1c\", CUDA_VISIBLE_DEVICES=unset, 1 "
        "visible)");
  const std::string message(ChooseDevices(*c, 0).status().message());
  CHECK(message.find("TAAS_DEVICE=cuda: no CUDA device is visible to this process "
                     "(NVIDIA_VISIBLE_DEVICES=\"GPU-5e1c\", CUDA_VISIBLE_DEVICES=unset)") == 0);
  CHECK(message.find("NVIDIA's device plugin then sets NVIDIA_VISIBLE_DEVICES") !=
        std::string::npos);
}

TEST_CASE("the predict settings make an evaluator that predicts, whatever TF_CONFIG says") {
  auto c =
      ParseConfig({"--predict_batch_size=7"}, {{"TF_CONFIG", kCluster},
                                               {"TAAS_PREDICT_OUTPUT", "/o/p.csv"},
                                               {"TAAS_PREDICT_INPUT", "/d/a-*.idx,/d/b"},
                                               {"TAAS_PREDICT_CHECKPOINT", "/m/model.ckpt-4"}});
  REQUIRE(c.ok());
  CHECK(c->info.predicting);
  CHECK(c->info.role == Role::kEvaluator);
  CHECK_FALSE(c->info.is_chief);
  CHECK(c->predict_output == "/o/p.csv");
  CHECK(c->predict_inputs == std::vector<std::string>{"/d/a-*.idx", "/d/b"});
  CHECK(c->predict_checkpoint == "/m/model.ckpt-4");
  CHECK(c->predict_batch_size == 7);
  CHECK_FALSE(ParseConfig({}, {})->info.predicting);
  CHECK(ErrorOf({"--predict_output=p.csv"}, {}).find("TAAS_PREDICT_INPUT: ") == 0);
  CHECK(ErrorOf({"--predict_input=a"}, {}).find("TAAS_PREDICT_OUTPUT: ") == 0);
  CHECK(ErrorOf({"--predict_output=p.csv", "--predict_input=a,,b"}, {}) ==
        "--predict_input: an empty pattern in \"a,,b\"");
  CHECK_FALSE(ParseConfig({"--predict_batch_size=0"}, {}).ok());
}

}  // namespace
}  // namespace taas::config
