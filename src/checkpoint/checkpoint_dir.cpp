#include "checkpoint/checkpoint_dir.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "checkpoint/atomic_file.h"
#include "core/error.h"

namespace dtrain {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPrefix = "ckpt-";
constexpr std::string_view kSuffix = ".safetensors";

// The step in a checkpoint's file name, or -1 for any other name.
std::int64_t step_of(const std::string& name) {
  if (name.size() <= kPrefix.size() + kSuffix.size() || name.rfind(kPrefix, 0) != 0 ||
      name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
    return -1;
  }
  const std::string digits = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  if (digits.empty() || digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  return std::stoll(digits);
}

}  // namespace

std::string CheckpointDir::path_for(std::int64_t iteration) const {
  return (fs::path(dir_) / fmt::format("{}{:012d}{}", kPrefix, iteration, kSuffix)).string();
}

std::vector<std::string> CheckpointDir::list() const {
  std::vector<std::pair<std::int64_t, std::string>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const std::int64_t step = step_of(entry.path().filename().string());
    if (step >= 0 && entry.is_regular_file(ec)) found.emplace_back(step, entry.path().string());
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> out;
  out.reserve(found.size());
  for (auto& [step, path] : found) out.push_back(std::move(path));
  return out;
}

std::vector<std::string> CheckpointDir::prepare() const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_)) {
    throw DataError(fmt::format("cannot create the checkpoint directory '{}' (--checkpoint-dir): {}", dir_,
                                ec ? ec.message() : "a file of that name exists"));
  }
  return remove_stale_temporaries(dir_);
}

std::vector<std::string> CheckpointDir::prune(int keep) const {
  std::vector<std::string> removed;
  if (keep <= 0) return removed;
  const auto all = list();
  std::error_code ec;
  for (std::size_t i = static_cast<std::size_t>(keep); i < all.size(); ++i) {
    if (fs::remove(all[i], ec)) removed.push_back(all[i]);
  }
  if (!removed.empty()) sync_directory(dir_);
  return removed;
}

std::optional<Checkpoint> CheckpointDir::newest_valid(const SkipReport& skipped, std::int64_t at_most) const {
  for (const std::string& path : list()) {
    try {
      Checkpoint c = Checkpoint::read(path);
      if (at_most >= 0 && c.info().position.iteration > at_most) continue;
      return c;
    } catch (const DataError& e) {
      if (skipped) skipped(path, e.what());
    }
  }
  return std::nullopt;
}

}  // namespace dtrain
