// The UI's JSON API under /api/v1/ (documented in docs/web-ui.md): request in, response out,
// with no sockets, so every handler is tested directly. The HTTP server (server.h) feeds it; the
// jobs come from a JobSource (job_source.h: Kubernetes, or the local launcher's one job).
//
// Every request needs `Authorization: Bearer <token>` (compared in constant time) unless the
// server allows anonymous reads and the request is a GET. Only the configured namespaces are
// reachable (403 elsewhere). Every answer is a row of rows.h, written by its one field list.
// Errors are {"error": "...", "field": "...", "formKey": "..."} (plus "errors": [...] when there
// are several), with the field named as in the TFJob and the New-job form's input it belongs to.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taas/base/log.h"
#include "taas/ui_server/job_form.h"
#include "taas/ui_server/job_source.h"
#include "taas/ui_server/metrics.h"

namespace taas::ui_server {

struct ApiOptions {
  std::vector<std::string> namespaces;  // where jobs may be listed, created and deleted
  std::string token;                    // the bearer token; empty accepts no token
  bool allow_anonymous_read = false;    // GETs without a token (never writes)
  // Served by `taas run` for its one job (the front end says so); GET config says "localRun".
  bool local_run = false;
  // Bytes of one log answer (`limitBytes`, default and maximum), its log window (log_window.h);
  // a followed stream is bounded by time instead (ServerOptions::max_follow) unless the request
  // sets limitBytes, and cuts its lines longer than this window.
  std::int64_t max_log_bytes = kDefaultLogWindowBytes;
  // Rows of the job list; the answer says "truncated" when there were more.
  std::int64_t max_list_items = 500;
  // The cluster page is computed at most once per this period, shared by every tab.
  std::chrono::milliseconds cluster_max_age{std::chrono::seconds(5)};
};

// Range-checks the numbers of `options`; the error names the flag and its allowed range.
absl::Status CheckApiOptions(const ApiOptions& options);

struct HttpRequest {
  std::string method;  // "GET", "POST", "DELETE"
  std::string target;  // path and query, e.g. "/api/v1/tfjobs?namespace=default"
  std::string authorization;
  std::string body;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

// Thread-safe (its one state of its own, the cached cluster page, is guarded).
class Api {
 public:
  // `source`, `metrics` and `devices` (may be null: replica rows without devices) are not owned
  // and must outlive the Api. `now` gives Unix seconds.
  Api(ApiOptions options, JobSource* source, const MetricsStore* metrics, Logger logger,
      std::function<std::int64_t()> now = nullptr, DeviceBook* devices = nullptr);

  static bool IsApiTarget(std::string_view target);

  HttpResponse Handle(const HttpRequest& request) const;

  // A log request that follows the stream (`.../logs?follow=true`) is served in two steps:
  // Authorize and resolve it (an error response, or the replica's LogRequest through `log`),
  // then relay the stream chunk by chunk until it ends or `write` returns false.
  bool IsFollowLogs(const HttpRequest& request) const;
  std::optional<HttpResponse> PrepareFollowLogs(const HttpRequest& request, LogRequest* log) const;
  absl::Status FollowLogs(const LogRequest& log, const std::function<bool(std::string_view)>& write,
                          Cancellation* cancel) const;

 private:
  struct Route;
  std::optional<HttpResponse> Authorize(const HttpRequest& request) const;
  // Authorizes and routes a request: an error response, or nullopt with `route` filled.
  std::optional<HttpResponse> Parse(const HttpRequest& request, Route* route) const;
  // The names in a parsed route are names, in a namespace this UI serves.
  std::optional<HttpResponse> CheckRoute(const Route& route) const;
  std::optional<HttpResponse> CheckNamespace(const std::string& ns) const;
  HttpResponse Dispatch(const HttpRequest& request, const Route& route) const;

  HttpResponse GetConfig(const HttpRequest& request) const;
  HttpResponse ListJobs(const Route& route) const;
  HttpResponse CreateJob(const HttpRequest& request, const Route& route) const;
  // Adds what the cluster can never schedule to `errors` (each field once); an error response
  // when the nodes could not be read.
  std::optional<HttpResponse> AddClusterErrors(const tfjob::TFJob& job,
                                               std::vector<FieldError>* errors) const;
  HttpResponse GetJob(const Route& route) const;
  // `job` with its status.progress completed by the UI's own scrape (MergeProgress): the figures
  // of the job's rows.
  tfjob::TFJob WithScrapedProgress(tfjob::TFJob job) const;
  HttpResponse DeleteJob(const Route& route) const;
  HttpResponse CloneJob(const HttpRequest& request, const Route& route) const;
  HttpResponse GetLogs(const Route& route) const;
  HttpResponse GetMetrics(const Route& route) const;
  HttpResponse GetCluster() const;
  // The replica's log request from the route's query (tailLines, limitBytes, previous, follow);
  // InvalidArgument names the parameter and its range.
  absl::StatusOr<LogRequest> LogRequestOf(const Route& route) const;

  ApiOptions options_;
  JobSource* source_;
  const MetricsStore* metrics_;
  Logger logger_;
  std::function<std::int64_t()> now_;
  DeviceBook* devices_;

  // The cluster page as last computed, shared by every request for cluster_max_age.
  struct ClusterCache {
    std::mutex mu;
    std::chrono::steady_clock::time_point computed;
    std::optional<HttpResponse> view;  // guarded by mu
  };
  std::unique_ptr<ClusterCache> cluster_cache_ = std::make_unique<ClusterCache>();
};

// Decodes %XX escapes (and '+' as a space when `plus_is_space`, as in query strings);
// std::nullopt for a malformed escape.
std::optional<std::string> PercentDecode(std::string_view text, bool plus_is_space);

// The error response for a failed JobSource call: its code as HTTP, its message, and the code,
// message and `details.causes[].field` of a Kubernetes-shaped Status payload when it has one.
HttpResponse SourceErrorResponse(const absl::Status& status);

}  // namespace taas::ui_server
