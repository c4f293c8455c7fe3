#include "taas/data/file_patterns.h"

#include <glob.h>

#include <algorithm>

namespace taas::data {

absl::StatusOr<std::vector<std::string>> MatchFiles(const std::vector<std::string>& patterns) {
  if (patterns.empty()) return absl::InvalidArgumentError("files: no file patterns given");
  std::vector<std::string> files;
  for (const std::string& pattern : patterns) {
    glob_t matches{};
    const int result = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &matches);
    if (result == GLOB_NOMATCH) {
      ::globfree(&matches);
      return absl::NotFoundError("files: no file matches \"" + pattern +
                                 "\": check the path (and the job's volume mounts)");
    }
    if (result != 0) {
      ::globfree(&matches);
      return absl::InternalError("files: cannot list \"" + pattern +
                                 "\": a folder on its path cannot be read");
    }
    for (std::size_t i = 0; i < matches.gl_pathc; ++i) files.emplace_back(matches.gl_pathv[i]);
    ::globfree(&matches);
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

}  // namespace taas::data
