// libFuzzer target: a request body of the UI API (the New-job form, a clone request) as JSON
// through the form's checks, the typed TFJob built from it, the shared TFJob rules and its
// serialiser; the same JSON as a TFJob, pod, node, event or list through the views and the
// scraper's target choice (any field of an outside object may hold any type). Never throws,
// never aborts.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "taas/tfjob/serialization.h"
#include "taas/tfjob/validation.h"
#include "taas/ui_kube/views.h"
#include "taas/ui_server/job_form.h"
#include "taas/ui_server/metrics.h"
#include "taas/ui_server/views.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using nlohmann::json;
  namespace ui = taas::ui_server;
  namespace kube = taas::ui_kube;
  const json body = json::parse(std::string_view(reinterpret_cast<const char*>(data), size),
                                nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return 0;

  const ui::JobFormResult form = ui::ReadJobForm(body, "default");
  if (form.errors.empty()) {
    taas::tfjob::TFJobToJson(form.job);
    // A valid form names a valid job: its object name is a DNS-1123 label.
    if (!ui::IsDns1123Label(form.job.metadata.name)) std::abort();
  } else {
    for (const ui::FieldError& e : form.errors) {
      if (e.message.empty()) std::abort();
    }
  }
  ui::CheckJobAgainstCluster(form.job, kube::ComputeClusterLimits(body));

  const json clone = ui::CloneTfJob(body, "copy");
  (void)taas::tfjob::LoadTFJob(clone);
  kube::JobView(body, {body}, 0);
  kube::PodView(body);
  kube::EventsView(body, "mnist", {"mnist-worker-0"});
  kube::ClusterView(body, body, {body}, body);
  static ui::MetricsScraper* scraper = new ui::MetricsScraper(  // NOLINT: never freed
      nullptr, {}, nullptr, {}, taas::Logger(stderr, taas::LogLevel::kError));
  scraper->Targets(body);
  return 0;
}
