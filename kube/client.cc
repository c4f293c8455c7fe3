// Kubernetes client over Boost.Beast. Each pooled connection owns a private io_context; blocking
// calls run asynchronous operations on it so that every read and write has a deadline
// (beast::tcp_stream::expires_after), and a watch can be cancelled from another thread by posting
// a close to that io_context.
#include "taas/kube/client.h"

#include <absl/strings/ascii.h>
#include <absl/strings/cord.h>
#include <absl/strings/escaping.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <yaml-cpp/yaml.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

#include "taas/base/json_fields.h"
#include "taas/base/status.h"

namespace taas::kube {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
namespace jf = taas::json_fields;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot read " + path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

struct ServerAddress {
  bool tls = true;
  std::string host;  // without brackets
  std::string port;
  std::string prefix;  // path prefix without a trailing slash
};

absl::StatusOr<ServerAddress> ParseServer(std::string_view url) {
  ServerAddress addr;
  if (url.rfind("https://", 0) == 0) {
    url.remove_prefix(8);
  } else if (url.rfind("http://", 0) == 0) {
    addr.tls = false;
    url.remove_prefix(7);
  } else {
    return absl::InvalidArgumentError("server URL must start with https:// or http://, got \"" +
                                      std::string(url) + "\"");
  }
  std::string_view hostport = url.substr(0, url.find('/'));
  if (hostport.size() < url.size()) addr.prefix = std::string(url.substr(hostport.size()));
  while (!addr.prefix.empty() && addr.prefix.back() == '/') addr.prefix.pop_back();
  if (!hostport.empty() && hostport.front() == '[') {
    auto close = hostport.find(']');
    if (close == std::string_view::npos) return absl::InvalidArgumentError("bad IPv6 host");
    addr.host = std::string(hostport.substr(1, close - 1));
    if (close + 1 < hostport.size() && hostport[close + 1] == ':')
      addr.port = std::string(hostport.substr(close + 2));
  } else {
    auto colon = hostport.rfind(':');
    addr.host = std::string(hostport.substr(0, colon));
    if (colon != std::string_view::npos) addr.port = std::string(hostport.substr(colon + 1));
  }
  if (addr.host.empty()) return absl::InvalidArgumentError("server URL has no host");
  if (addr.port.empty()) addr.port = addr.tls ? "443" : "80";
  return addr;
}

bool IsIpAddress(const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

absl::Status TransportError(std::string_view what, const beast::error_code& ec) {
  std::string message = std::string(what) + ": " + ec.message();
  if (ec == http::error::body_limit) {
    return absl::ResourceExhaustedError(
        message + " (the response is larger than ClientConfig::max_response_bytes)");
  }
  if (ec == beast::error::timeout) return absl::DeadlineExceededError(message);
  if (ec == asio::error::operation_aborted) return absl::CancelledError(message);
  return absl::UnavailableError(message);
}

// A connection and the io_context its operations run on. Used by one thread at a time.
struct Conn {
  asio::io_context ioc;
  std::optional<beast::tcp_stream> plain;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls;
  beast::flat_buffer buffer;
  bool reused = false;

  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *plain; }

  // Runs one asynchronous operation started by `start(handler)` to completion.
  template <class Start>
  beast::error_code Run(Start&& start) {
    beast::error_code result;
    ioc.restart();
    start([&result](beast::error_code ec, auto&&...) { result = ec; });
    ioc.run();
    return result;
  }

  template <class Fn>
  auto WithStream(Fn&& fn) {
    if (tls) return fn(*tls);
    return fn(*plain);
  }
};

const char* ContentType(PatchType type) {
  switch (type) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
    case PatchType::kJsonPatch:
      return "application/json-patch+json";
    case PatchType::kApply:
      return "application/apply-patch+yaml";
  }
  return "application/json";
}

bool IsStaleConnectionError(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == ssl::error::stream_truncated;
}

}  // namespace

class Client::Impl {
 public:
  Impl(ClientConfig config, ServerAddress address)
      : config_(std::move(config)),
        address_(std::move(address)),
        ssl_ctx_(ssl::context::tls_client) {}

  absl::Status Init() {
    if (!address_.tls) return absl::OkStatus();
    try {
      ssl_ctx_.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                           ssl::context::no_sslv3);
      if (config_.insecure_skip_tls_verify) {
        ssl_ctx_.set_verify_mode(ssl::verify_none);
      } else {
        ssl_ctx_.set_verify_mode(ssl::verify_peer);
        if (config_.ca_pem.empty()) {
          ssl_ctx_.set_default_verify_paths();
        } else {
          ssl_ctx_.add_certificate_authority(asio::buffer(config_.ca_pem));
        }
      }
      if (!config_.client_cert_pem.empty()) {
        ssl_ctx_.use_certificate_chain(asio::buffer(config_.client_cert_pem));
        ssl_ctx_.use_private_key(asio::buffer(config_.client_key_pem), ssl::context::pem);
      }
    } catch (const boost::system::system_error& e) {
      return absl::InvalidArgumentError(std::string("TLS configuration: ") + e.what());
    }
    return absl::OkStatus();
  }

  const ClientConfig& config() const { return config_; }

  ClientStats stats() const { return ClientStats{requests_.load(), errors_.load()}; }

  // A complete request/response exchange on a pooled connection.
  // The whole call, including a connect and a retry on a stale pooled connection, ends by one
  // deadline: `call.timeout`, or the configured timeout.
  absl::StatusOr<std::string> Exchange(http::verb verb, std::string_view path,
                                       const std::string* body, const char* content_type,
                                       const char* accept, const CallOptions& call) {
    requests_.fetch_add(1);
    const auto deadline =
        Clock::now() + (call.timeout.count() > 0 ? call.timeout : config_.timeout);
    auto request = MakeRequest(verb, path, body, content_type, accept);
    for (int attempt = 0;; ++attempt) {
      auto conn = Acquire(deadline);
      if (!conn.ok()) {
        errors_.fetch_add(1);
        return conn.status();
      }
      std::unique_ptr<Conn> c = std::move(*conn);
      bool reused = c->reused;
      http::response_parser<http::string_body> parser;
      parser.body_limit(config_.max_response_bytes);
      beast::error_code ec = c->WithStream([&](auto& stream) {
        c->lowest().expires_at(deadline);
        beast::error_code wec =
            c->Run([&](auto handler) { http::async_write(stream, request, handler); });
        if (wec) return wec;
        // The header first: Beast 1.74's eager body read does not hold a declared Content-Length
        // to body_limit, so a huge one is refused here before any of the body is read.
        c->lowest().expires_at(deadline);
        beast::error_code hec = c->Run(
            [&](auto handler) { http::async_read_header(stream, c->buffer, parser, handler); });
        if (hec) return hec;
        if (parser.content_length() && *parser.content_length() > config_.max_response_bytes) {
          return beast::error_code(http::error::body_limit);
        }
        c->lowest().expires_at(deadline);
        return c->Run([&](auto handler) { http::async_read(stream, c->buffer, parser, handler); });
      });
      if (ec) {
        if (reused && attempt == 0 && IsStaleConnectionError(ec)) continue;
        errors_.fetch_add(1);
        return TransportError(std::string(http::to_string(verb)) + " " + std::string(path), ec);
      }
      auto& response = parser.get();
      int code = static_cast<int>(response.result_int());
      bool keep_alive = response.keep_alive();
      std::string out = std::move(response.body());
      if (keep_alive) Release(std::move(c));
      if (code < 200 || code > 299) {
        errors_.fetch_add(1);
        return StatusFromHttp(code, out);
      }
      return out;
    }
  }

  // Streams a response body to `on_data` as it arrives, on a dedicated connection.
  absl::Status Stream(std::string_view path, const StreamOptions& options,
                      const std::function<bool(std::string_view)>& on_data) {
    requests_.fetch_add(1);
    auto request = MakeRequest(http::verb::get, path, nullptr, nullptr, "application/json, */*");
    auto conn = Connect(Clock::now() + config_.timeout);
    if (!conn.ok()) {
      errors_.fetch_add(1);
      return conn.status();
    }
    std::unique_ptr<Conn> c = std::move(*conn);
    Conn* raw = c.get();
    if (options.cancel != nullptr && !options.cancel->Register([raw] {
          asio::post(raw->ioc, [raw] {
            beast::error_code ignored;
            raw->lowest().socket().close(ignored);
          });
        })) {
      return absl::OkStatus();
    }
    struct Unregister {
      Cancellation* cancel;
      ~Unregister() {
        if (cancel != nullptr) cancel->Unregister();
      }
    } unregister{options.cancel};
    auto cancelled = [&] { return options.cancel != nullptr && options.cancel->cancelled(); };

    absl::Status result = c->WithStream([&](auto& stream) -> absl::Status {
      c->lowest().expires_after(config_.timeout);
      beast::error_code ec =
          c->Run([&](auto handler) { http::async_write(stream, request, handler); });
      if (ec)
        return cancelled() ? absl::OkStatus() : TransportError("watch " + std::string(path), ec);
      http::response_parser<http::buffer_body> parser;
      // Not boost::none: Boost 1.74 then rejects every body with a Content-Length.
      parser.body_limit(std::numeric_limits<std::uint64_t>::max());
      c->lowest().expires_after(config_.timeout);
      ec = c->Run(
          [&](auto handler) { http::async_read_header(stream, c->buffer, parser, handler); });
      if (ec)
        return cancelled() ? absl::OkStatus() : TransportError("watch " + std::string(path), ec);
      int code = static_cast<int>(parser.get().result_int());
      bool ok_code = code >= 200 && code <= 299;
      std::string error_body;
      std::vector<char> buf(64 * 1024);
      while (!parser.is_done()) {
        if (cancelled()) return absl::OkStatus();
        parser.get().body().data = buf.data();
        parser.get().body().size = buf.size();
        c->lowest().expires_after(ok_code ? options.idle_timeout : config_.timeout);
        ec = c->Run(
            [&](auto handler) { http::async_read_some(stream, c->buffer, parser, handler); });
        if (ec == http::error::need_buffer) ec = {};
        std::size_t n = buf.size() - parser.get().body().size;
        if (n > 0) {
          if (ok_code) {
            if (!on_data(std::string_view(buf.data(), n))) return absl::OkStatus();
          } else if (error_body.size() < kMaxErrorBody) {
            // An error answer is a Status object; only its beginning is kept for the message.
            error_body.append(buf.data(), std::min(n, kMaxErrorBody - error_body.size()));
          }
        }
        if (ec) {
          if (cancelled()) return absl::OkStatus();
          if (ok_code && (ec == http::error::end_of_stream || ec == http::error::partial_message))
            return absl::UnavailableError("watch " + std::string(path) + ": connection closed");
          return TransportError("watch " + std::string(path), ec);
        }
      }
      if (!ok_code) return StatusFromHttp(code, error_body);
      return absl::OkStatus();
    });
    if (!result.ok()) errors_.fetch_add(1);
    return result;
  }

 private:
  http::request<http::string_body> MakeRequest(http::verb verb, std::string_view path,
                                               const std::string* body, const char* content_type,
                                               const char* accept) {
    http::request<http::string_body> req{verb, address_.prefix + std::string(path), 11};
    req.set(http::field::host, address_.host + ":" + address_.port);
    req.set(http::field::user_agent, "taas-operator/0.1");
    req.set(http::field::accept, accept);
    std::string token = Token();
    if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
    if (body != nullptr) {
      req.set(http::field::content_type, content_type);
      req.body() = *body;
    }
    req.keep_alive(true);
    req.prepare_payload();
    return req;
  }

  std::string Token() {
    if (config_.token_file.empty()) return config_.bearer_token;
    std::lock_guard<std::mutex> lock(token_mu_);
    auto now = Clock::now();
    if (token_.empty() || now - token_read_ > std::chrono::minutes(1)) {
      auto text = ReadFile(config_.token_file);
      if (text.ok()) {
        token_ = std::string(absl::StripAsciiWhitespace(*text));
        token_read_ = now;
      }
    }
    return token_.empty() ? config_.bearer_token : token_;
  }

  absl::StatusOr<std::unique_ptr<Conn>> Acquire(Clock::time_point deadline) {
    {
      std::lock_guard<std::mutex> lock(pool_mu_);
      if (!pool_.empty()) {
        auto c = std::move(pool_.back());
        pool_.pop_back();
        c->reused = true;
        return c;
      }
    }
    return Connect(deadline);
  }

  void Release(std::unique_ptr<Conn> c) {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (pool_.size() < kMaxIdle) pool_.push_back(std::move(c));
  }

  absl::StatusOr<std::unique_ptr<Conn>> Connect(Clock::time_point deadline) {
    auto c = std::make_unique<Conn>();
    tcp::resolver resolver(c->ioc);
    beast::error_code ec;
    auto endpoints = resolver.resolve(address_.host, address_.port, ec);
    if (ec) return TransportError("resolve " + address_.host, ec);
    if (address_.tls) {
      c->tls.emplace(c->ioc, ssl_ctx_);
    } else {
      c->plain.emplace(c->ioc);
    }
    c->lowest().expires_at(deadline);
    ec = c->Run([&](auto handler) { c->lowest().async_connect(endpoints, handler); });
    if (ec) return TransportError("connect " + config_.server, ec);
    beast::error_code nodelay_ec;
    c->lowest().socket().set_option(tcp::no_delay(true), nodelay_ec);
    if (address_.tls) {
      SSL* ssl_handle = c->tls->native_handle();
      if (!IsIpAddress(address_.host)) SSL_set_tlsext_host_name(ssl_handle, address_.host.c_str());
      if (!config_.insecure_skip_tls_verify) {
        X509_VERIFY_PARAM* param = SSL_get0_param(ssl_handle);
        if (IsIpAddress(address_.host)) {
          X509_VERIFY_PARAM_set1_ip_asc(param, address_.host.c_str());
        } else {
          X509_VERIFY_PARAM_set1_host(param, address_.host.c_str(), 0);
        }
      }
      c->lowest().expires_at(deadline);
      ec =
          c->Run([&](auto handler) { c->tls->async_handshake(ssl::stream_base::client, handler); });
      if (ec) return TransportError("TLS handshake with " + config_.server, ec);
    }
    return c;
  }

  // Idle keep-alive connections kept: above the operator's calls in flight (the controller's task
  // pool, its workers and the event recorder), so a busy operator never re-handshakes TLS.
  static constexpr std::size_t kMaxIdle = 32;
  // Bytes of a failed stream's answer kept for its error message.
  static constexpr std::size_t kMaxErrorBody = 64 * 1024;

  ClientConfig config_;
  ServerAddress address_;
  ssl::context ssl_ctx_;
  std::atomic<std::uint64_t> requests_{0};
  std::atomic<std::uint64_t> errors_{0};
  std::mutex pool_mu_;
  std::vector<std::unique_ptr<Conn>> pool_;  // guarded by pool_mu_
  std::mutex token_mu_;
  std::string token_;  // guarded by token_mu_
  Clock::time_point token_read_;
};

absl::StatusOr<std::unique_ptr<Client>> Client::Create(ClientConfig config) {
  auto address = ParseServer(config.server);
  if (!address.ok()) return address.status();
  auto impl = std::make_unique<Impl>(std::move(config), std::move(*address));
  if (auto status = impl->Init(); !status.ok()) return status;
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

const ClientConfig& Client::config() const { return impl_->config(); }
ClientStats Client::stats() const { return impl_->stats(); }

namespace {
absl::StatusOr<nlohmann::json> ParseJson(absl::StatusOr<std::string> text) {
  if (!text.ok()) return text.status();
  if (text->empty()) return nlohmann::json::object();
  auto parsed = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return absl::InternalError("API server answered with invalid JSON");
  return parsed;
}
}  // namespace

absl::StatusOr<nlohmann::json> Client::Get(std::string_view path, const CallOptions& call) {
  return ParseJson(
      impl_->Exchange(http::verb::get, path, nullptr, nullptr, "application/json", call));
}

absl::StatusOr<nlohmann::json> Client::Post(std::string_view path, const nlohmann::json& body,
                                            const CallOptions& call) {
  std::string text = body.dump();
  return ParseJson(
      impl_->Exchange(http::verb::post, path, &text, "application/json", "application/json", call));
}

absl::StatusOr<nlohmann::json> Client::Put(std::string_view path, const nlohmann::json& body,
                                           const CallOptions& call) {
  std::string text = body.dump();
  return ParseJson(
      impl_->Exchange(http::verb::put, path, &text, "application/json", "application/json", call));
}

absl::StatusOr<nlohmann::json> Client::Patch(std::string_view path, const nlohmann::json& body,
                                             PatchType type, const CallOptions& call) {
  std::string text = body.dump();
  return ParseJson(
      impl_->Exchange(http::verb::patch, path, &text, ContentType(type), "application/json", call));
}

absl::StatusOr<nlohmann::json> Client::Delete(std::string_view path, const nlohmann::json& body,
                                              const CallOptions& call) {
  if (body.is_null()) {
    return ParseJson(
        impl_->Exchange(http::verb::delete_, path, nullptr, nullptr, "application/json", call));
  }
  std::string text = body.dump();
  return ParseJson(impl_->Exchange(http::verb::delete_, path, &text, "application/json",
                                   "application/json", call));
}

absl::Status WatchDecoder::Feed(std::string_view data,
                                const std::function<bool(const WatchEvent&)>& on_event,
                                bool* stopped) {
  *stopped = false;
  std::size_t start = 0;
  for (;;) {
    const std::size_t nl = data.find('\n', start);
    const std::size_t line_end = nl == std::string_view::npos ? data.size() : nl;
    if (pending_.size() + (line_end - start) > max_line_bytes_) {
      pending_.clear();
      return absl::ResourceExhaustedError(
          "a watch event is longer than ClientConfig::max_watch_event_bytes (" +
          std::to_string(max_line_bytes_) + " bytes)");
    }
    if (nl == std::string_view::npos) {
      pending_.append(data.substr(start));
      return absl::OkStatus();
    }
    std::string_view line = data.substr(start, nl - start);
    if (!pending_.empty()) {
      pending_.append(line);
      line = pending_;
    }
    start = nl + 1;
    if (line.find_first_not_of(" \r\t") == std::string_view::npos) {
      pending_.clear();
      continue;
    }
    auto parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    pending_.clear();
    const std::optional<std::string> type =
        parsed.is_discarded() ? std::nullopt : jf::String(parsed, "type");
    if (!type) {
      return absl::InternalError(
          "invalid watch event line: not a JSON object with a string \"type\"");
    }
    WatchEvent event;
    event.type = *type;
    if (auto object = parsed.find("object"); object != parsed.end())
      event.object = std::move(*object);
    if (!on_event(event)) {
      *stopped = true;
      return absl::OkStatus();
    }
  }
}

absl::Status Client::Watch(std::string_view path, const WatchCallback& on_event,
                           const StreamOptions& options) {
  WatchDecoder decoder(impl_->config().max_watch_event_bytes);
  absl::Status decode_error;
  absl::Status status = impl_->Stream(path, options, [&](std::string_view data) {
    bool stopped = false;
    decode_error = decoder.Feed(data, on_event, &stopped);
    return decode_error.ok() && !stopped;
  });
  if (!decode_error.ok()) {
    return absl::Status(decode_error.code(),
                        "watch " + std::string(path) + ": " + std::string(decode_error.message()));
  }
  return status;
}

absl::Status Client::StreamText(std::string_view path, const ChunkCallback& on_chunk,
                                const StreamOptions& options) {
  return impl_->Stream(path, options, on_chunk);
}

absl::Status StatusFromHttp(int http_code, std::string_view body) {
  if (http_code >= 200 && http_code <= 299) return absl::OkStatus();
  std::string message;
  std::string reason;
  auto parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  bool is_status = !parsed.is_discarded() && jf::StringOr(parsed, "kind", "") == "Status";
  if (is_status) {
    message = jf::StringOr(parsed, "message", "");
    reason = jf::StringOr(parsed, "reason", "");
  }
  if (message.empty()) {
    message = "HTTP " + std::to_string(http_code);
    std::string_view snippet = body.substr(0, 200);
    if (!snippet.empty()) message += ": " + std::string(snippet);
  }
  absl::StatusCode code;
  switch (http_code) {
    case 400:
    case 422:
      code = absl::StatusCode::kInvalidArgument;
      break;
    case 401:
      code = absl::StatusCode::kUnauthenticated;
      break;
    case 403:
      code = absl::StatusCode::kPermissionDenied;
      break;
    case 404:
      code = absl::StatusCode::kNotFound;
      break;
    case 409:
      code =
          reason == "AlreadyExists" ? absl::StatusCode::kAlreadyExists : absl::StatusCode::kAborted;
      break;
    case 410:
      code = absl::StatusCode::kOutOfRange;
      break;
    case 429:
      code = absl::StatusCode::kResourceExhausted;
      break;
    case 500:
      code = absl::StatusCode::kInternal;
      break;
    case 503:
      code = absl::StatusCode::kUnavailable;
      break;
    case 504:
      code = absl::StatusCode::kDeadlineExceeded;
      break;
    default:
      code = http_code >= 400 && http_code < 500 ? absl::StatusCode::kFailedPrecondition
                                                 : absl::StatusCode::kUnknown;
  }
  absl::Status status(code, message);
  if (is_status) status.SetPayload(kStatusPayloadUrl, absl::Cord(parsed.dump()));
  return status;
}

std::optional<nlohmann::json> KubeStatusOf(const absl::Status& status) {
  auto payload = status.GetPayload(kStatusPayloadUrl);
  if (!payload) return std::nullopt;
  auto parsed = nlohmann::json::parse(std::string(*payload), nullptr, false);
  if (parsed.is_discarded()) return std::nullopt;
  return parsed;
}

std::string QueryEscape(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char ch : value) {
    if (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
      out.push_back(static_cast<char>(ch));
    } else {
      out.push_back('%');
      out.push_back(kHex[ch >> 4]);
      out.push_back(kHex[ch & 15]);
    }
  }
  return out;
}

// ---- configuration ----

namespace {

// A kubeconfig value given inline (`*-data`, base64) or as a file relative to the kubeconfig.
absl::StatusOr<std::string> InlineOrFile(const YAML::Node& node, const std::string& data_key,
                                         const std::string& file_key,
                                         const std::filesystem::path& base) {
  if (node[data_key]) {
    std::string decoded;
    if (!absl::Base64Unescape(node[data_key].as<std::string>(), &decoded))
      return absl::InvalidArgumentError(data_key + " is not valid base64");
    return decoded;
  }
  if (node[file_key]) {
    std::filesystem::path p = node[file_key].as<std::string>();
    if (p.is_relative()) p = base / p;
    return ReadFile(p.string());
  }
  return std::string();
}

YAML::Node FindNamed(const YAML::Node& list, const std::string& name, const char* inner) {
  if (!list || !list.IsSequence()) return YAML::Node();
  for (const auto& item : list) {
    if (item["name"] && item["name"].as<std::string>() == name) return item[inner];
  }
  return YAML::Node();
}

}  // namespace

absl::StatusOr<ClientConfig> LoadKubeconfig(const std::string& path) {
  try {
    YAML::Node root = YAML::LoadFile(path);
    std::filesystem::path base = std::filesystem::path(path).parent_path();
    std::string context_name =
        root["current-context"] ? root["current-context"].as<std::string>() : "";
    YAML::Node context = FindNamed(root["contexts"], context_name, "context");
    if (!context && root["contexts"] && root["contexts"].size() == 1)
      context = root["contexts"][0]["context"];
    if (!context) return absl::InvalidArgumentError(path + ": no current context");
    std::string cluster_name = context["cluster"] ? context["cluster"].as<std::string>() : "";
    std::string user_name = context["user"] ? context["user"].as<std::string>() : "";
    YAML::Node cluster = FindNamed(root["clusters"], cluster_name, "cluster");
    if (!cluster || !cluster["server"])
      return absl::InvalidArgumentError(path + ": cluster \"" + cluster_name + "\" has no server");
    YAML::Node user = FindNamed(root["users"], user_name, "user");

    ClientConfig config;
    config.server = cluster["server"].as<std::string>();
    if (context["namespace"]) config.namespace_name = context["namespace"].as<std::string>();
    if (cluster["insecure-skip-tls-verify"])
      config.insecure_skip_tls_verify = cluster["insecure-skip-tls-verify"].as<bool>();
    TAAS_ASSIGN_OR_RETURN(config.ca_pem, InlineOrFile(cluster, "certificate-authority-data",
                                                      "certificate-authority", base));
    if (user) {
      TAAS_ASSIGN_OR_RETURN(config.client_cert_pem, InlineOrFile(user, "client-certificate-data",
                                                                 "client-certificate", base));
      TAAS_ASSIGN_OR_RETURN(config.client_key_pem,
                            InlineOrFile(user, "client-key-data", "client-key", base));
      if (user["token"]) config.bearer_token = user["token"].as<std::string>();
      if (user["tokenFile"]) {
        std::filesystem::path p = user["tokenFile"].as<std::string>();
        if (p.is_relative()) p = base / p;
        config.token_file = p.string();
      }
    }
    return config;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(path + ": " + e.what());
  }
}

absl::StatusOr<ClientConfig> InClusterConfig() {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0')
    return absl::FailedPreconditionError(
        "not running in a cluster: KUBERNETES_SERVICE_HOST/PORT are not set");
  const std::string dir = "/var/run/secrets/kubernetes.io/serviceaccount/";
  ClientConfig config;
  std::string h = host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";
  config.server = "https://" + h + ":" + port;
  auto ca = ReadFile(dir + "ca.crt");
  if (!ca.ok()) return ca.status();
  config.ca_pem = *ca;
  config.token_file = dir + "token";
  auto token = ReadFile(config.token_file);
  if (!token.ok()) return token.status();
  config.bearer_token = std::string(absl::StripAsciiWhitespace(*token));
  if (auto ns = ReadFile(dir + "namespace"); ns.ok())
    config.namespace_name = std::string(absl::StripAsciiWhitespace(*ns));
  return config;
}

}  // namespace taas::kube
