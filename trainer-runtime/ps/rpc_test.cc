// The PS service and client over real gRPC on 127.0.0.1.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include "taas/base/fence.h"
#include "taas/ps/auth.h"
#include "taas/ps/client.h"
#include "taas/ps/server.h"

namespace taas::ps {
namespace {

Logger Quiet() { return Logger(stderr, LogLevel::kWarning); }

// The job's tokens as the chief and the PS hold them (hex of kTokenBytes random bytes).
PsTokens ChiefTokens() { return {std::string(64, 'a'), std::string(64, 'c')}; }

PsClientOptions Options(int lanes, std::int64_t chunk_bytes = 4 << 20) {
  PsClientOptions o;
  o.chunk_bytes = chunk_bytes;
  o.lanes = lanes;
  o.tokens = ChiefTokens();
  return o;
}

// PS tasks of `lanes` lanes each. Most cases are about several PS tasks and use one lane per
// task, with clients made by OneLane.
struct Cluster {
  std::vector<std::unique_ptr<PsServer>> servers;
  std::vector<std::string> addresses;
  explicit Cluster(int n, int lanes = 1) {
    for (int i = 0; i < n; ++i) {
      auto s = PsServer::Start({"127.0.0.1:0", "", lanes, ChiefTokens(), {}},
                               100 + static_cast<std::uint64_t>(i), Quiet());
      REQUIRE(s.ok());
      addresses.push_back("127.0.0.1:" + std::to_string((*s)->port()));
      servers.push_back(std::move(*s));
    }
  }
};

// Every PS answers within 10 s; otherwise the test stops with the client's error.
void RequireReachable(PsClient& client) {
  auto reachable = client.WaitForServers(10);
  REQUIRE_MESSAGE(reachable.ok(), reachable.status().ToString());
}

PsClient OneLane(const std::vector<std::string>& addresses, std::int64_t chunk_bytes = 4 << 20) {
  return PsClient(addresses, Options(/*lanes=*/1, chunk_bytes), Quiet());
}

optim::OptimizerConfig Sgd(float lr) {
  optim::OptimizerConfig c;
  c.name = "sgd";
  c.learning_rate.initial = lr;
  return c;
}

// Pushes each PS's shards of `values` as its initial state, each named after its variable as the
// chief names them.
void InitAll(PsClient& client, const std::vector<VariablePlacement>& placement,
             const std::vector<std::vector<float>>& values, bool sync, int replicas,
             const optim::OptimizerConfig& optimizer = Sgd(1.0f)) {
  for (int ps = 0; ps < client.num_ps(); ++ps) {
    std::vector<ShardState> shards;
    for (std::size_t v = 0; v < placement.size(); ++v) {
      for (const auto& s : placement[v].shards) {
        if (s.ps != ps) continue;
        shards.push_back({s.name,
                          std::vector<float>(values[v].begin() + s.offset,
                                             values[v].begin() + s.offset + s.size),
                          {},
                          placement[v].name});
      }
    }
    TrainingSpec spec;
    spec.sync = sync;
    spec.replicas_to_aggregate = replicas;
    spec.optimizer = optimizer;
    REQUIRE(client.Initialize(ps, spec, 0, shards, 10).ok());
  }
}

TEST_CASE("uninitialised PS refuses pulls with FAILED_PRECONDITION over gRPC") {
  Cluster cluster(1);
  PsClient client = OneLane(cluster.addresses);
  auto statuses = client.WaitForServers(10);
  REQUIRE(statuses.ok());
  CHECK((*statuses)[0].incarnation == 100);
  CHECK_FALSE((*statuses)[0].initialized);
  auto placement = PlaceVariables({{"w", 2}}, 1, 1 << 20);
  std::vector<float> value(2), grad(2);
  auto pull = client.Pull(placement, {{value, grad}}, 10);
  REQUIRE_FALSE(pull.ok());
  CHECK(pull.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(std::string(pull.status().message()).find("waiting for the chief") != std::string::npos);
}

// Hostile peers: a caller without the job's token learns nothing and changes nothing; a worker
// (the job token, no chief token) trains but cannot reinitialise, snapshot or stop a PS.
TEST_CASE("every call needs the job token, and control calls the chief's") {
  Cluster cluster(1);
  PsClient chief = OneLane(cluster.addresses);
  RequireReachable(chief);
  auto placement = PlaceVariables({{"w", 3}}, 1, 1 << 20);
  InitAll(chief, placement, {{1, 2, 3}}, false, 1);

  auto client_with = [&](PsTokens tokens) {
    PsClientOptions options = Options(/*lanes=*/1);
    options.tokens = std::move(tokens);
    return PsClient(cluster.addresses, options, Quiet());
  };
  std::vector<float> value(3), grad(3, 1.0f);
  std::vector<ParamBuffers> params = {{value, grad}};

  for (const PsTokens& stranger :
       {PsTokens{}, PsTokens{std::string(64, 'b'), ""}, PsTokens{std::string(63, 'a'), ""},
        PsTokens{std::string(64, 'b'), ChiefTokens().chief}}) {
    CAPTURE(stranger.job);
    PsClient client = client_with(stranger);
    auto statuses = client.Statuses(5);
    REQUIRE_FALSE(statuses.ok());
    CHECK(statuses.status().code() == absl::StatusCode::kUnauthenticated);
    auto pull = client.Pull(placement, params, 5);
    REQUIRE_FALSE(pull.ok());
    CHECK(pull.status().code() == absl::StatusCode::kUnauthenticated);
    auto push = client.Push(placement, params, {0}, 0, 5);
    REQUIRE_FALSE(push.ok());
    CHECK(push.status().code() == absl::StatusCode::kUnauthenticated);
    CHECK(client.Shutdown(0, /*exit=*/true, 5).code() == absl::StatusCode::kUnauthenticated);
    CHECK(client.CheckpointSaved(0, 7, 5).code() == absl::StatusCode::kUnauthenticated);
  }

  for (const std::string& chief_token : {std::string(), std::string(64, 'd')}) {
    PsClient worker = client_with({ChiefTokens().job, chief_token});
    REQUIRE(worker.Pull(placement, params, 5).ok());
    CHECK(value == std::vector<float>{1, 2, 3});
    auto snapshot = worker.Snapshot(0, 5);
    REQUIRE_FALSE(snapshot.ok());
    CHECK(snapshot.status().code() == absl::StatusCode::kPermissionDenied);
    TrainingSpec spec;
    spec.optimizer = Sgd(1.0f);
    CHECK(worker.Initialize(0, spec, 0, {{"w/part_0", {9, 9, 9}, {}}}, 5).code() ==
          absl::StatusCode::kPermissionDenied);
    CHECK(worker.Shutdown(0, /*exit=*/true, 5).code() == absl::StatusCode::kPermissionDenied);
    CHECK(worker.CheckpointSaved(0, 7, 5).code() == absl::StatusCode::kPermissionDenied);
  }
  CHECK_FALSE(cluster.servers[0]->LastSavedCheckpoint().has_value());

  // Nothing the others sent changed the variables, and the chief still gets its answers.
  REQUIRE(chief.Pull(placement, params, 5).ok());
  CHECK(value == std::vector<float>{1, 2, 3});
  CHECK(chief.Snapshot(0, 5).ok());
}

// Issue 37: a pod on a node that was only cut off runs beside its replacement; the PS refuses it.
TEST_CASE("a PS refuses every call of an older incarnation of a replica, the chief's included") {
  Cluster cluster(1);
  auto as = [&](ReplicaIncarnation caller) {
    PsClientOptions options = Options(/*lanes=*/1);
    options.caller = std::move(caller);
    return PsClient(cluster.addresses, options, Quiet());
  };
  PsClient old_chief = as({"chief-0", 1});
  RequireReachable(old_chief);
  auto placement = PlaceVariables({{"w", 3}}, 1, 1 << 20);
  InitAll(old_chief, placement, {{1, 2, 3}}, false, 1);
  PsClient old_worker = as({"worker-1", 3});
  std::vector<float> value(3), grad(3, 1.0f);
  std::vector<ParamBuffers> params = {{value, grad}};
  REQUIRE(old_worker.Pull(placement, params, 5).ok());

  // The replacements join: every call of the old incarnations is refused from then on.
  PsClient chief = as({"chief-0", 2});
  REQUIRE(chief.Pull(placement, params, 5).ok());
  PsClient worker = as({"worker-1", 4});
  REQUIRE(worker.Push(placement, params, {0}, 0, 5).ok());
  auto pull = old_worker.Pull(placement, params, 5);
  REQUIRE_FALSE(pull.ok());
  CHECK(IsFenced(pull.status()));
  CHECK(std::string(pull.status().message())
            .find("worker-1 incarnation 3 is fenced: incarnation 4 "
                  "of worker-1 joined since") != std::string::npos);
  auto push = old_worker.Push(placement, params, {0}, 0, 5);
  REQUIRE_FALSE(push.ok());
  CHECK(IsFenced(push.status()));
  CHECK(IsFenced(old_chief.Snapshot(0, 5).status()));
  CHECK(IsFenced(old_chief.CheckpointSaved(0, 7, 5)));
  CHECK(IsFenced(old_chief.Shutdown(0, /*exit=*/true, 5)));
  TrainingSpec spec;
  spec.optimizer = Sgd(1.0f);
  CHECK(IsFenced(old_chief.Initialize(0, spec, 0, {{"w/part_0", {9, 9, 9}, {}}}, 5)));
  CHECK(IsFenced(old_chief.Statuses(5).status()));
  CHECK_FALSE(cluster.servers[0]->LastSavedCheckpoint().has_value());

  // The new incarnations, another replica, and a caller that names none go on.
  REQUIRE(chief.Pull(placement, params, 5).ok());
  CHECK(value == std::vector<float>{0, 1, 2});  // one push applied, nothing of the old chief's
  CHECK(as({"worker-0", 0}).Pull(placement, params, 5).ok());
  CHECK(OneLane(cluster.addresses).Pull(placement, params, 5).ok());
  REQUIRE(chief.CheckpointSaved(0, 7, 5).ok());
}

// A terminating PS serves until the chief saved the job's state (docs/trainer-runtime.md, Faults).
TEST_CASE("the chief's CheckpointSaved is recorded with its step and time; training goes on") {
  Cluster cluster(1);
  PsClient chief = OneLane(cluster.addresses);
  RequireReachable(chief);
  auto placement = PlaceVariables({{"w", 3}}, 1, 1 << 20);
  InitAll(chief, placement, {{1, 2, 3}}, false, 1);
  CHECK_FALSE(cluster.servers[0]->LastSavedCheckpoint().has_value());
  const auto before = std::chrono::steady_clock::now();
  REQUIRE(chief.CheckpointSaved(0, 42, 5).ok());
  const auto saved = cluster.servers[0]->LastSavedCheckpoint();
  REQUIRE(saved.has_value());
  CHECK(saved->step == 42);
  CHECK(saved->at >= before);
  CHECK_FALSE(cluster.servers[0]->WaitForExitRequest(0.1));
  std::vector<float> value(3), grad(3, 1.0f);
  auto pushed = chief.Push(placement, {{value, grad}}, {0}, 0, 5);
  REQUIRE(pushed.ok());
  CHECK(pushed->applied == 1);
  CHECK_FALSE(pushed->done);
}

TEST_CASE("partitioned variables round-trip across two PS; async pushes apply") {
  Cluster cluster(2);
  PsClient client = OneLane(cluster.addresses);
  RequireReachable(client);
  // "big" (1000 floats = 4000 bytes) is partitioned; "small" goes whole.
  auto placement = PlaceVariables({{"big", 1000}, {"small", 3}}, 2, 4000);
  REQUIRE(placement[0].shards.size() == 2);
  std::vector<float> big(1000), small = {1, 2, 3};
  for (int i = 0; i < 1000; ++i) big[static_cast<std::size_t>(i)] = static_cast<float>(i);
  InitAll(client, placement, {big, small}, false, 1);

  std::vector<float> got_big(1000), got_small(3), g_big(1000, 1.0f), g_small(3, 0.5f);
  std::vector<ParamBuffers> params = {{got_big, g_big}, {got_small, g_small}};
  auto pulled = client.Pull(placement, params, 10);
  REQUIRE(pulled.ok());
  CHECK(got_big == big);
  CHECK(got_small == small);
  CHECK(pulled->global_step == 0);
  auto pushed = client.Push(placement, params, pulled->ps_steps, 0, 10);
  REQUIRE(pushed.ok());
  CHECK(pushed->applied == 2);
  CHECK(pushed->global_step == 1);
  REQUIRE(client.Pull(placement, params, 10).ok());
  CHECK(got_big[999] == 998.0f);
  CHECK(got_small == std::vector<float>{0.5f, 1.5f, 2.5f});

  auto snap = client.Snapshot(1, 10);
  REQUIRE(snap.ok());
  CHECK(snap->first == 1);
}

TEST_CASE("the learning-rate schedule travels to the PS: a piecewise rate applies by step") {
  Cluster cluster(1);
  PsClient client = OneLane(cluster.addresses);
  RequireReachable(client);
  auto placement = PlaceVariables({{"w", 1}}, 1, 4000);
  TrainingSpec spec;
  spec.optimizer.name = "sgd";
  // Steps 0 and 1 at rate 1, then 0.25: TF's rule keeps the old value at the boundary itself.
  spec.optimizer.learning_rate =
      optim::LearningRateSchedule::PiecewiseConstantDecay({1}, {1.0f, 0.25f});
  REQUIRE(client.Initialize(0, spec, 0, {{"w", {0.0f}, {}}}, 10).ok());
  std::vector<float> w(1), g(1, 1.0f);
  std::vector<ParamBuffers> params = {{w, g}};
  const std::vector<float> expected = {-1.0f, -2.0f, -2.25f};
  for (float want : expected) {
    auto pulled = client.Pull(placement, params, 10);
    REQUIRE(pulled.ok());
    REQUIRE(client.Push(placement, params, pulled->ps_steps, 0, 10).ok());
    REQUIRE(client.Pull(placement, params, 10).ok());
    CHECK(w[0] == want);
  }
  // A schedule the optimizer refuses is refused by the PS, naming the field.
  TrainingSpec bad = spec;
  bad.optimizer.learning_rate.values = {1.0f};
  absl::Status refused = client.Initialize(0, bad, 0, {{"w", {0.0f}, {}}}, 10);
  CHECK_FALSE(refused.ok());
  CHECK(std::string(refused.message()).find("learning_rate.values") != std::string::npos);
}

// A config using every field that crosses the wire, none at its default.
std::vector<optim::OptimizerConfig> EveryField() {
  const auto schedule =
      optim::LearningRateSchedule::CosineDecay(0.02f, 5, 0.25f, 0.1f, 2).WithWarmup(2, 0.01f);
  return {{.name = "adamw",
           .learning_rate = schedule,
           .beta1 = 0.8f,
           .beta2 = 0.99f,
           .epsilon = 1e-3f,
           .weight_decay = 0.5f,
           .exclude_from_weight_decay = {"bias"}},
          {.name = "rmsprop",
           .learning_rate = schedule,
           .momentum = 0.5f,
           .epsilon = 1e-3f,
           .rho = 0.8f,
           .centered = true,
           .weight_decay = 0.1f},
          {.name = "adagrad",
           .learning_rate = schedule,
           .epsilon = 1e-3f,
           .initial_accumulator_value = 0.3f},
          {.name = "momentum", .learning_rate = schedule, .use_nesterov = true}};
}

TEST_CASE("every optimizer field travels to the PS: its updates are the local optimizer's") {
  // A kernel partitioned over both PS and a bias whole: the PS decays by the variable's name.
  Cluster cluster(2);
  PsClient client = OneLane(cluster.addresses);
  RequireReachable(client);
  auto placement = PlaceVariables({{"dense/kernel", 6}, {"dense/bias", 3}}, 2, 8);
  REQUIRE(placement[0].shards.size() == 2);
  for (const optim::OptimizerConfig& config : EveryField()) {
    CAPTURE(config.name);
    auto local = optim::CreateOptimizer(config);
    REQUIRE(local.ok());
    std::vector<std::vector<float>> expected = {{1, -2, 3, -4, 5, -6}, {0.5f, -0.5f, 1}};
    InitAll(client, placement, expected, false, 1, config);
    std::vector<std::vector<std::vector<float>>> slots(2);
    for (std::size_t v = 0; v < 2; ++v) {
      slots[v].assign(static_cast<std::size_t>((*local)->slot_count()),
                      std::vector<float>(expected[v].size()));
    }
    std::vector<float> kernel(6), bias(3);
    std::vector<float> g_kernel = {0.5f, -1, 2, 0.25f, -0.75f, 1}, g_bias = {1, -2, 0.5f};
    std::vector<ParamBuffers> params = {{kernel, g_kernel}, {bias, g_bias}};
    for (std::int64_t step = 0; step < 6; ++step) {
      auto pulled = client.Pull(placement, params, 10);
      REQUIRE(pulled.ok());
      REQUIRE(client.Push(placement, params, pulled->ps_steps, 0, 10).ok());
      for (std::size_t v = 0; v < 2; ++v) {
        std::vector<std::span<float>> spans(slots[v].begin(), slots[v].end());
        (*local)->Apply(placement[v].name, expected[v], params[v].gradient, spans, step);
      }
    }
    REQUIRE(client.Pull(placement, params, 10).ok());
    CHECK(kernel == expected[0]);
    CHECK(bias == expected[1]);
  }
}

TEST_CASE("the PS matches exclusions against the variable's name, not its shard's") {
  Cluster cluster(2);
  PsClient client = OneLane(cluster.addresses);
  RequireReachable(client);
  auto placement = PlaceVariables({{"kernel", 4}}, 2, 8);
  REQUIRE(placement[0].shards[0].name == "kernel/part_0");
  // SGD with zero gradients: only the decay moves the values (by lr * wd = 0.1 of them).
  optim::OptimizerConfig config = Sgd(1.0f);
  config.weight_decay = 0.1f;
  config.exclude_from_weight_decay = {"part_"};
  InitAll(client, placement, {{1, 2, 3, 4}}, false, 1, config);
  std::vector<float> kernel(4), zero(4);
  std::vector<ParamBuffers> params = {{kernel, zero}};
  auto pulled = client.Pull(placement, params, 10);
  REQUIRE(pulled.ok());
  REQUIRE(client.Push(placement, params, pulled->ps_steps, 0, 10).ok());
  REQUIRE(client.Pull(placement, params, 10).ok());
  CHECK(kernel[0] == doctest::Approx(0.9));
  CHECK(kernel[3] == doctest::Approx(3.6));
}

TEST_CASE("optimizer fields from the wire are checked and bounded") {
  Cluster cluster(1);
  PsClient client = OneLane(cluster.addresses);
  RequireReachable(client);
  const auto refused = [&](const optim::OptimizerConfig& config) {
    TrainingSpec spec;
    spec.optimizer = config;
    absl::Status status = client.Initialize(0, spec, 0, {{"w", {0.0f}, {}}}, 10);
    CHECK(status.code() == absl::StatusCode::kInvalidArgument);
    return std::string(status.message());
  };
  optim::OptimizerConfig config = Sgd(1.0f);
  config.exclude_from_weight_decay.assign(optim::kMaxExcludedNames + 1, "bias");
  CHECK(refused(config).find("exclude_from_weight_decay may hold at most") != std::string::npos);
  config.exclude_from_weight_decay = {std::string(optim::kMaxExcludedNameBytes + 1, 'b')};
  CHECK(refused(config).find("exclude_from_weight_decay[0]") != std::string::npos);
  CHECK(refused({.name = "rmsprop", .rho = -1.0f}).find("rho") != std::string::npos);
  CHECK(refused({.name = "adagrad", .initial_accumulator_value = NAN})
            .find("initial_accumulator_value") != std::string::npos);
  CHECK(refused({.name = "sgd", .weight_decay = INFINITY}).find("weight_decay") !=
        std::string::npos);
  CHECK(refused({.name = "sgd",
                 .learning_rate = optim::LearningRateSchedule::Constant(0.1f).WithWarmup(-5)})
            .find("learning_rate.warmup_steps") != std::string::npos);
  // A shard's variable is the start of its name, so it is never longer than the name.
  TrainingSpec spec;
  absl::Status status =
      client.Initialize(0, spec, 0, {{"w/part_0", {0.0f}, {}, "w/part_0/other"}}, 10);
  CHECK(status.code() == absl::StatusCode::kInvalidArgument);
  CHECK(status.message().find("its variable must be the start of its name") != std::string::npos);
  CHECK(client.Initialize(0, spec, 0, {{"w/part_0", {0.0f}, {}, "w"}}, 10).ok());
}

TEST_CASE("pulls in small pieces, several in flight, land every element in place") {
  Cluster cluster(2);
  PsClient setup = OneLane(cluster.addresses);
  RequireReachable(setup);
  // 1001 floats split over 2 PS; 37 floats whole; pieces of at most 100 floats.
  auto placement = PlaceVariables({{"big", 1001}, {"odd", 37}, {"empty", 0}}, 2, 4000);
  std::vector<float> big(1001), odd(37);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i) * 0.5f;
  for (std::size_t i = 0; i < odd.size(); ++i) odd[i] = -static_cast<float>(i);
  InitAll(setup, placement, {big, odd, {}}, false, 1);
  PsClient client = OneLane(cluster.addresses, /*chunk_bytes=*/400);
  std::vector<float> got_big(1001, -1), got_odd(37, 1), none, g_big(1001), g_odd(37);
  auto pulled = client.Pull(placement, {{got_big, g_big}, {got_odd, g_odd}, {none, none}}, 10);
  REQUIRE(pulled.ok());
  CHECK(got_big == big);
  CHECK(got_odd == odd);
  CHECK(pulled->ps_steps.size() == 2);
}

TEST_CASE("sync over gRPC: two workers' pushes are averaged and released together") {
  Cluster cluster(2);
  PsClient setup = OneLane(cluster.addresses);
  RequireReachable(setup);
  auto placement = PlaceVariables({{"w", 4}, {"b", 1}}, 2, 1 << 20);
  InitAll(setup, placement, {{0, 0, 0, 0}, {0}}, true, 2);

  auto worker = [&](float g, PushInfo* out) {
    PsClient client = OneLane(cluster.addresses);
    std::vector<float> w(4), b(1), gw(4, g), gb(1, g);
    std::vector<ParamBuffers> params = {{w, gw}, {b, gb}};
    auto pulled = client.Pull(placement, params, 10);
    REQUIRE(pulled.ok());
    auto pushed = client.Push(placement, params, pulled->ps_steps, static_cast<int>(g), 30);
    REQUIRE(pushed.ok());
    *out = *pushed;
  };
  PushInfo a, b;
  std::thread t1(worker, 1.0f, &a), t2(worker, 3.0f, &b);
  t1.join();
  t2.join();
  CHECK(a.applied == 2);
  CHECK(b.applied == 2);
  CHECK(a.global_step == 1);
  std::vector<float> w(4), bias(1), gw(4), gb(1);
  REQUIRE(setup.Pull(placement, {{w, gw}, {bias, gb}}, 10).ok());
  CHECK(w == std::vector<float>{-2, -2, -2, -2});
  CHECK(bias == std::vector<float>{-2});

  // A push tagged with the old step is dropped; shutdown releases nothing pending and says done.
  auto stale = setup.Push(placement, {{w, gw}, {bias, gb}}, {0, 0}, 9, 10);
  REQUIRE(stale.ok());
  CHECK(stale->stale == 2);
  REQUIRE(setup.Shutdown(0, true, 10).ok());
  CHECK(cluster.servers[0]->WaitForExitRequest(5));
  REQUIRE(setup.Shutdown(1, false, 10).ok());
  CHECK_FALSE(cluster.servers[1]->WaitForExitRequest(0.1));
  auto done = setup.Push(placement, {{w, gw}, {bias, gb}}, {1, 1}, 9, 10);
  REQUIRE(done.ok());
  CHECK(done->done);
}

// SGD with learning rate 1 on `values`, every PS, from one client.
std::vector<VariablePlacement> SetUp(PsClient& client, const std::vector<VariableInfo>& variables,
                                     const std::vector<std::vector<float>>& values,
                                     std::int64_t partition_bytes) {
  auto placement = PlaceVariables(variables, client.num_ps(), partition_bytes);
  InitAll(client, placement, values, false, 1);
  return placement;
}

std::vector<float> Iota(std::size_t n, float scale) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * scale;
  return v;
}

TEST_CASE("sync push with pull_values: each worker gets the step's values in the push reply") {
  Cluster cluster(2);
  PsClient setup = OneLane(cluster.addresses);
  RequireReachable(setup);
  auto placement = PlaceVariables({{"w", 4}, {"b", 1}}, 2, 1 << 20);
  InitAll(setup, placement, {{0, 0, 0, 0}, {0}}, true, 2);

  struct Got {
    PushInfo info;
    std::vector<float> w, b;
  };
  auto worker = [&](float g, Got* out) {
    PsClient client = OneLane(cluster.addresses);
    std::vector<float> w(4), b(1), gw(4, g), gb(1, g);
    std::vector<ParamBuffers> params = {{w, gw}, {b, gb}};
    auto pulled = client.Pull(placement, params, 10);
    REQUIRE(pulled.ok());
    auto pushed = client.Push(placement, params, pulled->ps_steps, static_cast<int>(g), 30,
                              /*pull_values=*/true);
    REQUIRE(pushed.ok());
    *out = {*pushed, w, b};
  };
  Got a, b;
  std::thread t1(worker, 1.0f, &a), t2(worker, 3.0f, &b);
  t1.join();
  t2.join();
  for (const Got* got : {&a, &b}) {
    CHECK(got->info.applied == 2);
    REQUIRE(got->info.pulled.has_value());
    CHECK(got->info.pulled->ps_steps == std::vector<std::int64_t>{1, 1});
    CHECK(got->info.pulled->global_step == 1);
    CHECK(got->info.pulled->incarnations == std::vector<std::uint64_t>{100, 101});
    CHECK_FALSE(got->info.pulled->done);
    CHECK(got->w == std::vector<float>{-2, -2, -2, -2});
    CHECK(got->b == std::vector<float>{-2});
  }
  // A dropped push brings no values: the caller pulls.
  std::vector<float> w(4, 7), bias(1, 7), gw(4), gb(1);
  auto stale = setup.Push(placement, {{w, gw}, {bias, gb}}, {0, 0}, 9, 10, /*pull_values=*/true);
  REQUIRE(stale.ok());
  CHECK(stale->stale == 2);
  CHECK_FALSE(stale->pulled.has_value());
  CHECK(w == std::vector<float>(4, 7));
}

TEST_CASE("async push with pull_values: values after the push, across several reply messages") {
  Cluster cluster(2);
  PsClient client = OneLane(cluster.addresses);
  RequireReachable(client);
  // 10 MB split over 2 PS (5 MB each: two reply messages per PS), odd and empty tensors beside.
  const std::size_t n = 2500001;
  auto big = Iota(n, 1.0f);
  auto odd = Iota(37, -1.0f);
  auto placement =
      PlaceVariables({{"big", static_cast<std::int64_t>(n)}, {"odd", 37}, {"e", 0}}, 2, 4 << 20);
  InitAll(client, placement, {big, odd, {}}, false, 1);
  std::vector<float> got_big(n, -1), got_odd(37, 9), none, g_big(n, 0.5f), g_odd = Iota(37, 1.0f);
  std::vector<ParamBuffers> params = {{got_big, g_big}, {got_odd, g_odd}, {none, none}};
  auto pushed = client.Push(placement, params, {0, 0}, 0, 30, /*pull_values=*/true);
  REQUIRE(pushed.ok());
  CHECK(pushed->applied == 2);
  REQUIRE(pushed->pulled.has_value());
  CHECK(pushed->pulled->ps_steps == std::vector<std::int64_t>{1, 1});
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += got_big[i] != big[i] - 0.5f;
  CHECK(wrong == 0);
  CHECK(got_odd == Iota(37, -2.0f));
}

TEST_CASE("pieces that cut floats, odd sizes, zero-size and 1-element tensors over 3 PS") {
  Cluster cluster(3);
  PsClient setup = OneLane(cluster.addresses);
  RequireReachable(setup);
  // "big" (1003 floats) is split over the 3 PS; the others go whole.
  const std::vector<std::vector<float>> init = {Iota(1003, 0.25f), Iota(37, -1), {}, {42}};
  auto placement = SetUp(setup, {{"big", 1003}, {"odd", 37}, {"empty", 0}, {"one", 1}}, init, 4000);
  REQUIRE(placement[0].shards.size() == 3);
  auto expected = init;
  // 6-byte pieces: every push message ends inside a float; pulls in 1-float pieces.
  for (std::int64_t chunk_bytes : {6, 400, 4 << 20}) {
    CAPTURE(chunk_bytes);
    PsClient client = OneLane(cluster.addresses, chunk_bytes);
    std::vector<std::vector<float>> got = {
        std::vector<float>(1003, -7), std::vector<float>(37, -7), {}, {-7}};
    std::vector<std::vector<float>> grads = {Iota(1003, 1), std::vector<float>(37, 0.5f), {}, {2}};
    std::vector<ParamBuffers> params;
    for (std::size_t v = 0; v < got.size(); ++v) params.push_back({got[v], grads[v]});
    auto before = client.Pull(placement, params, 10);
    REQUIRE(before.ok());
    CHECK(got == expected);
    auto pushed = client.Push(placement, params, before->ps_steps, 0, 10);
    REQUIRE(pushed.ok());
    CHECK(pushed->applied == 3);
    for (std::size_t v = 0; v < got.size(); ++v) {
      for (std::size_t i = 0; i < got[v].size(); ++i) expected[v][i] -= grads[v][i];
    }
    REQUIRE(client.Pull(placement, params, 10).ok());
    CHECK(got == expected);
  }
}

TEST_CASE("concurrent pushes from several clients are all applied (async)") {
  Cluster cluster(2);
  PsClient setup = OneLane(cluster.addresses);
  RequireReachable(setup);
  constexpr std::size_t kSize = 300000;  // 1.2 MB: several 256 KB pieces per push
  auto placement =
      SetUp(setup, {{"w", kSize}, {"b", 3}}, {std::vector<float>(kSize, 0), {0, 0, 0}}, 1 << 20);
  constexpr int kClients = 4, kPushes = 5;
  std::vector<std::thread> threads;
  std::vector<int> applied(kClients, 0);
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      PsClient client = OneLane(cluster.addresses, 256 << 10);
      std::vector<float> w(kSize), b(3), gw(kSize, 1), gb(3, 2);
      std::vector<ParamBuffers> params = {{w, gw}, {b, gb}};
      for (int k = 0; k < kPushes; ++k) {
        auto pulled = client.Pull(placement, params, 30);
        REQUIRE(pulled.ok());
        auto pushed = client.Push(placement, params, pulled->ps_steps, c, 30);
        REQUIRE(pushed.ok());
        applied[static_cast<std::size_t>(c)] += pushed->applied;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int a : applied) CHECK(a == 2 * kPushes);
  std::vector<float> w(kSize), b(3), gw(kSize), gb(3);
  auto pulled = setup.Pull(placement, {{w, gw}, {b, gb}}, 10);
  REQUIRE(pulled.ok());
  CHECK(pulled->global_step == kClients * kPushes);
  const float total = -static_cast<float>(kClients * kPushes);
  CHECK(std::count(w.begin(), w.end(), total) == static_cast<long>(kSize));
  CHECK(b == std::vector<float>(3, 2 * total));
}

TEST_CASE("an uninitialised or restarted PS refuses pushes; a model mismatch is an error") {
  Cluster cluster(1);
  PsClient client = OneLane(cluster.addresses);
  RequireReachable(client);
  auto placement = PlaceVariables({{"w", 4}}, 1, 1 << 20);
  std::vector<float> w(4), g(4, 1);
  auto refused = client.Push(placement, {{w, g}}, {0}, 0, 10);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == absl::StatusCode::kFailedPrecondition);

  InitAll(client, placement, {{1, 2, 3, 4}}, false, 1);
  auto pulled = client.Pull(placement, {{w, g}}, 10);
  REQUIRE(pulled.ok());
  CHECK(pulled->incarnations[0] == 100);
  auto other = PlaceVariables({{"w", 5}}, 1, 1 << 20);
  std::vector<float> w5(5), g5(5);
  auto mismatch = client.Push(other, {{w5, g5}}, {0}, 0, 10);
  REQUIRE_FALSE(mismatch.ok());
  CHECK(mismatch.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_FALSE(IsTransient(mismatch.status()));
  auto pull_mismatch = client.Pull(other, {{w5, g5}}, 10);
  REQUIRE_FALSE(pull_mismatch.ok());
  CHECK(pull_mismatch.status().code() == absl::StatusCode::kOutOfRange);
}

TEST_CASE("one PS task, two lanes: a partitioned variable's halves live in separate stores") {
  Cluster cluster(1, /*lanes=*/2);
  PsServer& server = *cluster.servers[0];
  PsClient client(cluster.addresses, Options(/*lanes=*/2), Quiet());
  REQUIRE(client.num_ps() == 2);
  CHECK(client.address(1) == cluster.addresses[0]);
  auto statuses = client.WaitForServers(10);
  REQUIRE(statuses.ok());
  REQUIRE(statuses->size() == 2);
  CHECK((*statuses)[1].incarnation == 100);  // One process: both lanes share its incarnation.

  // "big" is split over the two lanes; "small" goes whole to lane 0.
  auto placement = PlaceVariables({{"big", 1000}, {"small", 3}}, client.num_ps(), 4000, 2);
  REQUIRE(placement[0].shards.size() == 2);
  std::vector<float> big(1000), small = {1, 2, 3};
  for (int i = 0; i < 1000; ++i) big[static_cast<std::size_t>(i)] = static_cast<float>(i);
  InitAll(client, placement, {big, small}, false, 1);
  auto lane0 = server.store(0).Snapshot();
  auto lane1 = server.store(1).Snapshot();
  REQUIRE(lane0.ok());
  REQUIRE(lane1.ok());
  CHECK(lane0->second[0].name == "big/part_0");
  CHECK(lane0->second[0].values.size() == 500);
  CHECK(lane1->second[0].name == "big/part_1");
  CHECK(lane1->second[0].values[0] == 500.0f);

  std::vector<float> got_big(1000), got_small(3), g_big(1000, 1.0f), g_small(3, 0.5f);
  std::vector<ParamBuffers> params = {{got_big, g_big}, {got_small, g_small}};
  auto pulled = client.Pull(placement, params, 10);
  REQUIRE(pulled.ok());
  CHECK(got_big == big);
  auto pushed = client.Push(placement, params, pulled->ps_steps, 0, 10, /*pull_values=*/true);
  REQUIRE(pushed.ok());
  CHECK(pushed->applied == 2);  // Each lane counts the push once: its own step.
  REQUIRE(pushed->pulled);
  CHECK(got_big[0] == -1.0f);
  CHECK(got_big[999] == 998.0f);
  CHECK(server.store(0).GetStatus().step == 1);
  CHECK(server.store(1).GetStatus().step == 1);

  // A model of small variables only lives on lane 0; lane 1 gets no calls (its step stays).
  auto lane0_only = PlaceVariables({{"small", 3}}, client.num_ps(), 4000, 2);
  std::vector<ParamBuffers> small_params = {{got_small, g_small}};
  auto small_pulled = client.Pull(lane0_only, small_params, 10);
  REQUIRE(small_pulled.ok());
  CHECK(small_pulled->ps_steps == std::vector<std::int64_t>{1, 0});
  REQUIRE(client.Push(lane0_only, small_params, small_pulled->ps_steps, 0, 10).ok());
  CHECK(server.store(0).GetStatus().step == 2);
  CHECK(server.store(1).GetStatus().step == 1);

  // A client that expects more lanes than the server has is told so.
  PsClient three(cluster.addresses, Options(/*lanes=*/3), Quiet());
  auto refused = three.Statuses(10);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(refused.status().message()).find("lane 2") != std::string::npos);

  // The process exits only once every lane was told to.
  REQUIRE(client.Shutdown(0, /*exit=*/true, 10).ok());
  CHECK_FALSE(server.WaitForExitRequest(0.2));
  REQUIRE(client.Shutdown(1, /*exit=*/true, 10).ok());
  CHECK(server.WaitForExitRequest(10));
}

TEST_CASE("an unreachable PS gives a clear transient error after the timeout") {
  // Reserve a port, then close it so nothing listens there.
  std::string address;
  {
    Cluster gone(1);
    address = gone.addresses[0];
  }
  PsClient client({address}, Options(/*lanes=*/1), Quiet());
  auto statuses = client.WaitForServers(1.5);
  REQUIRE_FALSE(statuses.ok());
  CHECK(statuses.status().code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(IsTransient(statuses.status()));
  CHECK(std::string(statuses.status().message()).find(address) != std::string::npos);
}

}  // namespace
}  // namespace taas::ps
