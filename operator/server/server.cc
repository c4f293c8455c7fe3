#include "taas/ui_server/server.h"

#include <sys/socket.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

namespace taas::ui_server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr std::size_t kBodyLimit = 1 << 20;

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

}  // namespace

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

struct HttpServer::State {
  const Api* api;
  ServerOptions options;
  Logger logger;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::thread accept_thread;
  std::atomic<bool> stopping{false};
  std::mutex mu;
  std::condition_variable idle;
  std::set<int> open_sockets;  // guarded by mu
  int port = 0;

  State(const Api* a, ServerOptions o, Logger l)
      : api(a), options(std::move(o)), logger(std::move(l)) {}

  // Serves requests until the peer or the server ends the connection; the caller closes it.
  void Serve(tcp::socket& socket);
  void Reply(tcp::socket& socket, const HttpResponse& response, bool keep_alive,
             beast::error_code& ec);
  void ServeAsset(tcp::socket& socket, const std::string& target, bool keep_alive,
                  beast::error_code& ec);
};

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

std::string AssetPathFor(const std::string& root, const std::string& target) {
  if (root.empty()) return "";
  std::string path = target.substr(0, target.find_first_of("?#"));
  if (path.empty() || path.front() != '/') return "";
  if (path.find("..") != std::string::npos || path.find('\\') != std::string::npos ||
      path.find('%') != std::string::npos || path.find('\0') != std::string::npos) {
    return "";
  }
  namespace fs = std::filesystem;
  const fs::path base(root);
  if (path != "/") {
    const fs::path file = base / path.substr(1);
    std::error_code ec;
    if (fs::is_regular_file(file, ec)) return file.string();
    // Unknown files with an extension are 404; other paths are routes of the single-page app.
    if (fs::path(path).has_extension()) return "";
  }
  const fs::path index = base / "index.html";
  std::error_code ec;
  return fs::is_regular_file(index, ec) ? index.string() : "";
}

void HttpServer::State::Reply(tcp::socket& socket, const HttpResponse& response, bool keep_alive,
                              beast::error_code& ec) {
  http::response<http::string_body> res{static_cast<http::status>(response.status), 11};
  AddCommonHeaders(res.base(), false);
  res.set(http::field::content_type, response.content_type);
  res.set(http::field::cache_control, "no-store");
  res.keep_alive(keep_alive);
  res.body() = response.body;
  res.prepare_payload();
  http::write(socket, res, ec);
}

void HttpServer::State::ServeAsset(tcp::socket& socket, const std::string& target, bool keep_alive,
                                   beast::error_code& ec) {
  const std::string file = AssetPathFor(options.assets_dir, target);
  if (file.empty()) {
    Reply(socket, {404, "text/plain; charset=utf-8", "not found\n"}, keep_alive, ec);
    return;
  }
  std::ifstream in(file, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  http::response<http::string_body> res{http::status::ok, 11};
  const bool html = file.size() >= 5 && file.compare(file.size() - 5, 5, ".html") == 0;
  AddCommonHeaders(res.base(), html);
  res.set(http::field::content_type, ContentTypeFor(file));
  // Vite names built files by content hash; index.html must always be fresh.
  res.set(http::field::cache_control, html ? "no-cache" : "public, max-age=31536000, immutable");
  res.keep_alive(keep_alive);
  res.body() = content.str();
  res.prepare_payload();
  http::write(socket, res, ec);
}

void HttpServer::State::Serve(tcp::socket& socket) {
  beast::flat_buffer buffer;
  beast::error_code ec;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(kBodyLimit);
    http::read(socket, buffer, parser, ec);
    if (ec == http::error::body_limit) {
      Reply(socket, {413, "application/json", R"({"error":"request body over 1 MiB"})"}, false, ec);
      break;
    }
    if (ec) break;
    const auto& req = parser.get();
    HttpRequest request;
    request.method = std::string(req.method_string());
    request.target = std::string(req.target());
    request.authorization = std::string(req[http::field::authorization]);
    request.body = req.body();
    const bool keep_alive = req.keep_alive() && !stopping.load();

    if (!Api::IsApiTarget(request.target)) {
      if (request.method != "GET" && request.method != "HEAD") {
        Reply(socket, {405, "text/plain; charset=utf-8", "method not allowed\n"}, keep_alive, ec);
      } else {
        ServeAsset(socket, request.target, keep_alive, ec);
      }
    } else if (api->IsFollowLogs(request)) {
      std::string kube_path;
      if (auto failed = api->PrepareFollowLogs(request, &kube_path)) {
        Reply(socket, *failed, keep_alive, ec);
      } else {
        http::response<http::empty_body> res{http::status::ok, 11};
        AddCommonHeaders(res.base(), false);
        res.set(http::field::content_type, "text/plain; charset=utf-8");
        res.set(http::field::cache_control, "no-store");
        res.chunked(true);
        res.keep_alive(false);
        http::response_serializer<http::empty_body> serializer(res);
        http::write_header(socket, serializer, ec);
        if (!ec) {
          const absl::Status streamed = api->FollowLogs(kube_path, [&](std::string_view chunk) {
            if (stopping.load()) return false;
            asio::write(socket, http::make_chunk(asio::buffer(chunk.data(), chunk.size())), ec);
            return !ec;
          });
          if (!streamed.ok() && !ec) {
            const std::string note =
                "\n[taas-ui] log stream ended: " + std::string(streamed.message()) + "\n";
            asio::write(socket, http::make_chunk(asio::buffer(note)), ec);
          }
          if (!ec) asio::write(socket, http::make_chunk_last(), ec);
        }
        break;
      }
    } else {
      Reply(socket, api->Handle(request), keep_alive, ec);
    }
    if (ec || !keep_alive) break;
  }
  socket.shutdown(tcp::socket::shutdown_both, ec);
}

HttpServer::HttpServer(const Api* api, ServerOptions options, Logger logger)
    : state_(std::make_shared<State>(api, std::move(options), std::move(logger))) {}

HttpServer::~HttpServer() { Stop(); }

absl::Status HttpServer::Start() {
  State& s = *state_;
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
  s.accept_thread = std::thread([state] {
    for (;;) {
      tcp::socket socket(state->io);
      beast::error_code accept_error;
      state->acceptor.accept(socket, accept_error);
      if (state->stopping.load()) break;
      if (accept_error) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      std::unique_lock<std::mutex> lock(state->mu);
      if (state->open_sockets.size() >= state->options.max_connections) {
        lock.unlock();
        beast::error_code ignored;
        socket.close(ignored);
        continue;
      }
      const int fd = socket.native_handle();
      state->open_sockets.insert(fd);
      lock.unlock();
      std::thread([state, fd, socket = std::move(socket)]() mutable {
        state->Serve(socket);
        {
          // Forget the descriptor before closing it, so Stop() never shuts down a reused one.
          std::lock_guard<std::mutex> guard(state->mu);
          state->open_sockets.erase(fd);
          state->idle.notify_all();
        }
        beast::error_code ignored;
        socket.close(ignored);
      }).detach();
    }
  });
  s.logger.Info("UI server listening",
                {{"address", s.options.host + ":" + std::to_string(s.port)}});
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
