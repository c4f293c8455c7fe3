#include "taas/ui_server/api.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <random>

#include "taas/base/json_fields.h"
#include "taas/base/random_token.h"
#include "taas/tfjob/serialization.h"
#include "taas/tfjob/validation.h"
#include "taas/ui_server/log_window.h"
#include "taas/ui_server/views.h"

namespace taas::ui_server {

using nlohmann::json;
namespace jf = taas::json_fields;

namespace {

constexpr std::string_view kApiPrefix = "/api/v1/";
constexpr int kDefaultTailLines = 1000;
constexpr int kMaxTailLines = 100000;

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

// The answer of `status` written by the row's one field list (rows.h).
template <typename Row>
HttpResponse Answer(int status, const Row& row) {
  return JsonResponse(status, schema::ToJson(row));
}

HttpResponse Error(int status, const std::string& message, const std::string& field = "") {
  ErrorAnswer answer{message, std::nullopt, std::nullopt, std::nullopt};
  if (!field.empty()) {
    answer.field = field;
    answer.form_key = FormKeyOf(field);
  }
  return Answer(status, answer);
}

// A dry run's answer to a form with errors: 200, the errors (the message alone when the error
// named no field), and the TFJob when it was built.
HttpResponse DryRunErrors(const ErrorAnswer& answer, std::optional<json> tfjob) {
  return Answer(200, DryRunAnswer{std::move(tfjob),
                                  answer.errors.value_or(std::vector<FieldError>{
                                      FieldErrorAt(answer.field.value_or(""), answer.error)})});
}

int FromHex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The decoded, non-empty segments of a path; false for a malformed escape.
bool SplitPath(std::string_view path, std::vector<std::string>* segments) {
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    auto segment = PercentDecode(path.substr(start, end - start), false);
    if (!segment) return false;
    if (!segment->empty()) segments->push_back(*segment);
    start = end + 1;
  }
  return true;
}

// The decoded key=value pairs of a query string (the last of a repeated key wins); false for a
// malformed escape.
bool ParseQuery(std::string_view query, std::map<std::string, std::string>* out) {
  while (!query.empty()) {
    std::size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    const std::size_t eq = pair.find('=');
    auto key = PercentDecode(pair.substr(0, eq), true);
    auto value = PercentDecode(eq == std::string_view::npos ? "" : pair.substr(eq + 1), true);
    if (!key || !value) return false;
    (*out)[*key] = *value;
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return true;
}

// A clone's name: the body's "name", else `job` with a random suffix.
absl::StatusOr<std::string> CloneName(const json& body, const std::string& job) {
  TAAS_ASSIGN_OR_RETURN(const std::optional<std::string> name,
                        jf::OptionalString(body, "name", "name"));
  if (name && !name->empty()) return *name;
  std::random_device random;
  const char* alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string suffix;
  for (int i = 0; i < 5; ++i) suffix.push_back(alphabet[random() % 36]);
  return job.substr(0, 40) + "-" + suffix;
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

namespace {

// The HTTP status and error answer for a failed JobSource call (SourceErrorResponse).
std::pair<int, ErrorAnswer> SourceError(const absl::Status& status) {
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
    case absl::StatusCode::kUnimplemented:
      http = 405;
      break;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      http = 503;
      break;
    default:
      http = 502;  // including Unauthenticated: our own credentials were refused
  }
  ErrorAnswer answer{std::string(status.message()), std::nullopt, std::nullopt, std::nullopt};
  const auto payload =
      status.GetPayload(absl::string_view(kKubeStatusPayload.data(), kKubeStatusPayload.size()));
  const json kube = payload
                        ? json::parse(std::string(*payload), nullptr, /*allow_exceptions=*/false)
                        : json(nullptr);
  if (!kube.is_object()) return {http, std::move(answer)};
  if (auto message = jf::String(kube, "message")) answer.error = *message;
  if (auto code = jf::Int(kube, "code"); code && *code >= 400 && *code < 600 && *code != 401) {
    http = static_cast<int>(*code);
  }
  const json* details = jf::Object(kube, "details");
  const json* causes = details ? jf::Array(*details, "causes") : nullptr;
  std::vector<FieldError> errors;
  for (const json& cause : causes ? *causes : json::array()) {
    if (!cause.is_object()) continue;
    FieldError e =
        FieldErrorAt(jf::StringOr(cause, "field", ""), jf::StringOr(cause, "message", ""));
    if (!e.field.empty() && !answer.field) {
      answer.field = e.field;
      answer.form_key = e.form_key;
    }
    errors.push_back(std::move(e));
  }
  if (!errors.empty()) answer.errors = std::move(errors);
  return {http, std::move(answer)};
}

}  // namespace

HttpResponse SourceErrorResponse(const absl::Status& status) {
  const auto [http, answer] = SourceError(status);
  return Answer(http, answer);
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

Api::Api(ApiOptions options, JobSource* source, const MetricsStore* metrics, Logger logger,
         std::function<std::int64_t()> now, DeviceBook* devices)
    : options_(std::move(options)),
      source_(source),
      metrics_(metrics),
      logger_(std::move(logger)),
      now_(now ? std::move(now) : SystemNow),
      devices_(devices) {}

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
  if (options_.token.empty() || !ConstantTimeEqual(token, options_.token)) {
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
  if (!SplitPath(path, &route.segments)) return Error(400, "malformed path");
  if (question != std::string_view::npos &&
      !ParseQuery(target.substr(question + 1), &route.query)) {
    return Error(400, "malformed query");
  }
  const auto& s = route.segments;
  if (s.size() >= 2 && s[0] == "namespaces") route.ns = s[1];
  if (s.size() >= 4) route.name = s[3];
  if (s.size() >= 6) route.pod = s[5];
  return CheckRoute(route);
}

std::optional<HttpResponse> Api::CheckRoute(const Route& route) const {
  if (!route.ns.empty()) {
    if (!IsDns1123Label(route.ns)) {
      return Error(400, "\"" + route.ns + "\" is not a namespace name", "metadata.namespace");
    }
    if (auto forbidden = CheckNamespace(route.ns)) return *forbidden;
  }
  if (!route.name.empty() && !IsDns1123Label(route.name)) {
    return Error(400, "\"" + route.name + "\" is not a TFJob name", "metadata.name");
  }
  if (!route.pod.empty() && !IsDns1123Subdomain(route.pod)) {
    return Error(400, "\"" + route.pod + "\" is not a pod name");
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
  return Answer(200, ConfigAnswer{options_.namespaces, request.authorization.empty(),
                                  options_.local_run, "0.1.0"});
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
  JobListAnswer answer;
  for (const std::string& ns : namespaces) {
    auto records = source_->ListJobs(ns);
    if (!records.ok()) return SourceErrorResponse(records.status());
    for (JobRecord& record : *records) {
      auto job = tfjob::TFJobFromJson(record.tfjob);
      JobRow row = job.ok() ? JobRowOf(WithScrapedProgress(*std::move(job)),
                                       std::move(record.replicas), now_())
                            : JobRowOf(record.tfjob, std::move(record.replicas), now_());
      if (!filter.empty() && row.name.find(filter) == std::string::npos) continue;
      row.pods.reset();  // the job page's
      answer.items.push_back(std::move(row));
    }
  }
  std::sort(answer.items.begin(), answer.items.end(), [](const JobRow& a, const JobRow& b) {
    if (a.created != b.created) return a.created > b.created;
    return a.name < b.name;
  });
  // The newest rows, at most max_list_items of them.
  answer.total = static_cast<std::int64_t>(answer.items.size());
  if (answer.total > options_.max_list_items) {
    answer.items.resize(static_cast<std::size_t>(options_.max_list_items));
    answer.truncated = true;
  }
  return Answer(200, answer);
}

std::optional<HttpResponse> Api::AddClusterErrors(const tfjob::TFJob& job,
                                                  std::vector<FieldError>* errors) const {
  auto nodes = source_->Nodes();
  if (!nodes.ok()) return SourceErrorResponse(nodes.status());
  AddErrors(errors, CheckJobAgainstCluster(job, LimitsOf(*nodes)));
  return std::nullopt;
}

HttpResponse Api::CreateJob(const HttpRequest& request, const Route& route) const {
  const json body = json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return Error(400, "the request body is not JSON");
  // Errors are 422; a dry run (the form's preview) answers 200 with them and the TFJob.
  const bool dry_run = route.query.count("dryRun") && route.query.at("dryRun") != "false";
  JobFormResult form = ReadJobForm(body, route.ns);
  // The TFJob is shown only when the form and the TFJob rules accept it; what the cluster can
  // never schedule is reported with their errors, each input once.
  std::optional<json> tfjob;
  if (form.errors.empty()) tfjob = tfjob::TFJobToJson(form.job);
  if (auto failed = AddClusterErrors(form.job, &form.errors)) return *failed;
  if (!form.errors.empty()) {
    ErrorAnswer answer = ErrorsAnswer(std::move(form.errors));
    return dry_run ? DryRunErrors(answer, std::move(tfjob)) : Answer(422, answer);
  }
  auto created = source_->CreateJob(route.ns, *tfjob, dry_run);
  if (!created.ok()) {
    auto [http, answer] = SourceError(created.status());
    return dry_run ? DryRunErrors(answer, std::move(tfjob)) : Answer(http, answer);
  }
  if (dry_run) return Answer(200, DryRunAnswer{std::move(tfjob), {}});
  logger_.Info("created tfjob", {{"namespace", route.ns}, {"job", form.job.metadata.name}});
  return Answer(201, CreatedAnswer{*std::move(created), std::nullopt});
}

HttpResponse Api::GetJob(const Route& route) const {
  auto detail = source_->GetJob(route.ns, route.name);
  if (!detail.ok()) return SourceErrorResponse(detail.status());
  JobRecord& record = detail->record;
  JobDetailAnswer answer;
  if (auto job = tfjob::TFJobFromJson(record.tfjob); job.ok()) {
    // The devices each replica reported, known or asked for (read by the scraper's next round).
    if (devices_ != nullptr) devices_->Annotate(*job, &record.replicas);
    answer.conditions = ConditionRows(job->status);
    answer.job = JobRowOf(WithScrapedProgress(*std::move(job)), std::move(record.replicas), now_());
  } else {
    answer.job = JobRowOf(record.tfjob, std::move(record.replicas), now_());
  }
  answer.tfjob = std::move(record.tfjob);
  // The newest events, at most max_list_items of them.
  std::vector<EventRow>& events = detail->events;
  const auto limit = static_cast<std::size_t>(options_.max_list_items);
  if (events.size() > limit) {
    events.erase(events.begin(), events.end() - static_cast<std::ptrdiff_t>(limit));
  }
  answer.events = std::move(events);
  answer.waiting = std::move(detail->waiting);
  return Answer(200, answer);
}

tfjob::TFJob Api::WithScrapedProgress(tfjob::TFJob job) const {
  if (metrics_ == nullptr) return job;
  job.status.progress =
      MergeProgress(std::move(job.status.progress),
                    metrics_->Progress(job.metadata.namespace_name + "/" + job.metadata.name));
  return job;
}

HttpResponse Api::DeleteJob(const Route& route) const {
  const absl::Status deleted = source_->DeleteJob(route.ns, route.name);
  if (!deleted.ok()) return SourceErrorResponse(deleted);
  logger_.Info("deleted tfjob", {{"namespace", route.ns}, {"job", route.name}});
  return Answer(200, DeletedAnswer{route.name, route.ns});
}

HttpResponse Api::CloneJob(const HttpRequest& request, const Route& route) const {
  json body = json::object();
  if (!request.body.empty()) {
    body = json::parse(request.body, nullptr, /*allow_exceptions=*/false);
    if (!body.is_object()) return Error(400, "the request body must be a JSON object");
  }
  auto new_name = CloneName(body, route.name);
  if (!new_name.ok()) {
    return Error(422, std::string(new_name.status().message()), "metadata.name");
  }
  auto source = source_->GetJob(route.ns, route.name);
  if (!source.ok()) return SourceErrorResponse(source.status());
  // The TFJob rules judge the copy, its new name included.
  const json copy = CloneTfJob(source->record.tfjob, *new_name);
  if (auto loaded = tfjob::LoadTFJob(copy); !loaded.ok()) {
    return Error(422, std::string(loaded.status().message()),
                 tfjob::ErrorField(loaded.status()).value_or(""));
  }
  auto created = source_->CreateJob(route.ns, copy, /*dry_run=*/false);
  if (!created.ok()) return SourceErrorResponse(created.status());
  logger_.Info("cloned tfjob",
               {{"namespace", route.ns}, {"job", route.name}, {"clone", *new_name}});
  return Answer(201, CreatedAnswer{*std::move(created), *new_name});
}

absl::StatusOr<LogRequest> Api::LogRequestOf(const Route& route) const {
  LogRequest log;
  log.namespace_name = route.ns;
  log.job = route.name;
  log.replica = route.pod;
  log.tail_lines = kDefaultTailLines;
  if (auto it = route.query.find("tailLines"); it != route.query.end()) {
    auto value = ParseBounded(it->second, 1, kMaxTailLines);
    if (!value) {
      return absl::InvalidArgumentError("tailLines must be a whole number from 1 to " +
                                        std::to_string(kMaxTailLines));
    }
    log.tail_lines = *value;
  }
  const bool follow = route.query.count("follow") && route.query.at("follow") == "true";
  // A log answer is bounded in bytes too; a followed stream by its duration (unless asked).
  if (!follow) log.limit_bytes = options_.max_log_bytes;
  if (auto it = route.query.find("limitBytes"); it != route.query.end()) {
    log.limit_bytes = ParseBounded(it->second, 1, options_.max_log_bytes);
    if (!log.limit_bytes) {
      return absl::InvalidArgumentError("limitBytes must be a whole number from 1 to " +
                                        std::to_string(options_.max_log_bytes));
    }
  }
  log.window_bytes = log.limit_bytes.value_or(options_.max_log_bytes);
  if (auto it = route.query.find("previous"); it != route.query.end() && it->second == "true") {
    log.previous = true;
  }
  return log;
}

HttpResponse Api::GetLogs(const Route& route) const {
  auto log = LogRequestOf(route);
  if (!log.ok()) return Error(400, std::string(log.status().message()));
  auto text = source_->Logs(*log);
  if (!text.ok()) return SourceErrorResponse(text.status());
  // Both sources keep to the window; one that did not is cut here by the same rule.
  const auto window = static_cast<std::size_t>(log->window_bytes);
  if (text->size() > window) {
    LogWindow cut(window);
    cut.Feed(*text);
    *text = cut.Text();
  }
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
                                                   LogRequest* out) const {
  Route route;
  if (auto failed = Parse(request, &route)) return *failed;
  const auto& s = route.segments;
  if (!(s.size() == 7 && s[0] == "namespaces" && s[2] == "tfjobs" && s[4] == "pods" &&
        s[6] == "logs")) {
    return Error(404, "no such API path");
  }
  auto log = LogRequestOf(route);
  if (!log.ok()) return Error(400, std::string(log.status().message()));
  // Before the stream's headers: a replica that is not the job's is a 404, not an empty stream.
  if (absl::Status found = source_->FindReplica(route.ns, route.name, route.pod); !found.ok()) {
    return SourceErrorResponse(found);
  }
  *out = *std::move(log);
  return std::nullopt;
}

absl::Status Api::FollowLogs(const LogRequest& log,
                             const std::function<bool(std::string_view)>& write,
                             Cancellation* cancel) const {
  return source_->FollowLogs(log, write, cancel);
}

HttpResponse Api::GetMetrics(const Route& route) const {
  return Answer(200, metrics_->HistoryAnswer(route.ns + "/" + route.name));
}

HttpResponse Api::GetCluster() const {
  ClusterCache& cache = *cluster_cache_;
  // One computation at a time: concurrent requests wait for it and share its answer.
  std::lock_guard<std::mutex> lock(cache.mu);
  const auto now = std::chrono::steady_clock::now();
  if (cache.view && now - cache.computed < options_.cluster_max_age) return *cache.view;
  auto page = source_->Cluster(options_.namespaces);
  if (!page.ok()) return SourceErrorResponse(page.status());
  cache.view = Answer(200, ClusterViewOf(*page));
  cache.computed = now;
  return *cache.view;
}

}  // namespace taas::ui_server
