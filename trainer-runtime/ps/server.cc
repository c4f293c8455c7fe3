#include "taas/ps/server.h"

#include <arpa/inet.h>
#include <grpcpp/alarm.h>
#include <grpcpp/generic/async_generic_service.h>

#include <atomic>
#include <chrono>
#include <set>

#include "ps.grpc.pb.h"
#include "rpc_util.h"
#include "taas/contract/env.h"
#include "taas/contract/job_secret.h"
#include "wire.h"

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
    return absl::InvalidArgumentError(
        "lane " + std::to_string(lane) + " requested, this parameter server has " +
        std::to_string(stores.size()) + " (" + std::string(contract::kPsLanesEnv) +
        " differs between this replica and the PS?)");
  }
  return stores[static_cast<std::size_t>(lane)].get();
}

using Stores = std::vector<std::unique_ptr<ParameterStore>>;

// One line per call refused for coming from an older incarnation of its replica (the caller exits
// on the refusal, so this is once per fenced process and PS).
void LogFenced(const Logger& logger, const grpc::Status& refusal) {
  const absl::Status status = FromGrpc(refusal, "call");
  if (IsFenced(status)) {
    logger.Warning("refused an older incarnation of a replica",
                   {{"error", std::string(refusal.error_message())}});
  }
}

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

std::chrono::system_clock::time_point After(double secs) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(
             std::chrono::duration<double>(secs));
}

// A data-path call whose request must arrive in full within PsLimits::read_timeout_secs: a peer
// that stalls is answered DEADLINE_EXCEEDED, naming what the PS waited for. The deadline's alarm
// runs on another thread than the reactor's callbacks, so the call is ended exactly once by
// whichever of the two comes first (the state under mu_), and the reactor lives until both let go
// of it.
class GuardedReactor : public grpc::ServerGenericBidiReactor {
 public:
  void OnDone() final {
    ReleaseServerState();
    Unref();
  }

 protected:
  // Lets go of what the call holds of the server (a store's push stream). Called when gRPC is done
  // with the call, which the server's shutdown waits for: the reactor itself may outlive the
  // server, until its cancelled alarm's callback has run on gRPC's executor, so its destructor
  // must not touch a store.
  virtual void ReleaseServerState() {}

  GuardedReactor(double read_timeout_secs, std::string waiting_for)
      : timeout_secs_(read_timeout_secs), waiting_for_(std::move(waiting_for)) {
    alarm_.Set(After(read_timeout_secs), [this](bool fired) {
      if (fired) OnDeadline();
      Unref();
    });
  }
  virtual ~GuardedReactor() = default;

  // True while the request is still arriving and the deadline has not ended the call.
  bool Reading() {
    std::lock_guard<std::mutex> lock(mu_);
    return state_ == State::kReading;
  }
  // Starts the next read unless the deadline ended the call meanwhile.
  void ReadNext(grpc::ByteBuffer* in) {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ == State::kReading) StartRead(in);
  }
  // The request arrived in full: the deadline no longer applies. False when it ended the call.
  bool ReadsComplete() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (state_ != State::kReading) return false;
      state_ = State::kAnswering;
    }
    alarm_.Cancel();
    return true;
  }
  // Ends the call with `status` unless the deadline did already.
  void FinishOnce(const grpc::Status& status) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (state_ == State::kFinished) return;
      state_ = State::kFinished;
    }
    alarm_.Cancel();
    Finish(status);
  }

 private:
  enum class State { kReading, kAnswering, kFinished };

  void OnDeadline() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (state_ != State::kReading) return;
      state_ = State::kFinished;
    }
    Finish(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                        "waited " + std::to_string(timeout_secs_) + "s for " + waiting_for_ +
                            " (PsLimits::read_timeout_secs, TAAS_WAIT_TIMEOUT_SECS)"));
  }
  void Unref() {
    if (refs_.fetch_sub(1) == 1) delete this;
  }

  const double timeout_secs_;
  const std::string waiting_for_;
  grpc::Alarm alarm_;
  std::atomic<int> refs_{2};  // gRPC's (until OnDone) and the alarm's (until its callback ran).
  std::mutex mu_;
  State state_ = State::kReading;  // guarded by mu_
};

// Pull: answers one PullRequest with the header and slices that point into the store's
// copy-on-write value buffers (each slice keeps its buffer alive until gRPC has sent it).
class PullReactor final : public GuardedReactor {
 public:
  PullReactor(const Stores* stores, const PsLimits& limits)
      : GuardedReactor(limits.read_timeout_secs, "a PullRequest"),
        stores_(stores),
        limits_(limits) {
    StartRead(&in_);
  }
  void OnReadDone(bool ok) override {
    if (!ReadsComplete()) return;  // The deadline answered the call.
    if (!ok) {
      FinishOnce(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "pull without a request"));
      return;
    }
    grpc::Status answer = Answer();
    if (!answer.ok()) FinishOnce(answer);
  }

 private:
  grpc::Status Answer() {
    rpc::PullRequest req;
    if (auto s = ParsePullRequest(in_, limits_, &req); !s.ok()) return s;
    in_.Clear();
    auto store = LaneStore(*stores_, req.lane());
    if (!store.ok()) return ToGrpc(store.status());
    std::vector<std::string> names;
    names.reserve(static_cast<std::size_t>(req.ranges_size()));
    for (const auto& r : req.ranges()) names.push_back(r.name());
    std::vector<std::shared_ptr<const std::vector<float>>> values;
    auto step = (*store)->PullShared(names, &values);
    if (!step.ok()) return ToGrpc(step.status());
    const auto status = (*store)->GetStatus();
    // A pull asks for each element at most once: more than the lane holds is not a pull.
    std::int64_t requested = 0;
    for (int k = 0; k < req.ranges_size(); ++k) {
      const auto& r = req.ranges(k);
      if (auto s = CheckRange(r, values[static_cast<std::size_t>(k)]->size()); !s.ok()) return s;
      requested += r.count();
      if (requested > status.elements) {
        return grpc::Status(grpc::StatusCode::OUT_OF_RANGE, "pull asks for more than the " +
                                                                std::to_string(status.elements) +
                                                                " elements this lane holds");
      }
    }
    rpc::PullReplyHeader header;
    header.set_step(*step);
    header.set_done(status.done);
    header.set_incarnation(status.incarnation);
    std::vector<grpc::Slice> slices;
    slices.emplace_back(LengthPrefixed(header.SerializeAsString()));
    for (int k = 0; k < req.ranges_size(); ++k) {
      const auto& r = req.ranges(k);
      if (r.count() == 0) continue;
      slices.push_back(ValueSlice(values[static_cast<std::size_t>(k)], r.offset(), r.count()));
    }
    out_ = grpc::ByteBuffer(slices.data(), slices.size());
    StartWriteAndFinish(&out_, grpc::WriteOptions(), grpc::Status::OK);
    return grpc::Status::OK;
  }

  const Stores* stores_;
  const PsLimits limits_;
  grpc::ByteBuffer in_, out_;
};

// Push: the header and gradient pieces, fed to the store as they arrive (read straight from the
// slices gRPC received into), then one PushReply.
class PushReactor final : public GuardedReactor {
 public:
  PushReactor(const Stores* stores, const PsLimits& limits)
      : GuardedReactor(limits.read_timeout_secs, "the rest of a push"),
        stores_(stores),
        limits_(limits) {
    StartRead(&in_);
  }
  void OnReadDone(bool ok) override {
    if (!Reading()) return;  // The deadline answered the call.
    if (!ok) {               // The client sent everything.
      if (!stream_) {
        FinishOnce(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "push without a header"));
        return;
      }
      if (!ReadsComplete()) return;
      stream_->Finish([this](absl::StatusOr<PushResult> result) { Reply(std::move(result)); });
      return;
    }
    grpc::Status added = Consume();
    if (!added.ok()) {
      FinishOnce(added);
      return;
    }
    in_.Clear();
    ReadNext(&in_);
  }

 private:
  // One received message: the header (first) and gradient bytes.
  grpc::Status Consume() {
    BufferReader reader(in_);
    if (!stream_) {
      rpc::PushHeader header;
      if (auto s = ParseLengthPrefixed(reader, limits_.max_header_bytes, "PushHeader", &header);
          !s.ok()) {
        return s;
      }
      std::vector<ParameterStore::GradientSize> sizes;
      sizes.reserve(static_cast<std::size_t>(header.gradients_size()));
      for (const auto& g : header.gradients()) sizes.push_back({g.name(), g.size()});
      if (header.pull_values()) {
        for (const auto& g : header.gradients()) names_.push_back(g.name());
        pull_values_ = true;
      }
      auto store = LaneStore(*stores_, header.lane());
      if (!store.ok()) return ToGrpc(store.status());
      store_ = *store;
      auto stream = store_->BeginPush(header.step(), std::move(sizes), header.worker());
      if (!stream.ok()) return ToGrpc(stream.status());
      stream_ = std::move(*stream);
    } else if (reader.remaining() == 0) {
      // Every message after the header carries bytes: a stream of empty ones is not a push.
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "push message without bytes");
    }
    absl::Status added;
    reader.ForEachRest([&](const char* data, std::size_t size) {
      if (added.ok()) added = stream_->Add(data, size);
    });
    return ToGrpc(added);
  }

  void Reply(absl::StatusOr<PushResult> result) {
    if (!result.ok()) {
      FinishOnce(ToGrpc(result.status()));
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
        FinishOnce(grpc::Status(grpc::StatusCode::CANCELLED, "push reply not delivered"));
      return;
    }
    ++next_;
    WriteNext();
  }
  void ReleaseServerState() override {
    stream_.reset();
    store_ = nullptr;
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
  const PsLimits limits_;
  ParameterStore* store_ = nullptr;  // The header's lane.
  grpc::ByteBuffer in_;
  std::vector<grpc::ByteBuffer> out_;
  std::size_t next_ = 0;
  std::unique_ptr<ParameterStore::PushStream> stream_;
  bool pull_values_ = false;
  std::vector<std::string> names_;  // The header's shards, when pull_values_.
};

// Answers a data-path call at once with `status` (unknown method, refused credentials).
class Refused final : public grpc::ServerGenericBidiReactor {
 public:
  explicit Refused(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace

// The raw-framed data path (ps.proto): methods the protobuf service does not declare land here.
// Credentials are checked before a byte of the request is read.
class TensorService final : public grpc::CallbackGenericService {
 public:
  TensorService(const Stores* stores, const PsTokens* tokens, IncarnationFence* fence,
                const Logger* logger, const PsLimits& limits)
      : stores_(stores), tokens_(tokens), fence_(fence), logger_(logger), limits_(limits) {}
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    grpc::Status allowed =
        Authorize(ctx->client_metadata(), *tokens_, /*chief_only=*/false, *fence_);
    if (!allowed.ok()) {
      LogFenced(*logger_, allowed);
      return new Refused(allowed);
    }
    if (ctx->method() == kPullMethod) return new PullReactor(stores_, limits_);
    if (ctx->method() == kPushMethod) return new PushReactor(stores_, limits_);
    return new Refused(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no method " + ctx->method()));
  }

 private:
  const Stores* stores_;
  const PsTokens* tokens_;
  IncarnationFence* fence_;
  const Logger* logger_;
  const PsLimits limits_;
};

struct PsServer::Impl final : rpc::ParameterServer::CallbackService {
  const Stores* stores = nullptr;
  PsTokens tokens;
  // The highest incarnation of each replica that called (taas/base/fence.h): every call passes it.
  IncarnationFence fence;
  Logger logger;
  std::unique_ptr<TensorService> tensors;
  std::unique_ptr<grpc::Server> server;
  std::mutex mu;
  std::condition_variable cv;
  std::set<int> exit_lanes;              // guarded by mu: lanes whose Shutdown asked to exit
  bool exit_requested = false;           // guarded by mu: every lane asked
  std::optional<SavedCheckpoint> saved;  // guarded by mu: the chief's last CheckpointSaved

  // The request's lane; nullptr after answering the call when its credentials are refused
  // (`chief_only`: Initialize, Snapshot, Shutdown, CheckpointSaved) or it names no lane of this
  // server.
  template <class Request>
  ParameterStore* Admit(grpc::CallbackServerContext* ctx, const Request& req, bool chief_only,
                        grpc::ServerUnaryReactor** reactor) {
    grpc::Status refusal = Authorize(ctx->client_metadata(), tokens, chief_only, fence);
    LogFenced(logger, refusal);
    if (refusal.ok()) {
      auto store = LaneStore(*stores, req.lane());
      if (store.ok()) return *store;
      refusal = ToGrpc(store.status());
    }
    *reactor = ctx->DefaultReactor();
    (*reactor)->Finish(refusal);
    return nullptr;
  }

  // The shards of an InitializeRequest; InvalidArgument when a value is not whole floats, or a
  // shard's variable is not the start of its name (a shard is named after its variable).
  static absl::StatusOr<std::vector<ShardState>> Shards(const rpc::InitializeRequest& req) {
    std::vector<ShardState> shards;
    shards.reserve(static_cast<std::size_t>(req.shards_size()));
    for (const auto& s : req.shards()) {
      if (!s.name().starts_with(s.variable())) {
        return absl::InvalidArgumentError(
            "shard " + s.name() + ": its variable must be the start of its name, got " +
            std::to_string(s.variable().size()) + " bytes that are not");
      }
      ShardState state{s.name(), {}, {}, s.variable()};
      TAAS_ASSIGN_OR_RETURN(state.values, FloatVector(s.values(), "shard " + s.name()));
      for (const auto& slot : s.slots()) {
        TAAS_ASSIGN_OR_RETURN(state.slots.emplace_back(),
                              FloatVector(slot, "a slot of shard " + s.name()));
      }
      shards.push_back(std::move(state));
    }
    return shards;
  }

  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* ctx,
                                      const rpc::StatusRequest* req,
                                      rpc::StatusReply* reply) override {
    grpc::ServerUnaryReactor* refused = nullptr;
    ParameterStore* store = Admit(ctx, *req, /*chief_only=*/false, &refused);
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
    ParameterStore* store = Admit(ctx, *req, /*chief_only=*/true, &refused);
    if (store == nullptr) return refused;
    TrainingSpec spec;
    spec.sync = req->sync();
    spec.replicas_to_aggregate = req->replicas_to_aggregate();
    spec.optimizer = FromProto(req->optimizer());
    spec.max_steps = req->max_steps();
    auto shards = Shards(*req);
    absl::Status status = shards.status();
    if (status.ok()) status = store->Initialize(spec, std::move(*shards), req->step());
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
    ParameterStore* store = Admit(ctx, *req, /*chief_only=*/true, &refused);
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
    ParameterStore* store = Admit(ctx, *req, /*chief_only=*/true, &refused);
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

  grpc::ServerUnaryReactor* CheckpointSaved(grpc::CallbackServerContext* ctx,
                                            const rpc::CheckpointSavedRequest* req,
                                            rpc::CheckpointSavedReply*) override {
    grpc::ServerUnaryReactor* refused = nullptr;
    if (Admit(ctx, *req, /*chief_only=*/true, &refused) == nullptr) return refused;
    logger.Info("the chief saved the job's state", {{"lane", req->lane()}, {"step", req->step()}});
    {
      std::lock_guard<std::mutex> lock(mu);
      saved = SavedCheckpoint{req->step(), std::chrono::steady_clock::now()};
    }
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

absl::StatusOr<BindChoice> ChooseBindHost(const std::string& address, const std::string& pod_ip) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError("PS address " + address + " has no port");
  }
  const std::string port = address.substr(colon + 1);
  auto is_ip = [](const std::string& host, int family) {
    unsigned char ignored[sizeof(in6_addr)];
    return ::inet_pton(family, host.c_str(), ignored) == 1;
  };
  auto listen = [&](const std::string& host) {
    return is_ip(host, AF_INET6) ? "[" + host + "]:" + port : host + ":" + port;
  };
  if (!pod_ip.empty()) {
    if (!is_ip(pod_ip, AF_INET) && !is_ip(pod_ip, AF_INET6)) {
      return absl::InvalidArgumentError("pod IP \"" + pod_ip + "\" is not an IP address");
    }
    return BindChoice{listen(pod_ip), ""};
  }
  std::string host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (is_ip(host, AF_INET) || is_ip(host, AF_INET6)) return BindChoice{listen(host), ""};
  return BindChoice{"0.0.0.0:" + port,
                    "TF_CONFIG names this PS by host name \"" + host +
                        "\" and no pod IP is set: listening on every interface (set " +
                        std::string(contract::kPodIpEnv) + " to bind the pod's own address)"};
}

absl::StatusOr<std::unique_ptr<PsServer>> PsServer::Start(const PsServerOptions& options,
                                                          std::uint64_t incarnation,
                                                          const Logger& logger) {
  if (options.lanes < 1) return absl::InvalidArgumentError("a PS needs at least one lane");
  if (options.tokens.job.empty() || options.tokens.chief.empty()) {
    return absl::InvalidArgumentError("a PS needs the job and the chief token (" +
                                      std::string(contract::kJobTokenFileEnv) + ", " +
                                      std::string(contract::kChiefTokenFileEnv) + ")");
  }
  TAAS_ASSIGN_OR_RETURN(BindChoice bind, ChooseBindHost(options.address, options.pod_ip));
  if (!bind.warning.empty()) logger.Warning(bind.warning, {{"listen", bind.listen}});

  std::unique_ptr<PsServer> server(new PsServer());
  for (int lane = 0; lane < options.lanes; ++lane) {
    server->stores_.push_back(std::make_unique<ParameterStore>(incarnation));
  }
  server->impl_ = std::make_unique<Impl>();
  server->impl_->stores = &server->stores_;
  server->impl_->tokens = options.tokens;
  server->impl_->logger = logger;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(bind.listen, grpc::InsecureServerCredentials(), &server->port_);
  const int max_message = MaxMessageBytes(options.limits);
  builder.SetMaxReceiveMessageSize(max_message);
  builder.SetMaxSendMessageSize(max_message);
  SetBulkTransportArgs(
      [&](const char* name, int value) { builder.AddChannelArgument(name, value); });
  builder.RegisterService(server->impl_.get());
  server->impl_->tensors = std::make_unique<TensorService>(&server->stores_, &server->impl_->tokens,
                                                           &server->impl_->fence,
                                                           &server->impl_->logger, options.limits);
  builder.RegisterCallbackGenericService(server->impl_->tensors.get());
  server->impl_->server = builder.BuildAndStart();
  if (!server->impl_->server || server->port_ == 0) {
    return absl::UnavailableError("cannot listen on " + bind.listen + " (port in use?)");
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

std::optional<SavedCheckpoint> PsServer::LastSavedCheckpoint() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->saved;
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
