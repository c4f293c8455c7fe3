// The controller's Prometheus text (/metrics).
#include <map>

#include "progress_tracker.h"
#include "taas/controller/controller.h"

namespace taas::controller {

using nlohmann::json;

std::string Controller::RenderMetrics() const {
  std::string out;
  auto counter = [&out](const char* name, const char* help, std::uint64_t value) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" + name +
           " " + std::to_string(value) + "\n";
  };
  auto gauge = [&out](const char* name, const char* help, double value) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " gauge\n" + name +
           " " + std::to_string(value) + "\n";
  };
  counter("taas_operator_reconcile_total", "Reconciles run.", metrics_.reconciles.load());
  counter("taas_operator_reconcile_errors_total", "Reconciles that failed and were requeued.",
          metrics_.reconcile_errors.load());
  out +=
      "# HELP taas_operator_reconcile_duration_seconds Reconcile latency.\n"
      "# TYPE taas_operator_reconcile_duration_seconds histogram\n";
  metrics_.reconcile_latency.Render("taas_operator_reconcile_duration_seconds", out);
  gauge("taas_operator_workqueue_depth", "Job keys ready to be reconciled.",
        static_cast<double>(queue_.Len()));
  gauge("taas_operator_workqueue_waiting", "Job keys waiting for a delay or backoff.",
        static_cast<double>(queue_.NumWaiting()));
  kube::ClientStats stats = client_->stats();
  counter("taas_operator_api_requests_total", "Kubernetes API requests.", stats.requests);
  counter("taas_operator_api_errors_total", "Kubernetes API requests that failed.", stats.errors);
  counter("taas_operator_pods_created_total", "Pods created.", metrics_.pods_created.load());
  counter("taas_operator_pods_deleted_total", "Pods deleted.", metrics_.pods_deleted.load());
  counter("taas_operator_services_created_total", "Services created.",
          metrics_.services_created.load());
  counter("taas_operator_services_deleted_total", "Services deleted.",
          metrics_.services_deleted.load());
  counter("taas_operator_status_updates_total", "TFJob status writes.",
          metrics_.status_updates.load());
  counter("taas_operator_status_conflicts_total", "TFJob status writes that hit a 409.",
          metrics_.status_conflicts.load());
  counter("taas_operator_events_posted_total",
          "Kubernetes Events posted (a repeat or an aggregate counts once).", events_.posted());
  counter("taas_operator_jobs_ttl_deleted_total", "TFJobs deleted after ttlSecondsAfterFinished.",
          metrics_.jobs_deleted_ttl.load());
  counter("taas_operator_progress_writes_total",
          "TFJob status writes that changed status.progress.", metrics_.progress_writes.load());
  if (progress_) {
    counter("taas_operator_progress_scrapes_total", "Metrics pages of chiefs and evaluators read.",
            progress_->Scrapes());
    counter("taas_operator_progress_scrape_errors_total",
            "Reads of a chief's or evaluator's metrics page that failed.",
            progress_->ScrapeErrors());
    gauge("taas_operator_progress_jobs", "Running jobs whose progress is read.",
          static_cast<double>(progress_->Tracked()));
  }

  std::map<std::string, int> by_state = {{"Created", 0},   {"Running", 0}, {"Restarting", 0},
                                         {"Succeeded", 0}, {"Failed", 0},  {"Suspended", 0},
                                         {"Unknown", 0}};
  for (const auto& [ns, w] : watched_) {
    for (const auto& job : w.jobs->store().List()) {
      std::string state = "Unknown";
      const json status = job->value("status", json::object());
      if (status.contains("conditions") && status["conditions"].is_array()) {
        for (const auto& c : status["conditions"]) {
          if (c.value("status", "") != "True") continue;
          std::string type = c.value("type", "");
          if (by_state.count(type) != 0) state = type;  // the last true condition wins
        }
      }
      ++by_state[state];
    }
  }
  out +=
      "# HELP taas_operator_jobs TFJobs by state (last true condition).\n"
      "# TYPE taas_operator_jobs gauge\n";
  for (const auto& [state, n] : by_state)
    out += "taas_operator_jobs{state=\"" + state + "\"} " + std::to_string(n) + "\n";
  return out;
}

}  // namespace taas::controller
