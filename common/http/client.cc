#include "taas/http/client.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace taas::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;

absl::StatusOr<std::string> Get(const std::string& host_port, const std::string& target,
                                const GetOptions& options) {
  const std::size_t colon = host_port.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == host_port.size()) {
    return absl::InvalidArgumentError("address \"" + host_port + "\" is not host:port");
  }
  const std::string url = "http://" + host_port + target;
  asio::io_context io;
  beast::tcp_stream stream(io);
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(options.max_body_bytes);  // a bigger answer is refused, not held in memory
  asio::ip::tcp::resolver resolver(io);
  bhttp::request<bhttp::empty_body> request(bhttp::verb::get, target, 11);
  request.set(bhttp::field::host, host_port);
  request.set(bhttp::field::connection, "close");

  // One chain of operations on `io`, each step started by the previous one's completion; the
  // stream's expiry bounds connect, write and read together, run_for bounds the resolve too.
  beast::error_code failure;
  stream.expires_after(options.timeout);
  resolver.async_resolve(
      host_port.substr(0, colon), host_port.substr(colon + 1),
      [&](beast::error_code ec, const asio::ip::tcp::resolver::results_type& results) {
        if (ec) {
          failure = ec;
          return;
        }
        stream.async_connect(results, [&](beast::error_code ec2, const auto&) {
          if (ec2) {
            failure = ec2;
            return;
          }
          bhttp::async_write(stream, request, [&](beast::error_code ec3, std::size_t) {
            if (ec3) {
              failure = ec3;
              return;
            }
            // The header first: Beast 1.74 does not hold a response's declared Content-Length
            // to body_limit (only chunked and read-to-close bodies), so a huge one is refused
            // here before any of its body is read.
            bhttp::async_read_header(
                stream, buffer, parser, [&](beast::error_code ec4, std::size_t) {
                  if (!ec4 && parser.content_length().value_or(0) > options.max_body_bytes) {
                    ec4 = bhttp::error::body_limit;
                  }
                  if (ec4) {
                    failure = ec4;
                    return;
                  }
                  bhttp::async_read(stream, buffer, parser,
                                    [&](beast::error_code ec5, std::size_t) {
                                      if (ec5) failure = ec5;
                                    });
                });
          });
        });
      });
  io.run_for(options.timeout + std::chrono::milliseconds(100));
  if (!io.stopped() || failure == beast::error::timeout) {
    return absl::DeadlineExceededError("GET " + url + ": no answer within " +
                                       std::to_string(options.timeout.count()) + " ms");
  }
  if (failure) return absl::UnavailableError("GET " + url + ": " + failure.message());
  auto& response = parser.get();
  if (response.result_int() != 200) {
    return absl::UnavailableError("GET " + url + ": HTTP " + std::to_string(response.result_int()));
  }
  return std::move(response.body());
}

}  // namespace taas::http
