// `dtrain export`: a checkpoint's model (parameters and batch-norm statistics) under PyTorch's
// names, as a plain safetensors file that PyTorch, Hugging Face tools and other readers load.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>

#include "apps/dtrain/commands.h"
#include "checkpoint/checkpoint_dir.h"

namespace dtrain::cli {
namespace {

struct ExportOptions {
  std::string checkpoint;
  std::string format = "safetensors";
  std::string out;
};

Checkpoint open_checkpoint(const std::string& path, std::int64_t at_most = -1) {
  if (!std::filesystem::is_directory(path)) return Checkpoint::read(path);
  auto found = CheckpointDir(path).newest_valid(
      [](const std::string& skipped, const std::string& error) {
        fmt::print(stderr, "dtrain export: skipping '{}': {}\n", skipped, error);
      },
      at_most);
  if (!found) throw DataError(fmt::format("'{}' holds no valid checkpoint (ckpt-*.safetensors)", path));
  return std::move(*found);
}

// A pipeline run's --checkpoint-dir holds one directory per stage (stage-0, stage-1, ...), each
// with its stage's part of the model: the parts of the newest step every stage has, stage 0
// first. A single checkpoint otherwise.
std::vector<Checkpoint> open_parts(const std::string& path) {
  std::vector<std::string> stages;
  while (std::filesystem::is_directory(std::filesystem::path(path) / fmt::format("stage-{}", stages.size())))
    stages.push_back((std::filesystem::path(path) / fmt::format("stage-{}", stages.size())).string());
  if (stages.empty()) {
    std::vector<Checkpoint> one;
    one.push_back(open_checkpoint(path));
    return one;
  }
  std::int64_t common = std::numeric_limits<std::int64_t>::max();
  for (const std::string& dir : stages) common = std::min(common, open_checkpoint(dir).info().position.iteration);
  std::vector<Checkpoint> parts;
  for (const std::string& dir : stages) parts.push_back(open_checkpoint(dir, common));
  return parts;
}

int run_export(const ExportOptions& o) {
  if (o.format != "safetensors") {
    throw InputError(fmt::format("--format '{}' is not supported; valid: safetensors", o.format));
  }
  const std::vector<Checkpoint> parts = open_parts(o.checkpoint);
  const Checkpoint& ck = parts.front();
  const std::string prefix = kCheckpointModelPrefix;
  std::vector<StTensorView> tensors;
  std::int64_t parameters = 0;
  for (const Checkpoint& part : parts)
    for (const StEntry* e : part.model_entries()) {
      tensors.push_back({e->name.substr(prefix.size()), e->dtype, e->shape, part.file().bytes(*e)});
      parameters += e->numel();
    }
  // PyTorch's BatchNorm keeps a step counter next to its statistics; load_state_dict(strict=True)
  // wants it, so every batch norm gets one (the steps trained).
  const std::int64_t steps = ck.optimizer_steps();
  std::vector<std::string> counters;
  for (const StTensorView& t : tensors) {
    const std::string suffix = "running_mean";
    if (t.name.size() >= suffix.size() && t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      counters.push_back(t.name.substr(0, t.name.size() - suffix.size()) + "num_batches_tracked");
    }
  }
  const auto* steps_bytes = reinterpret_cast<const std::uint8_t*>(&steps);
  for (const std::string& name : counters) tensors.push_back({name, StDType::kI64, {}, {steps_bytes, sizeof steps}});

  std::map<std::string, std::string> metadata{{"format", "pt"},
                                              {"dtrain.config", ck.info().config.dump()},
                                              {"dtrain.step", std::to_string(ck.info().position.iteration)}};
  const auto& eval = ck.info().last_eval;
  if (eval.is_object() && eval.contains("accuracy")) metadata["dtrain.test_accuracy"] = eval["accuracy"].dump();
  const std::size_t count = tensors.size();
  write_safetensors(o.out, std::move(tensors), metadata);
  fmt::print("exported {} tensors ({} values) of {}{} (step {}) to {}\n", count, parameters, ck.source(),
             parts.size() > 1 ? fmt::format(" and the {} other pipeline stages", parts.size() - 1) : "",
             ck.info().position.iteration, o.out);
  return 0;
}

}  // namespace

Action register_export(CLI::App& app) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* e = app.add_subcommand(
      "export", "Write a checkpoint's parameters and batch-norm statistics under PyTorch names (for other tools)");
  e->add_option("--checkpoint", o->checkpoint,
                "Checkpoint file, or a --checkpoint-dir (its newest valid checkpoint is exported; a pipeline run's "
                "stages are joined into the whole model)")
      ->required();
  e->add_option("--format", o->format, "Output format: safetensors")->capture_default_str();
  e->add_option("--out", o->out, "File to write (atomically)")->required();
  return [e, o]() { return e->parsed() ? run_export(*o) : -1; };
}

}  // namespace dtrain::cli
