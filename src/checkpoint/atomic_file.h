// Files that appear whole or not at all. The data goes to a hidden temporary file in the same
// directory (so the rename cannot cross file systems); commit() flushes it to disk (fsync), renames
// it over the destination and flushes the directory entry (fsync of the directory), so after a
// crash or power loss a reader finds either the previous file or the complete new one, never a
// prefix. An AtomicFile destroyed without commit() removes its temporary file.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace dtrain {

class AtomicFile {
 public:
  // Creates the temporary file; throws DataError naming the directory when it cannot.
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, std::size_t bytes);
  // Makes the file durable and visible under its name. Throws DataError (disk full, I/O error).
  void commit();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
};

// Whether a file name is one of AtomicFile's temporaries (".NAME.tmp-PID-N"): directory scans skip
// them, and a writer that was killed leaves one behind for remove_stale_temporaries.
bool is_atomic_temporary(const std::string& file_name);
// Removes temporaries left in `dir` by writers that died; returns their paths. Call only where no
// other writer is active in that directory.
std::vector<std::string> remove_stale_temporaries(const std::string& dir);

// fsync of a directory: makes renames and unlinks in it durable.
void sync_directory(const std::string& dir);

}  // namespace dtrain
