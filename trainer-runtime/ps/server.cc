#include "taas/ps/server.h"

#include <arpa/inet.h>
#include <grpcpp/generic/async_generic_service.h>

#include <chrono>
#include <set>

#include "ps.grpc.pb.h"
#include "rpc_util.h"

namespace taas::ps {
namespace {

rpc::PushReply::Outcome ToProto(PushOutcome outcome) {
  switch (outcome) {
    case PushOutcome::kApplied:
      return rpc::PushReply::APPLIED;
    case PushOutcome::kStale:
      return rpc::PushReply::STALE;
    case PushOutcome::kReset:
      return rpc::PushReply::RESET;
    case PushOutcome::kDone:
      return rpc::PushReply::DONE;
  }
  return rpc::PushReply::DONE;
}

// The store of `lane`, or an error naming the lanes this server has.
absl::StatusOr<ParameterStore*> LaneStore(
    const std::vector<std::unique_ptr<ParameterStore>>& stores, int lane) {
  if (lane < 0 || lane >= static_cast<int>(stores.size())) {
    return absl::InvalidArgumentError("lane " + std::to_string(lane) +
                                      " requested, this parameter server has " +
                                      std::to_string(stores.size()) +
                                      " (TAAS_PS_LANES differs between this replica and the PS?)");
  }
  return stores[static_cast<std::size_t>(lane)].get();
}

using Stores = std::vector<std::unique_ptr<ParameterStore>>;

// Elements [offset, offset + count) of a store buffer as a slice that keeps the buffer alive until
// gRPC has sent it.
grpc::Slice ValueSlice(const std::shared_ptr<const std::vector<float>>& values, std::int64_t offset,
                       std::int64_t count) {
  // gRPC only reads send slices; the non-const pointer is its API's.
  return grpc::Slice(
      const_cast<float*>(values->data() + offset), static_cast<std::size_t>(count) * sizeof(float),
      [](void* owner) { delete static_cast<std::shared_ptr<const std::vector<float>>*>(owner); },
      new std::shared_ptr<const std::vector<float>>(values));
}

// Bytes of values per reply message after a push (the client's push pieces are this size too).
constexpr std::size_t kReplyPieceBytes = 4 << 20;

// Pull: answers one PullRequest with the header and slices that point into the store's
// copy-on-write value buffers (each slice keeps its buffer alive until gRPC has sent it).
class PullReactor final : public grpc::ServerGenericBidiReactor {
 public:
  explicit PullReactor(const Stores* stores) : stores_(stores) { StartRead(&in_); }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "pull without a request"));
      return;
    }
    rpc::PullRequest req;
    if (!BufferReader(in_).Parse(&req)) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "malformed PullRequest"));
      return;
    }
    auto store = LaneStore(*stores_, req.lane());
    if (!store.ok()) {
      Finish(ToGrpc(store.status()));
      return;
    }
    store_ = *store;
    std::vector<std::string> names;
    names.reserve(static_cast<std::size_t>(req.ranges_size()));
    for (const auto& r : req.ranges()) names.push_back(r.name());
    std::vector<std::shared_ptr<const std::vector<float>>> values;
    auto step = store_->PullShared(names, &values);
    if (!step.ok()) {
      Finish(ToGrpc(step.status()));
      return;
    }
    const auto status = store_->GetStatus();
    rpc::PullReplyHeader header;
    header.set_step(*step);
    header.set_done(status.done);
    header.set_incarnation(status.incarnation);
    std::vector<grpc::Slice> slices;
    slices.emplace_back(LengthPrefixed(header.SerializeAsString()));
    for (int k = 0; k < req.ranges_size(); ++k) {
      const auto& r = req.ranges(k);
      const auto& v = values[static_cast<std::size_t>(k)];
      if (r.offset() < 0 || r.count() < 0 ||
          static_cast<std::size_t>(r.offset() + r.count()) > v->size()) {
        Finish(grpc::Status(grpc::StatusCode::OUT_OF_RANGE, "range [" + std::to_string(r.offset()) +
                                                                ", +" + std::to_string(r.count()) +
                                                                ") is outside shard " + r.name()));
        return;
      }
      if (r.count() == 0) continue;
      slices.push_back(ValueSlice(v, r.offset(), r.count()));
    }
    out_ = grpc::ByteBuffer(slices.data(), slices.size());
    StartWriteAndFinish(&out_, grpc::WriteOptions(), grpc::Status::OK);
  }
  void OnDone() override { delete this; }

 private:
  const Stores* stores_;
  ParameterStore* store_ = nullptr;  // The request's lane.
  grpc::ByteBuffer in_, out_;
};

// Push: the header and gradient pieces, fed to the store as they arrive (read straight from the
// slices gRPC received into), then one PushReply.
class PushReactor final : public grpc::ServerGenericBidiReactor {
 public:
  explicit PushReactor(const Stores* stores) : stores_(stores) { StartRead(&in_); }
  void OnReadDone(bool ok) override {
    if (!ok) {  // The client sent everything.
      if (!stream_) {
        Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "push without a header"));
        return;
      }
      stream_->Finish([this](absl::StatusOr<PushResult> result) { Reply(std::move(result)); });
      return;
    }
    BufferReader reader(in_);
    if (!stream_) {
      rpc::PushHeader header;
      if (!reader.ParseLengthPrefixed(&header)) {
        Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "malformed PushHeader"));
        return;
      }
      std::vector<ParameterStore::GradientSize> sizes;
      sizes.reserve(static_cast<std::size_t>(header.gradients_size()));
      for (const auto& g : header.gradients()) sizes.push_back({g.name(), g.size()});
      if (header.pull_values()) {
        for (const auto& g : header.gradients()) names_.push_back(g.name());
        pull_values_ = true;
      }
      auto store = LaneStore(*stores_, header.lane());
      if (!store.ok()) {
        Finish(ToGrpc(store.status()));
        return;
      }
      store_ = *store;
      auto stream = store_->BeginPush(header.step(), std::move(sizes), header.worker());
      if (!stream.ok()) {
        Finish(ToGrpc(stream.status()));
        return;
      }
      stream_ = std::move(*stream);
    }
    absl::Status added;
    reader.ForEachRest([&](const char* data, std::size_t size) {
      if (added.ok()) added = stream_->Add(data, size);
    });
    if (!added.ok()) {
      Finish(ToGrpc(added));
      return;
    }
    in_.Clear();
    StartRead(&in_);
  }
  void OnDone() override { delete this; }

 private:
  void Reply(absl::StatusOr<PushResult> result) {
    if (!result.ok()) {
      Finish(ToGrpc(result.status()));
      return;
    }
    rpc::PushReply reply;
    reply.set_outcome(ToProto(result->outcome));
    reply.set_step(result->step);
    reply.set_wait_secs(result->wait_secs);
    std::vector<std::shared_ptr<const std::vector<float>>> values;
    if (pull_values_ && result->outcome == PushOutcome::kApplied) {
      // Not an error when the values cannot be read (a reset since): the client pulls instead.
      auto step = store_->PullShared(names_, &values);
      if (step.ok()) {
        const auto status = store_->GetStatus();
        reply.set_values(true);
        reply.set_values_step(*step);
        reply.set_done(status.done);
        reply.set_incarnation(status.incarnation);
      } else {
        values.clear();
      }
    }
    // The reply header leads the first message; values follow in pieces of kReplyPieceBytes.
    std::vector<std::vector<grpc::Slice>> bodies(1);
    bodies[0].emplace_back(LengthPrefixed(reply.SerializeAsString()));
    std::size_t open = 0;
    for (const auto& v : values) {
      std::int64_t offset = 0;
      const auto size = static_cast<std::int64_t>(v->size());
      while (offset < size) {
        if (open == kReplyPieceBytes) {
          bodies.emplace_back();
          open = 0;
        }
        const auto take = std::min<std::int64_t>(
            size - offset, static_cast<std::int64_t>((kReplyPieceBytes - open) / sizeof(float)));
        bodies.back().push_back(ValueSlice(v, offset, take));
        open += static_cast<std::size_t>(take) * sizeof(float);
        offset += take;
      }
    }
    for (auto& body : bodies) out_.emplace_back(body.data(), body.size());
    WriteNext();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {  // The client went away (a failed last write has finished the call already).
      if (next_ + 1 < out_.size())
        Finish(grpc::Status(grpc::StatusCode::CANCELLED, "push reply not delivered"));
      return;
    }
    ++next_;
    WriteNext();
  }
  // The last message carries the status too: a small reply is one write.
  void WriteNext() {
    if (next_ + 1 == out_.size()) {
      StartWriteAndFinish(&out_[next_], grpc::WriteOptions(), grpc::Status::OK);
    } else {
      StartWrite(&out_[next_]);
    }
  }

  const Stores* stores_;
  ParameterStore* store_ = nullptr;  // The header's lane.
  grpc::ByteBuffer in_;
  std::vector<grpc::ByteBuffer> out_;
  std::size_t next_ = 0;
  std::unique_ptr<ParameterStore::PushStream> stream_;
  bool pull_values_ = false;
  std::vector<std::string> names_;  // The header's shards, when pull_values_.
};

class Unimplemented final : public grpc::ServerGenericBidiReactor {
 public:
  explicit Unimplemented(const std::string& method) {
    Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no method " + method));
  }
  void OnDone() override { delete this; }
};

}  // namespace

// The raw-framed data path (ps.proto): methods the protobuf service does not declare land here.
class TensorService final : public grpc::CallbackGenericService {
 public:
  explicit TensorService(const Stores* stores) : stores_(stores) {}
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    if (ctx->method() == kPullMethod) return new PullReactor(stores_);
    if (ctx->method() == kPushMethod) return new PushReactor(stores_);
    return new Unimplemented(ctx->method());
  }

 private:
  const Stores* stores_;
};

struct PsServer::Impl final : rpc::ParameterServer::CallbackService {
  const Stores* stores = nullptr;
  Logger logger;
  std::unique_ptr<TensorService> tensors;
  std::unique_ptr<grpc::Server> server;
  std::mutex mu;
  std::condition_variable cv;
  std::set<int> exit_lanes;     // guarded by mu: lanes whose Shutdown asked to exit
  bool exit_requested = false;  // guarded by mu: every lane asked

  // Answers a unary call with `status` when the request names no lane of this server.
  template <class Request>
  ParameterStore* Lane(grpc::CallbackServerContext* ctx, const Request& req,
                       grpc::ServerUnaryReactor** reactor) {
    auto store = LaneStore(*stores, req.lane());
    if (store.ok()) return *store;
    *reactor = ctx->DefaultReactor();
    (*reactor)->Finish(ToGrpc(store.status()));
    return nullptr;
  }

  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* ctx,
                                      const rpc::StatusRequest* req,
                                      rpc::StatusReply* reply) override {
    grpc::ServerUnaryReactor* refused = nullptr;
    ParameterStore* store = Lane(ctx, *req, &refused);
    if (store == nullptr) return refused;
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
    grpc::ServerUnaryReactor* refused = nullptr;
    ParameterStore* store = Lane(ctx, *req, &refused);
    if (store == nullptr) return refused;
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
      logger.Info("variables initialised by the chief", {{"lane", req->lane()},
                                                         {"shards", req->shards_size()},
                                                         {"step", req->step()},
                                                         {"sync", req->sync()}});
    }
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(ToGrpc(status));
    return reactor;
  }

  grpc::ServerUnaryReactor* Snapshot(grpc::CallbackServerContext* ctx,
                                     const rpc::SnapshotRequest* req,
                                     rpc::SnapshotReply* reply) override {
    grpc::ServerUnaryReactor* refused = nullptr;
    ParameterStore* store = Lane(ctx, *req, &refused);
    if (store == nullptr) return refused;
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
    grpc::ServerUnaryReactor* refused = nullptr;
    ParameterStore* store = Lane(ctx, *req, &refused);
    if (store == nullptr) return refused;
    store->MarkDone();
    logger.Info("training done", {{"lane", req->lane()}, {"exit", req->exit()}});
    if (req->exit()) {
      std::lock_guard<std::mutex> lock(mu);
      exit_lanes.insert(req->lane());
      exit_requested = exit_lanes.size() == stores->size();
      if (exit_requested) cv.notify_all();
    }
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

absl::StatusOr<std::unique_ptr<PsServer>> PsServer::Start(const std::string& address,
                                                          std::uint64_t incarnation,
                                                          const Logger& logger, int lanes) {
  if (lanes < 1) return absl::InvalidArgumentError("a PS needs at least one lane");
  auto colon = address.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError("PS address " + address + " has no port");
  }
  std::string host = address.substr(0, colon);
  in_addr ignored;
  if (::inet_pton(AF_INET, host.c_str(), &ignored) != 1) host = "0.0.0.0";
  const std::string listen = host + ":" + address.substr(colon + 1);

  std::unique_ptr<PsServer> server(new PsServer());
  for (int lane = 0; lane < lanes; ++lane) {
    server->stores_.push_back(std::make_unique<ParameterStore>(incarnation));
  }
  server->impl_ = std::make_unique<Impl>();
  server->impl_->stores = &server->stores_;
  server->impl_->logger = logger;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &server->port_);
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
  SetBulkTransportArgs(
      [&](const char* name, int value) { builder.AddChannelArgument(name, value); });
  builder.RegisterService(server->impl_.get());
  server->impl_->tensors = std::make_unique<TensorService>(&server->stores_);
  builder.RegisterCallbackGenericService(server->impl_->tensors.get());
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
    for (auto& store : stores_) store->MarkDone();
    impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    impl_->server.reset();
  }
}

}  // namespace taas::ps
