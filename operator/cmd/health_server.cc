#include "health_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <thread>

namespace taas::operator_cmd {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

class HealthServer::Impl {
 public:
  explicit Impl(HealthHandlers handlers) : handlers_(std::move(handlers)), acceptor_(ioc_) {}

  absl::Status Listen(const std::string& address, int port) {
    beast::error_code ec;
    auto addr = asio::ip::make_address(address, ec);
    if (ec) return absl::InvalidArgumentError("bad listen address " + address);
    tcp::endpoint endpoint(addr, static_cast<unsigned short>(port));
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec)
      return absl::UnavailableError("cannot listen on " + address + ":" + std::to_string(port) +
                                    ": " + ec.message());
    port_ = acceptor_.local_endpoint().port();
    Accept();
    thread_ = std::thread([this] { ioc_.run(); });
    return absl::OkStatus();
  }

  ~Impl() {
    asio::post(ioc_, [this] {
      beast::error_code ignored;
      acceptor_.close(ignored);
    });
    ioc_.stop();
    if (thread_.joinable()) thread_.join();
  }

  int port() const { return port_; }

 private:
  struct Session : std::enable_shared_from_this<Session> {
    explicit Session(tcp::socket s, Impl* server) : stream(std::move(s)), server(server) {}
    beast::tcp_stream stream;
    Impl* server;
    beast::flat_buffer buffer;
    http::request<http::string_body> request;
    http::response<http::string_body> response;

    void Run() {
      stream.expires_after(std::chrono::seconds(10));
      auto self = shared_from_this();
      http::async_read(stream, buffer, request, [self](beast::error_code ec, std::size_t) {
        if (ec) return;
        self->Respond();
      });
    }
    void Respond() {
      std::string target(request.target());
      target = target.substr(0, target.find('?'));
      response.version(request.version());
      response.keep_alive(false);
      response.set(http::field::content_type, "text/plain; charset=utf-8");
      if (target == "/healthz" || target == "/livez") {
        response.result(http::status::ok);
        response.body() = "ok\n";
      } else if (target == "/readyz") {
        bool ready = server->handlers_.ready ? server->handlers_.ready() : true;
        response.result(ready ? http::status::ok : http::status::service_unavailable);
        response.body() = ready ? "ok\n" : "not ready\n";
      } else if (target == "/metrics") {
        response.result(http::status::ok);
        response.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
        response.body() = server->handlers_.metrics ? server->handlers_.metrics() : "";
      } else {
        response.result(http::status::not_found);
        response.body() = "not found\n";
      }
      response.prepare_payload();
      auto self = shared_from_this();
      http::async_write(stream, response, [self](beast::error_code, std::size_t) {
        beast::error_code ignored;
        self->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
      });
    }
  };

  void Accept() {
    acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec) return;  // closed
      std::make_shared<Session>(std::move(socket), this)->Run();
      Accept();
    });
  }

  HealthHandlers handlers_;
  asio::io_context ioc_;
  tcp::acceptor acceptor_;
  std::thread thread_;
  int port_ = 0;
};

absl::StatusOr<std::unique_ptr<HealthServer>> HealthServer::Start(const std::string& address,
                                                                  int port,
                                                                  HealthHandlers handlers) {
  auto impl = std::make_unique<Impl>(std::move(handlers));
  TAAS_RETURN_IF_ERROR(impl->Listen(address, port));
  return std::unique_ptr<HealthServer>(new HealthServer(std::move(impl)));
}

HealthServer::HealthServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HealthServer::~HealthServer() = default;
int HealthServer::port() const { return impl_->port(); }

}  // namespace taas::operator_cmd
