// A bounded HTTP GET on Boost.Beast: how the UI server and the launcher scrape a replica's
// /metrics. The answer's body is capped and the whole exchange (resolve, connect, write, read)
// has one deadline, so a hostile or hung endpoint costs at most `timeout` and `max_body_bytes`.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "taas/base/status.h"

namespace taas::http {

struct GetOptions {
  std::chrono::milliseconds timeout{std::chrono::seconds(1)};
  std::size_t max_body_bytes = 1 << 20;
};

// The body of `GET http://<host_port><target>` when it answers 200. InvalidArgument for an
// address that is not host:port; DeadlineExceeded when the deadline passed; Unavailable for a
// refused or failed connection, another status code, or a body over the cap.
absl::StatusOr<std::string> Get(const std::string& host_port, const std::string& target,
                                const GetOptions& options = {});

}  // namespace taas::http
