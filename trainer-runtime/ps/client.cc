#include "taas/ps/client.h"

#include <grpcpp/generic/generic_stub.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>

#include "ps.grpc.pb.h"
#include "rpc_util.h"
#include "taas/contract/job_secret.h"
#include "wire.h"

namespace taas::ps {
namespace {

std::chrono::system_clock::time_point Deadline(double secs) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(
             std::chrono::duration<double>(secs));
}

// Sets a call's deadline, credentials and caller: the job token always, the chief token for the
// calls only the chief may make (when this replica has it), and the replica's name and
// incarnation when it has a name (the PS fences older incarnations: taas/base/fence.h).
void PrepareCall(grpc::ClientContext& context, double timeout_secs, const PsTokens& tokens,
                 const ReplicaIncarnation& caller, bool chief_call) {
  context.set_deadline(Deadline(timeout_secs));
  context.AddMetadata(std::string(contract::kJobTokenMetadata), tokens.job);
  if (chief_call && !tokens.chief.empty()) {
    context.AddMetadata(std::string(contract::kChiefTokenMetadata), tokens.chief);
  }
  if (!caller.replica.empty()) {
    context.AddMetadata(std::string(contract::kReplicaMetadata), caller.replica);
    context.AddMetadata(std::string(contract::kReplicaIncarnationMetadata),
                        std::to_string(caller.incarnation));
  }
}

// Waits for asynchronous calls to complete, call i to the PS task peers[i] names (each has a
// deadline, so this ends by the latest of them). A stall watch, when given, sees the wait and
// names the tasks whose calls are still out.
class Countdown {
 public:
  explicit Countdown(std::vector<std::string> peers)
      : peers_(std::move(peers)), done_(peers_.size(), false), left_(peers_.size()) {}
  void Done(std::size_t call) {
    std::lock_guard<std::mutex> lock(mu_);
    done_[call] = true;
    if (--left_ == 0) cv_.notify_all();
  }
  void Wait(StallWatch* stalls) {
    StallWatch::Wait watched;
    if (stalls != nullptr) watched = stalls->Begin([this] { return Awaited(); });
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return left_ == 0; });
  }

 private:
  // The PS tasks of the calls still out, each once, in call order.
  std::string Awaited() {
    std::lock_guard<std::mutex> lock(mu_);
    std::string names;
    for (std::size_t i = 0; i < peers_.size(); ++i) {
      if (done_[i] || (" " + names + ",").find(" " + peers_[i] + ",") != std::string::npos)
        continue;
      names += (names.empty() ? "" : ", ") + peers_[i];
    }
    return names;
  }

  const std::vector<std::string> peers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<bool> done_;  // guarded by mu_
  std::size_t left_;        // guarded by mu_
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
  std::vector<std::unique_ptr<grpc::GenericStub>> generic;  // The raw-framed Pull and Push.

  // Runs call i of `f` on PS ps_of_call[i], all at once, and waits for every one.
  template <class Request, class Reply, class Call>
  void Run(FanOut<Request, Reply>& f, const std::vector<int>& ps_of_call,
           const std::vector<std::string>& peers, double timeout_secs, const PsTokens& tokens,
           const ReplicaIncarnation& caller, StallWatch* stalls, Call call) {
    Countdown countdown(peers);
    for (std::size_t i = 0; i < ps_of_call.size(); ++i) {
      PrepareCall(f.contexts[i], timeout_secs, tokens, caller, /*chief_call=*/false);
      call(stubs[static_cast<std::size_t>(ps_of_call[i])]->async(), &f.contexts[i], &f.requests[i],
           &f.replies[i], [&f, i, &countdown](grpc::Status s) {
             f.statuses[i] = std::move(s);
             countdown.Done(i);
           });
    }
    countdown.Wait(stalls);
  }
};

PsClient::PsClient(std::vector<std::string> addresses, const PsClientOptions& options,
                   const Logger& logger)
    : addresses_(std::move(addresses)),
      logger_(logger),
      chunk_bytes_(options.chunk_bytes),
      lanes_(std::max(options.lanes, 1)),
      tokens_(options.tokens),
      caller_(options.caller),
      limits_(options.limits),
      stalls_(options.stalls),
      impl_(std::make_unique<Impl>()) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(MaxMessageBytes(limits_));
  args.SetMaxSendMessageSize(MaxMessageBytes(limits_));
  // Reconnect quickly when a PS restarts at the same address.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  SetBulkTransportArgs([&](const char* name, int value) { args.SetInt(name, value); });
  for (const auto& a : addresses_) {
    for (int lane = 0; lane < lanes_; ++lane) {
      // A connection of its own per lane: channels with different arguments never share one.
      grpc::ChannelArguments lane_args = args;
      lane_args.SetInt("taas.ps.lane", lane);
      auto channel = grpc::CreateCustomChannel(a, grpc::InsecureChannelCredentials(), lane_args);
      impl_->stubs.push_back(rpc::ParameterServer::NewStub(channel));
      impl_->generic.push_back(std::make_unique<grpc::GenericStub>(channel));
    }
  }
}

PsClient::~PsClient() = default;

std::string PsClient::Describe(int ps) const {
  const int task = ps / lanes_;
  return "ps " + std::to_string(task) +
         (lanes_ > 1 ? " lane " + std::to_string(lane(ps)) : std::string()) + " at " + address(ps);
}

std::string PsClient::Peers() const {
  std::string peers;
  for (std::size_t task = 0; task < addresses_.size(); ++task) {
    peers += (peers.empty() ? "" : ", ") + PeerOf(static_cast<int>(task) * lanes_);
  }
  return peers;
}

absl::StatusOr<std::vector<PsStatus>> PsClient::Statuses(double timeout_secs) {
  const auto n = static_cast<std::size_t>(num_ps());
  FanOut<rpc::StatusRequest, rpc::StatusReply> f(n);
  std::vector<int> all;
  std::vector<std::string> peers;
  for (int i = 0; i < num_ps(); ++i) {
    all.push_back(i);
    peers.push_back(PeerOf(i));
    f.requests[static_cast<std::size_t>(i)].set_lane(lane(i));
  }
  impl_->Run(f, all, peers, timeout_secs, tokens_, caller_, stalls_,
             [](auto* async, auto* ctx, auto* req, auto* reply, auto done) {
               async->GetStatus(ctx, req, reply, std::move(done));
             });
  std::vector<PsStatus> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    TAAS_RETURN_IF_ERROR(FromGrpc(f.statuses[i], Describe(static_cast<int>(i)) + " GetStatus"));
    out[i] = {f.replies[i].incarnation(), f.replies[i].initialized(), f.replies[i].done(),
              f.replies[i].step()};
  }
  return out;
}

absl::StatusOr<std::vector<PsStatus>> PsClient::WaitForServers(
    double timeout_secs, const std::function<bool()>& stopped) {
  const auto start = std::chrono::steady_clock::now();
  double backoff = 0.1;
  bool logged = false;
  StallWatch::Wait watched;
  if (stalls_ != nullptr) watched = stalls_->Begin([this] { return Peers(); });
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
    // The backoff in slices, so that a termination ends the wait at once.
    const auto resume = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(backoff));
    while (std::chrono::steady_clock::now() < resume) {
      if (stopped && stopped()) {
        return absl::CancelledError("stopped waiting for the parameter servers (" + Peers() +
                                    "): the replica is terminating");
      }
      std::this_thread::sleep_until(
          std::min(resume, std::chrono::steady_clock::now() + std::chrono::milliseconds(250)));
    }
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
  req.set_lane(lane(ps));
  for (auto& s : shards) {
    auto* shard = req.add_shards();
    shard->set_name(s.name);
    shard->set_variable(s.variable);
    SetFloats(shard->mutable_values(), s.values);
    for (const auto& slot : s.slots) SetFloats(shard->add_slots(), slot);
  }
  grpc::ClientContext ctx;
  PrepareCall(ctx, timeout_secs, tokens_, caller_, /*chief_call=*/true);
  rpc::InitializeReply reply;
  return FromGrpc(impl_->stubs[static_cast<std::size_t>(ps)]->Initialize(&ctx, req, &reply),
                  Describe(ps) + " Initialize");
}

absl::StatusOr<PullInfo> PsClient::Pull(const std::vector<VariablePlacement>& placement,
                                        const std::vector<ParamBuffers>& params,
                                        double timeout_secs) {
  const auto n = static_cast<std::size_t>(num_ps());
  for (std::size_t v = 0; v < placement.size(); ++v) {
    if (static_cast<std::int64_t>(params[v].value.size()) != placement[v].size) {
      return absl::InvalidArgumentError(
          "variable " + placement[v].name + " has " + std::to_string(params[v].value.size()) +
          " elements, its placement " + std::to_string(placement[v].size));
    }
  }
  // Pieces of at most chunk_bytes_, packed into calls of at most chunk_bytes_ per PS; every PS
  // task gets at least one call (lane 0 reports its step even when it holds nothing of this
  // model); other lanes only when they hold something.
  struct Piece {
    float* out;  // Where the piece's values go.
    std::int64_t count;
  };
  struct Call {
    int ps = 0;
    rpc::PullRequest request;
    std::vector<Piece> pieces;
    std::int64_t floats = 0;
    grpc::ClientContext context;
    grpc::ByteBuffer request_buffer, reply;
    absl::Status status;
    rpc::PullReplyHeader header;
  };
  const std::int64_t chunk = std::max<std::int64_t>(1, chunk_bytes_ / sizeof(float));
  std::vector<std::unique_ptr<Call>> calls;
  std::vector<std::int64_t> open_call(n, -1);
  auto call_for = [&](int ps, std::int64_t count) -> Call& {
    auto& open = open_call[static_cast<std::size_t>(ps)];
    if (open < 0 || calls[static_cast<std::size_t>(open)]->floats + count > chunk) {
      open = static_cast<std::int64_t>(calls.size());
      calls.push_back(std::make_unique<Call>());
      calls.back()->ps = ps;
      calls.back()->request.set_lane(lane(ps));
    }
    return *calls[static_cast<std::size_t>(open)];
  };
  for (std::size_t v = 0; v < placement.size(); ++v) {
    for (const auto& shard : placement[v].shards) {
      for (std::int64_t off = 0; off < shard.size || (off == 0 && shard.size == 0); off += chunk) {
        const std::int64_t count = std::min(chunk, shard.size - off);
        Call& call = call_for(shard.ps, count);
        auto* range = call.request.add_ranges();
        range->set_name(shard.name);
        range->set_offset(off);
        range->set_count(count);
        call.pieces.push_back({params[v].value.data() + shard.offset + off, count});
        call.floats += count;
        if (shard.size == 0) break;
      }
    }
  }
  for (std::size_t ps = 0; ps < n; ++ps) {
    if (open_call[ps] < 0 && lane(static_cast<int>(ps)) == 0) call_for(static_cast<int>(ps), 0);
  }
  // Every call in flight at once; each reply is copied into place by the gRPC thread that
  // completes it, while the other pieces are still arriving.
  std::vector<std::string> peers;
  for (const auto& c : calls) peers.push_back(PeerOf(c->ps));
  Countdown countdown(std::move(peers));
  for (std::size_t i = 0; i < calls.size(); ++i) {
    Call* call = calls[i].get();
    PrepareCall(call->context, timeout_secs, tokens_, caller_, /*chief_call=*/false);
    call->request_buffer = SerializeToBuffer(call->request);
    const auto ps = static_cast<std::size_t>(call->ps);
    const std::string what = Describe(call->ps) + " Pull";
    const std::int64_t max_header_bytes = limits_.max_header_bytes;
    impl_->generic[ps]->UnaryCall(
        &call->context, kPullMethod, grpc::StubOptions(), &call->request_buffer, &call->reply,
        [call, i, what, max_header_bytes, &countdown](grpc::Status s) {
          call->status = FromGrpc(s, what);
          if (call->status.ok()) {
            BufferReader reader(call->reply);
            if (grpc::Status header =
                    ParseLengthPrefixed(reader, max_header_bytes, "PullReplyHeader", &call->header);
                !header.ok()) {
              call->status = FromGrpc(header, what);
            } else if (reader.remaining() !=
                       static_cast<std::size_t>(call->floats) * sizeof(float)) {
              call->status = absl::InvalidArgumentError(
                  what + ": answered " + std::to_string(reader.remaining() / sizeof(float)) +
                  " elements for " + std::to_string(call->floats) +
                  " requested (the model differs from the chief's)");
            } else {
              for (const auto& piece : call->pieces) {
                reader.Read(piece.out, static_cast<std::size_t>(piece.count) * sizeof(float));
              }
            }
          }
          call->reply.Clear();
          countdown.Done(i);
        });
  }
  countdown.Wait(stalls_);
  PullInfo info;
  info.ps_steps.assign(n, std::numeric_limits<std::int64_t>::max());
  info.incarnations.resize(n);
  for (std::size_t ps = 0; ps < n; ++ps) {
    if (open_call[ps] < 0) info.ps_steps[ps] = 0;  // A lane not called: nothing to tag.
  }
  for (const auto& call : calls) {
    TAAS_RETURN_IF_ERROR(call->status);
    const auto ps = static_cast<std::size_t>(call->ps);
    // Pieces read at different steps (async): tag the next push with the oldest.
    info.ps_steps[ps] = std::min(info.ps_steps[ps], call->header.step());
    info.incarnations[ps] = call->header.incarnation();
    info.done = info.done || call->header.done();
  }
  info.global_step = info.ps_steps.empty() ? 0 : info.ps_steps[0];
  return info;
}

namespace {

// One Push stream to one PS: the header, then the gradient pieces; then the reply, and with
// pull_values the values, written into `values` (the places of the header's shards, in order) as
// they arrive.
class PushCall final : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  struct Place {
    char* data;
    std::size_t size;
  };
  PushCall(std::vector<grpc::ByteBuffer> messages, std::vector<Place> values,
           std::int64_t max_header_bytes, Countdown* countdown, std::size_t call)
      : messages_(std::move(messages)),
        values_(std::move(values)),
        max_header_bytes_(max_header_bytes),
        countdown_(countdown),
        call_(call) {}

  void Start(grpc::GenericStub* stub, double timeout_secs, const PsTokens& tokens,
             const ReplicaIncarnation& caller) {
    PrepareCall(context_, timeout_secs, tokens, caller, /*chief_call=*/false);
    stub->PrepareBidiStreamingCall(&context_, kPushMethod, grpc::StubOptions(), this);
    StartRead(&in_);
    WriteNext();
    StartCall();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) return;  // The call failed; OnDone says why.
    ++next_;
    if (next_ < messages_.size()) WriteNext();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    BufferReader reader(in_);
    if (!replied_) {
      replied_ = true;
      malformed_ = !ParseLengthPrefixed(reader, max_header_bytes_, "PushReply", &reply_).ok();
    }
    reader.ForEachRest([&](const char* data, std::size_t size) { Scatter(data, size); });
    in_.Clear();
    StartRead(&in_);
  }
  void OnDone(const grpc::Status& s) override {
    status_ = s;
    messages_.clear();  // Let go of the gradient slices.
    countdown_->Done(call_);
  }

  const grpc::Status& status() const { return status_; }
  // The PushReply, once OnDone ran with an OK status.
  const rpc::PushReply* Reply() const { return replied_ && !malformed_ ? &reply_ : nullptr; }
  // Every value byte arrived, and no more.
  bool ValuesComplete() const { return !overflow_ && place_ == values_.size(); }

 private:
  // Copies received value bytes to the next places.
  void Scatter(const char* data, std::size_t size) {
    while (size > 0) {
      if (place_ == values_.size()) {
        overflow_ = true;
        return;
      }
      Place& to = values_[place_];
      const std::size_t take = std::min(size, to.size - offset_);
      std::memcpy(to.data + offset_, data, take);
      data += take;
      size -= take;
      offset_ += take;
      if (offset_ == to.size) {
        ++place_;
        offset_ = 0;
      }
    }
  }
  // The last message also half-closes the stream: a small push is one write.
  void WriteNext() {
    if (next_ + 1 == messages_.size()) {
      StartWriteLast(&messages_[next_], grpc::WriteOptions());
    } else {
      StartWrite(&messages_[next_]);
    }
  }

  grpc::ClientContext context_;
  std::vector<grpc::ByteBuffer> messages_;
  std::size_t next_ = 0;
  grpc::ByteBuffer in_;
  bool replied_ = false, malformed_ = false;
  rpc::PushReply reply_;
  std::vector<Place> values_;
  const std::int64_t max_header_bytes_;
  std::size_t place_ = 0, offset_ = 0;  // Where the next value byte goes.
  bool overflow_ = false;
  grpc::Status status_;
  Countdown* countdown_;
  std::size_t call_;  // its number in countdown_
};

}  // namespace

absl::StatusOr<PushInfo> PsClient::Push(const std::vector<VariablePlacement>& placement,
                                        const std::vector<ParamBuffers>& params,
                                        const std::vector<std::int64_t>& ps_steps, int worker,
                                        double timeout_secs, bool pull_values) {
  const auto n = static_cast<std::size_t>(num_ps());
  for (std::size_t v = 0; v < placement.size(); ++v) {
    if (static_cast<std::int64_t>(params[v].gradient.size()) != placement[v].size) {
      return absl::InvalidArgumentError(
          "gradient of " + placement[v].name + " has " + std::to_string(params[v].gradient.size()) +
          " elements, the variable " + std::to_string(placement[v].size) +
          " (did train() write every gradient?)");
    }
  }
  // Per PS: messages of at most chunk_bytes_ of gradient, made of slices that point into the
  // gradients (no copy), the first led by the length-prefixed header; small shards share a
  // message.
  SliceLease lease;  // Declared first: waits until gRPC released every slice of the gradients.
  std::vector<rpc::PushHeader> headers(n);
  std::vector<std::vector<std::vector<grpc::Slice>>> bodies(n);
  std::vector<std::vector<PushCall::Place>> values(n);  // With pull_values.
  std::vector<std::size_t> open_bytes(n, 0);
  const auto chunk = static_cast<std::size_t>(std::max<std::int64_t>(sizeof(float), chunk_bytes_));
  for (std::size_t ps = 0; ps < n; ++ps) {
    headers[ps].set_step(ps_steps.at(ps));
    headers[ps].set_worker(worker);
    headers[ps].set_pull_values(pull_values);
    headers[ps].set_lane(lane(static_cast<int>(ps)));
  }
  for (std::size_t v = 0; v < placement.size(); ++v) {
    for (const auto& shard : placement[v].shards) {
      const auto ps = static_cast<std::size_t>(shard.ps);
      auto* g = headers[ps].add_gradients();
      g->set_name(shard.name);
      g->set_size(shard.size);
      if (pull_values && shard.size > 0) {
        values[ps].push_back({reinterpret_cast<char*>(params[v].value.data() + shard.offset),
                              static_cast<std::size_t>(shard.size) * sizeof(float)});
      }
      const char* data = reinterpret_cast<const char*>(params[v].gradient.data() + shard.offset);
      std::size_t left = static_cast<std::size_t>(shard.size) * sizeof(float);
      while (left > 0) {
        if (bodies[ps].empty() || open_bytes[ps] == chunk) {
          bodies[ps].emplace_back();
          open_bytes[ps] = 0;
        }
        const std::size_t take = std::min(left, chunk - open_bytes[ps]);
        bodies[ps].back().push_back(lease.Lend(data, take));
        open_bytes[ps] += take;
        data += take;
        left -= take;
      }
    }
  }
  // Every PS task gets a push (lane 0 counts the step even when it holds nothing of this model);
  // other lanes only when they hold something.
  std::vector<std::unique_ptr<PushCall>> calls(n);
  std::vector<std::string> peers;
  for (std::size_t ps = 0; ps < n; ++ps) {
    if (headers[ps].gradients_size() > 0 || lane(static_cast<int>(ps)) == 0)
      peers.push_back(PeerOf(static_cast<int>(ps)));
  }
  Countdown countdown(std::move(peers));
  std::size_t call = 0;
  for (std::size_t ps = 0; ps < n; ++ps) {
    if (headers[ps].gradients_size() == 0 && lane(static_cast<int>(ps)) != 0) continue;
    if (bodies[ps].empty()) bodies[ps].emplace_back();
    auto& first = bodies[ps].front();
    first.insert(first.begin(), grpc::Slice(LengthPrefixed(headers[ps].SerializeAsString())));
    std::vector<grpc::ByteBuffer> messages;
    for (auto& body : bodies[ps]) messages.emplace_back(body.data(), body.size());
    bodies[ps].clear();
    calls[ps] = std::make_unique<PushCall>(std::move(messages), std::move(values[ps]),
                                           limits_.max_header_bytes, &countdown, call++);
  }
  for (std::size_t ps = 0; ps < n; ++ps) {
    if (calls[ps]) calls[ps]->Start(impl_->generic[ps].get(), timeout_secs, tokens_, caller_);
  }
  countdown.Wait(stalls_);
  PushInfo info;
  PullInfo pulled;
  pulled.ps_steps.resize(n);
  pulled.incarnations.resize(n);
  bool all_values = pull_values;
  for (std::size_t ps = 0; ps < n; ++ps) {
    if (!calls[ps]) continue;  // A lane holding nothing: its step and incarnation stay 0.
    const std::string what = Describe(static_cast<int>(ps)) + " Push";
    TAAS_RETURN_IF_ERROR(FromGrpc(calls[ps]->status(), what));
    const rpc::PushReply* reply = calls[ps]->Reply();
    if (reply == nullptr) return absl::InternalError(what + ": malformed reply");
    switch (reply->outcome()) {
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
    if (ps == 0) info.global_step = reply->step();
    info.wait_secs = std::max(info.wait_secs, reply->wait_secs());
    if (reply->values() && !calls[ps]->ValuesComplete()) {
      return absl::InvalidArgumentError(what + ": the values in the reply do not match the " +
                                        "pushed shards (the model differs from the chief's)");
    }
    all_values = all_values && reply->values();
    pulled.ps_steps[ps] = reply->values_step();
    pulled.incarnations[ps] = reply->incarnation();
    pulled.done = pulled.done || reply->done();
  }
  if (all_values) {
    pulled.global_step = pulled.ps_steps.empty() ? 0 : pulled.ps_steps[0];
    info.pulled = std::move(pulled);
  }
  return info;
}

absl::StatusOr<std::pair<std::int64_t, std::vector<ShardState>>> PsClient::Snapshot(
    int ps, double timeout_secs) {
  grpc::ClientContext ctx;
  PrepareCall(ctx, timeout_secs, tokens_, caller_, /*chief_call=*/true);
  rpc::SnapshotRequest req;
  req.set_lane(lane(ps));
  rpc::SnapshotReply reply;
  TAAS_RETURN_IF_ERROR(
      FromGrpc(impl_->stubs[static_cast<std::size_t>(ps)]->Snapshot(&ctx, req, &reply),
               Describe(ps) + " Snapshot"));
  std::vector<ShardState> shards;
  for (const auto& s : reply.shards()) {
    ShardState state{s.name(), {}, {}};
    TAAS_ASSIGN_OR_RETURN(state.values,
                          FloatVector(s.values(), Describe(ps) + " shard " + s.name()));
    for (const auto& slot : s.slots()) {
      TAAS_ASSIGN_OR_RETURN(state.slots.emplace_back(),
                            FloatVector(slot, Describe(ps) + " a slot of shard " + s.name()));
    }
    shards.push_back(std::move(state));
  }
  return std::make_pair(reply.step(), std::move(shards));
}

absl::Status PsClient::Shutdown(int ps, bool exit, double timeout_secs) {
  grpc::ClientContext ctx;
  PrepareCall(ctx, timeout_secs, tokens_, caller_, /*chief_call=*/true);
  rpc::ShutdownRequest req;
  req.set_exit(exit);
  req.set_lane(lane(ps));
  rpc::ShutdownReply reply;
  return FromGrpc(impl_->stubs[static_cast<std::size_t>(ps)]->Shutdown(&ctx, req, &reply),
                  Describe(ps) + " Shutdown");
}

absl::Status PsClient::CheckpointSaved(int ps, std::int64_t step, double timeout_secs) {
  grpc::ClientContext ctx;
  PrepareCall(ctx, timeout_secs, tokens_, caller_, /*chief_call=*/true);
  rpc::CheckpointSavedRequest req;
  req.set_step(step);
  req.set_lane(lane(ps));
  rpc::CheckpointSavedReply reply;
  return FromGrpc(impl_->stubs[static_cast<std::size_t>(ps)]->CheckpointSaved(&ctx, req, &reply),
                  Describe(ps) + " CheckpointSaved");
}

}  // namespace taas::ps
