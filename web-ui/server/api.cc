#include "taas/ui_server/api.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <random>

#include "taas/base/json_fields.h"
#include "taas/tfjob/tfjob.h"
#include "taas/ui_server/job_form.h"
#include "taas/ui_server/tfjob_rules.h"
#include "taas/ui_server/views.h"

namespace taas::ui_server {

using nlohmann::json;
namespace jf = taas::json_fields;

namespace {

constexpr std::string_view kApiPrefix = "/api/v1/";
constexpr int kDefaultTailLines = 1000;
constexpr int kMaxTailLines = 100000;

// The items of a Kubernetes list; empty when it has none (or they are not an array).
const json& ItemsOf(const json& list) {
  static const json kEmpty = json::array();  // NOLINT: an immutable empty value, not state.
  const json* items = jf::Array(list, "items");
  return items ? *items : kEmpty;
}

std::string NameOf(const json& object) {
  const json* metadata = jf::Object(object, "metadata");
  return metadata ? jf::StringOr(*metadata, "name", "") : "";
}

// A whole decimal number from `min` to `max`; nullopt otherwise (no narrowing, no overflow).
std::optional<std::int64_t> ParseBounded(const std::string& text, std::int64_t min,
                                         std::int64_t max) {
  if (text.empty() || text.size() > 18 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  const std::int64_t value = std::stoll(text);
  if (value < min || value > max) return std::nullopt;
  return value;
}

HttpResponse JsonResponse(int status, const json& body) {
  // Messages may quote what the request held, which need not be UTF-8: replaced, not thrown.
  return {status, "application/json", body.dump(-1, ' ', false, json::error_handler_t::replace)};
}

HttpResponse Error(int status, const std::string& message, const std::string& field = "") {
  json body = {{"error", message}};
  if (!field.empty()) body["field"] = field;
  return JsonResponse(status, body);
}

int FromHex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsPodName(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  for (unsigned char c : name) {
    if (!(std::islower(c) || std::isdigit(c) || c == '-' || c == '.')) return false;
  }
  return std::isalnum(static_cast<unsigned char>(name.front())) &&
         std::isalnum(static_cast<unsigned char>(name.back()));
}

std::int64_t SystemNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct Api::Route {
  std::vector<std::string> segments;  // after /api/v1/
  std::map<std::string, std::string> query;
  std::string ns, name, pod;
};

std::optional<std::string> PercentDecode(std::string_view text, bool plus_is_space) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%') {
      if (i + 2 >= text.size()) return std::nullopt;
      const int hi = FromHex(text[i + 1]), lo = FromHex(text[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (plus_is_space && text[i] == '+') {
      out.push_back(' ');
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  const std::size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

HttpResponse KubeErrorResponse(const absl::Status& status) {
  int http = 502;
  switch (status.code()) {
    case absl::StatusCode::kNotFound:
      http = 404;
      break;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
      http = 409;
      break;
    case absl::StatusCode::kInvalidArgument:
      http = 422;
      break;
    case absl::StatusCode::kPermissionDenied:
      http = 403;
      break;
    case absl::StatusCode::kFailedPrecondition:
      http = 400;
      break;
    case absl::StatusCode::kResourceExhausted:
      http = 429;
      break;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      http = 503;
      break;
    default:
      http = 502;  // including Unauthenticated: our own credentials were refused
  }
  json body = {{"error", std::string(status.message())}};
  if (auto payload = status.GetPayload(
          absl::string_view(kKubeStatusPayload.data(), kKubeStatusPayload.size()))) {
    const json kube = json::parse(std::string(*payload), nullptr, /*allow_exceptions=*/false);
    if (kube.is_object()) {
      if (auto message = jf::String(kube, "message")) body["error"] = *message;
      if (auto code = jf::Int(kube, "code"); code && *code >= 400 && *code < 600 && *code != 401) {
        http = static_cast<int>(*code);
      }
      const json* details = jf::Object(kube, "details");
      const json* causes = details ? jf::Array(*details, "causes") : nullptr;
      json errors = json::array();
      for (const json& cause : causes ? *causes : json::array()) {
        if (!cause.is_object()) continue;
        const std::string field = jf::StringOr(cause, "field", "");
        errors.push_back({{"field", field}, {"message", jf::StringOr(cause, "message", "")}});
        if (!field.empty() && !body.contains("field")) body["field"] = field;
      }
      if (!errors.empty()) body["errors"] = errors;
    }
  }
  return JsonResponse(http, body);
}

absl::Status CheckApiOptions(const ApiOptions& options) {
  if (options.max_log_bytes < 1024 || options.max_log_bytes > (std::int64_t{1} << 30)) {
    return absl::InvalidArgumentError("--max-log-bytes must be from 1024 to 1073741824, got " +
                                      std::to_string(options.max_log_bytes));
  }
  if (options.max_list_items < 1 || options.max_list_items > 100000) {
    return absl::InvalidArgumentError("--max-list-items must be from 1 to 100000, got " +
                                      std::to_string(options.max_list_items));
  }
  if (options.cluster_max_age.count() < 0 || options.cluster_max_age > std::chrono::minutes(10)) {
    return absl::InvalidArgumentError("--cluster-max-age must be from 0 to 600 s, got " +
                                      std::to_string(options.cluster_max_age.count()) + " ms");
  }
  return absl::OkStatus();
}

Api::Api(ApiOptions options, KubeApi* kube, const MetricsStore* metrics, Logger logger,
         std::function<std::int64_t()> now)
    : options_(std::move(options)),
      kube_(kube),
      metrics_(metrics),
      logger_(std::move(logger)),
      now_(now ? std::move(now) : SystemNow) {}

bool Api::IsApiTarget(std::string_view target) {
  return target.substr(0, 5) == "/api/" || target == "/api";
}

std::optional<HttpResponse> Api::Authorize(const HttpRequest& request) const {
  if (request.authorization.empty()) {
    if (options_.allow_anonymous_read && request.method == "GET") return std::nullopt;
    return Error(401, "this API needs an Authorization: Bearer <token> header");
  }
  constexpr std::string_view kBearer = "bearer ";
  std::string scheme = request.authorization.substr(0, kBearer.size());
  std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (scheme != kBearer) return Error(401, "the Authorization header must be Bearer <token>");
  const std::string_view token = std::string_view(request.authorization).substr(kBearer.size());
  if (options_.token.empty() || !ConstantTimeEquals(token, options_.token)) {
    return Error(401, "the bearer token is not valid");
  }
  return std::nullopt;
}

std::optional<HttpResponse> Api::CheckNamespace(const std::string& ns) const {
  if (std::find(options_.namespaces.begin(), options_.namespaces.end(), ns) ==
      options_.namespaces.end()) {
    return Error(403, "namespace \"" + ns + "\" is not served by this UI", "metadata.namespace");
  }
  return std::nullopt;
}

HttpResponse Api::Handle(const HttpRequest& request) const {
  Route route;
  if (auto failed = Parse(request, &route)) return *failed;
  try {
    return Dispatch(request, route);
  } catch (const std::exception& e) {
    logger_.Error("API handler failed", {{"target", request.target}, {"error", e.what()}});
    return Error(500, std::string("internal error: ") + e.what());
  }
}

std::optional<HttpResponse> Api::Parse(const HttpRequest& request, Route* out) const {
  if (auto denied = Authorize(request)) return *denied;
  const std::string_view target = request.target;
  if (target.substr(0, kApiPrefix.size()) != kApiPrefix) return Error(404, "no such API path");
  Route& route = *out;
  const std::size_t question = target.find('?');
  const std::string_view path = target.substr(
      kApiPrefix.size(),
      question == std::string_view::npos ? std::string_view::npos : question - kApiPrefix.size());
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    auto segment = PercentDecode(path.substr(start, end - start), false);
    if (!segment) return Error(400, "malformed path");
    if (!segment->empty()) route.segments.push_back(*segment);
    start = end + 1;
  }
  if (question != std::string_view::npos) {
    std::string_view query = target.substr(question + 1);
    while (!query.empty()) {
      std::size_t amp = query.find('&');
      std::string_view pair = query.substr(0, amp);
      const std::size_t eq = pair.find('=');
      auto key = PercentDecode(pair.substr(0, eq), true);
      auto value = PercentDecode(eq == std::string_view::npos ? "" : pair.substr(eq + 1), true);
      if (!key || !value) return Error(400, "malformed query");
      route.query[*key] = *value;
      if (amp == std::string_view::npos) break;
      query.remove_prefix(amp + 1);
    }
  }
  const auto& s = route.segments;
  if (s.size() >= 2 && s[0] == "namespaces") {
    route.ns = s[1];
    if (!IsDns1123Label(route.ns)) {
      return Error(400, "\"" + route.ns + "\" is not a namespace name", "metadata.namespace");
    }
    if (auto forbidden = CheckNamespace(route.ns)) return *forbidden;
  }
  if (s.size() >= 4) {
    route.name = s[3];
    if (!IsDns1123Label(route.name)) {
      return Error(400, "\"" + route.name + "\" is not a TFJob name", "metadata.name");
    }
  }
  if (s.size() >= 6) {
    route.pod = s[5];
    if (!IsPodName(route.pod)) return Error(400, "\"" + route.pod + "\" is not a pod name");
  }
  if (auto ns = route.query.find("namespace"); ns != route.query.end() && !ns->second.empty()) {
    if (auto forbidden = CheckNamespace(ns->second)) return *forbidden;
  }
  return std::nullopt;
}

HttpResponse Api::Dispatch(const HttpRequest& request, const Route& route) const {
  const auto& s = route.segments;
  const std::string& m = request.method;
  auto allow = [&](std::initializer_list<const char*> methods) {
    for (const char* method : methods) {
      if (m == method) return true;
    }
    return false;
  };
  auto not_allowed = [&] { return Error(405, "method " + m + " is not allowed here"); };
  if (s.size() == 1 && s[0] == "config") return allow({"GET"}) ? GetConfig(request) : not_allowed();
  if (s.size() == 1 && s[0] == "tfjobs") return allow({"GET"}) ? ListJobs(route) : not_allowed();
  if (s.size() == 1 && s[0] == "cluster") return allow({"GET"}) ? GetCluster() : not_allowed();
  if (s.size() >= 3 && s[0] == "namespaces" && s[2] == "tfjobs") {
    if (s.size() == 3) {
      if (m == "GET") return ListJobs(route);
      if (m == "POST") return CreateJob(request, route);
      return not_allowed();
    }
    if (s.size() == 4) {
      if (m == "GET") return GetJob(route);
      if (m == "DELETE") return DeleteJob(route);
      return not_allowed();
    }
    if (s.size() == 5 && s[4] == "clone") {
      return allow({"POST"}) ? CloneJob(request, route) : not_allowed();
    }
    if (s.size() == 5 && s[4] == "metrics") {
      return allow({"GET"}) ? GetMetrics(route) : not_allowed();
    }
    if (s.size() == 7 && s[4] == "pods" && s[6] == "logs") {
      return allow({"GET"}) ? GetLogs(route) : not_allowed();
    }
  }
  return Error(404, "no such API path");
}

HttpResponse Api::GetConfig(const HttpRequest& request) const {
  return JsonResponse(200, {{"namespaces", options_.namespaces},
                            {"readOnly", request.authorization.empty()},
                            {"localRun", options_.local_run},
                            {"version", "0.1.0"}});
}

HttpResponse Api::ListJobs(const Route& route) const {
  std::vector<std::string> namespaces = options_.namespaces;
  if (!route.ns.empty()) {
    namespaces = {route.ns};
  } else if (auto it = route.query.find("namespace");
             it != route.query.end() && !it->second.empty()) {
    namespaces = {it->second};
  }
  const std::string filter = route.query.count("q") ? route.query.at("q") : "";
  std::vector<json> rows;
  for (const std::string& ns : namespaces) {
    auto jobs = kube_->Get(tfjob::TFJobsPath(ns));
    if (!jobs.ok()) return KubeErrorResponse(jobs.status());
    auto pods = kube_->Get("/api/v1/namespaces/" + ns + "/pods");
    if (!pods.ok()) return KubeErrorResponse(pods.status());
    std::map<std::string, std::vector<json>> by_job;
    for (const json& pod : ItemsOf(*pods)) {
      const std::string job = JobNameOfPod(pod);
      if (!job.empty()) by_job[job].push_back(pod);
    }
    for (const json& job : ItemsOf(*jobs)) {
      const std::string name = NameOf(job);
      if (!filter.empty() && name.find(filter) == std::string::npos) continue;
      rows.push_back(JobView(job, by_job[name], now_()));
    }
  }
  std::sort(rows.begin(), rows.end(), [](const json& a, const json& b) {
    if (a["created"] != b["created"]) return a["created"] > b["created"];
    return a["name"] < b["name"];
  });
  // The newest rows, at most max_list_items of them.
  const std::size_t total = rows.size();
  const auto shown =
      std::min<std::size_t>(total, static_cast<std::size_t>(options_.max_list_items));
  json items = json::array();
  for (std::size_t i = 0; i < shown; ++i) {
    rows[i].erase("pods");
    items.push_back(std::move(rows[i]));
  }
  return JsonResponse(200, {{"items", items}, {"total", total}, {"truncated", shown < total}});
}

HttpResponse Api::CreateJob(const HttpRequest& request, const Route& route) const {
  const json body = json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return Error(400, "the request body is not JSON");
  const bool dry_run = route.query.count("dryRun") && route.query.at("dryRun") != "false";
  auto answer_errors = [&](const std::vector<FieldError>& errors, const json& tfjob) {
    json out = ErrorsJson(errors);
    if (dry_run) {
      out["tfjob"] = tfjob;
      return JsonResponse(200, out);
    }
    return JsonResponse(422, out);
  };
  JobForm form;
  std::vector<FieldError> errors = ParseJobForm(body, route.ns, &form);
  const bool form_valid = errors.empty();
  // What the cluster can never schedule is reported with the form's own errors, each field once.
  auto nodes = kube_->Get("/api/v1/nodes");
  if (!nodes.ok()) return KubeErrorResponse(nodes.status());
  for (FieldError& e : CheckFormAgainstCluster(form, ComputeClusterLimits(*nodes))) {
    const bool seen = std::any_of(errors.begin(), errors.end(),
                                  [&](const FieldError& f) { return f.field == e.field; });
    if (!seen) errors.push_back(std::move(e));
  }
  if (!form_valid) return answer_errors(errors, nullptr);
  const json tfjob = BuildTfJob(form);
  if (!errors.empty()) return answer_errors(errors, tfjob);
  errors = CheckTfJobRules(tfjob);
  if (!errors.empty()) return answer_errors(errors, tfjob);

  auto created = kube_->Post(tfjob::TFJobsPath(route.ns) + (dry_run ? "?dryRun=All" : ""), tfjob);
  if (!created.ok()) {
    HttpResponse failure = KubeErrorResponse(created.status());
    if (dry_run) {
      json out = json::parse(failure.body);
      if (!out.contains("errors")) {
        out["errors"] = json::array({{{"field", jf::StringOr(out, "field", "")},
                                      {"message", jf::StringOr(out, "error", "")}}});
      }
      out["tfjob"] = tfjob;
      return JsonResponse(200, out);
    }
    return failure;
  }
  if (dry_run) return JsonResponse(200, {{"tfjob", tfjob}, {"errors", json::array()}});
  logger_.Info("created tfjob", {{"namespace", route.ns}, {"job", form.name}});
  return JsonResponse(201, {{"tfjob", *created}});
}

HttpResponse Api::GetJob(const Route& route) const {
  auto tfjob = kube_->Get(tfjob::TFJobPath(route.ns, route.name));
  if (!tfjob.ok()) return KubeErrorResponse(tfjob.status());
  auto pods = kube_->Get("/api/v1/namespaces/" + route.ns + "/pods");
  if (!pods.ok()) return KubeErrorResponse(pods.status());
  std::vector<json> job_pods;
  std::vector<std::string> pod_names;
  for (const json& pod : ItemsOf(*pods)) {
    if (PodBelongsToJob(pod, route.name)) {
      job_pods.push_back(pod);
      pod_names.push_back(NameOf(pod));
    }
  }
  auto events = kube_->Get("/api/v1/namespaces/" + route.ns + "/events");
  if (!events.ok()) return KubeErrorResponse(events.status());
  const json* status = jf::Object(*tfjob, "status");
  const json* conditions = status ? jf::Array(*status, "conditions") : nullptr;
  // The newest events, at most max_list_items of them.
  json job_events = EventsView(*events, route.name, pod_names);
  const auto limit = static_cast<std::size_t>(options_.max_list_items);
  if (job_events.size() > limit) {
    job_events.erase(job_events.begin(),
                     job_events.begin() + static_cast<std::ptrdiff_t>(job_events.size() - limit));
  }
  return JsonResponse(200, {{"job", JobView(*tfjob, job_pods, now_())},
                            {"tfjob", *tfjob},
                            {"conditions", conditions ? *conditions : json::array()},
                            {"events", job_events}});
}

HttpResponse Api::DeleteJob(const Route& route) const {
  auto deleted = kube_->Delete(tfjob::TFJobPath(route.ns, route.name));
  if (!deleted.ok()) return KubeErrorResponse(deleted.status());
  logger_.Info("deleted tfjob", {{"namespace", route.ns}, {"job", route.name}});
  return JsonResponse(200, {{"deleted", route.name}, {"namespace", route.ns}});
}

HttpResponse Api::CloneJob(const HttpRequest& request, const Route& route) const {
  std::string new_name;
  if (!request.body.empty()) {
    const json body = json::parse(request.body, nullptr, /*allow_exceptions=*/false);
    if (!body.is_object()) return Error(400, "the request body must be a JSON object");
    auto name = jf::OptionalString(body, "name", "name");
    if (!name.ok()) return Error(422, std::string(name.status().message()), "metadata.name");
    new_name = name->value_or("");
  }
  if (new_name.empty()) {
    std::random_device random;
    const char* alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
    std::string suffix;
    for (int i = 0; i < 5; ++i) suffix.push_back(alphabet[random() % 36]);
    new_name = route.name.substr(0, 40) + "-" + suffix;
  }
  if (!IsDns1123Label(new_name)) {
    return Error(422, "\"" + new_name + "\" is not a valid TFJob name", "metadata.name");
  }
  auto source = kube_->Get(tfjob::TFJobPath(route.ns, route.name));
  if (!source.ok()) return KubeErrorResponse(source.status());
  const json copy = CloneTfJob(*source, new_name);
  const std::vector<FieldError> errors = CheckTfJobRules(copy);
  if (!errors.empty()) return JsonResponse(422, ErrorsJson(errors));
  auto created = kube_->Post(tfjob::TFJobsPath(route.ns), copy);
  if (!created.ok()) return KubeErrorResponse(created.status());
  logger_.Info("cloned tfjob", {{"namespace", route.ns}, {"job", route.name}, {"clone", new_name}});
  return JsonResponse(201, {{"tfjob", *created}, {"name", new_name}});
}

absl::StatusOr<std::string> Api::LogPath(const Route& route) const {
  auto pod = kube_->Get("/api/v1/namespaces/" + route.ns + "/pods/" + route.pod);
  if (!pod.ok()) return pod.status();
  if (!PodBelongsToJob(*pod, route.name)) {
    return absl::NotFoundError("pod " + route.pod + " is not a replica of TFJob " + route.name);
  }
  std::string container;
  const json* spec = jf::Object(*pod, "spec");
  const json* containers = spec ? jf::Array(*spec, "containers") : nullptr;
  for (const json& c : containers ? *containers : json::array()) {
    const std::string name = jf::StringOr(c, "name", "");
    if (container.empty() || name == "tensorflow") container = name;
  }
  std::int64_t tail = kDefaultTailLines;
  if (auto it = route.query.find("tailLines"); it != route.query.end()) {
    auto value = ParseBounded(it->second, 1, kMaxTailLines);
    if (!value) {
      return absl::InvalidArgumentError("tailLines must be a whole number from 1 to " +
                                        std::to_string(kMaxTailLines));
    }
    tail = *value;
  }
  const bool follow = route.query.count("follow") && route.query.at("follow") == "true";
  // A log answer is bounded in bytes too; a followed stream by its duration (unless asked).
  std::optional<std::int64_t> limit_bytes;
  if (!follow) limit_bytes = options_.max_log_bytes;
  if (auto it = route.query.find("limitBytes"); it != route.query.end()) {
    limit_bytes = ParseBounded(it->second, 1, options_.max_log_bytes);
    if (!limit_bytes) {
      return absl::InvalidArgumentError("limitBytes must be a whole number from 1 to " +
                                        std::to_string(options_.max_log_bytes));
    }
  }
  std::string path = "/api/v1/namespaces/" + route.ns + "/pods/" + route.pod +
                     "/log?tailLines=" + std::to_string(tail);
  if (limit_bytes) path += "&limitBytes=" + std::to_string(*limit_bytes);
  if (IsDns1123Label(container) || (!container.empty() && IsPodName(container))) {
    path += "&container=" + container;
  }
  if (auto it = route.query.find("previous"); it != route.query.end() && it->second == "true") {
    path += "&previous=true";
  }
  if (follow) path += "&follow=true";
  return path;
}

HttpResponse Api::GetLogs(const Route& route) const {
  auto path = LogPath(route);
  if (!path.ok()) {
    if (path.status().code() == absl::StatusCode::kInvalidArgument) {
      return Error(400, std::string(path.status().message()));
    }
    return KubeErrorResponse(path.status());
  }
  auto text = kube_->GetText(*path);
  if (!text.ok()) return KubeErrorResponse(text.status());
  // The API server honours limitBytes; a source that does not is cut here, to the last bytes.
  const auto limit = static_cast<std::size_t>(options_.max_log_bytes);
  if (text->size() > limit) text->erase(0, text->size() - limit);
  return {200, "text/plain; charset=utf-8", *text};
}

bool Api::IsFollowLogs(const HttpRequest& request) const {
  if (request.method != "GET" || !IsApiTarget(request.target)) return false;
  const std::string& t = request.target;
  const std::size_t question = t.find('?');
  if (question == std::string::npos) return false;
  const std::string path = t.substr(0, question);
  return path.size() > 5 && path.compare(path.size() - 5, 5, "/logs") == 0 &&
         t.find("follow=true", question) != std::string::npos;
}

std::optional<HttpResponse> Api::PrepareFollowLogs(const HttpRequest& request,
                                                   std::string* kube_path) const {
  Route route;
  if (auto failed = Parse(request, &route)) return *failed;
  const auto& s = route.segments;
  if (!(s.size() == 7 && s[0] == "namespaces" && s[2] == "tfjobs" && s[4] == "pods" &&
        s[6] == "logs")) {
    return Error(404, "no such API path");
  }
  auto path = LogPath(route);
  if (!path.ok()) {
    if (path.status().code() == absl::StatusCode::kInvalidArgument) {
      return Error(400, std::string(path.status().message()));
    }
    return KubeErrorResponse(path.status());
  }
  *kube_path = *path;
  return std::nullopt;
}

absl::Status Api::FollowLogs(const std::string& kube_path,
                             const std::function<bool(std::string_view)>& write,
                             kube::Cancellation* cancel) const {
  return kube_->StreamText(kube_path, write, cancel);
}

HttpResponse Api::GetMetrics(const Route& route) const {
  return JsonResponse(200, metrics_->HistoryJson(route.ns + "/" + route.name));
}

HttpResponse Api::GetCluster() const {
  ClusterCache& cache = *cluster_cache_;
  // One computation at a time: concurrent requests wait for it and share its answer.
  std::lock_guard<std::mutex> lock(cache.mu);
  const auto now = std::chrono::steady_clock::now();
  if (cache.view && now - cache.computed < options_.cluster_max_age) return *cache.view;
  auto objects = kube_->ListClusterObjects(options_.namespaces);
  if (!objects.ok()) return KubeErrorResponse(objects.status());
  cache.view = JsonResponse(
      200, ClusterView(objects->nodes, objects->active_pods, objects->job_pods, objects->events));
  cache.computed = now;
  return *cache.view;
}

}  // namespace taas::ui_server
