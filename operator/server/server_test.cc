#include "taas/ui_server/server.h"

#include <doctest/doctest.h>

namespace taas::ui_server {

TEST_CASE("a listen address is HOST:PORT with a port from 0 to 65535") {
  ServerOptions options;
  CHECK(ParseListenAddress("--listen", "0.0.0.0:8080", &options).ok());
  CHECK(options.host == "0.0.0.0");
  CHECK(options.port == 8080);
  CHECK(ParseListenAddress("--listen", "127.0.0.1:0", &options).ok());
  CHECK(options.port == 0);

  for (const char* bad : {"8080", ":8080", "localhost:", "localhost:http", "localhost:65536",
                          "localhost:-1", "localhost:123456"}) {
    ServerOptions untouched;
    const absl::Status status = ParseListenAddress("--ui-listen", bad, &untouched);
    CAPTURE(bad);
    CHECK(status.code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(status.message()).find("--ui-listen wants HOST:PORT") != std::string::npos);
    CHECK(untouched.port == 0);
  }
}

}  // namespace taas::ui_server
