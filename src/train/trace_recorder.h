// `dtrain train --trace FILE`: records a window of training steps of this rank as a timeline
// (trace_format.h): each leaf layer's forward (module calls, nn/module.h) and each op a composite
// module runs itself (from the end of what ran before it in that composite to its result: the
// shortcut's add and the ReLUs of a residual block), each layer's backward
// (autograd nodes, mapped to the layer whose forward made them; ops a composite module runs
// itself are named by the composite's path and the op, as perfmodel/layer_trace.h names them),
// each bucket's allreduce on the communication thread and the update (trace_hooks.h), the wait
// for data before a step and the wait for the buckets before the update; in parameter-server
// training each shard's push (on the communication lane, though the training thread sends it)
// and the pull of the next weights in place of the update.
//
// The window is the global steps first .. first + count - 1 (the first step, which builds
// primitives and warms caches, is left out by default), skipping the first step of each epoch
// (its forward would share the clock with the evaluation before it). Times are read from the wall
// clock, which the ranks of one host share exactly and hosts share to NTP's precision; the trace
// file starts at the first recorded event of any rank.
//
// Install it (install()) on the training thread; it is an Extension (for the step boundaries)
// and an UpdateObserver (hand it to the data-parallel updater).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "autograd/variable.h"
#include "core/trace_format.h"
#include "nn/module.h"
#include "train/trace_hooks.h"
#include "train/trainer.h"

namespace dtrain {

// Collects one string from every rank on every rank (rank order); empty: a single process.
using GatherStrings = std::function<std::vector<std::string>(const std::string&)>;

class TraceRecorder : public Extension,
                      public UpdateObserver,
                      private ModuleObserver,
                      private OpObserver,
                      private BackwardObserver {
 public:
  TraceRecorder(const Module& model, int rank, std::int64_t first_step = 1, std::int64_t steps = 10);
  ~TraceRecorder() override;
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  // Sets the module, op and backward observers of the calling thread (and clears them when
  // the recorder is destroyed).
  void install();

  void on_start(TrainerState& s) override;
  void on_iteration(TrainerState& s) override;

  void bucket_begin(std::size_t bucket, std::int64_t elements) override;
  void bucket_end(std::size_t bucket) override;
  void update_begin() override;
  void update_end() override;
  void push_begin(std::size_t shard) override;
  void push_end(std::size_t shard) override;
  void pull_begin() override { update_begin(); }
  void pull_end() override;

  // A pipeline stage's action (forward or backward of a micro-batch, a wait for a transfer) on
  // the schedule's lane, in wall-clock seconds; kept when the step is in the window.
  void schedule_span(std::string name, std::string category, double wall_start, double wall_end);

  std::vector<TraceEvent> events() const;
  // This rank's events as JSON (what gather sends; times from the wall clock's zero), and back.
  std::string serialize() const;
  static std::vector<TraceEvent> deserialize(const std::string& text);

 private:
  void forward_begin(const Module& m, const Variable& input) override;
  void forward_end(const Module& m, const Variable& output) override;
  void op(const std::string& name, const std::vector<Variable>& inputs, const Variable& output) override;
  void node_begin(const Node& node) override;
  void node_end(const Node& node) override;

  double now() const;
  void add(std::string name, std::string category, TraceLane lane, double start, double end,
           nlohmann::json args = nlohmann::json::object());
  void close_backward(double end);
  // The update's (or, under parameter servers, the pull's) span, from update_begin to now.
  void close_update(const char* name);
  // Removes and returns the start recorded under `key` in `starts`; false if none was.
  bool take_start(std::unordered_map<std::size_t, double>& starts, std::size_t key, double& start);
  void begin_step(std::int64_t step, double at);

  std::unordered_map<const Module*, std::string> paths_;
  int rank_;
  std::int64_t first_, count_;
  double origin_;
  bool recording_ = false;
  std::atomic<bool> recording_comm_{false};
  std::int64_t step_ = -1;
  double step_start_ = 0;
  bool step_computed_ = false;  // forward began in this step
  bool updated_ = false;        // the updater reported its update in this step
  std::vector<const Module*> stack_;
  std::vector<double> begins_;
  std::vector<std::unordered_map<std::string, int>> op_counts_;
  std::unordered_map<const Node*, std::string> node_label_;
  std::string open_label_;
  double open_start_ = 0, last_backward_end_ = -1, update_start_ = -1;
  double last_forward_end_ = -1;  // the latest leaf forward's or composite op's end
  std::unordered_map<std::size_t, double> bucket_start_;
  std::unordered_map<std::size_t, double> push_start_;  // parameter-server shards
  mutable std::mutex mutex_;                            // events_ and bucket_start_ (the comm thread adds too)
  std::vector<TraceEvent> events_;
};

// Every rank's events in one Chrome trace, written by rank 0 (gather may be empty for one process).
void write_rank_traces(const std::string& path, const TraceRecorder& recorder, int rank, const GatherStrings& gather,
                       const nlohmann::json& other_data);

}  // namespace dtrain
