#include "taas/ui_server/ui_server.h"

namespace taas::ui_server {

UiServer::UiServer(KubeApi* kube, UiServerOptions options, Logger logger)
    : api_(options.api, kube, &metrics_, logger),
      scraper_(kube, options.api.namespaces, &metrics_, options.scraper, logger),
      http_(&api_, options.http, logger) {}

UiServer::~UiServer() { Stop(); }

absl::Status UiServer::Start() {
  TAAS_RETURN_IF_ERROR(http_.Start());
  scraper_.Start();
  started_ = true;
  return absl::OkStatus();
}

int UiServer::port() const { return http_.port(); }

void UiServer::Stop() {
  if (!started_) return;
  started_ = false;
  scraper_.Stop();
  http_.Stop();
}

}  // namespace taas::ui_server
