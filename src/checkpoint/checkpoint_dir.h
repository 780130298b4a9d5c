// A directory of checkpoints of one run, named by the global step they were taken after
// ("ckpt-000000001200.safetensors"), so the newest sorts last and a resumed run finds it without
// reading any file. Only the writer (rank 0) creates, prunes and cleans; readers only list.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"

namespace dtrain {

class CheckpointDir {
 public:
  explicit CheckpointDir(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }

  std::string path_for(std::int64_t iteration) const;
  // The checkpoints present, newest (highest step) first. Temporaries of unfinished writes and
  // other files are ignored.
  std::vector<std::string> list() const;
  // Creates the directory (and its parents) and removes temporaries that killed writers left;
  // returns those. Throws DataError when the directory cannot be created.
  std::vector<std::string> prepare() const;
  // Deletes all but the newest `keep` checkpoints (keep <= 0 keeps all); returns the deleted.
  std::vector<std::string> prune(int keep) const;

  // Reports a checkpoint that failed to load: its path and the error.
  using SkipReport = std::function<void(const std::string& path, const std::string& error)>;
  // The newest checkpoint that reads and validates; each newer one that does not is reported
  // and passed over. Nothing when the directory holds no valid checkpoint (or does not exist).
  // With `at_most` >= 0, checkpoints after that global step are passed over unreported (a
  // pipeline stage resumes at the newest step every stage has).
  std::optional<Checkpoint> newest_valid(const SkipReport& skipped, std::int64_t at_most = -1) const;

 private:
  std::string dir_;
};

}  // namespace dtrain
