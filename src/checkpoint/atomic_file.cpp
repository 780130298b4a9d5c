#include "checkpoint/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <system_error>

#include "core/error.h"

namespace dtrain {
namespace {

namespace fs = std::filesystem;

std::string errno_text(int err) { return std::generic_category().message(err); }

std::string parent_dir(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  static std::atomic<unsigned> counter{0};
  const fs::path p(path_);
  temp_path_ = (p.parent_path() / fmt::format(".{}.tmp-{}-{}", p.filename().string(), ::getpid(), counter++)).string();
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw DataError(fmt::format("cannot create '{}' to write '{}': {}; check that the directory exists and is writable",
                                temp_path_, path_, errno_text(errno)));
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_path_.c_str());
  }
}

void AtomicFile::write(const void* data, std::size_t bytes) {
  DT_CHECK(fd_ >= 0, "write to '{}' after commit", path_);
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd_, p, bytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw DataError(fmt::format("writing '{}' failed: {} (disk full?)", temp_path_, errno_text(errno)));
    }
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
}

void AtomicFile::commit() {
  DT_CHECK(fd_ >= 0, "'{}' committed twice", path_);
  if (::fsync(fd_) != 0)
    throw DataError(fmt::format("flushing '{}' to disk failed: {}", temp_path_, errno_text(errno)));
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(temp_path_.c_str());
    throw DataError(fmt::format("closing '{}' failed: {}", temp_path_, errno_text(err)));
  }
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp_path_.c_str());
    throw DataError(fmt::format("renaming '{}' to '{}' failed: {}", temp_path_, path_, errno_text(err)));
  }
  sync_directory(parent_dir(path_));
}

bool is_atomic_temporary(const std::string& name) {
  return name.size() > 1 && name[0] == '.' && name.find(".tmp-") != std::string::npos;
}

std::vector<std::string> remove_stale_temporaries(const std::string& dir) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!is_atomic_temporary(name)) continue;
    if (fs::remove(entry.path(), ec)) removed.push_back(entry.path().string());
  }
  return removed;
}

void sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw DataError(fmt::format("cannot open directory '{}' to flush it: {}", dir, errno_text(errno)));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw DataError(fmt::format("flushing directory '{}' to disk failed: {}", dir, errno_text(err)));
}

}  // namespace dtrain
