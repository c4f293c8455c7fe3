// The UI's HTTP server (Boost.Beast): the JSON API under /api/v1/ (see api.h), followed pod logs
// as a chunked text stream, and the built front end (web-ui/dist) for every other path.
//
// One thread per connection, keep-alive, 1 MiB request bodies at most. Start() binds and returns
// at once; Stop() (also run by the destructor) closes the listener and every open connection.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

#include "taas/base/log.h"
#include "taas/base/status.h"
#include "taas/ui_server/api.h"

namespace taas::ui_server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;            // 0: any free port (read it back with port())
  std::string assets_dir;  // the front end's files; empty: API only
  std::size_t max_connections = 256;
};

// Reads a `--listen`-style "HOST:PORT" (port 0..65535; 0 picks a free one) into `host` and
// `port` of `out`. The error names `flag` and the expected form.
absl::Status ParseListenAddress(const std::string& flag, const std::string& text,
                                ServerOptions* out);

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

// The content type served for a file name ("app.js" -> "text/javascript; charset=utf-8").
std::string ContentTypeFor(const std::string& file_name);

// The file under `root` that serves `target` ("/" and unknown extension-less paths -> index.html);
// empty when the target tries to leave `root` or no file matches.
std::string AssetPathFor(const std::string& root, const std::string& target);

}  // namespace taas::ui_server
