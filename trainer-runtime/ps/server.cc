#include "taas/ps/server.h"

#include <arpa/inet.h>

#include <chrono>

#include "ps.grpc.pb.h"
#include "rpc_util.h"

namespace taas::ps {

struct PsServer::Impl final : rpc::ParameterServer::CallbackService {
  ParameterStore* store = nullptr;
  Logger logger;
  std::unique_ptr<grpc::Server> server;
  std::mutex mu;
  std::condition_variable cv;
  bool exit_requested = false;  // guarded by mu

  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* ctx, const rpc::StatusRequest*,
                                      rpc::StatusReply* reply) override {
    auto s = store->GetStatus();
    reply->set_incarnation(s.incarnation);
    reply->set_initialized(s.initialized);
    reply->set_done(s.done);
    reply->set_step(s.step);
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerUnaryReactor* Initialize(grpc::CallbackServerContext* ctx,
                                       const rpc::InitializeRequest* req,
                                       rpc::InitializeReply*) override {
    TrainingSpec spec;
    spec.sync = req->sync();
    spec.replicas_to_aggregate = req->replicas_to_aggregate();
    spec.optimizer = FromProto(req->optimizer());
    spec.max_steps = req->max_steps();
    std::vector<ShardState> shards;
    shards.reserve(static_cast<std::size_t>(req->shards_size()));
    for (const auto& s : req->shards()) {
      ShardState state{s.name(), FloatVector(s.values()), {}};
      for (const auto& slot : s.slots()) state.slots.push_back(FloatVector(slot));
      shards.push_back(std::move(state));
    }
    absl::Status status = store->Initialize(spec, std::move(shards), req->step());
    if (status.ok()) {
      logger.Info("variables initialised by the chief",
                  {{"shards", req->shards_size()}, {"step", req->step()}, {"sync", req->sync()}});
    }
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(ToGrpc(status));
    return reactor;
  }

  grpc::ServerUnaryReactor* Pull(grpc::CallbackServerContext* ctx, const rpc::PullRequest* req,
                                 rpc::PullReply* reply) override {
    std::vector<std::string> names;
    names.reserve(static_cast<std::size_t>(req->ranges_size()));
    for (const auto& r : req->ranges()) names.push_back(r.name());
    int k = 0;
    absl::Status bad;
    auto step = store->Pull(names, [&](const std::string& name, std::span<const float> values) {
      const auto& r = req->ranges(k++);
      if (r.offset() < 0 || r.count() < 0 ||
          static_cast<std::size_t>(r.offset() + r.count()) > values.size()) {
        bad = absl::OutOfRangeError("range [" + std::to_string(r.offset()) + ", +" +
                                    std::to_string(r.count()) + ") is outside shard " + name);
        return;
      }
      auto* shard = reply->add_shards();
      shard->set_name(name);
      SetFloats(shard->mutable_values(), values.subspan(static_cast<std::size_t>(r.offset()),
                                                        static_cast<std::size_t>(r.count())));
    });
    if (step.ok() && !bad.ok()) step = bad;
    auto* reactor = ctx->DefaultReactor();
    if (step.ok()) {
      auto s = store->GetStatus();
      reply->set_step(*step);
      reply->set_done(s.done);
      reply->set_incarnation(s.incarnation);
    }
    reactor->Finish(ToGrpc(step.status()));
    return reactor;
  }

  grpc::ServerUnaryReactor* Push(grpc::CallbackServerContext* ctx, const rpc::PushRequest* req,
                                 rpc::PushReply* reply) override {
    auto* reactor = ctx->DefaultReactor();
    std::vector<Gradient> gradients;
    gradients.reserve(static_cast<std::size_t>(req->gradients_size()));
    for (const auto& g : req->gradients()) gradients.push_back({g.name(), Floats(g.values())});
    store->Push(
        req->step(), gradients,
        [reactor, reply](absl::StatusOr<PushResult> result) {
          if (result.ok()) {
            reply->set_step(result->step);
            switch (result->outcome) {
              case PushOutcome::kApplied:
                reply->set_outcome(rpc::PushReply::APPLIED);
                break;
              case PushOutcome::kStale:
                reply->set_outcome(rpc::PushReply::STALE);
                break;
              case PushOutcome::kReset:
                reply->set_outcome(rpc::PushReply::RESET);
                break;
              case PushOutcome::kDone:
                reply->set_outcome(rpc::PushReply::DONE);
                break;
            }
          }
          reactor->Finish(ToGrpc(result.status()));
        },
        req->worker());
    return reactor;
  }

  grpc::ServerUnaryReactor* Snapshot(grpc::CallbackServerContext* ctx, const rpc::SnapshotRequest*,
                                     rpc::SnapshotReply* reply) override {
    auto snapshot = store->Snapshot();
    if (snapshot.ok()) {
      reply->set_step(snapshot->first);
      for (const auto& s : snapshot->second) {
        auto* shard = reply->add_shards();
        shard->set_name(s.name);
        SetFloats(shard->mutable_values(), s.values);
        for (const auto& slot : s.slots) SetFloats(shard->add_slots(), slot);
      }
    }
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(ToGrpc(snapshot.status()));
    return reactor;
  }

  grpc::ServerUnaryReactor* Shutdown(grpc::CallbackServerContext* ctx,
                                     const rpc::ShutdownRequest* req,
                                     rpc::ShutdownReply*) override {
    store->MarkDone();
    logger.Info("training done", {{"exit", req->exit()}});
    if (req->exit()) {
      std::lock_guard<std::mutex> lock(mu);
      exit_requested = true;
      cv.notify_all();
    }
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

absl::StatusOr<std::unique_ptr<PsServer>> PsServer::Start(const std::string& address,
                                                          std::uint64_t incarnation,
                                                          const Logger& logger) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError("PS address " + address + " has no port");
  }
  std::string host = address.substr(0, colon);
  in_addr ignored;
  if (::inet_pton(AF_INET, host.c_str(), &ignored) != 1) host = "0.0.0.0";
  const std::string listen = host + ":" + address.substr(colon + 1);

  std::unique_ptr<PsServer> server(new PsServer());
  server->store_ = std::make_unique<ParameterStore>(incarnation);
  server->impl_ = std::make_unique<Impl>();
  server->impl_->store = server->store_.get();
  server->impl_->logger = logger;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &server->port_);
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
  builder.RegisterService(server->impl_.get());
  server->impl_->server = builder.BuildAndStart();
  if (!server->impl_->server || server->port_ == 0) {
    return absl::UnavailableError("cannot listen on " + listen + " (port in use?)");
  }
  return server;
}

PsServer::~PsServer() { Stop(); }

bool PsServer::WaitForExitRequest(double timeout_secs) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  if (timeout_secs < 0) {
    impl_->cv.wait(lock, [&] { return impl_->exit_requested; });
    return true;
  }
  return impl_->cv.wait_for(lock, std::chrono::duration<double>(timeout_secs),
                            [&] { return impl_->exit_requested; });
}

void PsServer::Stop() {
  if (impl_ && impl_->server) {
    // Unblock sync pushes still waiting so shutdown does not wait on them.
    store_->MarkDone();
    impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    impl_->server.reset();
  }
}

}  // namespace taas::ps
