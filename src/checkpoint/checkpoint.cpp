#include "checkpoint/checkpoint.h"

#include <cstring>
#include <map>

#include "checkpoint/checkpoint_format.h"
#include "core/error.h"
#include "nn/activation.h"

namespace dtrain {
namespace {

using Json = nlohmann::json;
using namespace checkpoint_format;

StDType st_dtype_of(DType t) {
  switch (t) {
    case DType::kF32:
      return StDType::kF32;
    case DType::kF64:
      return StDType::kF64;
    case DType::kF16:
      return StDType::kF16;
    case DType::kBF16:
      return StDType::kBF16;
    case DType::kI32:
      return StDType::kI32;
  }
  throw InternalError(fmt::format("no safetensors type for dtype {}", static_cast<int>(t)));
}

std::string rank_buffer_name(int rank, const std::string& name) {
  return fmt::format("{}{}.{}", kRankPrefix, rank, name);
}

// The model's name of each optimizer parameter (the optimizer knows them by index only).
std::vector<std::string> optimizer_param_names(const Module& model, const Optimizer& optimizer) {
  const auto named = model.named_parameters();
  std::vector<std::string> names;
  for (const Variable& p : optimizer.params()) {
    std::string found;
    for (const auto& [name, q] : named) {
      if (q.data().shares_storage_with(p.data())) found = name;
    }
    DT_CHECK(!found.empty(), "optimizer parameter {} is not a parameter of the model", names.size());
    names.push_back(found);
  }
  return names;
}

// "momentum.3" (the optimizer's name) -> "optimizer.momentum.c1.weight".
std::string optimizer_tensor_name(const std::string& state_name, const std::vector<std::string>& param_names) {
  const auto dot = state_name.rfind('.');
  DT_CHECK(dot != std::string::npos, "optimizer state name '{}' has no index", state_name);
  const std::size_t index = std::stoul(state_name.substr(dot + 1));
  DT_CHECK_LT(index, param_names.size());
  return kOptimizerPrefix + state_name.substr(0, dot) + "." + param_names[index];
}

std::vector<std::pair<std::string, Dropout*>> dropout_layers(const Module& model) {
  std::vector<std::pair<std::string, Dropout*>> out;
  for (const auto& [path, m] : model.named_modules()) {
    // named_modules() hands out const pointers to modules the caller owns non-const (it has the
    // model by reference), so restoring a counter through them is sound.
    if (const auto* d = dynamic_cast<const Dropout*>(m)) out.emplace_back(path, const_cast<Dropout*>(d));
  }
  return out;
}

}  // namespace

void write_checkpoint(const std::string& path, const Module& model, Optimizer& optimizer, const CheckpointInfo& info,
                      const std::vector<std::vector<Tensor>>& other_rank_buffers) {
  std::vector<StTensorView> views;
  std::vector<Tensor> keep;  // plain CPU copies where needed, alive until written
  auto add = [&](std::string name, const Tensor& t) {
    DT_CHECK(t.device().type == DeviceType::kCPU, "checkpoint of a tensor on {}", t.device().str());
    const Tensor& plain = keep.emplace_back(t.to_plain());
    views.push_back({std::move(name),
                     st_dtype_of(plain.dtype()),
                     plain.shape().dims(),
                     {static_cast<const std::uint8_t*>(plain.raw_data()), plain.nbytes()}});
  };
  for (const auto& [name, p] : model.named_parameters()) add(kCheckpointModelPrefix + name, p.data());
  const auto buffers = model.named_buffers();
  for (const auto& [name, b] : buffers) add(kCheckpointModelPrefix + name, b);
  for (std::size_t r = 0; r < other_rank_buffers.size(); ++r) {
    DT_CHECK_EQ(other_rank_buffers[r].size(), buffers.size());
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      add(rank_buffer_name(static_cast<int>(r + 1), buffers[i].first), other_rank_buffers[r][i]);
    }
  }
  const auto param_names = optimizer_param_names(model, optimizer);
  for (const auto& [name, t] : optimizer.state()) add(optimizer_tensor_name(name, param_names), t);

  Json dropout = Json::object();
  for (const auto& [p, d] : dropout_layers(model)) dropout[p] = d->calls();
  Json ranks = Json::array();
  for (const EpochTotals& t : info.rank_totals) {
    ranks.push_back({{"loss_sum", t.loss_sum}, {"correct", t.correct}, {"samples", t.samples}});
  }
  const Json state = {{"position",
                       {{"epoch", info.position.epoch},
                        {"iteration", info.position.iteration},
                        {"epoch_iteration", info.position.epoch_iteration}}},
                      {"world_size", info.world_size},
                      {"optimizer", {{"name", optimizer.name()}, {"steps", optimizer.steps()}}},
                      {"dropout", dropout},
                      {"ranks", ranks},
                      {"last_eval", info.last_eval}};
  std::map<std::string, std::string> metadata{
      {kFormatKey, kFormat}, {"dtrain.config", info.config.dump()}, {"dtrain.state", state.dump()}};
  // Encoding the header puts the tensors in file order, which the checksum follows.
  (void)encode_safetensors_header(views, metadata);
  std::vector<StEntry> entries;
  std::uint64_t offset = 0;
  for (const StTensorView& v : views) {
    entries.push_back({v.name, v.dtype, v.shape, offset, offset + v.bytes.size()});
    offset += v.bytes.size();
  }
  // content_crc over the data without concatenating it: the canonical part first, then each
  // tensor's bytes in file order (CRC-32 is a running value).
  std::uint32_t data_crc = content_crc(entries, metadata, {});
  for (const StTensorView& v : views) data_crc = crc32(v.bytes, data_crc);
  metadata[kChecksumKey] = fmt::format("{:08x}", data_crc);
  write_safetensors(path, std::move(views), metadata);
}

void Checkpoint::restore(Module& model, Optimizer& optimizer, int rank) const {
  const std::string& src = file_.source();
  struct Copy {
    const StEntry* from;
    Tensor to;
  };
  std::vector<Copy> plan;
  std::map<std::string, bool> used;
  for (const StEntry& e : file_.tensors()) used[e.name] = false;
  auto need = [&](const std::string& name, const Tensor& to) {
    const StEntry* e = file_.find(name);
    if (e == nullptr) {
      throw DataError(
          fmt::format("{}: has no tensor '{}'; the checkpoint was written for a different model or "
                      "optimizer (pass the --model and --optimizer it was trained with)",
                      src, name));
    }
    if (e->dtype != st_dtype_of(to.dtype()) || e->shape != to.shape().dims()) {
      throw DataError(fmt::format(
          "{}: tensor '{}' is {}{}, but this run's is {}{}; the checkpoint was written for a "
          "different model",
          src, name, st_dtype_name(e->dtype), Shape(e->shape), st_dtype_name(st_dtype_of(to.dtype())), to.shape()));
    }
    DT_CHECK(to.layout() == Layout::kPlain && to.device().type == DeviceType::kCPU, "restore into {}", to.describe());
    plan.push_back({e, to});
    used[name] = true;
  };
  for (const auto& [name, p] : model.named_parameters()) need(kCheckpointModelPrefix + name, p.data());
  for (const auto& [name, b] : model.named_buffers()) {
    // Rank R >= 1 takes its own statistics where the checkpoint has them (same world size).
    const std::string own = rank_buffer_name(rank, name), shared = kCheckpointModelPrefix + name;
    need(rank > 0 && file_.find(own) != nullptr ? own : shared, b);
    used[shared] = true;
  }
  if (optimizer.name() != optimizer_name_) {
    throw DataError(fmt::format("{}: the checkpoint holds {} optimizer state, this run uses {} (pass --optimizer {})",
                                src, optimizer_name_, optimizer.name(), optimizer_name_));
  }
  optimizer.ensure_state();
  const auto param_names = optimizer_param_names(model, optimizer);
  for (const auto& [name, t] : optimizer.state()) need(optimizer_tensor_name(name, param_names), t);
  for (const auto& [name, was_used] : used) {
    if (!was_used && name.rfind(kRankPrefix, 0) != 0) {
      throw DataError(
          fmt::format("{}: holds tensor '{}', which this run's model and optimizer lack; the checkpoint was "
                      "written for a different model",
                      src, name));
    }
  }
  const auto dropouts = dropout_layers(model);
  if (dropouts.size() != dropout_calls_.size()) {
    throw DataError(
        fmt::format("{}: has {} dropout layers, this model {}", src, dropout_calls_.size(), dropouts.size()));
  }
  for (const auto& [path, d] : dropouts) {
    if (!dropout_calls_.contains(path)) throw DataError(fmt::format("{}: no dropout state for layer '{}'", src, path));
  }

  // Everything checked: from here on nothing can fail, so the state is never half restored.
  for (const Copy& c : plan) {
    const auto bytes = file_.bytes(*c.from);
    if (!bytes.empty()) std::memcpy(c.to.raw_data(), bytes.data(), bytes.size());
  }
  optimizer.set_steps(optimizer_steps_);
  for (const auto& [path, d] : dropouts) d->set_calls(dropout_calls_.at(path).get<std::uint64_t>());
}

std::vector<const StEntry*> Checkpoint::model_entries() const {
  std::vector<const StEntry*> out;
  const std::string prefix = kCheckpointModelPrefix;
  for (const StEntry& e : file_.tensors()) {
    if (e.name.rfind(prefix, 0) == 0) out.push_back(&e);
  }
  return out;
}

}  // namespace dtrain
