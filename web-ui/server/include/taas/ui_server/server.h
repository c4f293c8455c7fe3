// The UI's HTTP server (Boost.Beast): the JSON API under /api/v1/ (see api.h), followed pod logs
// as a chunked text stream, and the built front end (web-ui/dist) for every other path.
//
// One thread per connection, keep-alive. Every limit is in ServerOptions (docs/web-ui.md, "Limits
// and hardening"): a bounded number of connections (503 beyond it), a deadline on every read and
// write, bounded headers and bodies (413), and followed log streams that end. Static files are
// served from an index of the assets folder made at start-up, never from a path built from the
// request. Start() binds and returns at once; Stop() (also run by the destructor) closes the
// listener and every open connection.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "taas/base/log.h"
#include "taas/base/status.h"
#include "taas/ui_server/api.h"

namespace taas::ui_server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;            // 0: any free port (read it back with port())
  std::string assets_dir;  // the front end's files; empty: API only
  // Connections served at once; the next ones get a 503 (up to as many again, then are closed).
  std::size_t max_connections = 256;
  std::size_t max_body_bytes = 1 << 20;     // a request body; more is a 413
  std::size_t max_header_bytes = 16 << 10;  // the request line and headers; more is a 431
  // A kept-alive connection waits this long for its next request, then is closed.
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(30)};
  // A request's headers (resp. body) must arrive within this from its first byte (resp. the end
  // of the headers); else 408.
  std::chrono::milliseconds header_timeout{std::chrono::seconds(10)};
  std::chrono::milliseconds body_timeout{std::chrono::seconds(30)};
  // Each write to a client must finish within this (a client that stops reading is dropped).
  std::chrono::milliseconds write_timeout{std::chrono::seconds(30)};
  // A followed log stream ends after this long (the page follows again on reload).
  std::chrono::milliseconds max_follow{std::chrono::hours(1)};
};

// Range-checks every limit of `options`; the error names the option and its allowed range.
absl::Status CheckServerOptions(const ServerOptions& options);

// Reads a `--listen`-style "HOST:PORT" (port 0..65535; 0 picks a free one) into `host` and
// `port` of `out`. The error names `flag` and the expected form.
absl::Status ParseListenAddress(const std::string& flag, const std::string& text,
                                ServerOptions* out);

// The content type served for a file name ("app.js" -> "text/javascript; charset=utf-8").
std::string ContentTypeFor(const std::string& file_name);

// The built front end, read once at start-up: relative path ("/assets/app.js") -> content. A
// request is looked up by its decoded path in this index; nothing is ever read from a path built
// from the request.
class AssetIndex {
 public:
  struct Asset {
    std::string content;
    std::string content_type;
    bool html = false;
  };

  // Regular files under `root` (symbolic links and other kinds are skipped), at most `max_files`
  // files and `max_bytes` bytes in all; an empty `root` gives an empty index (API only).
  static absl::StatusOr<AssetIndex> Load(const std::string& root, std::size_t max_files = 10000,
                                         std::size_t max_bytes = std::size_t{256} << 20);
  // An index of the given files, for tests and fuzzing.
  static AssetIndex FromFiles(const std::map<std::string, std::string>& files);

  // The asset serving `target` (path and optional query): the file at the decoded path; for a
  // path of the single-page app's routes (plain segments, no extension), index.html; else nullptr.
  const Asset* Resolve(std::string_view target) const;
  std::size_t size() const { return assets_.size(); }

 private:
  std::map<std::string, Asset, std::less<>> assets_;  // by "/relative/path"
};

// What the server answers to a request that arrived whole (followed log streams excepted): an
// asset of the front end, or an API or error response.
struct Answer {
  HttpResponse response;
  const AssetIndex::Asset* asset = nullptr;  // when set, served instead of `response`
};
Answer AnswerRequest(const Api& api, const AssetIndex& assets, const HttpRequest& request);

// Parses `bytes` as the server reads one request (same limits and checks) and answers it; the
// status of the answer, for fuzzing and tests. A follow request is only authorized and resolved.
int AnswerRawRequest(const Api& api, const AssetIndex& assets, const ServerOptions& options,
                     std::string_view bytes);

class HttpServer {
 public:
  // `api` is not owned and must outlive the server.
  HttpServer(const Api* api, ServerOptions options, Logger logger);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  absl::Status Start();
  int port() const;
  void Stop();

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace taas::ui_server
