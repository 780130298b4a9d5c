// Reading and validating checkpoints: only the file and its metadata, no model, so the fuzz
// build links this without the rest of the library.
#include <limits>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_format.h"
#include "core/error.h"

namespace dtrain {
namespace {

using Json = nlohmann::json;
using namespace checkpoint_format;

// Typed access to the metadata JSON: every missing or mistyped field is a DataError.
class Fields {
 public:
  Fields(const Json& j, std::string where, const std::string& source)
      : j_(j), where_(std::move(where)), source_(source) {
    if (!j_.is_object()) throw error("is not an object");
  }
  std::int64_t integer(const char* key, std::int64_t min = 0) const {
    const Json& v = at(key);
    if (!v.is_number_integer() || v.get<std::int64_t>() < min)
      throw error(fmt::format("{} is not an integer >= {}", key, min));
    return v.get<std::int64_t>();
  }
  double number(const char* key) const {
    const Json& v = at(key);
    if (!v.is_number()) throw error(fmt::format("{} is not a number", key));
    return v.get<double>();
  }
  std::string string(const char* key) const {
    const Json& v = at(key);
    if (!v.is_string()) throw error(fmt::format("{} is not a string", key));
    return v.get<std::string>();
  }
  const Json& at(const char* key) const {
    if (!j_.contains(key)) throw error(fmt::format("lacks {}", key));
    return j_.at(key);
  }
  DataError error(const std::string& what) const {
    return DataError(
        fmt::format("{}: checkpoint metadata {} {}; the file is corrupt or not written by this version of "
                    "dtrain",
                    source_, where_, what));
  }

 private:
  const Json& j_;
  std::string where_;
  const std::string& source_;
};

Json parse_metadata_json(const SafetensorsFile& f, const char* key) {
  const auto it = f.metadata().find(key);
  if (it == f.metadata().end()) {
    throw DataError(
        fmt::format("{}: no {} in the metadata; not a dtrain checkpoint, or a damaged one", f.source(), key));
  }
  try {
    return Json::parse(it->second);
  } catch (const Json::exception& e) {
    throw DataError(
        fmt::format("{}: metadata {} is not valid JSON ({}); the file is corrupt", f.source(), key, e.what()));
  }
}

}  // namespace

Checkpoint Checkpoint::read(const std::string& path) { return Checkpoint(SafetensorsFile::read(path)); }

Checkpoint Checkpoint::parse(std::vector<std::uint8_t> bytes, const std::string& source) {
  return Checkpoint(SafetensorsFile::parse(std::move(bytes), source));
}

Checkpoint::Checkpoint(SafetensorsFile file) : file_(std::move(file)) {
  const std::string& src = file_.source();
  const auto& meta = file_.metadata();
  const auto format = meta.find(kFormatKey);
  if (format == meta.end()) {
    throw DataError(
        fmt::format("{}: not a dtrain checkpoint (no dtrain.format in the metadata); `dtrain export` "
                    "files hold weights only and cannot be resumed from",
                    src));
  }
  if (format->second != kFormat) {
    throw DataError(fmt::format("{}: checkpoint format '{}', this dtrain reads '{}'", src, format->second, kFormat));
  }
  const auto crc = meta.find(kChecksumKey);
  if (crc == meta.end())
    throw DataError(fmt::format("{}: no {} in the metadata; the file is damaged", src, kChecksumKey));
  const std::string actual = fmt::format("{:08x}", content_crc(file_.tensors(), meta, file_.data()));
  if (crc->second != actual) {
    throw DataError(
        fmt::format("{}: the contents do not match their checksum (CRC-32 {}, the header says {}); the "
                    "file is corrupt",
                    src, actual, crc->second));
  }
  info_.config = parse_metadata_json(file_, "dtrain.config");
  if (!info_.config.is_object()) throw DataError(fmt::format("{}: metadata dtrain.config is not an object", src));
  const Json state = parse_metadata_json(file_, "dtrain.state");
  const Fields s(state, "dtrain.state", src);
  const Fields pos(s.at("position"), "dtrain.state.position", src);
  info_.position.epoch = pos.integer("epoch");
  info_.position.iteration = pos.integer("iteration");
  info_.position.epoch_iteration = pos.integer("epoch_iteration");
  if (info_.position.epoch_iteration > info_.position.iteration)
    throw s.error("position has more steps in the epoch than in all");
  info_.world_size =
      static_cast<int>(std::min<std::int64_t>(s.integer("world_size", 1), std::numeric_limits<int>::max()));
  const Fields opt(s.at("optimizer"), "dtrain.state.optimizer", src);
  optimizer_name_ = opt.string("name");
  optimizer_steps_ = opt.integer("steps");
  dropout_calls_ = s.at("dropout");
  if (!dropout_calls_.is_object()) throw s.error("dropout is not an object");
  for (const auto& [path, calls] : dropout_calls_.items()) {
    if (!calls.is_number_unsigned()) throw s.error(fmt::format("dropout count of '{}' is not a count", path));
  }
  const Json& ranks = s.at("ranks");
  if (!ranks.is_array()) throw s.error("ranks is not an array");
  for (const Json& r : ranks) {
    const Fields t(r, "dtrain.state.ranks[]", src);
    info_.rank_totals.push_back({t.number("loss_sum"), t.integer("correct"), t.integer("samples")});
  }
  info_.last_eval = s.at("last_eval");
}

}  // namespace dtrain
