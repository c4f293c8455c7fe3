#include "taas/ui_server/server.h"

#include <poll.h>
#include <sys/socket.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

namespace taas::ui_server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::string_view kIndexHtml = "/index.html";

HttpResponse JsonError(int status, const std::string& message) {
  // The message may quote the request, which need not be UTF-8: replaced, not thrown.
  return {status, "application/json",
          nlohmann::json{{"error", message}}.dump(-1, ' ', false,
                                                  nlohmann::json::error_handler_t::replace)};
}

std::string Seconds(std::chrono::milliseconds duration) {
  return std::to_string(duration.count() / 1000.0).substr(0, 5) + " s";
}

void AddCommonHeaders(http::response_header<>& header, bool html) {
  header.set(http::field::server, "taas-ui");
  header.set("X-Content-Type-Options", "nosniff");
  header.set("Referrer-Policy", "no-referrer");
  header.set("X-Frame-Options", "DENY");
  if (html) {
    header.set("Content-Security-Policy",
               "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
               "connect-src 'self'; frame-ancestors 'none'");
  }
}

// A path the front end routes itself (History API): "/", "/cluster", "/jobs/default/mnist/".
// Plain segments only, so nothing that names a file or climbs out of a folder falls back to it.
bool IsAppRoute(std::string_view path) {
  if (path.empty() || path.front() != '/') return false;
  path.remove_prefix(1);
  if (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (path.empty()) return true;
  std::size_t segment_length = 0;
  for (char c : path) {
    if (c == '/') {
      if (segment_length == 0) return false;
      segment_length = 0;
      continue;
    }
    const auto u = static_cast<unsigned char>(c);
    if (!(std::isalnum(u) || c == '-' || c == '_' || c == '~')) return false;
    ++segment_length;
  }
  return segment_length > 0;
}

// The status for a request that could not be read whole, and what to tell the client.
HttpResponse ReadFailure(const beast::error_code& ec, const ServerOptions& options) {
  if (ec == http::error::body_limit) {
    return JsonError(413, "the request body is over the limit of " +
                              std::to_string(options.max_body_bytes) +
                              " bytes; send a smaller body");
  }
  if (ec == http::error::header_limit) {
    return JsonError(431, "the request line and headers are over the limit of " +
                              std::to_string(options.max_header_bytes) + " bytes");
  }
  return JsonError(400, "malformed HTTP request: " + ec.message());
}

// Checks of a parsed request that the HTTP parser leaves to its user.
std::optional<HttpResponse> CheckHeaders(const http::request<http::string_body>& req) {
  if (req.count(http::field::authorization) > 1) {
    return JsonError(400, "the request has more than one Authorization header; send one");
  }
  if (req.count(http::field::host) > 1) {
    return JsonError(400, "the request has more than one Host header; send one");
  }
  return std::nullopt;
}

HttpRequest ToHttpRequest(const http::request<http::string_body>& req) {
  HttpRequest request;
  request.method = std::string(req.method_string());
  request.target = std::string(req.target());
  request.authorization = std::string(req[http::field::authorization]);
  request.body = req.body();
  return request;
}

// Calls `fire` for every armed deadline that passes, on its own thread. Disarm() after the
// guarded operation says whether the deadline fired; once Disarm() returns, that deadline never
// fires (so a descriptor closed after Disarm() is never touched).
class Watchdog {
 public:
  using Id = std::uint64_t;

  Watchdog() : thread_([this] { Run(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  Id Arm(Clock::duration after, std::function<void()> fire) {
    std::lock_guard<std::mutex> lock(mu_);
    const Id id = ++next_id_;
    armed_.emplace(id, Entry{Clock::now() + after, std::move(fire)});
    wake_.notify_all();
    return id;
  }

  // True when the deadline had already fired.
  bool Disarm(Id id) {
    std::lock_guard<std::mutex> lock(mu_);
    return armed_.erase(id) == 0;
  }

 private:
  struct Entry {
    Clock::time_point deadline;
    std::function<void()> fire;
  };

  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      Clock::time_point next = Clock::now() + std::chrono::seconds(1);
      const Clock::time_point now = Clock::now();
      for (auto it = armed_.begin(); it != armed_.end();) {
        if (it->second.deadline <= now) {
          it->second.fire();  // fire functions only shut down sockets or cancel; they don't throw
          it = armed_.erase(it);
        } else {
          next = std::min(next, it->second.deadline);
          ++it;
        }
      }
      wake_.wait_until(lock, next);
    }
  }

  std::mutex mu_;
  std::condition_variable wake_;
  std::map<Id, Entry> armed_;  // guarded by mu_
  Id next_id_ = 0;             // guarded by mu_
  bool stopping_ = false;      // guarded by mu_
  std::thread thread_;
};

}  // namespace

absl::Status CheckServerOptions(const ServerOptions& o) {
  auto range = [](const char* name, std::int64_t value, std::int64_t min, std::int64_t max,
                  const char* unit) -> absl::Status {
    if (value >= min && value <= max) return absl::OkStatus();
    return absl::InvalidArgumentError(std::string(name) + " must be from " + std::to_string(min) +
                                      " to " + std::to_string(max) + unit + ", got " +
                                      std::to_string(value));
  };
  using std::chrono::milliseconds;
  const std::int64_t kDay =
      std::chrono::duration_cast<milliseconds>(std::chrono::hours(24)).count();
  for (const absl::Status& s : {
           range("--max-connections", static_cast<std::int64_t>(o.max_connections), 1, 10000, ""),
           range("--max-body-bytes", static_cast<std::int64_t>(o.max_body_bytes), 1024, 64 << 20,
                 " bytes"),
           range("--max-header-bytes", static_cast<std::int64_t>(o.max_header_bytes), 1024, 1 << 20,
                 " bytes"),
           range("--idle-timeout", o.idle_timeout.count(), 100, kDay, " ms"),
           range("--header-timeout", o.header_timeout.count(), 100, kDay, " ms"),
           range("--body-timeout", o.body_timeout.count(), 100, kDay, " ms"),
           range("--write-timeout", o.write_timeout.count(), 100, kDay, " ms"),
           range("--max-follow", o.max_follow.count(), 1000, 7 * kDay, " ms"),
       }) {
    TAAS_RETURN_IF_ERROR(s);
  }
  return absl::OkStatus();
}

absl::Status ParseListenAddress(const std::string& flag, const std::string& text,
                                ServerOptions* out) {
  const auto colon = text.rfind(':');
  const std::string port = colon == std::string::npos ? "" : text.substr(colon + 1);
  const bool digits = !port.empty() && port.size() <= 5 &&
                      port.find_first_not_of("0123456789") == std::string::npos;
  if (colon == 0 || !digits || std::stoi(port) > 65535) {
    return absl::InvalidArgumentError(
        flag + " wants HOST:PORT with a port from 0 to 65535, got \"" + text + "\"");
  }
  out->host = text.substr(0, colon);
  out->port = std::stoi(port);
  return absl::OkStatus();
}

std::string ContentTypeFor(const std::string& file_name) {
  const std::string ext = std::filesystem::path(file_name).extension().string();
  if (ext == ".html") return "text/html; charset=utf-8";
  if (ext == ".js" || ext == ".mjs") return "text/javascript; charset=utf-8";
  if (ext == ".css") return "text/css; charset=utf-8";
  if (ext == ".json" || ext == ".map") return "application/json";
  if (ext == ".svg") return "image/svg+xml";
  if (ext == ".png") return "image/png";
  if (ext == ".ico") return "image/x-icon";
  if (ext == ".woff2") return "font/woff2";
  if (ext == ".txt") return "text/plain; charset=utf-8";
  return "application/octet-stream";
}

absl::StatusOr<AssetIndex> AssetIndex::Load(const std::string& root, std::size_t max_files,
                                            std::size_t max_bytes) {
  std::map<std::string, std::string> files;
  if (root.empty()) return FromFiles(files);
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return absl::NotFoundError("the assets folder " + root +
                               " is not a directory: build the web UI (web-ui-dist) or drop "
                               "--assets");
  }
  std::size_t total = 0;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_symlink(ec) || !it->is_regular_file(ec)) continue;
    const std::uintmax_t size = it->file_size(ec);
    if (ec) break;
    if (files.size() >= max_files || size > max_bytes - total) {
      return absl::ResourceExhaustedError(
          "the assets folder " + root + " holds more than " + std::to_string(max_files) +
          " files or " + std::to_string(max_bytes) + " bytes: point --assets at the built web UI");
    }
    std::ifstream in(it->path(), std::ios::binary);
    std::ostringstream content;
    content << in.rdbuf();
    if (!in && !in.eof()) return absl::UnavailableError("cannot read " + it->path().string());
    total += static_cast<std::size_t>(size);
    files["/" + fs::relative(it->path(), root, ec).generic_string()] = content.str();
  }
  if (ec)
    return absl::UnavailableError("cannot list the assets folder " + root + ": " + ec.message());
  return FromFiles(files);
}

AssetIndex AssetIndex::FromFiles(const std::map<std::string, std::string>& files) {
  AssetIndex index;
  for (const auto& [path, content] : files) {
    const std::string type = ContentTypeFor(path);
    index.assets_[path] = Asset{content, type, type.rfind("text/html", 0) == 0};
  }
  return index;
}

const AssetIndex::Asset* AssetIndex::Resolve(std::string_view target) const {
  const std::string_view raw = target.substr(0, target.find_first_of("?#"));
  const std::optional<std::string> path = PercentDecode(raw, /*plus_is_space=*/false);
  if (!path || path->empty() || path->front() != '/') return nullptr;
  if (auto it = assets_.find(*path); it != assets_.end() && *path != "/") return &it->second;
  if (!IsAppRoute(*path)) return nullptr;
  auto index = assets_.find(kIndexHtml);
  return index == assets_.end() ? nullptr : &index->second;
}

Answer AnswerRequest(const Api& api, const AssetIndex& assets, const HttpRequest& request) {
  if (Api::IsApiTarget(request.target)) return {api.Handle(request)};
  if (request.method != "GET" && request.method != "HEAD") {
    return {JsonError(405, "method " + request.method + " is not allowed for the web UI's files")};
  }
  if (const AssetIndex::Asset* asset = assets.Resolve(request.target)) return {{}, asset};
  return {JsonError(404, "no such file or page")};
}

int AnswerRawRequest(const Api& api, const AssetIndex& assets, const ServerOptions& options,
                     std::string_view bytes) {
  http::request_parser<http::string_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(options.max_header_bytes));
  parser.body_limit(options.max_body_bytes);
  parser.eager(true);
  beast::error_code ec;
  std::size_t used = 0;
  while (!ec && !parser.is_done() && used < bytes.size()) {
    const std::size_t n = parser.put(asio::buffer(bytes.data() + used, bytes.size() - used), ec);
    if (ec == http::error::need_more) break;
    used += n;
    if (n == 0 && !ec) break;
  }
  if (!parser.is_done()) {
    if (!ec || ec == http::error::need_more) return 408;  // the rest never arrived
    return ReadFailure(ec, options).status;
  }
  const auto& req = parser.get();
  if (auto bad = CheckHeaders(req)) return bad->status;
  const HttpRequest request = ToHttpRequest(req);
  if (api.IsFollowLogs(request)) {
    LogRequest log;
    auto failed = api.PrepareFollowLogs(request, &log);
    return failed ? failed->status : 200;
  }
  const Answer answer = AnswerRequest(api, assets, request);
  return answer.asset ? 200 : answer.response.status;
}

struct HttpServer::State : std::enable_shared_from_this<HttpServer::State> {
  const Api* api;
  ServerOptions options;
  Logger logger;
  AssetIndex assets;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::thread accept_thread;
  std::atomic<bool> stopping{false};
  Watchdog watchdog;
  std::mutex mu;
  std::condition_variable idle;
  std::set<int> open_sockets;  // guarded by mu
  std::size_t serving = 0;     // guarded by mu; connections served (the rest are being refused)
  int port = 0;

  State(const Api* a, ServerOptions o, Logger l)
      : api(a), options(std::move(o)), logger(std::move(l)) {}

  void AcceptLoop();
  void AcceptOne(tcp::socket socket);
  // Serves requests until the peer or the server ends the connection; the caller closes it.
  void Serve(tcp::socket& socket);
  // Reads one request header and answers 503: the server is at its connection limit.
  void Refuse(tcp::socket& socket);
  // Ends a connection without losing the answer just written: closing with unread input (the rest
  // of a request refused for its size) makes the kernel reset the connection, and a reset can
  // discard the answer before the client reads it. So the sending side is shut first and what the
  // client still sends is read and dropped, for at most kLingerTime and kLingerBytes.
  void LingeringClose(tcp::socket& socket);
  // Runs `op` with a deadline that shuts the socket down (`how`) when it passes; true if it did.
  template <typename Op>
  bool WithDeadline(tcp::socket& socket, std::chrono::milliseconds limit, int how, Op&& op) {
    const int fd = socket.native_handle();
    const Watchdog::Id id = watchdog.Arm(limit, [fd, how] { ::shutdown(fd, how); });
    op();
    return watchdog.Disarm(id);
  }
  void Write(tcp::socket& socket, const HttpResponse& response, bool keep_alive,
             beast::error_code& ec);
  void WriteAsset(tcp::socket& socket, const AssetIndex::Asset& asset, bool head, bool keep_alive,
                  beast::error_code& ec);
  void FollowLogs(tcp::socket& socket, const LogRequest& log, beast::error_code& ec);
};

void HttpServer::State::Write(tcp::socket& socket, const HttpResponse& response, bool keep_alive,
                              beast::error_code& ec) {
  http::response<http::string_body> res{static_cast<http::status>(response.status), 11};
  AddCommonHeaders(res.base(), false);
  res.set(http::field::content_type, response.content_type);
  res.set(http::field::cache_control, "no-store");
  if (response.status == 503) res.set(http::field::retry_after, "1");
  res.keep_alive(keep_alive);
  res.body() = response.body;
  res.prepare_payload();
  WithDeadline(socket, options.write_timeout, SHUT_RDWR, [&] { http::write(socket, res, ec); });
}

void HttpServer::State::WriteAsset(tcp::socket& socket, const AssetIndex::Asset& asset, bool head,
                                   bool keep_alive, beast::error_code& ec) {
  http::response<http::string_body> res{http::status::ok, 11};
  AddCommonHeaders(res.base(), asset.html);
  res.set(http::field::content_type, asset.content_type);
  // Vite names built files by content hash; index.html must always be fresh.
  res.set(http::field::cache_control,
          asset.html ? "no-cache" : "public, max-age=31536000, immutable");
  res.keep_alive(keep_alive);
  if (head) {
    res.content_length(asset.content.size());
  } else {
    res.body() = asset.content;
    res.prepare_payload();
  }
  WithDeadline(socket, options.write_timeout, SHUT_RDWR, [&] { http::write(socket, res, ec); });
}

void HttpServer::State::FollowLogs(tcp::socket& socket, const LogRequest& log,
                                   beast::error_code& ec) {
  http::response<http::empty_body> res{http::status::ok, 11};
  AddCommonHeaders(res.base(), false);
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.set(http::field::cache_control, "no-store");
  res.chunked(true);
  res.keep_alive(false);
  http::response_serializer<http::empty_body> serializer(res);
  WithDeadline(socket, options.write_timeout, SHUT_RDWR,
               [&] { http::write_header(socket, serializer, ec); });
  if (ec) return;

  // Ends the upstream stream when the client goes away or the stream has lasted max_follow,
  // even while the pod prints nothing.
  Cancellation cancel;
  std::atomic<bool> done{false};
  std::atomic<bool> expired{false};
  std::thread guard([&, fd = socket.native_handle()] {
    const Clock::time_point end = Clock::now() + options.max_follow;
    while (!done.load() && !stopping.load()) {
      if (Clock::now() >= end) {
        expired = true;
        break;
      }
      pollfd watched{fd, POLLIN | POLLRDHUP, 0};
      if (::poll(&watched, 1, 200) > 0) {
        if (watched.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) break;
        char discard[4096];  // the client may not send more; what it sends is dropped
        if (::recv(fd, discard, sizeof discard, MSG_DONTWAIT) == 0) break;
      }
    }
    cancel.Cancel();
  });
  absl::Status streamed;
  try {
    streamed = api->FollowLogs(
        log,
        [&](std::string_view chunk) {
          if (stopping.load() || cancel.cancelled()) return false;
          WithDeadline(socket, options.write_timeout, SHUT_RDWR, [&] {
            asio::write(socket, http::make_chunk(asio::buffer(chunk.data(), chunk.size())), ec);
          });
          return !ec;
        },
        &cancel);
  } catch (const std::exception& e) {
    streamed = absl::InternalError(e.what());
  }
  done = true;
  guard.join();
  std::string note;
  if (expired.load()) {
    note = "\n[taas-ui] log stream ended after the longest follow of " +
           Seconds(options.max_follow) + "; reload to follow again\n";
  } else if (!streamed.ok()) {
    note = "\n[taas-ui] log stream ended: " + std::string(streamed.message()) + "\n";
  }
  WithDeadline(socket, options.write_timeout, SHUT_RDWR, [&] {
    if (!ec && !note.empty()) asio::write(socket, http::make_chunk(asio::buffer(note)), ec);
    if (!ec) asio::write(socket, http::make_chunk_last(), ec);
  });
}

void HttpServer::State::Serve(tcp::socket& socket) {
  beast::flat_buffer buffer;
  beast::error_code ec;
  while (!stopping.load()) {
    if (buffer.size() == 0) {
      // Keep-alive: wait for the first byte of the next request, not forever.
      const bool idle_expired = WithDeadline(socket, options.idle_timeout, SHUT_RDWR,
                                             [&] { socket.wait(tcp::socket::wait_read, ec); });
      if (ec || idle_expired) break;
    }
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(options.max_header_bytes));
    parser.body_limit(options.max_body_bytes);
    bool timed_out = WithDeadline(socket, options.header_timeout, SHUT_RD,
                                  [&] { http::read_header(socket, buffer, parser, ec); });
    if (!ec && !timed_out && !parser.is_done()) {
      if (parser.get()[http::field::expect] == "100-continue") {
        WithDeadline(socket, options.write_timeout, SHUT_RDWR, [&] {
          asio::write(socket, asio::buffer(std::string_view("HTTP/1.1 100 Continue\r\n\r\n")), ec);
        });
      }
      if (!ec) {
        timed_out = WithDeadline(socket, options.body_timeout, SHUT_RD,
                                 [&] { http::read(socket, buffer, parser, ec); });
      }
    }
    if (timed_out) {
      Write(socket,
            JsonError(408, "the request did not arrive within " +
                               Seconds(parser.is_header_done() ? options.body_timeout
                                                               : options.header_timeout)),
            false, ec);
      break;
    }
    if (ec == http::error::end_of_stream || ec == asio::error::eof ||
        ec == asio::error::connection_reset || ec == http::error::partial_message) {
      break;
    }
    if (ec) {
      Write(socket, ReadFailure(ec, options), false, ec);
      break;
    }
    const auto& req = parser.get();
    const bool keep_alive = req.keep_alive() && !stopping.load();
    if (auto bad = CheckHeaders(req)) {
      Write(socket, *bad, false, ec);
      break;
    }
    const HttpRequest request = ToHttpRequest(req);
    if (api->IsFollowLogs(request)) {
      LogRequest log;
      if (auto failed = api->PrepareFollowLogs(request, &log)) {
        Write(socket, *failed, keep_alive, ec);
      } else {
        FollowLogs(socket, log, ec);
        break;
      }
    } else {
      const Answer answer = AnswerRequest(*api, assets, request);
      if (answer.asset) {
        WriteAsset(socket, *answer.asset, request.method == "HEAD", keep_alive, ec);
      } else {
        Write(socket, answer.response, keep_alive, ec);
      }
    }
    if (ec || !keep_alive) break;
  }
  LingeringClose(socket);
}

void HttpServer::State::LingeringClose(tcp::socket& socket) {
  constexpr auto kLingerTime = std::chrono::milliseconds(1000);
  constexpr std::size_t kLingerBytes = std::size_t{4} << 20;
  beast::error_code ec;
  socket.shutdown(tcp::socket::shutdown_send, ec);
  if (ec) return;
  WithDeadline(socket, kLingerTime, SHUT_RD, [&] {
    char sink[16 << 10];
    for (std::size_t drained = 0; drained < kLingerBytes;) {
      const std::size_t n = socket.read_some(asio::buffer(sink), ec);
      if (ec || n == 0) break;
      drained += n;
    }
  });
  socket.shutdown(tcp::socket::shutdown_receive, ec);
}

void HttpServer::State::Refuse(tcp::socket& socket) {
  // Read the request first, so that closing does not reset the connection before the client
  // has read the answer.
  beast::flat_buffer buffer;
  beast::error_code ec;
  http::request_parser<http::empty_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(options.max_header_bytes));
  WithDeadline(socket, std::min(options.header_timeout, std::chrono::milliseconds(2000)), SHUT_RD,
               [&] { http::read_header(socket, buffer, parser, ec); });
  Write(socket,
        JsonError(503, "the UI server is serving its limit of " +
                           std::to_string(options.max_connections) +
                           " connections; retry in a moment"),
        false, ec);
  LingeringClose(socket);
}

void HttpServer::State::AcceptOne(tcp::socket socket) {
  std::unique_lock<std::mutex> lock(mu);
  // Past the limit, as many connections again are answered 503; beyond that they are closed.
  if (open_sockets.size() >= 2 * options.max_connections) {
    lock.unlock();
    beast::error_code ignored;
    socket.close(ignored);
    return;
  }
  const bool serve = serving < options.max_connections;
  if (serve) ++serving;
  const int fd = socket.native_handle();
  open_sockets.insert(fd);
  lock.unlock();
  // The thread keeps the state alive: it may outlive Stop()'s wait.
  std::thread([self = shared_from_this(), serve, fd, socket = std::move(socket)]() mutable {
    try {
      serve ? self->Serve(socket) : self->Refuse(socket);
    } catch (const std::exception& e) {
      self->logger.Error("connection failed", {{"error", e.what()}});
    }
    {
      // Forget the descriptor before closing it, so Stop() never shuts down a reused one.
      std::lock_guard<std::mutex> guard(self->mu);
      self->open_sockets.erase(fd);
      if (serve) --self->serving;
      self->idle.notify_all();
    }
    beast::error_code ignored;
    socket.close(ignored);
  }).detach();
}

void HttpServer::State::AcceptLoop() {
  while (!stopping.load()) {
    try {
      tcp::socket socket(io);
      beast::error_code accept_error;
      acceptor.accept(socket, accept_error);
      if (stopping.load()) break;
      if (accept_error) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      AcceptOne(std::move(socket));
    } catch (const std::exception& e) {
      // Out of threads or memory: keep accepting once the pressure is gone.
      logger.Error("accepting a connection failed", {{"error", e.what()}});
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
}

HttpServer::HttpServer(const Api* api, ServerOptions options, Logger logger)
    : state_(std::make_shared<State>(api, std::move(options), std::move(logger))) {}

HttpServer::~HttpServer() { Stop(); }

absl::Status HttpServer::Start() {
  State& s = *state_;
  TAAS_RETURN_IF_ERROR(CheckServerOptions(s.options));
  TAAS_ASSIGN_OR_RETURN(s.assets, AssetIndex::Load(s.options.assets_dir));
  beast::error_code ec;
  const auto address = asio::ip::make_address(s.options.host, ec);
  if (ec)
    return absl::InvalidArgumentError("listen address \"" + s.options.host + "\": " + ec.message());
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(s.options.port));
  s.acceptor.open(endpoint.protocol(), ec);
  if (!ec) s.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(endpoint, ec);
  if (!ec) s.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError("cannot listen on " + s.options.host + ":" +
                                  std::to_string(s.options.port) + ": " + ec.message());
  }
  s.port = s.acceptor.local_endpoint().port();
  std::shared_ptr<State> state = state_;
  s.accept_thread = std::thread([state] { state->AcceptLoop(); });
  s.logger.Info("UI server listening", {{"address", s.options.host + ":" + std::to_string(s.port)},
                                        {"assets", static_cast<std::int64_t>(s.assets.size())}});
  return absl::OkStatus();
}

int HttpServer::port() const { return state_->port; }

void HttpServer::Stop() {
  State& s = *state_;
  if (s.stopping.exchange(true)) return;
  if (s.acceptor.is_open()) ::shutdown(s.acceptor.native_handle(), SHUT_RDWR);
  if (s.accept_thread.joinable()) s.accept_thread.join();
  beast::error_code ec;
  s.acceptor.close(ec);
  std::unique_lock<std::mutex> lock(s.mu);
  // Wake connections blocked in a read; each closes its own socket.
  for (int fd : s.open_sockets) ::shutdown(fd, SHUT_RDWR);
  s.idle.wait_for(lock, std::chrono::seconds(5), [&] { return s.open_sockets.empty(); });
}

}  // namespace taas::ui_server
