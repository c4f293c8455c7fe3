#include "taas/collective_testing/free_addresses.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace taas::collective_testing {

absl::StatusOr<std::vector<std::string>> FreeLoopbackAddresses(int n) {
  std::vector<int> fds;
  std::vector<std::string> out;
  absl::Status status;
  for (int i = 0; i < n && status.ok(); ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
      status = absl::InternalError(std::string("socket: ") + std::strerror(errno));
      break;
    }
    fds.push_back(fd);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(address);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &len) != 0) {
      status = absl::InternalError(std::string("binding a loopback port: ") + std::strerror(errno));
      break;
    }
    out.push_back("127.0.0.1:" + std::to_string(ntohs(address.sin_port)));
  }
  for (int fd : fds) ::close(fd);
  if (!status.ok()) return status;
  return out;
}

}  // namespace taas::collective_testing
