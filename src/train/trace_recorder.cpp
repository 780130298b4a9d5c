#include "train/trace_recorder.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>

namespace dtrain {

namespace {

// Wall-clock seconds: the ranks of one host read the same clock, and hosts agree to NTP's
// precision (a steady clock's zero differs between machines).
double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

TraceRecorder::TraceRecorder(const Module& model, int rank, std::int64_t first_step, std::int64_t steps)
    : rank_(rank), first_(first_step), count_(steps), origin_(wall_seconds()) {
  for (const auto& [path, m] : model.named_modules()) paths_[m] = path;
}

TraceRecorder::~TraceRecorder() {
  set_module_observer(nullptr);
  set_op_observer(nullptr);
  set_backward_observer(nullptr);
}

void TraceRecorder::install() {
  set_module_observer(this);
  set_op_observer(this);
  set_backward_observer(this);
}

double TraceRecorder::now() const { return wall_seconds() - origin_; }

void TraceRecorder::add(std::string name, std::string category, TraceLane lane, double start, double end,
                        nlohmann::json args) {
  std::lock_guard lock(mutex_);
  events_.push_back(
      {std::move(name), std::move(category), rank_, lane, start, std::max(0.0, end - start), std::move(args)});
}

void TraceRecorder::schedule_span(std::string name, std::string category, double wall_start, double wall_end) {
  if (recording_)
    add(std::move(name), std::move(category), TraceLane::kSchedule, wall_start - origin_, wall_end - origin_);
}

void TraceRecorder::begin_step(std::int64_t step, double at) {
  step_ = step;
  step_start_ = at;
  step_computed_ = false;
  updated_ = false;
  node_label_.clear();
  open_label_.clear();
  last_backward_end_ = -1;
}

void TraceRecorder::on_start(TrainerState& s) {
  recording_ = s.iteration >= first_ && s.iteration < first_ + count_ && s.epoch_iteration > 0;
  recording_comm_ = recording_;
  begin_step(s.iteration, now());
}

void TraceRecorder::on_iteration(TrainerState& s) {
  const double t = now();
  if (recording_) {
    close_backward(last_backward_end_ >= 0 ? last_backward_end_ : t);
    if (!updated_) add("update", "update", TraceLane::kCompute, last_backward_end_ >= 0 ? last_backward_end_ : t, t);
    add(fmt::format("step {}", step_), "step", TraceLane::kCompute, step_start_, t, {{"iteration", step_}});
  }
  // s.iteration counts the steps done: the next one is step s.iteration. It is left out when it
  // opens an epoch (the evaluation of the last one runs first).
  const bool opens_epoch = s.epoch_iteration == s.iterations_per_epoch;
  recording_ = s.iteration >= first_ && s.iteration < first_ + count_ && !opens_epoch;
  recording_comm_ = recording_;
  begin_step(s.iteration, t);
}

void TraceRecorder::forward_begin(const Module& m, const Variable&) {
  const double t = now();
  if (recording_ && !step_computed_) {
    step_computed_ = true;
    if (t - step_start_ > 1e-6) add("wait for data", "data", TraceLane::kCompute, step_start_, t);
  }
  if (recording_ && m.is_leaf()) close_backward(last_backward_end_ >= 0 ? last_backward_end_ : t);
  stack_.push_back(&m);
  begins_.push_back(t);
  op_counts_.emplace_back();
}

void TraceRecorder::forward_end(const Module& m, const Variable& output) {
  const double start = begins_.back();
  stack_.pop_back();
  begins_.pop_back();
  op_counts_.pop_back();
  if (!recording_ || !m.is_leaf()) return;
  const auto it = paths_.find(&m);
  const std::string& path = it != paths_.end() ? it->second : m.type();
  last_forward_end_ = now();
  add(path, "forward", TraceLane::kCompute, start, last_forward_end_, {{"kind", m.type()}});
  if (output.grad_fn()) node_label_[output.grad_fn().get()] = path;
}

void TraceRecorder::op(const std::string& name, const std::vector<Variable>&, const Variable& output) {
  if (!recording_ || !output.grad_fn() || stack_.empty()) return;
  const Module* inner = stack_.back();
  const auto it = paths_.find(inner);
  const std::string parent = it != paths_.end() ? it->second : inner->type();
  if (inner->is_leaf()) {
    node_label_[output.grad_fn().get()] = parent;
  } else if (name != "reshape") {
    const int k = op_counts_.back()[name]++;
    const std::string label = fmt::format("{}{}{}#{}", parent, parent.empty() ? "" : ".", name, k);
    node_label_[output.grad_fn().get()] = label;
    // The op ran since the composite's previous step, or since the composite began.
    const double end = now();
    add(label, "forward", TraceLane::kCompute, std::max(last_forward_end_, begins_.back()), end, {{"kind", name}});
    last_forward_end_ = end;
  }
}

void TraceRecorder::node_begin(const Node& node) {
  if (!recording_) return;
  const double t = now();
  const auto it = node_label_.find(&node);
  // A node no layer made (the loss) keeps the label of the span before it.
  if (it == node_label_.end() || it->second == open_label_) {
    if (open_label_.empty()) {
      open_label_ = it != node_label_.end() ? it->second : node.name;
      open_start_ = t;
    }
    return;
  }
  if (!open_label_.empty()) close_backward(t);
  open_label_ = it->second;
  open_start_ = t;
}

void TraceRecorder::node_end(const Node&) {
  if (recording_) last_backward_end_ = now();
}

void TraceRecorder::close_backward(double end) {
  if (open_label_.empty()) return;
  add(open_label_, "backward", TraceLane::kCompute, open_start_, end);
  open_label_.clear();
}

void TraceRecorder::bucket_begin(std::size_t bucket, std::int64_t) {
  if (!recording_comm_) return;
  std::lock_guard lock(mutex_);
  bucket_start_[bucket] = now();
}

void TraceRecorder::bucket_end(std::size_t bucket) {
  double start = 0;
  if (!take_start(bucket_start_, bucket, start)) return;
  add(fmt::format("bucket {}", bucket), "allreduce", TraceLane::kComm, start, now(), {{"bucket", bucket}});
}

bool TraceRecorder::take_start(std::unordered_map<std::size_t, double>& starts, std::size_t key, double& start) {
  std::lock_guard lock(mutex_);
  const auto it = starts.find(key);
  if (it == starts.end()) return false;
  start = it->second;
  starts.erase(it);
  return true;
}

void TraceRecorder::update_begin() {
  if (!recording_) return;
  const double t = now();
  const double backward_end = last_backward_end_ >= 0 ? last_backward_end_ : t;
  close_backward(backward_end);
  if (t - backward_end > 1e-6) add("wait for gradients", "wait", TraceLane::kCompute, backward_end, t);
  update_start_ = t;
}

void TraceRecorder::update_end() { close_update("update"); }

void TraceRecorder::close_update(const char* name) {
  if (!recording_ || update_start_ < 0) return;
  add(name, name, TraceLane::kCompute, update_start_, now());
  update_start_ = -1;
  updated_ = true;
}

void TraceRecorder::push_begin(std::size_t shard) {
  if (!recording_) return;
  std::lock_guard lock(mutex_);
  push_start_[shard] = now();
}

void TraceRecorder::push_end(std::size_t shard) {
  double start = 0;
  if (!take_start(push_start_, shard, start)) return;
  add(fmt::format("push {}", shard), "push", TraceLane::kComm, start, now(), {{"shard", shard}});
}

void TraceRecorder::pull_end() { close_update("pull"); }

std::vector<TraceEvent> TraceRecorder::events() const {
  std::lock_guard lock(mutex_);
  return events_;
}

std::string TraceRecorder::serialize() const {
  // Times travel from the wall clock's zero, so rank 0 can line the ranks up.
  nlohmann::json j = nlohmann::json::array();
  for (const TraceEvent& e : events()) {
    j.push_back({e.name, e.category, e.rank, static_cast<int>(e.lane), e.start + origin_, e.duration, e.args});
  }
  return j.dump();
}

std::vector<TraceEvent> TraceRecorder::deserialize(const std::string& text) {
  std::vector<TraceEvent> out;
  for (const auto& e : nlohmann::json::parse(text)) {
    out.push_back({e[0].get<std::string>(), e[1].get<std::string>(), e[2].get<int>(),
                   static_cast<TraceLane>(e[3].get<int>()), e[4].get<double>(), e[5].get<double>(), e[6]});
  }
  return out;
}

void write_rank_traces(const std::string& path, const TraceRecorder& recorder, int rank, const GatherStrings& gather,
                       const nlohmann::json& other_data) {
  std::vector<std::string> parts =
      gather ? gather(recorder.serialize()) : std::vector<std::string>{recorder.serialize()};
  if (rank != 0) return;
  std::vector<TraceEvent> all;
  double first = std::numeric_limits<double>::infinity();
  for (const std::string& p : parts) {
    std::vector<TraceEvent> e = TraceRecorder::deserialize(p);
    for (const TraceEvent& x : e) first = std::min(first, x.start);
    all.insert(all.end(), e.begin(), e.end());
  }
  for (TraceEvent& e : all) e.start -= first;  // the first recorded event at 0
  write_chrome_trace(path, chrome_trace(all, "rank", other_data));
}

}  // namespace dtrain
