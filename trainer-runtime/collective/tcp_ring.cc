#include "taas/collective/tcp_ring.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cfenv>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <thread>

#include "ring_wire.h"

namespace taas::collective {
namespace {

using Clock = std::chrono::steady_clock;
using ring_wire::OpHeader;
using ring_wire::OpKind;

std::string Errno(const char* call) { return std::string(call) + ": " + std::strerror(errno); }

Clock::time_point After(double secs) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(secs));
}

// "600 s" rather than std::to_string's "600.000000 s".
std::string SecsText(double secs) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", secs);
  return text;
}

// Milliseconds until `deadline` for poll(2), at least 0.
int MillisUntil(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<std::int64_t>(left, 0, 1000 * 3600));
}

// A file descriptor closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    Reset();
    fd_ = std::exchange(other.fd_, -1);
    return *this;
  }
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

struct HostPort {
  std::string host;
  std::string port;
};

absl::StatusOr<HostPort> SplitAddress(const std::string& address, int rank) {
  const auto colon = address.rfind(':');
  int port = 0;
  const char* begin = address.data() + (colon == std::string::npos ? 0 : colon + 1);
  const char* end = address.data() + address.size();
  auto [ptr, ec] = std::from_chars(begin, end, port);
  if (colon == std::string::npos || colon == 0 || ec != std::errc() || ptr != end || port < 1 ||
      port > 65535) {
    return absl::InvalidArgumentError("rank " + std::to_string(rank) + "'s address \"" + address +
                                      "\" is not host:port");
  }
  return HostPort{address.substr(0, colon), std::to_string(port)};
}

absl::Status SetNonBlocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return absl::InternalError(Errno("fcntl"));
  }
  return absl::OkStatus();
}

// Waits until `fd` is ready for `events` or `deadline` passes.
absl::Status WaitReady(int fd, short events, Clock::time_point deadline, const std::string& what) {
  while (true) {
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, MillisUntil(deadline));
    if (r > 0) return absl::OkStatus();
    if (r < 0 && errno != EINTR) return absl::UnavailableError(Errno("poll") + " " + what);
    if (r == 0 && Clock::now() >= deadline) {
      return absl::DeadlineExceededError("timed out " + what);
    }
  }
}

// Sends or receives exactly `bytes` on a non-blocking socket before `deadline`.
absl::Status SendAll(int fd, std::span<const std::byte> bytes, Clock::time_point deadline,
                     const std::string& what) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes = bytes.subspan(static_cast<std::size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      TAAS_RETURN_IF_ERROR(WaitReady(fd, POLLOUT, deadline, what));
    } else {
      return absl::UnavailableError(Errno("send") + " " + what);
    }
  }
  return absl::OkStatus();
}

absl::Status ReceiveAll(int fd, std::span<std::byte> bytes, Clock::time_point deadline,
                        const std::string& what) {
  while (!bytes.empty()) {
    const ssize_t n = ::recv(fd, bytes.data(), bytes.size(), 0);
    if (n > 0) {
      bytes = bytes.subspan(static_cast<std::size_t>(n));
    } else if (n == 0) {
      return absl::UnavailableError("connection closed " + what);
    } else if (errno == EAGAIN || errno == EINTR) {
      TAAS_RETURN_IF_ERROR(WaitReady(fd, POLLIN, deadline, what));
    } else {
      return absl::UnavailableError(Errno("recv") + " " + what);
    }
  }
  return absl::OkStatus();
}

// Reads a whole hello (its fixed part announces the token's length), checks it, and admits the
// peer's incarnation to `fence` (a neighbour of an older incarnation than one seen before is
// refused: taas/base/fence.h); returns that incarnation. `received`: the hello's first bytes when
// the caller read them already (at most its fixed part).
absl::StatusOr<std::uint64_t> ReceiveHello(int fd, const ring_wire::Hello& expected,
                                           const std::string& peer, IncarnationFence& fence,
                                           Clock::time_point deadline, const std::string& what,
                                           std::span<const std::byte> received = {}) {
  std::vector<std::byte> hello(ring_wire::kHelloFixedBytes);
  std::copy(received.begin(), received.end(), hello.begin());
  TAAS_RETURN_IF_ERROR(ReceiveAll(fd, std::span(hello).subspan(received.size()), deadline, what));
  TAAS_ASSIGN_OR_RETURN(const std::size_t token_bytes, ring_wire::HelloTokenBytes(hello));
  hello.resize(ring_wire::kHelloFixedBytes + token_bytes);
  TAAS_RETURN_IF_ERROR(
      ReceiveAll(fd, std::span(hello).subspan(ring_wire::kHelloFixedBytes), deadline, what));
  TAAS_ASSIGN_OR_RETURN(const std::uint64_t incarnation, ring_wire::CheckHello(hello, expected));
  TAAS_RETURN_IF_ERROR(fence.Admit({peer, incarnation}));
  return incarnation;
}

void TuneSocket(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

absl::StatusOr<Fd> Listen(const std::string& host, const std::string& port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return absl::InvalidArgumentError("cannot listen on " + host + ":" + port + ": " +
                                      ::gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, ::freeaddrinfo);
  Fd fd(::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return absl::InternalError(Errno("socket"));
  const int one = 1;
  // A restarted worker binds its port at once, whatever the previous process left in TIME_WAIT.
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd.get(), found->ai_addr, found->ai_addrlen) != 0 || ::listen(fd.get(), 16) != 0) {
    // A port still held by a previous process of this replica: a restart can help.
    return absl::UnavailableError("cannot listen on " + host + ":" + port + ": " +
                                  Errno("bind/listen"));
  }
  TAAS_RETURN_IF_ERROR(SetNonBlocking(fd.get()));
  return fd;
}

// One attempt to connect to `address` before `deadline`.
absl::StatusOr<Fd> ConnectOnce(const HostPort& address, Clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(address.host.c_str(), address.port.c_str(), &hints, &found);
      rc != 0) {
    // A Kubernetes service name resolves once its pod exists: not yet is not never.
    return absl::UnavailableError(std::string("cannot resolve: ") + ::gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, ::freeaddrinfo);
  Fd fd(::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return absl::InternalError(Errno("socket"));
  TAAS_RETURN_IF_ERROR(SetNonBlocking(fd.get()));
  if (::connect(fd.get(), found->ai_addr, found->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) return absl::UnavailableError(Errno("connect"));
    TAAS_RETURN_IF_ERROR(WaitReady(fd.get(), POLLOUT, deadline, "connecting"));
    int error = 0;
    socklen_t len = sizeof(error);
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &len);
    if (error != 0) return absl::UnavailableError(std::string("connect: ") + std::strerror(error));
  }
  TuneSocket(fd.get());
  return fd;
}

// The most pieces one sendmsg carries.
constexpr std::size_t kMaxSendPieces = 16;
// Operations this small run on the caller's thread when nothing is queued before them.
constexpr std::size_t kInlineBytes = 64 * 1024;
// All-reduces this small gather every rank's whole buffer instead (PlanGather): n - 1 ring steps
// instead of 2(n - 1). A step costs every rank a wake-up (~25 us on a loaded 2-core machine, the
// time loopback moves ~64 KiB in), so below this size halving the steps saves more than the extra
// bytes ((n - 1) buffers sent per rank instead of 2(n - 1)/n) cost.
constexpr std::size_t kGatherBytes = 64 * 1024;

// One queued operation.
struct Op {
  OpHeader header;
  std::span<std::byte> data;
  Completion done;
};

// A run of bytes a connection carries, in stream order.
struct Piece {
  std::byte* data = nullptr;
  std::size_t bytes = 0;
  // Sending: the receive piece that must be complete first (-1: none). Receiving: whether the
  // bytes are added into `data` (reduce-scatter) instead of stored, and then divided by the ring's
  // size (the last reduce-scatter step of a mean).
  std::int64_t after_receive = -1;
  bool add = false;
  bool divide = false;
};

class TcpRing final : public Collective {
 public:
  TcpRing(TcpRingOptions options, Fd next, Fd prev, const Logger& logger)
      : options_(std::move(options)),
        size_(static_cast<int>(options_.addresses.size())),
        next_(std::move(next)),
        prev_(std::move(prev)),
        logger_(logger) {
    if (size_ > 1) worker_ = std::thread([this] { Work(); });
  }

  ~TcpRing() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    // Wakes an operation still waiting on a peer: it fails at once instead of at its timeout.
    ::shutdown(next_.get(), SHUT_RDWR);
    ::shutdown(prev_.get(), SHUT_RDWR);
    queued_.notify_all();
    if (worker_.joinable()) worker_.join();
    for (Op& op : queue_) op.done.Finish(absl::CancelledError("the ring was closed"));
  }

  int rank() const override { return options_.rank; }
  int size() const override { return size_; }
  std::string Describe() const override {
    return "tcp ring of " + std::to_string(size_) + " (rank " + std::to_string(options_.rank) + ")";
  }

  Handle AllReduce(std::span<float> data, ReduceOp op) override {
    return Enqueue(op == ReduceOp::kMean ? OpKind::kAllReduceMean : OpKind::kAllReduceSum,
                   AsBytes(data), 0);
  }

  Handle Broadcast(std::span<std::byte> data, int root) override {
    if (root < 0 || root >= size_) {
      return Handle(absl::InvalidArgumentError("broadcast root " + std::to_string(root) +
                                               " is not a rank of this ring of " +
                                               std::to_string(size_)));
    }
    return Enqueue(OpKind::kBroadcast, data, static_cast<std::uint32_t>(root));
  }

 private:
  Handle Enqueue(OpKind kind, std::span<std::byte> data, std::uint32_t root) {
    // A ring of one has nothing to exchange: the sum and mean of one buffer are itself.
    if (size_ == 1) return Handle();
    Op op{{next_sequence_++, kind, data.size(), root}, data, {}};
    Handle handle = op.done.handle();
    std::unique_lock lock(mu_);
    if (data.size() <= kInlineBytes && queue_.empty() && !running_) {
      // A small operation with nothing before it runs on the caller's thread: handing it to the
      // operation thread and back costs two wake-ups, more than the transfer itself.
      running_ = true;
      lock.unlock();
      Execute(op);
      lock.lock();
      running_ = false;
      lock.unlock();
      queued_.notify_all();
      return handle;
    }
    queue_.push_back(std::move(op));
    lock.unlock();
    queued_.notify_all();
    return handle;
  }

  void Work() {
    while (true) {
      Op op;
      {
        std::unique_lock lock(mu_);
        queued_.wait(lock, [&] { return stopping_ || (!queue_.empty() && !running_); });
        if (queue_.empty()) return;
        op = std::move(queue_.front());
        queue_.pop_front();
        running_ = true;
      }
      Execute(op);
      {
        std::lock_guard lock(mu_);
        running_ = false;
      }
      queued_.notify_all();
    }
  }

  // Runs one operation (or fails it after an earlier failure); one at a time, in issue order.
  void Execute(Op& op) {
    if (failed_.ok()) {
      failed_ = Run(op);
      if (!failed_.ok()) {
        // Closing both connections tells the neighbours at once, and they theirs: the whole
        // ring learns of the failure within moments instead of after a timeout.
        ::shutdown(next_.get(), SHUT_RDWR);
        ::shutdown(prev_.get(), SHUT_RDWR);
        logger_.Warning("all-reduce ring failed", {{"error", failed_.ToString()}});
      }
    }
    op.done.Finish(failed_);
  }

  absl::Status Run(const Op& op) {
    auto sent_header = ring_wire::EncodeOpHeader(op.header);
    std::array<std::byte, ring_wire::kOpHeaderBytes> received_header{};
    std::vector<Piece> sends = {{sent_header.data(), sent_header.size()}};
    std::vector<Piece> receives = {{received_header.data(), received_header.size()}};
    std::vector<float> gathered;  // a small all-reduce's: every rank's buffer, in rank order
    if (op.header.kind == OpKind::kBroadcast) {
      PlanBroadcast(op, sends, receives);
    } else if (op.data.size() <= kGatherBytes) {
      PlanGather(op, gathered, sends, receives);
    } else {
      PlanAllReduce(op, sends, receives);
    }
    TAAS_RETURN_IF_ERROR(Transfer(op.header, sends, receives, received_header));
    if (!gathered.empty()) ReduceGathered(op, gathered);
    return absl::OkStatus();
  }

  std::size_t ChunkBytes() const {
    // Whole floats, at least one.
    return std::max<std::size_t>(sizeof(float), static_cast<std::size_t>(options_.chunk_bytes) /
                                                    sizeof(float) * sizeof(float));
  }

  // Reduce-scatter then all-gather over `size_` segments, each cut into chunks. At step t this rank
  // sends segment (rank - t) and receives segment (rank - t - 1), mod size: the segment it
  // received at step t - 1 is the one it sends at step t, so each chunk travels on as soon as it
  // arrived (and, in reduce-scatter, was added to). After size - 1 steps rank r holds the sum of
  // segment r + 1; the all-gather passes the sums around.
  void PlanAllReduce(const Op& op, std::vector<Piece>& sends, std::vector<Piece>& receives) {
    float* data = reinterpret_cast<float*>(op.data.data());
    const std::size_t elements = op.data.size() / sizeof(float);
    const std::size_t chunk = ChunkBytes() / sizeof(float);
    const auto n = static_cast<std::size_t>(size_), rank = static_cast<std::size_t>(options_.rank);
    auto segment = [&](std::size_t s) {
      return std::pair(elements * s / n, elements * (s + 1) / n);
    };
    // Receive piece index of step t's first chunk, to express "the same chunk one step earlier".
    std::vector<std::int64_t> first_receive_of_step;
    const bool mean = op.header.kind == OpKind::kAllReduceMean;
    for (std::size_t t = 0; t < 2 * (n - 1); ++t) {
      const auto [send_begin, send_end] = segment((rank + n - t % n) % n);
      const auto [recv_begin, recv_end] = segment((rank + 2 * n - t % n - 1) % n);
      for (std::size_t at = send_begin, k = 0; at < send_end; at += chunk, ++k) {
        const std::int64_t after =
            t == 0 ? -1 : first_receive_of_step[t - 1] + static_cast<std::int64_t>(k);
        sends.push_back({reinterpret_cast<std::byte*>(data + at),
                         std::min(chunk, send_end - at) * sizeof(float), after});
      }
      first_receive_of_step.push_back(static_cast<std::int64_t>(receives.size()));
      for (std::size_t at = recv_begin; at < recv_end; at += chunk) {
        const bool reduce = t < n - 1;
        receives.push_back({reinterpret_cast<std::byte*>(data + at),
                            std::min(chunk, recv_end - at) * sizeof(float), -1, reduce,
                            reduce && mean && t == n - 2});
      }
    }
  }

  // A small all-reduce: every rank's buffer travels the whole ring into `gathered` (slot r holds
  // rank r's), n - 1 steps in which this rank sends at step t the buffer of rank (rank - t) and
  // receives that of rank (rank - t - 1), mod size: like the all-gather of PlanAllReduce with a
  // rank's whole buffer as its segment. ReduceGathered then adds them.
  void PlanGather(const Op& op, std::vector<float>& gathered, std::vector<Piece>& sends,
                  std::vector<Piece>& receives) {
    const std::size_t elements = op.data.size() / sizeof(float);
    if (elements == 0) return;  // the headers alone (an empty span's data may be null)
    const std::size_t chunk = ChunkBytes() / sizeof(float);
    const auto n = static_cast<std::size_t>(size_), rank = static_cast<std::size_t>(options_.rank);
    gathered.resize(n * elements);
    std::memcpy(gathered.data() + rank * elements, op.data.data(), op.data.size());
    auto slot = [&](std::size_t r) { return gathered.data() + r * elements; };
    std::vector<std::int64_t> first_receive_of_step;
    for (std::size_t t = 0; t + 1 < n; ++t) {
      float* send = slot((rank + n - t) % n);
      float* receive = slot((rank + 2 * n - t - 1) % n);
      for (std::size_t at = 0, k = 0; at < elements; at += chunk, ++k) {
        const std::int64_t after =
            t == 0 ? -1 : first_receive_of_step[t - 1] + static_cast<std::int64_t>(k);
        sends.push_back({reinterpret_cast<std::byte*>(send + at),
                         std::min(chunk, elements - at) * sizeof(float), after});
      }
      first_receive_of_step.push_back(static_cast<std::int64_t>(receives.size()));
      for (std::size_t at = 0; at < elements; at += chunk) {
        receives.push_back({reinterpret_cast<std::byte*>(receive + at),
                            std::min(chunk, elements - at) * sizeof(float)});
      }
    }
  }

  // Every rank adds the gathered buffers in rank order (and divides a mean by the ring's size):
  // the same operations on the same bytes, so every rank gets the same bits; in the default
  // floating-point environment, so that a thread's own (a library's flush-to-zero, a rounding
  // mode) cannot make one rank's sums differ from the others'.
  void ReduceGathered(const Op& op, const std::vector<float>& gathered) const {
    std::fenv_t saved;
    std::feholdexcept(&saved);
    std::fesetenv(FE_DFL_ENV);
    float* out = reinterpret_cast<float*>(op.data.data());
    const std::size_t elements = op.data.size() / sizeof(float);
    std::copy_n(gathered.data(), elements, out);
    for (std::size_t r = 1; r < static_cast<std::size_t>(size_); ++r) {
      const float* in = gathered.data() + r * elements;
      for (std::size_t i = 0; i < elements; ++i) out[i] += in[i];
    }
    if (op.header.kind == OpKind::kAllReduceMean) {
      const float ranks = static_cast<float>(size_);
      for (std::size_t i = 0; i < elements; ++i) out[i] /= ranks;
    }
    std::fesetenv(&saved);  // the thread's own environment, its exception flags as they were
  }

  // The root sends its chunks to the next rank; every other rank receives each chunk and, unless
  // the next rank is the root, passes it on as soon as it arrived.
  void PlanBroadcast(const Op& op, std::vector<Piece>& sends, std::vector<Piece>& receives) {
    const int root = static_cast<int>(op.header.root);
    const bool is_root = options_.rank == root;
    const bool forwards = !is_root && (options_.rank + 1) % size_ != root;
    const std::size_t chunk = ChunkBytes();
    std::int64_t k = 0;
    for (std::size_t at = 0; at < op.data.size(); at += chunk, ++k) {
      Piece piece{op.data.data() + at, std::min(chunk, op.data.size() - at)};
      if (!is_root) receives.push_back(piece);
      // Receive piece 0 is the header: chunk k is receive piece k + 1.
      if (is_root) sends.push_back(piece);
      if (forwards) sends.push_back({piece.data, piece.bytes, k + 1});
    }
  }

  // Moves both streams at once on the two non-blocking sockets until both are done. No byte
  // moving for timeout_secs is a DeadlineExceeded naming what was awaited.
  absl::Status Transfer(const OpHeader& header, const std::vector<Piece>& sends,
                        const std::vector<Piece>& receives,
                        std::span<const std::byte> received_header) {
    std::size_t send_at = 0, send_offset = 0, receive_at = 0, receive_offset = 0;
    std::vector<float> scratch;
    auto progress_deadline = After(options_.timeout_secs);
    const int next = (options_.rank + 1) % size_, prev = (options_.rank + size_ - 1) % size_;
    // The neighbour this rank waits for: the previous one while bytes are due from it.
    std::atomic<int> awaited{prev};
    StallWatch::Wait watched;
    if (options_.stalls != nullptr) {
      watched = options_.stalls->Begin([&] { return RingPeerName(options_, awaited.load()); });
    }
    auto peer = [&](int rank) {
      return "rank " + std::to_string(rank) + " (" +
             options_.addresses[static_cast<std::size_t>(rank)] + ")";
    };
    while (send_at < sends.size() || receive_at < receives.size()) {
      const bool can_send = send_at < sends.size() &&
                            sends[send_at].after_receive < static_cast<std::int64_t>(receive_at);
      const bool can_receive = receive_at < receives.size();
      awaited = can_receive ? prev : next;
      pollfd fds[2] = {{next_.get(), static_cast<short>(can_send ? POLLOUT : 0), 0},
                       {prev_.get(), static_cast<short>(can_receive ? POLLIN : 0), 0}};
      const int ready = ::poll(fds, 2, MillisUntil(progress_deadline));
      if (ready < 0 && errno != EINTR) return absl::InternalError(Errno("poll"));
      if (ready <= 0) {
        if (Clock::now() < progress_deadline) continue;
        return absl::DeadlineExceededError(
            ring_wire::Describe(header) + ": no byte moved for " + SecsText(options_.timeout_secs) +
            " s (TAAS_WAIT_TIMEOUT_SECS) waiting " +
            (can_receive ? "for " + peer(prev) + " to send" : "for " + peer(next) + " to read"));
      }
      bool moved = false;
      if (can_send && (fds[0].revents & (POLLOUT | POLLERR | POLLHUP))) {
        // Pieces free to go leave together up to a chunk's bytes: the header with a small
        // operation's data, in one call and one segment. (Never more: a call sending megabytes
        // would leave the receiving side idle meanwhile.)
        std::array<iovec, kMaxSendPieces> iov;
        std::size_t count = 0, bytes = 0;
        for (std::size_t i = send_at;
             i < sends.size() && count < iov.size() &&
             sends[i].after_receive < static_cast<std::int64_t>(receive_at);
             ++i) {
          const std::size_t skip = i == send_at ? send_offset : 0;
          if (count > 0 && bytes + sends[i].bytes - skip > ChunkBytes()) break;
          iov[count++] = {sends[i].data + skip, sends[i].bytes - skip};
          bytes += sends[i].bytes - skip;
        }
        msghdr message{};
        message.msg_iov = iov.data();
        message.msg_iovlen = count;
        const ssize_t n = ::sendmsg(next_.get(), &message, MSG_NOSIGNAL);
        if (n < 0 && errno != EAGAIN && errno != EINTR) {
          return absl::UnavailableError(ring_wire::Describe(header) + ": lost " + peer(next) +
                                        ": " + Errno("sendmsg"));
        }
        if (n > 0) {
          moved = true;
          for (auto left = static_cast<std::size_t>(n); left > 0;) {
            const std::size_t rest = sends[send_at].bytes - send_offset;
            if (left < rest) {
              send_offset += left;
              break;
            }
            left -= rest;
            ++send_at, send_offset = 0;
          }
        }
      }
      if (can_receive && (fds[1].revents & (POLLIN | POLLERR | POLLHUP))) {
        const Piece& piece = receives[receive_at];
        std::byte* target = piece.data;
        if (piece.add) {
          scratch.resize(piece.bytes / sizeof(float));
          target = reinterpret_cast<std::byte*>(scratch.data());
        }
        const ssize_t n =
            ::recv(prev_.get(), target + receive_offset, piece.bytes - receive_offset, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
          return absl::UnavailableError(
              ring_wire::Describe(header) + ": lost " + peer(prev) +
              (n == 0 ? ": it closed the connection (exited?)" : ": " + Errno("recv")));
        }
        if (n > 0) {
          moved = true;
          receive_offset += static_cast<std::size_t>(n);
          if (receive_offset == piece.bytes) {
            if (receive_at == 0) {
              TAAS_RETURN_IF_ERROR(ring_wire::CheckOpHeader(received_header, header));
            }
            if (piece.add) Accumulate(piece, scratch);
            ++receive_at, receive_offset = 0;
          }
        }
      }
      if (moved) {
        progress_deadline = After(options_.timeout_secs);
        watched.Progressed();
      } else if ((fds[0].revents | fds[1].revents) & (POLLERR | POLLHUP)) {
        // A connection this rank was not using in that direction failed (its peer reset it).
        const bool next_failed = fds[0].revents & (POLLERR | POLLHUP);
        return absl::UnavailableError(ring_wire::Describe(header) + ": lost " +
                                      peer(next_failed ? next : prev) +
                                      ": the connection failed (exited?)");
      }
    }
    return absl::OkStatus();
  }

  void Accumulate(const Piece& piece, const std::vector<float>& incoming) const {
    float* out = reinterpret_cast<float*>(piece.data);
    const std::size_t n = incoming.size();
    for (std::size_t i = 0; i < n; ++i) out[i] += incoming[i];
    if (piece.divide) {
      const float ranks = static_cast<float>(size_);
      for (std::size_t i = 0; i < n; ++i) out[i] /= ranks;
    }
  }

  const TcpRingOptions options_;
  const int size_;
  Fd next_;  // to rank + 1: this rank sends on it
  Fd prev_;  // from rank - 1: this rank receives on it
  Logger logger_;
  std::uint64_t next_sequence_ = 0;  // the caller's thread only
  absl::Status failed_;              // whoever runs an operation (running_)
  std::mutex mu_;
  std::condition_variable queued_;
  std::deque<Op> queue_;
  bool running_ = false;  // an operation runs, on the operation thread or a caller's
  bool stopping_ = false;
  std::thread worker_;
};

// How often forming the ring looks at options.stopped.
constexpr double kStopCheckSecs = 0.25;

bool Stopped(const TcpRingOptions& options) { return options.stopped && options.stopped(); }

absl::Status StoppedError(const std::string& what) {
  return absl::CancelledError("stopped " + what + ": the replica is terminating");
}

// The hello this rank sends: who it is, in which ring, with the job's token.
ring_wire::Hello OwnHello(const TcpRingOptions& options) {
  return {static_cast<std::uint32_t>(options.addresses.size()),
          static_cast<std::uint32_t>(options.rank), options.incarnation, options.token};
}

int PrevRank(const TcpRingOptions& options) {
  const int size = static_cast<int>(options.addresses.size());
  return (options.rank + size - 1) % size;
}
int NextRank(const TcpRingOptions& options) {
  return (options.rank + 1) % static_cast<int>(options.addresses.size());
}

// What a neighbour's kFenced frame means for this rank: the fencing refusal (taas::IsFenced) naming
// this replica and both incarnations; Unavailable when the newer one it names is not newer (the
// neighbour replaced this connection with another of the same incarnation).
absl::Status FencedBy(const TcpRingOptions& options, const ring_wire::FormationFrame& frame) {
  TAAS_RETURN_IF_ERROR(CheckIncarnation(RingPeerName(options, options.rank), frame.incarnation,
                                        options.incarnation));
  return absl::UnavailableError(
      "a neighbour replaced this rank's connection with another of "
      "the same incarnation");
}

// Reads the frame a neighbour sent against the ring's direction (on the connection to the next
// rank) while the ring forms: only ever a fence notice, or its hanging up.
absl::Status ReadNotice(const TcpRingOptions& options, int next_fd, Clock::time_point deadline) {
  const std::string what = "from rank " + std::to_string(NextRank(options)) + " (" +
                           options.addresses[static_cast<std::size_t>(NextRank(options))] +
                           ") while the ring formed";
  std::array<std::byte, ring_wire::kFormationFrameBytes> bytes{};
  absl::Status received = ReceiveAll(next_fd, bytes, std::min(deadline, After(5)), what);
  if (!received.ok()) {
    return absl::UnavailableError(std::string(received.message()) + " (it restarted?)");
  }
  TAAS_ASSIGN_OR_RETURN(const ring_wire::FormationFrame frame,
                        ring_wire::ParseFormationFrame(bytes));
  if (frame.kind != ring_wire::FormationKind::kFenced) {
    return absl::InvalidArgumentError("a seal came " + what + ", against the ring's direction");
  }
  return FencedBy(options, frame);
}

// Connects to the next rank and exchanges hellos, retrying until `deadline` (the next rank may
// start later, or be an old process on its way out). A kFenced frame in place of the next rank's
// hello (it has seen a newer incarnation of this replica) ends it, fenced.
absl::StatusOr<Fd> JoinNext(const TcpRingOptions& options, const HostPort& address,
                            Clock::time_point deadline, const Logger& logger) {
  const auto size = static_cast<std::uint32_t>(options.addresses.size());
  const auto next = static_cast<std::uint32_t>(NextRank(options));
  const std::string what =
      "joining rank " + std::to_string(next) + " (" + options.addresses[next] + ")";
  absl::Status last;
  double backoff = 0.05;
  bool logged = false;
  // The next rank's incarnations across attempts: an older one than seen is on its way out.
  IncarnationFence fence;
  while (Clock::now() < deadline) {
    if (Stopped(options)) return StoppedError(what);
    auto fd = ConnectOnce(address, deadline);
    absl::Status status = fd.status();
    if (fd.ok()) {
      status = SendAll(fd->get(), ring_wire::EncodeHello(OwnHello(options)), deadline, what);
      // A hello's fixed part is longer than a formation frame: its first bytes tell them apart.
      std::array<std::byte, ring_wire::kFormationFrameBytes> first{};
      if (status.ok()) status = ReceiveAll(fd->get(), first, deadline, what);
      if (status.ok()) {
        if (auto frame = ring_wire::ParseFormationFrame(first);
            frame.ok() && frame->kind == ring_wire::FormationKind::kFenced) {
          if (absl::Status fenced = FencedBy(options, *frame); IsFenced(fenced)) return fenced;
        }
        status = ReceiveHello(fd->get(), {size, next, 0, options.token},
                              RingPeerName(options, static_cast<int>(next)), fence, deadline, what,
                              first)
                     .status();
      }
      if (status.code() == absl::StatusCode::kUnavailable) {
        status = absl::UnavailableError(
            "rank " + std::to_string(next) +
            " hung up on this rank's hello: it refused it (another job's token, or TF_CONFIG "
            "differs: see its log) or it is restarting");
      }
      if (status.ok()) return std::move(*fd);
      // A peer that answered with the wrong token, ring or rank will not change its mind.
      if (status.code() == absl::StatusCode::kPermissionDenied ||
          status.code() == absl::StatusCode::kInvalidArgument) {
        return absl::FailedPreconditionError(what + ": " + std::string(status.message()));
      }
    }
    last = status;
    if (!logged) {
      logger.Info("waiting for the next rank of the all-reduce ring",
                  {{"next", options.addresses[next]}, {"detail", std::string(status.message())}});
      logged = true;
    }
    const auto resume = std::min(deadline, After(backoff));
    while (Clock::now() < resume && !Stopped(options))
      std::this_thread::sleep_until(std::min(resume, After(kStopCheckSecs)));
    backoff = std::min(backoff * 2, 1.0);
  }
  return absl::DeadlineExceededError(what + ": gave up after " + SecsText(options.timeout_secs) +
                                     " s (TAAS_WAIT_TIMEOUT_SECS): " + std::string(last.message()));
}

// The previous rank's connection and the incarnation its hello named.
struct Previous {
  Fd fd;
  std::uint64_t incarnation = 0;
};

// Accepts one waiting connection and exchanges hellos: the previous rank with this job's token,
// of an incarnation `fence` admits (a newer one is remembered). An older incarnation is sent a
// kFenced frame naming the newest admitted before it is closed, so it exits fenced at once.
absl::StatusOr<Previous> AcceptOne(const TcpRingOptions& options, int listener,
                                   IncarnationFence& fence, Clock::time_point deadline,
                                   const std::string& what) {
  Fd fd(::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
  if (fd.get() < 0) return absl::UnavailableError(Errno("accept4") + " " + what);
  TuneSocket(fd.get());
  const std::string peer = RingPeerName(options, PrevRank(options));
  // A stranger gets a few seconds to say hello, never the whole wait.
  auto incarnation = ReceiveHello(fd.get(),
                                  {static_cast<std::uint32_t>(options.addresses.size()),
                                   static_cast<std::uint32_t>(PrevRank(options)), 0, options.token},
                                  peer, fence, std::min(deadline, After(5)), what);
  if (IsFenced(incarnation.status())) {
    const auto notice =
        ring_wire::EncodeFormationFrame({ring_wire::FormationKind::kFenced, fence.Highest(peer)});
    (void)SendAll(fd.get(), notice, std::min(deadline, After(5)), what);
  }
  TAAS_RETURN_IF_ERROR(incarnation.status());
  TAAS_RETURN_IF_ERROR(
      SendAll(fd.get(), ring_wire::EncodeHello(OwnHello(options)), deadline, what));
  return Previous{std::move(fd), *incarnation};
}

// What `joined_next` holds while JoinNext runs, and once it was refused as fenced.
constexpr int kNotJoined = -1;
constexpr int kJoinFenced = -2;

// Accepts connections until one is the previous rank with this job's token; others (a port
// scanner, a process of another job, an older incarnation) are closed and logged. Meanwhile a fence
// notice on this rank's connection to the next one (`joined_next`, once JoinNext has it), or
// JoinNext's being fenced, ends the wait: this rank itself was replaced.
absl::StatusOr<Previous> AcceptPrevious(const TcpRingOptions& options, int listener,
                                        IncarnationFence& fence,
                                        const std::atomic<int>& joined_next,
                                        Clock::time_point deadline, const Logger& logger) {
  const std::string what = "accepting rank " + std::to_string(PrevRank(options)) + " (" +
                           options.addresses[static_cast<std::size_t>(PrevRank(options))] + ")";
  // The last connection refused: a timeout names why, or a wrong token would read as silence.
  absl::Status refused;
  while (true) {
    // Woken every kStopCheckSecs to see whether the replica is terminating or was fenced.
    absl::Status ready =
        WaitReady(listener, POLLIN, std::min(deadline, After(kStopCheckSecs)), what);
    if (Stopped(options)) return StoppedError(what);
    const int next_fd = joined_next.load();
    if (next_fd == kJoinFenced) return absl::CancelledError("stopped " + what);
    if (next_fd >= 0) {
      pollfd notice{next_fd, POLLIN, 0};
      if (::poll(&notice, 1, 0) > 0) TAAS_RETURN_IF_ERROR(ReadNotice(options, next_fd, deadline));
    }
    if (ready.code() == absl::StatusCode::kDeadlineExceeded && Clock::now() < deadline) continue;
    if (!ready.ok()) {
      if (refused.ok()) return ready;
      return absl::Status(ready.code(),
                          std::string(ready.message()) +
                              "; the last connection refused: " + std::string(refused.message()));
    }
    auto previous = AcceptOne(options, listener, fence, deadline, what);
    if (previous.ok()) return previous;
    logger.Warning("refused a connection to the all-reduce ring",
                   {{"error", std::string(previous.status().message())}});
    refused = previous.status();
  }
}

// Passes the seal around the ring once this rank has both neighbours (ring_wire.h, formation
// frames): rank 0 sends it, every other rank waits for it from the previous rank and passes it
// on, and rank 0's returns. While waiting, a newer incarnation of the previous rank connecting
// replaces `prev` (the old one is sent kFenced and closed), and a previous rank that hangs up is
// waited for again: so a replica's old incarnation that joined first never closes the ring.
absl::Status SealRing(const TcpRingOptions& options, int listener, IncarnationFence& fence,
                      int next_fd, Previous& prev, Clock::time_point deadline,
                      const Logger& logger) {
  const std::string what = "waiting for the all-reduce ring to close (the seal from rank " +
                           std::to_string(PrevRank(options)) + ", " +
                           options.addresses[static_cast<std::size_t>(PrevRank(options))] + ")";
  const auto seal = ring_wire::EncodeFormationFrame({ring_wire::FormationKind::kSeal, 0});
  if (options.rank == 0) TAAS_RETURN_IF_ERROR(SendAll(next_fd, seal, deadline, what));
  while (true) {
    pollfd fds[3] = {{prev.fd.get(), POLLIN, 0}, {listener, POLLIN, 0}, {next_fd, POLLIN, 0}};
    const int ready = ::poll(fds, 3, MillisUntil(std::min(deadline, After(kStopCheckSecs))));
    if (Stopped(options)) return StoppedError(what);
    if (ready < 0 && errno != EINTR) return absl::InternalError(Errno("poll"));
    if (ready <= 0) {
      if (Clock::now() < deadline) continue;
      return absl::DeadlineExceededError(
          what + ": gave up after " + SecsText(options.timeout_secs) +
          " s (TAAS_WAIT_TIMEOUT_SECS): a rank of the ring is not joined to both its neighbours");
    }
    // A connection waiting is taken before the seal: an older incarnation is told it is fenced.
    if (fds[1].revents & POLLIN) {
      auto newer = AcceptOne(options, listener, fence, deadline, what);
      if (!newer.ok()) {
        logger.Warning("refused a connection to the all-reduce ring",
                       {{"error", std::string(newer.status().message())}});
        continue;
      }
      if (prev.fd.get() >= 0 && newer->incarnation > prev.incarnation) {
        const auto notice = ring_wire::EncodeFormationFrame(
            {ring_wire::FormationKind::kFenced, newer->incarnation});
        (void)SendAll(prev.fd.get(), notice, std::min(deadline, After(5)), what);
      }
      logger.Warning(
          "a newer connection of the previous rank replaced the one the ring formed with",
          {{"prev", RingPeerName(options, PrevRank(options))},
           {"incarnation", std::to_string(newer->incarnation)},
           {"replaced_incarnation", std::to_string(prev.incarnation)}});
      prev = std::move(*newer);
      continue;
    }
    // Before the notice: the next rank may fail right after passing the seal on (its operation's
    // failure then names it), which must not read as a failure to form.
    if (fds[0].revents != 0) {
      std::array<std::byte, ring_wire::kFormationFrameBytes> bytes{};
      if (!ReceiveAll(prev.fd.get(), bytes, std::min(deadline, After(5)), what).ok()) {
        // Gone before the seal (restarted): its next process connects again.
        logger.Warning("the previous rank hung up before the ring closed; waiting for it again",
                       {{"prev", RingPeerName(options, PrevRank(options))}});
        prev.fd.Reset();
        continue;
      }
      TAAS_ASSIGN_OR_RETURN(const ring_wire::FormationFrame frame,
                            ring_wire::ParseFormationFrame(bytes));
      if (frame.kind != ring_wire::FormationKind::kSeal) {
        return absl::InvalidArgumentError("the previous rank sent a fence notice while " + what);
      }
      if (options.rank != 0) return SendAll(next_fd, seal, deadline, what);
      return absl::OkStatus();
    }
    if (fds[2].revents != 0) TAAS_RETURN_IF_ERROR(ReadNotice(options, next_fd, deadline));
  }
}

}  // namespace

std::string RingPeerName(const TcpRingOptions& options, int rank) {
  const auto at = static_cast<std::size_t>(rank);
  if (options.peer_names.size() == options.addresses.size() && at < options.peer_names.size())
    return options.peer_names[at];
  return "rank " + std::to_string(rank);
}

absl::StatusOr<std::unique_ptr<Collective>> ConnectTcpRing(const TcpRingOptions& options,
                                                           const Logger& logger) {
  const int size = static_cast<int>(options.addresses.size());
  if (size < 1 || options.rank < 0 || options.rank >= size) {
    return absl::InvalidArgumentError("rank " + std::to_string(options.rank) +
                                      " is not in a ring of " + std::to_string(size));
  }
  if (options.token.size() > ring_wire::kMaxTokenBytes) {
    return absl::InvalidArgumentError("the job token is longer than " +
                                      std::to_string(ring_wire::kMaxTokenBytes) + " bytes");
  }
  if (size == 1) return std::unique_ptr<Collective>(new TcpRing(options, Fd(), Fd(), logger));
  const auto start = Clock::now();
  const auto deadline = After(options.timeout_secs);
  TAAS_ASSIGN_OR_RETURN(HostPort own, SplitAddress(options.addresses[options.rank], options.rank));
  const int next = (options.rank + 1) % size;
  TAAS_ASSIGN_OR_RETURN(HostPort next_address, SplitAddress(options.addresses[next], next));
  TAAS_ASSIGN_OR_RETURN(Fd listener, Listen(options.bind_host, own.port));
  // Joining the next rank and accepting the previous one at once: were every rank to finish one
  // before starting the other, each would wait for the next around the ring.
  absl::StatusOr<Fd> next_fd = absl::UnknownError("not joined");
  // Forming the ring waits on both neighbours (peers start in any order).
  StallWatch::Wait watched;
  if (options.stalls != nullptr) {
    watched = options.stalls->Begin([&options, next, size] {
      const std::string prev = RingPeerName(options, (options.rank + size - 1) % size);
      const std::string after = RingPeerName(options, next);
      return prev == after ? prev : prev + ", " + after;
    });
  }
  // The previous rank's incarnations across connections: an older one than seen is refused.
  IncarnationFence fence;
  // The connection to the next rank once joined, where a neighbour's fence notice arrives.
  std::atomic<int> joined_next{kNotJoined};
  std::thread join([&] {
    next_fd = JoinNext(options, next_address, deadline, logger);
    if (next_fd.ok()) joined_next = next_fd->get();
    if (IsFenced(next_fd.status())) joined_next = kJoinFenced;
  });
  absl::StatusOr<Previous> prev =
      AcceptPrevious(options, listener.get(), fence, joined_next, deadline, logger);
  join.join();
  if (!next_fd.ok() && !prev.ok()) {
    // Both directions failed: the accepting side knows why it refused the previous rank (a wrong
    // token), the joining side only that the next rank hung up.
    return absl::Status(next_fd.status().code(), std::string(next_fd.status().message()) + "; " +
                                                     std::string(prev.status().message()));
  }
  TAAS_RETURN_IF_ERROR(next_fd.status());
  TAAS_RETURN_IF_ERROR(prev.status());
  TAAS_RETURN_IF_ERROR(
      SealRing(options, listener.get(), fence, next_fd->get(), *prev, deadline, logger));
  watched.End();
  listener.Reset();  // a process started later cannot join a ring already formed
  logger.Info("all-reduce ring formed",
              {{"rank", options.rank},
               {"size", size},
               {"next", options.addresses[next]},
               {"prev", options.addresses[(options.rank + size - 1) % size]},
               {"secs", std::chrono::duration<double>(Clock::now() - start).count()}});
  return std::unique_ptr<Collective>(
      new TcpRing(options, std::move(*next_fd), std::move(prev->fd), logger));
}

}  // namespace taas::collective
