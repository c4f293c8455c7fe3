// What the controller's end-to-end tests (controller_*_test.cc) share, for the kube tests'
// loopback API server (taas/kube_testing/test_server.h): a TFJob as the API server stores it, a
// list's body, a request's body, and a watch that ends at once (the informer lists again).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "taas/kube_testing/test_server.h"
#include "taas/tfjob/tfjob.h"

namespace taas::controller::testing {

// TFJob `name` in namespace "ns" with `workers` workers, as stored at `resource_version`.
inline nlohmann::json TFJobObject(const std::string& name, const std::string& uid, int workers,
                                  const std::string& resource_version = "5") {
  nlohmann::json container = {{"name", "tensorflow"}, {"image", "taas/trainer"}};
  return {
      {"apiVersion", tfjob::kApiVersion},
      {"kind", tfjob::kKind},
      {"metadata",
       {{"name", name},
        {"namespace", "ns"},
        {"uid", uid},
        {"resourceVersion", resource_version},
        {"creationTimestamp", "2026-01-01T00:00:00Z"}}},
      {"spec",
       {{"tfReplicaSpecs",
         {{"Worker",
           {{"replicas", workers}, {"template", {{"spec", {{"containers", {container}}}}}}}}}}}}};
}

inline std::string ListBody(const std::vector<nlohmann::json>& items) {
  return nlohmann::json{
      {"kind", "List"}, {"metadata", {{"resourceVersion", "5"}}}, {"items", items}}
      .dump();
}

// The test server passes a request as its head, "\n" and the body.
inline std::string RequestBody(const std::string& request) {
  auto end = request.find('\n', request.rfind("\r\n") + 2);
  return end == std::string::npos ? "" : request.substr(end + 1);
}

inline std::vector<std::string> EndedWatch() {
  return {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "SLEEP200",
          kube::testing::Chunk(""), "CLOSE"};
}

}  // namespace taas::controller::testing
