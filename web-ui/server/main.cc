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
#include <sstream>
#include <string>
#include <vector>

#include "taas/base/log.h"
#include "taas/kube/client.h"
#include "taas/ui_server/kube_client_api.h"
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

// A whole number for `flag` (range-checked later with the option it sets).
bool ParseCount(const std::string& flag, const std::string& text, std::int64_t* out,
                std::string* error) {
  if (text.empty() || text.size() > 15 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    *error = flag + " wants a whole number, got \"" + text + "\"";
    return false;
  }
  *out = std::stoll(text);
  return true;
}

// Seconds (e.g. "30", "0.5") for `flag`, as milliseconds.
bool ParseSeconds(const std::string& flag, const std::string& text, std::chrono::milliseconds* out,
                  std::string* error) {
  char* end = nullptr;
  const double seconds = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(seconds >= 0) || seconds > 1e7) {
    *error = flag + " wants seconds from 0 to 10000000, got \"" + text + "\"";
    return false;
  }
  *out = std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
  return true;
}

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, separator)) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

bool ParseFlags(int argc, char** argv, Flags* flags, std::string* error) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    const auto eq = arg.find('=');
    const bool inline_value = arg.rfind("--", 0) == 0 && eq != std::string::npos;
    if (inline_value) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    auto next = [&]() -> bool {
      if (inline_value) return true;
      if (i + 1 >= argc) {
        *error = arg + " needs a value";
        return false;
      }
      value = argv[++i];
      return true;
    };
    if (arg == "--allow-anonymous-read") {
      flags->allow_anonymous_read = true;
    } else if (arg == "--kubeconfig") {
      if (!next()) return false;
      flags->kubeconfig = value;
    } else if (arg == "--namespaces") {
      if (!next()) return false;
      flags->namespaces = Split(value, ',');
    } else if (arg == "--token-file") {
      if (!next()) return false;
      flags->token_file = value;
    } else if (arg == "--listen") {
      if (!next()) return false;
      flags->listen = value;
    } else if (arg == "--assets") {
      if (!next()) return false;
      flags->assets = value;
    } else if (arg == "--metrics-target") {
      if (!next()) return false;
      const auto sep = value.find('=');
      if (sep == std::string::npos) {
        *error = "--metrics-target wants NS/REPLICA=HOST:PORT";
        return false;
      }
      flags->metrics_targets[value.substr(0, sep)] = value.substr(sep + 1);
    } else if (arg == "--scrape-interval") {
      if (!next()) return false;
      flags->scrape_interval_seconds = std::atoi(value.c_str());
      if (flags->scrape_interval_seconds < 1) {
        *error = "--scrape-interval must be at least 1";
        return false;
      }
    } else if (arg == "--max-connections" || arg == "--max-body-bytes" ||
               arg == "--max-header-bytes" || arg == "--max-log-bytes" ||
               arg == "--max-list-items") {
      std::int64_t count = 0;
      if (!next() || !ParseCount(arg, value, &count, error)) return false;
      if (arg == "--max-connections") flags->http.max_connections = static_cast<std::size_t>(count);
      if (arg == "--max-body-bytes") flags->http.max_body_bytes = static_cast<std::size_t>(count);
      if (arg == "--max-header-bytes")
        flags->http.max_header_bytes = static_cast<std::size_t>(count);
      if (arg == "--max-log-bytes") flags->api.max_log_bytes = count;
      if (arg == "--max-list-items") flags->api.max_list_items = count;
    } else if (arg == "--idle-timeout" || arg == "--header-timeout" || arg == "--body-timeout" ||
               arg == "--write-timeout" || arg == "--max-follow" || arg == "--cluster-max-age") {
      std::chrono::milliseconds duration{0};
      if (!next() || !ParseSeconds(arg, value, &duration, error)) return false;
      if (arg == "--idle-timeout") flags->http.idle_timeout = duration;
      if (arg == "--header-timeout") flags->http.header_timeout = duration;
      if (arg == "--body-timeout") flags->http.body_timeout = duration;
      if (arg == "--write-timeout") flags->http.write_timeout = duration;
      if (arg == "--max-follow") flags->http.max_follow = duration;
      if (arg == "--cluster-max-age") flags->api.cluster_max_age = duration;
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else {
      *error = "unknown flag " + arg;
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
  taas::ui_server::KubeClientApi kube(std::move(*client), logger);

  taas::ui_server::UiServerOptions options;
  options.api = flags.api;
  options.api.namespaces = flags.namespaces;
  options.api.token = token->value;
  options.api.allow_anonymous_read = flags.allow_anonymous_read;
  options.scraper.interval = std::chrono::seconds(flags.scrape_interval_seconds);
  options.scraper.overrides = flags.metrics_targets;
  options.http = flags.http;
  options.http.assets_dir = flags.assets;
  taas::ui_server::UiServer server(&kube, options, logger);

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
