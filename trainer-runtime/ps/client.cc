#include "taas/ps/client.h"

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>

#include "ps.grpc.pb.h"
#include "rpc_util.h"

namespace taas::ps {
namespace {

std::chrono::system_clock::time_point Deadline(double secs) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(
             std::chrono::duration<double>(secs));
}

// Waits for a fixed number of asynchronous calls to complete.
class Countdown {
 public:
  explicit Countdown(int n) : left_(n) {}
  void Done() {
    std::lock_guard<std::mutex> lock(mu_);
    if (--left_ == 0) cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return left_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int left_;  // guarded by mu_
};

// One call of the same method to several PS at once: a context, request, reply and status each.
template <class Request, class Reply>
struct FanOut {
  explicit FanOut(std::size_t n) : contexts(n), requests(n), replies(n), statuses(n) {}
  std::vector<grpc::ClientContext> contexts;
  std::vector<Request> requests;
  std::vector<Reply> replies;
  std::vector<grpc::Status> statuses;
};

}  // namespace

bool IsTransient(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kAborted:
      return true;
    default:
      return false;
  }
}

struct PsClient::Impl {
  std::vector<std::unique_ptr<rpc::ParameterServer::Stub>> stubs;

  // Runs call i of `f` on PS ps_of_call[i], all at once, and waits for every one.
  template <class Request, class Reply, class Call>
  void Run(FanOut<Request, Reply>& f, const std::vector<int>& ps_of_call, double timeout_secs,
           Call call) {
    Countdown countdown(static_cast<int>(ps_of_call.size()));
    for (std::size_t i = 0; i < ps_of_call.size(); ++i) {
      f.contexts[i].set_deadline(Deadline(timeout_secs));
      call(stubs[static_cast<std::size_t>(ps_of_call[i])]->async(), &f.contexts[i], &f.requests[i],
           &f.replies[i], [&f, i, &countdown](grpc::Status s) {
             f.statuses[i] = std::move(s);
             countdown.Done();
           });
    }
    countdown.Wait();
  }
};

PsClient::PsClient(std::vector<std::string> addresses, const Logger& logger,
                   std::int64_t chunk_bytes)
    : addresses_(std::move(addresses)),
      logger_(logger),
      chunk_bytes_(chunk_bytes),
      impl_(std::make_unique<Impl>()) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  // Reconnect quickly when a PS restarts at the same address.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  for (const auto& a : addresses_) {
    impl_->stubs.push_back(rpc::ParameterServer::NewStub(
        grpc::CreateCustomChannel(a, grpc::InsecureChannelCredentials(), args)));
  }
}

PsClient::~PsClient() = default;

absl::StatusOr<std::vector<PsStatus>> PsClient::Statuses(double timeout_secs) {
  const std::size_t n = addresses_.size();
  FanOut<rpc::StatusRequest, rpc::StatusReply> f(n);
  std::vector<int> all;
  for (int i = 0; i < num_ps(); ++i) all.push_back(i);
  impl_->Run(f, all, timeout_secs, [](auto* async, auto* ctx, auto* req, auto* reply, auto done) {
    async->GetStatus(ctx, req, reply, std::move(done));
  });
  std::vector<PsStatus> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    TAAS_RETURN_IF_ERROR(
        FromGrpc(f.statuses[i], "ps " + std::to_string(i) + " at " + addresses_[i] + " GetStatus"));
    out[i] = {f.replies[i].incarnation(), f.replies[i].initialized(), f.replies[i].done(),
              f.replies[i].step()};
  }
  return out;
}

absl::StatusOr<std::vector<PsStatus>> PsClient::WaitForServers(double timeout_secs) {
  const auto start = std::chrono::steady_clock::now();
  double backoff = 0.1;
  bool logged = false;
  while (true) {
    auto statuses = Statuses(std::max(1.0, backoff));
    if (statuses.ok()) {
      if (logged) logger_.Info("all parameter servers reachable", {{"ps", num_ps()}});
      return statuses;
    }
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!IsTransient(statuses.status())) return statuses.status();
    if (waited >= timeout_secs) {
      return absl::DeadlineExceededError("parameter servers unreachable after " +
                                         std::to_string(static_cast<int>(waited)) +
                                         "s: " + std::string(statuses.status().message()));
    }
    if (!logged) {
      logger_.Info(
          "waiting for parameter servers to start (retrying with backoff)",
          {{"error", std::string(statuses.status().message())}, {"timeout_secs", timeout_secs}});
      logged = true;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
    backoff = std::min(backoff * 2, 2.0);
  }
}

absl::Status PsClient::Initialize(int ps, const TrainingSpec& spec, std::int64_t step,
                                  std::vector<ShardState> shards, double timeout_secs) {
  rpc::InitializeRequest req;
  req.set_sync(spec.sync);
  req.set_replicas_to_aggregate(spec.replicas_to_aggregate);
  req.set_max_steps(spec.max_steps);
  ToProto(spec.optimizer, req.mutable_optimizer());
  req.set_step(step);
  for (auto& s : shards) {
    auto* shard = req.add_shards();
    shard->set_name(s.name);
    SetFloats(shard->mutable_values(), s.values);
    for (const auto& slot : s.slots) SetFloats(shard->add_slots(), slot);
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(Deadline(timeout_secs));
  rpc::InitializeReply reply;
  return FromGrpc(impl_->stubs[static_cast<std::size_t>(ps)]->Initialize(&ctx, req, &reply),
                  "ps " + std::to_string(ps) + " at " + address(ps) + " Initialize");
}

absl::StatusOr<PullInfo> PsClient::Pull(const std::vector<VariablePlacement>& placement,
                                        const std::vector<ParamBuffers>& params,
                                        double timeout_secs) {
  const std::size_t n = addresses_.size();
  for (std::size_t v = 0; v < placement.size(); ++v) {
    if (static_cast<std::int64_t>(params[v].value.size()) != placement[v].size) {
      return absl::InvalidArgumentError(
          "variable " + placement[v].name + " has " + std::to_string(params[v].value.size()) +
          " elements, its placement " + std::to_string(placement[v].size));
    }
  }
  // Pieces of at most chunk_bytes_, packed into calls of at most chunk_bytes_ per PS; every PS
  // gets at least one call (it reports its step even when it holds nothing of this model).
  struct Piece {
    std::size_t variable;
    std::int64_t offset;  // in the variable
  };
  const std::int64_t chunk = std::max<std::int64_t>(1, chunk_bytes_ / sizeof(float));
  std::vector<int> ps_of_call;
  std::vector<std::vector<Piece>> pieces;
  std::vector<rpc::PullRequest> requests;
  std::vector<std::int64_t> open_call(n, -1), open_floats(n, 0);
  for (std::size_t v = 0; v < placement.size(); ++v) {
    for (const auto& shard : placement[v].shards) {
      const auto ps = static_cast<std::size_t>(shard.ps);
      for (std::int64_t off = 0; off < shard.size || (off == 0 && shard.size == 0); off += chunk) {
        const std::int64_t count = std::min(chunk, shard.size - off);
        if (open_call[ps] < 0 || open_floats[ps] + count > chunk) {
          open_call[ps] = static_cast<std::int64_t>(ps_of_call.size());
          open_floats[ps] = 0;
          ps_of_call.push_back(shard.ps);
          pieces.emplace_back();
          requests.emplace_back();
        }
        auto* range = requests[static_cast<std::size_t>(open_call[ps])].add_ranges();
        range->set_name(shard.name);
        range->set_offset(off);
        range->set_count(count);
        pieces[static_cast<std::size_t>(open_call[ps])].push_back({v, shard.offset + off});
        open_floats[ps] += count;
        if (shard.size == 0) break;
      }
    }
  }
  for (std::size_t ps = 0; ps < n; ++ps) {
    if (open_call[ps] >= 0) continue;
    ps_of_call.push_back(static_cast<int>(ps));
    pieces.emplace_back();
    requests.emplace_back();
  }
  FanOut<rpc::PullRequest, rpc::PullReply> f(ps_of_call.size());
  f.requests = std::move(requests);
  impl_->Run(f, ps_of_call, timeout_secs,
             [](auto* async, auto* ctx, auto* req, auto* reply, auto done) {
               async->Pull(ctx, req, reply, std::move(done));
             });
  PullInfo info;
  info.ps_steps.assign(n, std::numeric_limits<std::int64_t>::max());
  info.incarnations.resize(n);
  for (std::size_t c = 0; c < ps_of_call.size(); ++c) {
    const auto ps = static_cast<std::size_t>(ps_of_call[c]);
    TAAS_RETURN_IF_ERROR(
        FromGrpc(f.statuses[c], "ps " + std::to_string(ps) + " at " + addresses_[ps] + " Pull"));
    const auto& reply = f.replies[c];
    if (reply.shards_size() != static_cast<int>(pieces[c].size())) {
      return absl::InternalError("ps " + std::to_string(ps) + " answered a pull with " +
                                 std::to_string(reply.shards_size()) + " pieces, expected " +
                                 std::to_string(pieces[c].size()));
    }
    for (std::size_t k = 0; k < pieces[c].size(); ++k) {
      const auto& range = f.requests[c].ranges(static_cast<int>(k));
      const std::string& bytes = reply.shards(static_cast<int>(k)).values();
      if (bytes.size() != static_cast<std::size_t>(range.count()) * sizeof(float)) {
        return absl::InvalidArgumentError(
            "variable shard " + range.name() + " on ps " + std::to_string(ps) + " answered " +
            std::to_string(bytes.size() / sizeof(float)) + " elements for a range of " +
            std::to_string(range.count()) + " (the model differs from the chief's)");
      }
      std::memcpy(params[pieces[c][k].variable].value.data() + pieces[c][k].offset, bytes.data(),
                  bytes.size());
    }
    // Pieces read at different steps (async): tag the next push with the oldest.
    info.ps_steps[ps] = std::min(info.ps_steps[ps], reply.step());
    info.incarnations[ps] = reply.incarnation();
    info.done = info.done || reply.done();
  }
  info.global_step = info.ps_steps.empty() ? 0 : info.ps_steps[0];
  return info;
}

absl::StatusOr<PushInfo> PsClient::Push(const std::vector<VariablePlacement>& placement,
                                        const std::vector<ParamBuffers>& params,
                                        const std::vector<std::int64_t>& ps_steps, int worker,
                                        double timeout_secs) {
  const std::size_t n = addresses_.size();
  FanOut<rpc::PushRequest, rpc::PushReply> f(n);
  for (std::size_t ps = 0; ps < n; ++ps) {
    f.requests[ps].set_step(ps_steps.at(ps));
    f.requests[ps].set_worker(worker);
  }
  for (std::size_t v = 0; v < placement.size(); ++v) {
    if (static_cast<std::int64_t>(params[v].gradient.size()) != placement[v].size) {
      return absl::InvalidArgumentError(
          "gradient of " + placement[v].name + " has " + std::to_string(params[v].gradient.size()) +
          " elements, the variable " + std::to_string(placement[v].size) +
          " (did train() write every gradient?)");
    }
    for (const auto& shard : placement[v].shards) {
      auto* g = f.requests[static_cast<std::size_t>(shard.ps)].add_gradients();
      g->set_name(shard.name);
      SetFloats(g->mutable_values(),
                params[v].gradient.subspan(static_cast<std::size_t>(shard.offset),
                                           static_cast<std::size_t>(shard.size)));
    }
  }
  std::vector<int> all;
  for (int i = 0; i < num_ps(); ++i) all.push_back(i);
  impl_->Run(f, all, timeout_secs, [](auto* async, auto* ctx, auto* req, auto* reply, auto done) {
    async->Push(ctx, req, reply, std::move(done));
  });
  PushInfo info;
  for (std::size_t ps = 0; ps < n; ++ps) {
    TAAS_RETURN_IF_ERROR(
        FromGrpc(f.statuses[ps], "ps " + std::to_string(ps) + " at " + addresses_[ps] + " Push"));
    switch (f.replies[ps].outcome()) {
      case rpc::PushReply::APPLIED:
        ++info.applied;
        break;
      case rpc::PushReply::STALE:
        ++info.stale;
        break;
      case rpc::PushReply::RESET:
        ++info.reset;
        break;
      case rpc::PushReply::DONE:
        info.done = true;
        break;
      default:
        break;
    }
    if (ps == 0) info.global_step = f.replies[ps].step();
  }
  return info;
}

absl::StatusOr<std::pair<std::int64_t, std::vector<ShardState>>> PsClient::Snapshot(
    int ps, double timeout_secs) {
  grpc::ClientContext ctx;
  ctx.set_deadline(Deadline(timeout_secs));
  rpc::SnapshotRequest req;
  rpc::SnapshotReply reply;
  TAAS_RETURN_IF_ERROR(
      FromGrpc(impl_->stubs[static_cast<std::size_t>(ps)]->Snapshot(&ctx, req, &reply),
               "ps " + std::to_string(ps) + " at " + address(ps) + " Snapshot"));
  std::vector<ShardState> shards;
  for (const auto& s : reply.shards()) {
    ShardState state{s.name(), FloatVector(s.values()), {}};
    for (const auto& slot : s.slots()) state.slots.push_back(FloatVector(slot));
    shards.push_back(std::move(state));
  }
  return std::make_pair(reply.step(), std::move(shards));
}

absl::Status PsClient::Shutdown(int ps, bool exit, double timeout_secs) {
  grpc::ClientContext ctx;
  ctx.set_deadline(Deadline(timeout_secs));
  rpc::ShutdownRequest req;
  req.set_exit(exit);
  rpc::ShutdownReply reply;
  return FromGrpc(impl_->stubs[static_cast<std::size_t>(ps)]->Shutdown(&ctx, req, &reply),
                  "ps " + std::to_string(ps) + " at " + address(ps) + " Shutdown");
}

}  // namespace taas::ps
