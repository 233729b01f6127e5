#include "api/output_files.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "dist/ranks.hpp"

namespace tpuemu::api {

void check_writable(const std::string& option, const std::string& path) {
  auto refuse = [&](const std::string& reason) {
    throw std::invalid_argument(fmt::format("{} {}: cannot write this file ({})", option, path, reason));
  };
  if (path.empty()) refuse("empty file name");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) refuse("it is a directory");
    if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) refuse("not a regular file");
    if (::access(path.c_str(), W_OK) == 0) return;
    // Gone since stat: another MPI rank's probe below made and removed it
    // (refusing here left that rank's peers waiting for it: a hang).
    if (errno != ENOENT) refuse(std::strerror(errno));
  } else if (errno != ENOENT) {
    refuse(std::strerror(errno));
  }
  std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (folder.empty()) folder = ".";
  if (::stat(folder.c_str(), &st) != 0) refuse(fmt::format("folder {}: {}", folder.string(), std::strerror(errno)));
  if (!S_ISDIR(st.st_mode)) refuse(fmt::format("{} is not a folder", folder.string()));
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    refuse(fmt::format("folder {}: {}", folder.string(), std::strerror(errno)));
  }
  // access() says yes to root everywhere, /proc included: create the file
  // (and remove it again) to know. Another MPI rank may have just made it.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0 && errno != EEXIST) refuse(std::strerror(errno));
  if (fd >= 0) {
    ::close(fd);
    ::unlink(path.c_str());
  }
}

std::optional<std::string> write_text_file(const std::string& option, const std::string& path,
                                           const std::string& text) {
  if (dist::world().rank() != 0) return std::nullopt;  // rank 0 writes what a pod over MPI ranks produces
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return fmt::format("{} {}: writing failed (cannot open: {})", option, path, std::strerror(errno));
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) return fmt::format("{} {}: writing failed ({})", option, path, std::strerror(errno));
  return std::nullopt;
}

}  // namespace tpuemu::api
