#include "taas/base/log.h"

#include <doctest/doctest.h>

namespace taas {
namespace {

TEST_CASE("events are logfmt lines carrying the logger's context") {
  const Logger logger = Logger(nullptr).With({{"job", "mnist"}, {"replica", "worker-0"}});
  CHECK(logger.Format(LogLevel::kInfo, "step done", {{"step", 120}, {"loss", 0.5}}) ==
        "level=info msg=\"step done\" job=mnist replica=worker-0 step=120 loss=0.5");
}

TEST_CASE("values with spaces, quotes or newlines are quoted and escaped") {
  const Logger logger(nullptr);
  CHECK(logger.Format(LogLevel::kError, "bad", {{"reason", "a \"b\"\nc"}}) ==
        R"(level=error msg=bad reason="a \"b\"\nc")");
  CHECK(logger.Format(LogLevel::kWarning, "", {}) == R"(level=warning msg="")");
}

TEST_CASE("With does not change the logger it was called on") {
  const Logger base(nullptr);
  const Logger child = base.With({{"step", 1}});
  CHECK(base.Format(LogLevel::kInfo, "x", {}) == "level=info msg=x");
  CHECK(child.Format(LogLevel::kInfo, "x", {}) == "level=info msg=x step=1");
}

}  // namespace
}  // namespace taas
