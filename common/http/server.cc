#include "taas/http/server.h"

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>
#include <thread>

namespace taas::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

namespace {

// After the answer: what a client still sends is read and dropped for at most this long (and this
// much), so that closing with unread input does not reset the connection before it reads the
// answer.
constexpr auto kLingerTime = std::chrono::seconds(1);
constexpr std::size_t kLingerBytes = std::size_t{1} << 20;

// The answer to a request that could not be read whole; nullopt when there is no one to answer
// (the client went away or the deadline passed).
std::optional<Response> ReadFailure(const beast::error_code& ec) {
  if (ec == bhttp::error::header_limit) {
    return Response{431, "text/plain; charset=utf-8", "request header too large\n"};
  }
  if (ec == bhttp::error::unexpected_body || ec == bhttp::error::body_limit) {
    return Response{413, "text/plain; charset=utf-8", "this endpoint takes no request body\n"};
  }
  const bool parse_error = ec.category() == make_error_code(bhttp::error::bad_method).category();
  if (parse_error && ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message) {
    return Response{400, "text/plain; charset=utf-8", "malformed request\n"};
  }
  return std::nullopt;
}

}  // namespace

class Server::Impl {
 public:
  Impl(ServerOptions options, Handler handler)
      : options_(std::move(options)), handler_(std::move(handler)), acceptor_(io_) {}

  ~Impl() {
    asio::post(io_, [this] {
      beast::error_code ignored;
      acceptor_.close(ignored);
    });
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }

  absl::Status Listen() {
    beast::error_code ec;
    const auto address = asio::ip::make_address(options_.host, ec);
    if (ec) {
      return absl::InvalidArgumentError("listen address \"" + options_.host +
                                        "\" is not a numeric IP address");
    }
    const tcp::endpoint endpoint(address, static_cast<unsigned short>(options_.port));
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return absl::UnavailableError("cannot listen on " + options_.host + ":" +
                                    std::to_string(options_.port) + ": " + ec.message());
    }
    port_ = acceptor_.local_endpoint().port();
    Accept();
    thread_ = std::thread([this] { io_.run(); });
    return absl::OkStatus();
  }

  int port() const { return port_; }

 private:
  class Session;

  void Accept();

  const ServerOptions options_;
  const Handler handler_;
  std::size_t open_connections_ = 0;  // touched on the server's thread only
  int port_ = 0;
  asio::io_context io_;  // after the state its pending sessions reach when it destroys them
  tcp::acceptor acceptor_;
  std::thread thread_;
};

class Server::Impl::Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Impl* server) : stream_(std::move(socket)), server_(server) {
    ++server_->open_connections_;
  }
  ~Session() { --server_->open_connections_; }

  void Start() {
    stream_.expires_after(server_->options_.connection_deadline);
    parser_.header_limit(static_cast<std::uint32_t>(server_->options_.max_header_bytes));
    bhttp::async_read(
        stream_, buffer_, parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->OnRead(ec); });
  }

 private:
  void OnRead(const beast::error_code& ec) {
    if (ec) {
      if (auto answer = ReadFailure(ec)) Write(*answer, false);
      return;
    }
    const auto& request = parser_.get();
    const bool head = request.method() == bhttp::verb::head;
    if (request.method() != bhttp::verb::get && !head) {
      Write({405, "text/plain; charset=utf-8", "only GET and HEAD are served here\n"}, false);
      return;
    }
    const std::string_view target(request.target().data(), request.target().size());
    const std::size_t question = target.find('?');
    Request r{std::string(request.method_string()), std::string(target.substr(0, question)),
              question == std::string_view::npos ? "" : std::string(target.substr(question + 1))};
    Write(server_->handler_(r), head);
  }

  void Write(const Response& answer, bool head) {
    response_.result(static_cast<unsigned>(answer.status));
    response_.version(11);
    response_.keep_alive(false);
    response_.set(bhttp::field::content_type, answer.content_type);
    response_.set(bhttp::field::cache_control, "no-store");
    response_.body() = head ? "" : answer.body;
    response_.prepare_payload();
    if (head) response_.content_length(answer.body.size());
    bhttp::async_write(stream_, response_,
                       [self = shared_from_this()](beast::error_code ec, std::size_t) {
                         if (!ec) self->Linger();
                       });
  }

  void Linger() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(kLingerTime);
    Drain();
  }

  void Drain() {
    stream_.async_read_some(asio::buffer(sink_),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              self->drained_ += n;
                              if (!ec && self->drained_ < kLingerBytes) self->Drain();
                            });
  }

  beast::tcp_stream stream_;
  Impl* server_;
  beast::flat_buffer buffer_{8 << 10};
  bhttp::request_parser<bhttp::empty_body> parser_;
  bhttp::response<bhttp::string_body> response_;
  std::array<char, 16 << 10> sink_{};
  std::size_t drained_ = 0;
};

void Server::Impl::Accept() {
  acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (!ec) {
      if (open_connections_ >= options_.max_connections) {
        socket.close(ec);  // over the limit: refused at once rather than queued behind others
      } else {
        std::make_shared<Session>(std::move(socket), this)->Start();
      }
    }
    Accept();
  });
}

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const ServerOptions& options,
                                                      Handler handler) {
  if (options.port < 0 || options.port > 65535) {
    return absl::InvalidArgumentError("port " + std::to_string(options.port) +
                                      " is not from 0 to 65535");
  }
  auto impl = std::make_unique<Impl>(options, std::move(handler));
  TAAS_RETURN_IF_ERROR(impl->Listen());
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() = default;
int Server::port() const { return impl_->port(); }

}  // namespace taas::http
