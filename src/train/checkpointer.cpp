#include "train/checkpointer.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "core/error.h"
#include "train/stop_extension.h"
#include "train/stop_signal.h"

namespace dtrain {

CheckpointSchedule parse_checkpoint_schedule(std::string_view text) {
  const auto bad = [&] {
    return InputError(
        fmt::format("--checkpoint-every must be N or Nsteps (every N steps) or Ne or Nepochs (every N "
                    "epochs) with N >= 1, got '{}'",
                    text));
  };
  CheckpointSchedule s;
  const auto* end = text.data() + text.size();
  const auto [rest, ec] = std::from_chars(text.data(), end, s.every);
  if (ec != std::errc() || s.every < 1) throw bad();
  const std::string_view unit(rest, static_cast<std::size_t>(end - rest));
  if (unit == "e" || unit == "epoch" || unit == "epochs") {
    s.epochs = true;
  } else if (!unit.empty() && unit != "steps" && unit != "step") {
    throw bad();
  }
  return s;
}

class CheckpointExtension : public Extension {
 public:
  explicit CheckpointExtension(Checkpointer& c) : c_(c) {}

  void on_start(TrainerState& s) override {
    if (s.epoch_iteration == 0) return;  // not resuming mid-epoch
    s.epoch_loss_sum = c_.resumed_totals_.loss_sum;
    s.epoch_correct = c_.resumed_totals_.correct;
    s.epoch_samples = c_.resumed_totals_.samples;
  }
  void on_iteration(TrainerState& s) override {
    const CheckpointSchedule& every = c_.options_.schedule;
    // The last step of an epoch is saved at the epoch's end, after evaluation.
    const bool epoch_end = s.epoch_iteration == s.iterations_per_epoch;
    if (!every.epochs && every.every > 0 && !epoch_end && s.iteration % every.every == 0) c_.save(s, false);
    if (c_.options_.stop_signal && stop_check_after_step(s, c_.options_.stop_mid_epoch)) stop_if_signalled(s, false);
  }
  void on_epoch_end(TrainerState& s) override {
    const CheckpointSchedule& every = c_.options_.schedule;
    const std::int64_t done = s.epoch + 1;
    const bool due = done == s.epochs ||
                     (every.every > 0 && (every.epochs ? done % every.every == 0 : s.iteration % every.every == 0));
    if (due) c_.save(s, true);
    if (c_.options_.stop_signal && stop_check_after_epoch(s)) stop_if_signalled(s, true);
  }

 private:
  void stop_if_signalled(TrainerState& s, bool epoch_end) {
    const int signal = c_.agreed_stop_signal();
    if (signal == 0) return;
    if (c_.last_saved_step_ != s.iteration) c_.save(s, epoch_end);
    s.stopped_by = signal_name(signal);
    if (c_.options_.note) {
      c_.options_.note(
          fmt::format("stopping on {} after step {} (epoch {}): the checkpoint in '{}' holds it; run "
                      "again with --resume to continue (a requeued Slurm job resumes by itself)",
                      s.stopped_by, s.iteration, s.epoch + 1, c_.options_.dir));
    }
  }

  Checkpointer& c_;
};

Checkpointer::Checkpointer(CheckpointerOptions options, Module& model, Optimizer& optimizer)
    : options_(std::move(options)), model_(model), optimizer_(optimizer), dir_(options_.dir) {
  if (options_.dir.empty()) throw InputError("checkpoints need a directory (--checkpoint-dir DIR)");
  if (options_.keep < 0) throw InputError(fmt::format("--keep must be >= 0 (0 keeps all), got {}", options_.keep));
  if (options_.group.rank == 0) {
    for (const std::string& stale : dir_.prepare()) {
      if (options_.note) options_.note(fmt::format("removed '{}', left by a write that was interrupted", stale));
    }
  }
}

std::unique_ptr<Extension> Checkpointer::extension() { return std::make_unique<CheckpointExtension>(*this); }

std::int64_t Checkpointer::newest_step() {
  const CheckpointGroup& g = options_.group;
  std::int64_t step = 0;
  if (g.rank == 0) {
    const auto found = dir_.newest_valid({});
    if (found) step = found->info().position.iteration;
  }
  if (g.size > 1) g.broadcast(&step, sizeof step);
  return step;
}

std::int64_t Checkpointer::resume(std::int64_t at_most) {
  const CheckpointGroup& g = options_.group;
  auto note = [this](const std::string& text) {
    if (options_.note && options_.group.rank == 0) options_.note(text);
  };
  std::optional<Checkpoint> found;
  if (g.rank == 0) {
    found = dir_.newest_valid(
        [&](const std::string& path, const std::string& error) {
          note(fmt::format("skipping checkpoint '{}', which does not load: {}", path, error));
        },
        at_most);
  }
  if (g.size > 1) {
    DT_CHECK(g.broadcast != nullptr, "a data-parallel checkpointer needs a broadcast");
    // Rank 0's choice (the file's name and bytes) goes to every rank, which then parses and
    // validates the same bytes itself.
    std::vector<std::uint8_t> bytes;
    std::string source;
    if (found) {
      bytes = found->file().raw();
      source = found->source();
    }
    std::uint64_t sizes[2] = {source.size(), bytes.size()};
    g.broadcast(sizes, sizeof sizes);
    source.resize(sizes[0]);
    bytes.resize(sizes[1]);
    if (sizes[1] > 0) {
      g.broadcast(source.data(), source.size());
      g.broadcast(bytes.data(), bytes.size());
      if (g.rank != 0) found = Checkpoint::parse(std::move(bytes), source);
    }
  }
  if (!found) {
    note(fmt::format("no checkpoint in '{}' to resume from; training from the start", options_.dir));
    return 0;
  }
  const CheckpointInfo& info = found->info();

  std::vector<std::string> differences;
  nlohmann::json keys = options_.config;
  keys.update(info.config);
  for (const auto& [key, unused] : keys.items()) {
    if (std::find(options_.may_differ.begin(), options_.may_differ.end(), key) != options_.may_differ.end()) continue;
    const auto mine = options_.config.value(key, nlohmann::json()), theirs = info.config.value(key, nlohmann::json());
    if (mine != theirs) differences.push_back(fmt::format("{} {} (this run: {})", key, theirs.dump(), mine.dump()));
  }
  if (!differences.empty()) {
    throw InputError(
        fmt::format("{} was written by a run configured differently: {}. Resume with the same flags, or "
                    "use another --checkpoint-dir to start afresh",
                    found->source(), fmt::join(differences, ", ")));
  }
  const TrainingPosition& pos = info.position;
  const std::int64_t per_epoch = options_.iterations_per_epoch;
  if (per_epoch > 0 && pos.epoch * per_epoch + pos.epoch_iteration != pos.iteration) {
    throw DataError(
        fmt::format("{}: position epoch {} step {} of the epoch, global step {}, does not fit {} steps per "
                    "epoch; the file is corrupt",
                    found->source(), pos.epoch, pos.epoch_iteration, pos.iteration, per_epoch));
  }
  // Per-rank state only applies to the same world size; otherwise every rank takes rank 0's.
  const bool same_world = info.world_size == g.size;
  found->restore(model_, optimizer_, same_world ? g.rank : 0);
  if (same_world && static_cast<std::size_t>(g.rank) < info.rank_totals.size()) {
    resumed_totals_ = info.rank_totals[static_cast<std::size_t>(g.rank)];
  }
  note(fmt::format("resumed from '{}': epoch {}, step {} of the epoch ({} steps done)", found->source(), pos.epoch + 1,
                   pos.epoch_iteration, pos.iteration));
  return pos.iteration;
}

int largest_over(const CheckpointGroup& g, int mine) {
  if (g.size <= 1) return mine;
  std::vector<std::int32_t> all(static_cast<std::size_t>(g.size));
  all[static_cast<std::size_t>(g.rank)] = mine;
  g.allgather(all.data(), sizeof(std::int32_t));
  return *std::max_element(all.begin(), all.end());
}

int Checkpointer::agreed_stop_signal() {
  const int mine = options_.stop_signal ? options_.stop_signal() : 0;
  return options_.agree_stop ? options_.agree_stop(mine) : largest_over(options_.group, mine);
}

void Checkpointer::save(const TrainerState& s, bool epoch_end) {
  last_saved_step_ = s.iteration;
  if (options_.before_save) options_.before_save();
  const CheckpointGroup& g = options_.group;
  const auto buffers = model_.named_buffers();
  CheckpointInfo info;
  info.config = options_.config;
  info.world_size = g.size;
  info.position = epoch_end ? TrainingPosition{s.epoch + 1, s.iteration, 0}
                            : TrainingPosition{s.epoch, s.iteration, s.epoch_iteration};
  if (epoch_end && s.last_eval) {
    info.last_eval = {{"loss", s.last_eval->loss},
                      {"accuracy", s.last_eval->accuracy},
                      {"correct", s.last_eval->correct},
                      {"samples", s.last_eval->samples}};
  }
  // What differs between ranks: the epoch totals so far (mid-epoch) and the buffers.
  const EpochTotals mine = epoch_end ? EpochTotals{} : EpochTotals{s.epoch_loss_sum, s.epoch_correct, s.epoch_samples};
  std::vector<std::vector<Tensor>> other_buffers;
  if (g.size > 1) {
    DT_CHECK(g.allgather != nullptr, "a data-parallel checkpointer needs an allgather");
    std::size_t block = 3 * sizeof(double);
    for (const auto& [name, b] : buffers) block += b.to_plain().nbytes();
    std::vector<std::uint8_t> all(block * static_cast<std::size_t>(g.size));
    std::uint8_t* p = all.data() + block * static_cast<std::size_t>(g.rank);
    const double totals[3] = {mine.loss_sum, static_cast<double>(mine.correct), static_cast<double>(mine.samples)};
    std::memcpy(p, totals, sizeof totals);
    p += sizeof totals;
    for (const auto& [name, b] : buffers) {
      const Tensor plain = b.to_plain();
      std::memcpy(p, plain.raw_data(), plain.nbytes());
      p += plain.nbytes();
    }
    g.allgather(all.data(), block);
    if (g.rank != 0) return;
    for (int r = 0; r < g.size; ++r) {
      const std::uint8_t* q = all.data() + block * static_cast<std::size_t>(r);
      double t[3];
      std::memcpy(t, q, sizeof t);
      q += sizeof t;
      info.rank_totals.push_back({t[0], static_cast<std::int64_t>(t[1]), static_cast<std::int64_t>(t[2])});
      if (r == 0) continue;
      auto& theirs = other_buffers.emplace_back();
      for (const auto& [name, b] : buffers) {
        Tensor copy = Tensor::empty(b.shape(), b.dtype());
        std::memcpy(copy.raw_data(), q, copy.nbytes());
        q += copy.nbytes();
        theirs.push_back(copy);
      }
    }
  } else {
    info.rank_totals.push_back(mine);
  }
  write_checkpoint(dir_.path_for(s.iteration), model_, optimizer_, info, other_buffers);
  dir_.prune(options_.keep);
}

}  // namespace dtrain
