// The whole UI server in one object, for hosting it in another process (the operator) or running
// it alone (taas-ui), or in `taas run`: the API, the metrics scraper and the HTTP server over one
// JobSource (taas::ui_kube::KubeJobSource, or the launcher's LocalJobSource).
//
//   taas::ui_kube::KubeClientApi kube(std::move(client));
//   taas::ui_kube::KubeJobSource source(&kube);
//   taas::ui_server::UiServer ui(&source, options, logger);
//   TAAS_RETURN_IF_ERROR(ui.Start());   // listens, starts scraping; returns at once
//   ...
//   ui.Stop();                          // also done by the destructor
#pragma once

#include <memory>
#include <string>

#include "taas/base/log.h"
#include "taas/base/status.h"
#include "taas/ui_server/api.h"
#include "taas/ui_server/job_source.h"
#include "taas/ui_server/metrics.h"
#include "taas/ui_server/server.h"

namespace taas::ui_server {

struct UiServerOptions {
  ApiOptions api;          // namespaces, token, anonymous reads
  ServerOptions http;      // listen address, assets
  ScraperOptions scraper;  // interval, address overrides
};

class UiServer {
 public:
  // `source` is not owned and must outlive the server.
  UiServer(JobSource* source, UiServerOptions options, Logger logger);
  ~UiServer();
  UiServer(const UiServer&) = delete;
  UiServer& operator=(const UiServer&) = delete;

  absl::Status Start();
  int port() const;
  void Stop();

 private:
  const ApiOptions api_options_;
  MetricsStore metrics_;
  DeviceBook devices_;
  Api api_;
  MetricsScraper scraper_;
  HttpServer http_;
  bool started_ = false;
};

// A fresh random bearer token (40 letters and digits from std::random_device), for hosts that
// generate one and print the URL carrying it (`http://HOST:PORT/#token=...`).
std::string RandomToken();

// The bearer token kept in `path`: its first line without trailing whitespace, as a mounted
// Kubernetes Secret provides it. An unreadable or empty file is an error naming the file.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// The API's bearer token as every host chooses it: the one in `token_file` when given; none when
// anonymous reads are allowed without a file; else a fresh RandomToken().
struct BearerToken {
  std::string value;
  bool generated = false;  // made up here: the host hands it over in the URL it prints
};
absl::StatusOr<BearerToken> ChooseToken(const std::string& token_file, bool allow_anonymous_read);

// The address to open in a browser: `http://HOST:PORT/`, plus `#token=...` for a generated token
// (the page keeps it and drops it from the address bar).
std::string BrowserUrl(const std::string& host, int port, const BearerToken& token);

}  // namespace taas::ui_server
