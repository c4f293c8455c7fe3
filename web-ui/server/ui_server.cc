#include "taas/ui_server/ui_server.h"

#include <cctype>
#include <fstream>
#include <random>

namespace taas::ui_server {

UiServer::UiServer(JobSource* source, UiServerOptions options, Logger logger)
    : api_options_(options.api),
      api_(options.api, source, &metrics_, logger, nullptr, &devices_),
      scraper_(source, options.api.namespaces, &metrics_, options.scraper, logger, &devices_),
      http_(&api_, options.http, logger) {}

UiServer::~UiServer() { Stop(); }

absl::Status UiServer::Start() {
  TAAS_RETURN_IF_ERROR(CheckApiOptions(api_options_));
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

std::string RandomToken() {
  std::random_device random;
  const char* alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string token;
  for (int i = 0; i < 40; ++i) token.push_back(alphabet[random() % 62]);
  return token;
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError("cannot read the token file " + path);
  std::string token;
  std::getline(in, token);
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  if (token.empty()) {
    return absl::InvalidArgumentError("the token file " + path +
                                      " is empty: put the bearer token on its first line");
  }
  return token;
}

absl::StatusOr<BearerToken> ChooseToken(const std::string& token_file, bool allow_anonymous_read) {
  if (!token_file.empty()) {
    TAAS_ASSIGN_OR_RETURN(std::string token, ReadTokenFile(token_file));
    return BearerToken{token, false};
  }
  if (allow_anonymous_read) return BearerToken{};
  return BearerToken{RandomToken(), true};
}

std::string BrowserUrl(const std::string& host, int port, const BearerToken& token) {
  std::string url = "http://" + host + ":" + std::to_string(port) + "/";
  if (token.generated) url += "#token=" + token.value;
  return url;
}

}  // namespace taas::ui_server
