#include "health_server.h"

#include <doctest/doctest.h>

#include "taas/http/client.h"

namespace taas::operator_cmd {
namespace {

http::Request Get(std::string path) { return {"GET", std::move(path), ""}; }

TEST_CASE("health, readiness and metrics answers") {
  bool ready = false;
  const HealthHandlers handlers{[&] { return ready; }, [] { return std::string("up 1\n"); }};
  CHECK(AnswerHealth(handlers, Get("/healthz")).status == 200);
  CHECK(AnswerHealth(handlers, Get("/livez")).status == 200);
  CHECK(AnswerHealth(handlers, Get("/readyz")).status == 503);
  ready = true;
  CHECK(AnswerHealth(handlers, Get("/readyz")).status == 200);
  const http::Response metrics = AnswerHealth(handlers, Get("/metrics"));
  CHECK(metrics.body == "up 1\n");
  CHECK(metrics.content_type == http::kPrometheusContentType);
  CHECK(AnswerHealth(handlers, Get("/")).status == 404);
  CHECK(AnswerHealth(HealthHandlers{}, Get("/readyz")).status == 200);  // no check: ready
}

TEST_CASE("served over HTTP") {
  auto server = StartHealthServer("127.0.0.1", 0, HealthHandlers{});
  REQUIRE(server.ok());
  auto body = http::Get("127.0.0.1:" + std::to_string((*server)->port()), "/healthz");
  REQUIRE(body.ok());
  CHECK(*body == "ok\n");
}

}  // namespace
}  // namespace taas::operator_cmd
