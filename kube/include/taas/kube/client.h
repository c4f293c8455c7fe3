// A small Kubernetes API client: blocking JSON calls and cancellable streams over HTTPS
// (Boost.Beast + Asio + OpenSSL), with client-certificate or bearer-token authentication.
//
// Paths are API paths with their query string, e.g.
//   client.Get("/apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist");
//   client.Watch("/api/v1/namespaces/default/pods?watch=1&resourceVersion=42", on_event);
//
// Errors: any non-2xx answer becomes an absl::Status whose code maps the HTTP code (see
// StatusFromHttp), whose message is the API server's `message`, and which carries the raw
// Kubernetes `Status` object as payload under kStatusPayloadUrl (read it with KubeStatusOf).
// Transport failures (connect, TLS, timeout) are kUnavailable / kDeadlineExceeded.
#pragma once

#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "taas/base/cancellation.h"

namespace taas::kube {

// Type URL of the payload holding the API server's raw `Status` JSON on a failed call.
inline constexpr char kStatusPayloadUrl[] = "taas.kube.Status";

struct ClientConfig {
  std::string server;  // "https://127.0.0.1:6443" (http:// is accepted for tests)
  std::string ca_pem;  // PEM CA bundle that signs the server; empty: system roots
  bool insecure_skip_tls_verify = false;
  std::string client_cert_pem;  // client-certificate auth (with client_key_pem)
  std::string client_key_pem;
  std::string bearer_token;  // token auth; re-read from token_file when that is set
  std::string token_file;
  std::string namespace_name = "default";  // the context's (or service account's) namespace
  // Deadline of a whole non-streaming call (connect, TLS handshake, write and read together),
  // unless the call names a shorter one (CallOptions).
  std::chrono::milliseconds timeout{30000};
  // Largest response body accepted (a LIST page, a log); a larger one fails the call with
  // kResourceExhausted naming the limit.
  std::uint64_t max_response_bytes = std::uint64_t{64} << 20;
  // Largest single event line of a watch stream (one object; etcd's own limit is 1.5 MiB by
  // default); a longer line ends the watch with kResourceExhausted.
  std::size_t max_watch_event_bytes = std::size_t{16} << 20;
};

// Per-call settings of a non-streaming call.
struct CallOptions {
  // The call's deadline (connect, TLS, write and read together); zero: ClientConfig::timeout.
  // Leader election gives its lease calls less than the renew deadline.
  std::chrono::milliseconds timeout{0};
};

// Reads a kubeconfig file (current context; embedded `*-data` or file references, resolved
// relative to the kubeconfig's folder; client certificates or tokens).
absl::StatusOr<ClientConfig> LoadKubeconfig(const std::string& path);

// The in-cluster service-account config (KUBERNETES_SERVICE_HOST/PORT, the mounted token, CA and
// namespace under /var/run/secrets/kubernetes.io/serviceaccount).
absl::StatusOr<ClientConfig> InClusterConfig();

enum class PatchType {
  kMerge,           // application/merge-patch+json
  kStrategicMerge,  // application/strategic-merge-patch+json
  kJsonPatch,       // application/json-patch+json
  kApply,           // application/apply-patch+yaml (server-side apply; add ?fieldManager=...)
};

// One event of a watch stream: type is ADDED, MODIFIED, DELETED, BOOKMARK or ERROR (for ERROR,
// `object` is a Kubernetes Status, e.g. code 410 when the resourceVersion is too old).
struct WatchEvent {
  std::string type;
  nlohmann::json object;
};

// Splits a watch stream into events: one JSON object per line, lines of at most `max_line_bytes`.
// Pure (no I/O), so the framing is unit tested and fuzzed on its own.
class WatchDecoder {
 public:
  explicit WatchDecoder(std::size_t max_line_bytes) : max_line_bytes_(max_line_bytes) {}

  // Feeds the next bytes of the stream; calls on_event for every complete event line, in order.
  // Returns OK when every line so far was an event (or blank) and on_event never returned false
  // (`*stopped` tells that apart); kInternal for a line that is not a JSON object with a string
  // `type`, kResourceExhausted for a line longer than the limit. After an error, stop feeding.
  absl::Status Feed(std::string_view data, const std::function<bool(const WatchEvent&)>& on_event,
                    bool* stopped);

  std::size_t buffered() const { return pending_.size(); }

 private:
  std::size_t max_line_bytes_;
  std::string pending_;  // the incomplete last line
};

// Callbacks return false to stop the stream early (the call then returns OK).
using WatchCallback = std::function<bool(const WatchEvent&)>;
using ChunkCallback = std::function<bool(std::string_view)>;

struct StreamOptions {
  Cancellation* cancel = nullptr;  // not owned
  // The stream fails with kDeadlineExceeded after this long without a byte from the server.
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(5)};
};

// Counters for the operator's metrics.
struct ClientStats {
  std::uint64_t requests = 0;
  std::uint64_t errors = 0;  // non-2xx answers and transport failures
};

// Thread-safe: calls from many threads share a pool of keep-alive connections. Every call blocks
// until the answer (or, for streams, the end of the stream) arrives.
class Client {
 public:
  static absl::StatusOr<std::unique_ptr<Client>> Create(ClientConfig config);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  absl::StatusOr<nlohmann::json> Get(std::string_view path, const CallOptions& call = {});
  absl::StatusOr<nlohmann::json> Post(std::string_view path, const nlohmann::json& body,
                                      const CallOptions& call = {});
  absl::StatusOr<nlohmann::json> Put(std::string_view path, const nlohmann::json& body,
                                     const CallOptions& call = {});
  absl::StatusOr<nlohmann::json> Patch(std::string_view path, const nlohmann::json& body,
                                       PatchType type, const CallOptions& call = {});
  // `body` is optional DeleteOptions, e.g. {"propagationPolicy":"Background"}.
  absl::StatusOr<nlohmann::json> Delete(std::string_view path, const nlohmann::json& body = nullptr,
                                        const CallOptions& call = {});
  // Follows a watch (`?watch=1...`): calls on_event for each event, in order, on the calling
  // thread. Returns OK when the server ends the stream, a callback returns false, or the watch is
  // cancelled; an error Status for a non-2xx answer or a broken connection.
  absl::Status Watch(std::string_view path, const WatchCallback& on_event,
                     const StreamOptions& options = {});
  // Follows a text stream (e.g. `.../log?follow=true`), delivering bytes as they arrive.
  absl::Status StreamText(std::string_view path, const ChunkCallback& on_chunk,
                          const StreamOptions& options = {});

  const ClientConfig& config() const;
  ClientStats stats() const;

  class Impl;

 private:
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// HTTP status + response body -> absl::Status (OK for 2xx). 400/422 InvalidArgument, 401
// Unauthenticated, 403 PermissionDenied, 404 NotFound, 409 AlreadyExists when the Status reason is
// "AlreadyExists" else Aborted (conflict), 410 OutOfRange (Gone / expired resourceVersion), 429
// ResourceExhausted, 500 Internal, 503 Unavailable, 504 DeadlineExceeded, other 4xx
// FailedPrecondition, other 5xx Unknown. The body, when it is a JSON Status, becomes the payload.
absl::Status StatusFromHttp(int http_code, std::string_view body);

// The raw Kubernetes Status JSON carried by an error from this client, if any.
std::optional<nlohmann::json> KubeStatusOf(const absl::Status& status);

// Percent-encodes a query parameter value (label selectors, field selectors).
std::string QueryEscape(std::string_view value);

}  // namespace taas::kube
