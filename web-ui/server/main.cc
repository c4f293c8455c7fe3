// taas-ui: the UI/API server on its own (the operator can also host it). Reads its settings from
// flags only, in this one place:
//   taas-ui --kubeconfig ~/.kube/config --namespaces default,team-a --token-file /etc/taas/token
//           --listen 127.0.0.1:8080 --assets web-ui/dist [--allow-anonymous-read]
//           [--metrics-target default/mnist-chief-0=127.0.0.1:9100] [--scrape-interval 5]
//           [--max-connections N] [--max-body-bytes N] [--max-header-bytes N] [--idle-timeout S]
//           [--header-timeout S] [--body-timeout S] [--write-timeout S] [--max-follow S]
//           [--max-log-bytes N] [--max-list-items N] [--cluster-max-age S]
// (limits: docs/web-ui.md, "Limits and hardening").
// Without --token-file (and without --allow-anonymous-read) it makes a random token and prints
// the URL that carries it.
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "taas/base/log.h"
#include "taas/flags/flags.h"
#include "taas/kube/client.h"
#include "taas/ui_kube/kube_client_api.h"
#include "taas/ui_kube/kube_job_source.h"
#include "taas/ui_server/ui_server.h"

namespace {

struct Flags {
  std::string kubeconfig;
  std::vector<std::string> namespaces;
  std::string token_file;
  std::string listen = "127.0.0.1:8080";
  taas::ui_server::ServerOptions http;  // host and port of `listen`
  std::string assets;
  bool allow_anonymous_read = false;
  std::map<std::string, std::string> metrics_targets;
  int scrape_interval_seconds = 5;
  taas::ui_server::ApiOptions api;  // the API's limits
};

constexpr const char* kUsage =
    "usage: taas-ui [--kubeconfig FILE] --namespaces NS[,NS...] [--token-file FILE]\n"
    "               [--listen HOST:PORT] [--assets DIR] [--allow-anonymous-read]\n"
    "               [--metrics-target NS/REPLICA=HOST:PORT]... [--scrape-interval SECONDS]\n"
    "               [--max-connections N] [--max-body-bytes N] [--max-header-bytes N]\n"
    "               [--idle-timeout S] [--header-timeout S] [--body-timeout S]\n"
    "               [--write-timeout S] [--max-follow S] [--max-log-bytes N]\n"
    "               [--max-list-items N] [--cluster-max-age S]\n";

bool ParseFlags(int argc, char** argv, Flags* flags, std::string* error) {
  // Sizes as whole numbers (CheckServerOptions and CheckApiOptions hold them to their ranges).
  constexpr std::int64_t kMaxCount = std::int64_t{1} << 50;
  std::int64_t max_connections = static_cast<std::int64_t>(flags->http.max_connections);
  std::int64_t max_body_bytes = static_cast<std::int64_t>(flags->http.max_body_bytes);
  std::int64_t max_header_bytes = static_cast<std::int64_t>(flags->http.max_header_bytes);
  taas::flags::FlagSet set;
  set.String("kubeconfig", &flags->kubeconfig);
  set.List("namespaces", &flags->namespaces);
  set.String("token-file", &flags->token_file);
  set.String("listen", &flags->listen);
  set.String("assets", &flags->assets);
  set.Switch("allow-anonymous-read", &flags->allow_anonymous_read);
  set.KeyValues("metrics-target", &flags->metrics_targets);
  set.Int("scrape-interval", 1, 3600, &flags->scrape_interval_seconds);
  set.Int("max-connections", 0, kMaxCount, &max_connections);
  set.Int("max-body-bytes", 0, kMaxCount, &max_body_bytes);
  set.Int("max-header-bytes", 0, kMaxCount, &max_header_bytes);
  set.Int("max-log-bytes", 0, kMaxCount, &flags->api.max_log_bytes);
  set.Int("max-list-items", 0, kMaxCount, &flags->api.max_list_items);
  set.Seconds("idle-timeout", 0, 1e7, &flags->http.idle_timeout);
  set.Seconds("header-timeout", 0, 1e7, &flags->http.header_timeout);
  set.Seconds("body-timeout", 0, 1e7, &flags->http.body_timeout);
  set.Seconds("write-timeout", 0, 1e7, &flags->http.write_timeout);
  set.Seconds("max-follow", 0, 1e7, &flags->http.max_follow);
  set.Seconds("cluster-max-age", 0, 1e7, &flags->api.cluster_max_age);
  auto parsed = set.Parse(taas::flags::Args(argc, argv));
  if (!parsed.ok()) {
    *error = std::string(parsed.status().message());
    return false;
  }
  if (parsed->help) {
    std::fputs(kUsage, stdout);
    std::exit(0);
  }
  if (!parsed->positional.empty()) {
    *error = parsed->positional.front() + ": unexpected argument";
    return false;
  }
  flags->http.max_connections = static_cast<std::size_t>(max_connections);
  flags->http.max_body_bytes = static_cast<std::size_t>(max_body_bytes);
  flags->http.max_header_bytes = static_cast<std::size_t>(max_header_bytes);
  for (const auto& [replica, address] : flags->metrics_targets) {
    if (replica.find('/') == std::string::npos || address.empty()) {
      *error = "--metrics-target: expected NS/REPLICA=HOST:PORT, got " + replica + "=" + address;
      return false;
    }
  }
  if (flags->namespaces.empty()) {
    *error = "--namespaces is required";
    return false;
  }
  for (const absl::Status& checked :
       {taas::ui_server::ParseListenAddress("--listen", flags->listen, &flags->http),
        taas::ui_server::CheckServerOptions(flags->http),
        taas::ui_server::CheckApiOptions(flags->api)}) {
    if (!checked.ok()) {
      *error = std::string(checked.message());
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  taas::Logger logger = taas::Logger(stderr).With({{"component", "taas-ui"}});
  Flags flags;
  std::string error;
  if (!ParseFlags(argc, argv, &flags, &error)) {
    std::fprintf(stderr, "taas-ui: %s\n%s", error.c_str(), kUsage);
    return 2;
  }
  auto token = taas::ui_server::ChooseToken(flags.token_file, flags.allow_anonymous_read);
  if (!token.ok()) {
    logger.Error("no bearer token", {{"error", std::string(token.status().message())}});
    return 2;
  }

  auto config = flags.kubeconfig.empty() ? taas::kube::InClusterConfig()
                                         : taas::kube::LoadKubeconfig(flags.kubeconfig);
  if (!config.ok()) {
    logger.Error("no Kubernetes config", {{"error", config.status().ToString()}});
    return 2;
  }
  auto client = taas::kube::Client::Create(*config);
  if (!client.ok()) {
    logger.Error("cannot create the Kubernetes client", {{"error", client.status().ToString()}});
    return 2;
  }
  taas::ui_kube::KubeClientApi kube(std::move(*client), logger);
  taas::ui_kube::KubeJobSource source(&kube);

  taas::ui_server::UiServerOptions options;
  options.api = flags.api;
  options.api.namespaces = flags.namespaces;
  options.api.token = token->value;
  options.api.allow_anonymous_read = flags.allow_anonymous_read;
  options.scraper.interval = std::chrono::seconds(flags.scrape_interval_seconds);
  options.scraper.overrides = flags.metrics_targets;
  options.http = flags.http;
  options.http.assets_dir = flags.assets;
  taas::ui_server::UiServer server(&source, options, logger);

  // Block the stop signals in every thread; the main thread waits for one below.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  if (auto started = server.Start(); !started.ok()) {
    logger.Error("cannot start", {{"error", started.ToString()}});
    return 1;
  }
  const std::string url = taas::ui_server::BrowserUrl(options.http.host, server.port(), *token);
  std::printf("taas-ui: serving %s\n", url.c_str());
  std::fflush(stdout);

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  logger.Info("stopping", {{"signal", signal_number}});
  server.Stop();
  return 0;
}
