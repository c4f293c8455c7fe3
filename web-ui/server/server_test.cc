#include "taas/ui_server/server.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "taas/ui_server/ui_server.h"

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

TEST_CASE("the bearer token: the mounted file's, none for anonymous reads, else generated") {
  const std::string path = "/tmp/taas-ui-token-test-" + std::to_string(::getpid());
  std::ofstream(path) << "s3cret  \n";
  auto mounted = ChooseToken(path, /*allow_anonymous_read=*/true);
  REQUIRE(mounted.ok());
  CHECK(mounted->value == "s3cret");
  CHECK_FALSE(mounted->generated);
  CHECK(BrowserUrl("0.0.0.0", 8080, *mounted) == "http://0.0.0.0:8080/");

  auto anonymous = ChooseToken("", true);
  REQUIRE(anonymous.ok());
  CHECK(anonymous->value.empty());
  CHECK(BrowserUrl("127.0.0.1", 1, *anonymous) == "http://127.0.0.1:1/");

  auto generated = ChooseToken("", false);
  REQUIRE(generated.ok());
  CHECK(generated->generated);
  CHECK(generated->value.size() == 40);
  CHECK(generated->value != ChooseToken("", false)->value);
  CHECK(BrowserUrl("127.0.0.1", 8080, *generated) ==
        "http://127.0.0.1:8080/#token=" + generated->value);

  std::ofstream(path) << "\n";
  auto empty = ChooseToken(path, false);
  CHECK(empty.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(empty.status().message()).find(path) != std::string::npos);
  std::remove(path.c_str());
  CHECK(ChooseToken(path, false).status().code() == absl::StatusCode::kNotFound);
}

}  // namespace taas::ui_server
