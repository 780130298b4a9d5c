#include "ps/server.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "core/error.h"
#include "core/timer.h"

namespace dtrain::ps {
namespace {

constexpr std::size_t kHeaderFloats = sizeof(PushHeader) / sizeof(float);

// Sleeps between polls that found nothing: 20 us, doubling to 200 us, back to 20 us after work.
class IdleSleep {
 public:
  void reset() { us_ = kMinUs; }
  void sleep() {
    std::this_thread::sleep_for(std::chrono::microseconds(us_));
    us_ = std::min(us_ * 2, kMaxUs);
  }

 private:
  static constexpr int kMinUs = 20, kMaxUs = 200;
  int us_ = kMinUs;
};

PsConfig validated(const PsConfig& config, int world_size) {
  config.validate(world_size);
  return config;
}

}  // namespace

ParameterServer::ParameterServer(comm::Transport& transport, const PsConfig& config, const OptimizerConfig& optimizer,
                                 std::int64_t total_elements)
    : transport_(transport),
      config_(validated(config, transport.size())),
      index_(config_.server_index(transport.rank())),
      gate_(config_.workers, config_.gate_staleness()) {
  DT_CHECK(config_.is_server(transport.rank()), "rank {} is a worker, not a server", transport.rank());
  if (total_elements < config_.servers) {
    throw InputError(fmt::format("{} parameter servers for {} parameters: every server needs at least one",
                                 config_.servers, total_elements));
  }
  range_ = shard_range(total_elements, config_.servers, index_);
  n_ = range_.size();
  weights_ = Variable(Tensor::zeros({n_}), true);
  OptimizerConfig rule =
      server_optimizer(optimizer, config_.async_momentum, sync_mode_name(config_.sync), config_.workers);
  // A rate that follows each push's staleness is no schedule: momentum correction would scale the
  // velocity by the ratio of two pushes' taus.
  if (config_.sync != SyncMode::kBsp && config_.async_lr == AsyncLr::kStaleness) rule.momentum_correction = false;
  optimizer_ = make_optimizer(rule, {weights_});
  const auto workers = static_cast<std::size_t>(config_.workers);
  push_buf_.assign(workers, std::vector<float>(kHeaderFloats + push_payload_floats(n_, config_.wire)));
  if (config_.wire != DType::kF32) widened_.assign(workers, std::vector<float>(static_cast<std::size_t>(n_)));
  request_buf_.assign(workers, PullRequest{});
  reply_buf_.assign(workers, std::vector<float>(static_cast<std::size_t>(n_)));
  push_req_.assign(workers, comm::Request{});
  request_req_.assign(workers, comm::Request{});
  reply_req_.assign(workers, comm::Request{});
  arrived_.assign(workers, false);
  wanted_.assign(workers, -1);
  done_pushes_.assign(workers, -1);
  paused_.assign(workers, false);
  alive_req_.assign(workers, comm::Request{});
  worker_wait_.assign(workers, 0.0);
  start_ = now_seconds();
}

ParameterServer::~ParameterServer() {
  std::vector<comm::Request> all;
  for (auto* list : {&push_req_, &request_req_, &reply_req_, &alive_req_}) {
    all.insert(all.end(), list->begin(), list->end());
  }
  all.push_back(keep_alive_req_);
  all.push_back(snapshot_req_);
  transport_.cancel(all);
}

PushHeader ParameterServer::header(int w) const {
  PushHeader h;
  std::memcpy(static_cast<void*>(&h), push_buf_[static_cast<std::size_t>(w)].data(), sizeof h);
  return h;
}

float* ParameterServer::gradient(int w) {
  const auto i = static_cast<std::size_t>(w);
  return config_.wire == DType::kF32 ? push_buf_[i].data() + kHeaderFloats : widened_[i].data();
}

void ParameterServer::widen_push(int w) {
  if (config_.wire == DType::kF32) return;
  const auto i = static_cast<std::size_t>(w);
  convert_16bit_to_f32(config_.wire, reinterpret_cast<const std::uint16_t*>(push_buf_[i].data() + kHeaderFloats),
                       widened_[i].data(), widened_[i].size());
}

void ParameterServer::post_push(int w) {
  auto& buf = push_buf_[static_cast<std::size_t>(w)];
  push_req_[static_cast<std::size_t>(w)] = transport_.irecv(buf.data(), buf.size() * sizeof(float), w, kTagPush);
}

void ParameterServer::post_request(int w) {
  request_req_[static_cast<std::size_t>(w)] =
      transport_.irecv(&request_buf_[static_cast<std::size_t>(w)], sizeof(PullRequest), w, kTagRequest);
}

void ParameterServer::on_request(int w) {
  const auto i = static_cast<std::size_t>(w);
  const PullRequest r = request_buf_[i];
  paused_[i] = r.clock == PullRequest::kPause;
  if (r.clock == PullRequest::kPause) {
    post_request(w);
    return;
  }
  if (r.clock == PullRequest::kSnapshot) {
    send_snapshot(w);
    post_request(w);
    return;
  }
  if (r.clock == PullRequest::kDone) {
    DT_CHECK(r.pushes >= gate_.clock(w), "worker {} says it made {} pushes, {} were applied", w, r.pushes,
             gate_.clock(w));
    done_pushes_[i] = r.pushes;  // no more requests from it
    worker_wait_[i] = r.waited_seconds;
    if (first_done_ < 0) {
      first_done_ = now_seconds() - start_;
      gradients_all_running_ = gradients_;
    }
    return;
  }
  DT_CHECK(wanted_[i] < 0, "worker {} asked for clock {} before clock {} was answered", w, r.clock, wanted_[i]);
  DT_CHECK(r.clock >= 0, "worker {} asked for clock {}", w, r.clock);
  wanted_[i] = r.clock;
  post_request(w);
}

void ParameterServer::apply_push(int w) {
  const PushHeader h = header(w);
  DT_CHECK(h.clock == gate_.clock(w), "worker {} pushed clock {}, expected clock {}", w, h.clock, gate_.clock(w));
  const std::int64_t tau = gate_.record_apply(w, h.clock, version_);
  weights_.set_grad(Tensor::over_external(gradient(w), Shape{n_}));
  optimizer_->set_lr(per_push_lr(config_.async_lr, h.lr, config_.workers, tau));
  applied_workers_lr_ = h.lr;
  optimizer_->step();
  ++version_;
  ++gradients_;
  gate_.advance(w);
  post_push(w);
}

bool ParameterServer::apply_bsp_clock() {
  int first = -1, count = 0;
  for (int w = 0; w < config_.workers; ++w) {
    if (gate_.finished(w)) continue;
    if (!arrived_[static_cast<std::size_t>(w)]) return false;
    if (first < 0) first = w;
    ++count;
  }
  if (first < 0) return false;
  // Sum in worker-rank order, then divide once: the same value for every element wherever it is.
  const auto n = static_cast<std::size_t>(n_);
  sum_.assign(gradient(first), gradient(first) + n);
  for (int w = first + 1; w < config_.workers; ++w) {
    if (gate_.finished(w)) continue;
    const float* g = gradient(w);
    for (std::size_t e = 0; e < n; ++e) sum_[e] += g[e];
  }
  const auto divisor = static_cast<float>(count);
  for (float& v : sum_) v /= divisor;
  const PushHeader h = header(first);
  for (int w = 0; w < config_.workers; ++w) {
    if (gate_.finished(w)) continue;
    DT_CHECK(header(w).clock == h.clock, "worker {} pushed clock {} into BSP clock {}", w, header(w).clock, h.clock);
    gate_.record_apply(w, h.clock, version_);
  }
  weights_.set_grad(Tensor::over_external(sum_.data(), Shape{n_}));
  optimizer_->set_lr(h.lr);
  applied_workers_lr_ = h.lr;
  optimizer_->step();
  ++version_;
  gradients_ += count;
  for (int w = 0; w < config_.workers; ++w) {
    if (gate_.finished(w)) continue;
    arrived_[static_cast<std::size_t>(w)] = false;
    gate_.advance(w);
    post_push(w);
  }
  return true;
}

bool ParameterServer::answer_pulls() {
  bool any = false;
  for (int w = 0; w < config_.workers; ++w) {
    const auto i = static_cast<std::size_t>(w);
    if (wanted_[i] < 0 || !reply_req_[i].done || !gate_.may_read(w, wanted_[i])) continue;
    // A copy, so later updates cannot change the weights while they are on their way.
    std::memcpy(reply_buf_[i].data(), weights_.data().raw_data(), reply_buf_[i].size() * sizeof(float));
    gate_.record_read(w, wanted_[i], version_);
    reply_req_[i] = transport_.isend(reply_buf_[i].data(), reply_buf_[i].size() * sizeof(float), w, kTagWeights);
    wanted_[i] = -1;
    any = true;
  }
  return any;
}

bool ParameterServer::retire_finished() {
  bool any = false;
  for (int w = 0; w < config_.workers; ++w) {
    const auto i = static_cast<std::size_t>(w);
    if (!gate_.finished(w) && done_pushes_[i] >= 0 && gate_.clock(w) == done_pushes_[i]) {
      gate_.finish(w);
      any = true;
    }
  }
  return any;
}

void ParameterServer::throw_silence() const {
  // A worker waiting for an answer is alive and held by the gate; the others went silent.
  std::vector<int> silent, running;
  for (int w = 0; w < config_.workers; ++w) {
    if (gate_.finished(w)) continue;
    running.push_back(w);
    if (wanted_[static_cast<std::size_t>(w)] < 0 && !paused_[static_cast<std::size_t>(w)]) silent.push_back(w);
  }
  throw CommError(fmt::format(
      "parameter server {} (rank {}): no message for {} s from worker rank(s) {} while the "
      "others wait for them; a worker died or hangs",
      index_, transport_.rank(), config_.timeout_seconds, fmt::join(silent.empty() ? running : silent, ", ")));
}

ServerStats ParameterServer::stats() const {
  ServerStats s;
  s.server = index_;
  s.updates = version_;
  s.gradients = gradients_;
  s.seconds = first_push_ < 0 ? 0.0 : last_message_ - first_push_;
  s.busy_seconds = busy_;
  if (first_push_ >= 0) {
    const bool ended = first_done_ >= 0;
    s.all_running_seconds = (ended ? first_done_ : last_message_) - first_push_;
    s.all_running_gradients = ended ? gradients_all_running_ : gradients_;
  }
  s.gaps = gate_.gaps();
  s.taus = gate_.taus();
  for (int w = 0; w < config_.workers; ++w) {
    s.tau_mean_per_worker.push_back(gate_.taus_of(w).mean());
    s.worker_pushes.push_back(gate_.clock(w));
  }
  s.queue_depth = queue_depth_;
  s.worker_wait_seconds = worker_wait_;
  return s;
}

void ParameterServer::keep_worker0_waiting() {
  // Worker 0 waits for the stats with the run's timeout; while others still train, tell it the
  // server is alive (a 0-byte StatsHeader) every timeout / 3.
  if (config_.timeout_seconds <= 0 || !gate_.finished(0)) return;
  const double now = now_seconds();
  if (now - last_keep_alive_ < config_.timeout_seconds / 3) return;
  if (!keep_alive_req_.done && !transport_.test(keep_alive_req_, "parameter server: keep-alive")) return;
  keep_alive_req_ = transport_.isend(&keep_alive_, sizeof keep_alive_, 0, kTagStats);
  last_keep_alive_ = now;
}

void ParameterServer::keep_held_workers_waiting() {
  if (config_.timeout_seconds <= 0 || std::find(paused_.begin(), paused_.end(), true) == paused_.end()) return;
  const double now = now_seconds();
  if (now - last_alive_ < config_.timeout_seconds / 3) return;
  last_alive_ = now;
  for (int w = 0; w < config_.workers; ++w) {
    const auto i = static_cast<std::size_t>(w);
    if (wanted_[i] < 0 || !transport_.test(alive_req_[i], "parameter server: keep-alive")) continue;
    alive_req_[i] = transport_.isend(&alive_, sizeof alive_, w, kTagAlive);
  }
}

bool ParameterServer::only_paused_workers_silent() const {
  bool any_paused = false;
  for (int w = 0; w < config_.workers; ++w) {
    const auto i = static_cast<std::size_t>(w);
    if (gate_.finished(w) || wanted_[i] >= 0) continue;
    if (!paused_[i]) return false;
    any_paused = true;
  }
  return any_paused;
}

void ParameterServer::send_stats() {
  const std::string text = to_json(stats()).dump();
  const StatsHeader h{static_cast<std::int64_t>(text.size())};
  std::vector<comm::Request> sends{keep_alive_req_, snapshot_req_, transport_.isend(&h, sizeof h, 0, kTagStats),
                                   transport_.isend(text.data(), text.size(), 0, kTagStats)};
  sends.insert(sends.end(), alive_req_.begin(), alive_req_.end());
  std::fill(alive_req_.begin(), alive_req_.end(), comm::Request{});
  keep_alive_req_ = snapshot_req_ = comm::Request{};
  transport_.waitall(sends, comm::Deadline::after(config_.timeout_seconds),
                     fmt::format("parameter server {}: stats to worker 0", index_));
}

void ParameterServer::send_snapshot(int w) {
  // The weights and every optimizer slot as they are now (worker 0 checkpoints them).
  const comm::Deadline deadline = comm::Deadline::after(config_.timeout_seconds);
  std::vector<comm::Request> previous{snapshot_req_};
  transport_.waitall(previous, deadline, "parameter server: previous snapshot");
  const auto state = optimizer_->state();
  const auto n = static_cast<std::size_t>(n_);
  constexpr std::size_t kStateFloats = sizeof(StateHeader) / sizeof(float);
  snapshot_buf_.resize(kStateFloats + n * (1 + state.size()));
  const StateHeader h{optimizer_->steps(), static_cast<std::int64_t>(state.size()), applied_workers_lr_};
  std::memcpy(static_cast<void*>(snapshot_buf_.data()), &h, sizeof h);
  std::memcpy(snapshot_buf_.data() + kStateFloats, weights_.data().raw_data(), n * sizeof(float));
  for (std::size_t slot = 0; slot < state.size(); ++slot) {
    std::memcpy(snapshot_buf_.data() + kStateFloats + n * (1 + slot), state[slot].second.raw_data(), n * sizeof(float));
  }
  snapshot_req_ = transport_.isend(snapshot_buf_.data(), snapshot_buf_.size() * sizeof(float), w, kTagSnapshot);
}

void ParameterServer::receive_initial_state() {
  const comm::Deadline deadline = comm::Deadline::after(config_.timeout_seconds);
  StateHeader h;
  transport_.recv(&h, sizeof h, 0, kTagInit, deadline, "parameter server: initial weights");
  auto state = optimizer_->state();
  if (h.slots != 0 && h.slots != static_cast<std::int64_t>(state.size())) {
    throw InputError(fmt::format("worker 0 resumes {} optimizer state slots, the server's {} optimizer has {}", h.slots,
                                 optimizer_->name(), state.size()));
  }
  const auto n = static_cast<std::size_t>(n_);
  std::vector<float> init(n * static_cast<std::size_t>(1 + h.slots));
  transport_.recv(init.data(), init.size() * sizeof(float), 0, kTagInit, deadline, "parameter server: initial weights");
  std::memcpy(weights_.data().raw_data(), init.data(), n * sizeof(float));
  for (std::size_t slot = 0; slot < static_cast<std::size_t>(h.slots); ++slot) {
    std::memcpy(state[slot].second.raw_data(), init.data() + n * (1 + slot), n * sizeof(float));
  }
  optimizer_->set_steps(h.optimizer_steps);
  applied_workers_lr_ = h.applied_lr;
  // The optimizer's own last rate: the workers' as this rule applies it (staleness-aware pushes
  // run without the correction).
  optimizer_->set_applied_lr(
      config_.sync == SyncMode::kBsp ? h.applied_lr : per_push_lr(config_.async_lr, h.applied_lr, config_.workers, 1));
}

void ParameterServer::run() {
  receive_initial_state();
  for (int w = 0; w < config_.workers; ++w) {
    post_push(w);
    post_request(w);
  }
  const bool bsp = config_.sync == SyncMode::kBsp;
  IdleSleep idle;
  comm::Deadline quiet = comm::Deadline::after(config_.timeout_seconds);
  for (;;) {
    bool progress = false;
    int messages = 0;
    const double poll_start = now_seconds();
    for (int w = 0; w < config_.workers; ++w) {
      const auto i = static_cast<std::size_t>(w);
      if (!arrived_[i] && !push_req_[i].done && transport_.test(push_req_[i], "parameter server: push")) {
        ++messages;
        paused_[i] = false;
        if (first_push_ < 0) first_push_ = poll_start - start_;
        widen_push(w);
        if (bsp) {
          arrived_[i] = true;  // its buffer holds the push until the clock is applied
        } else {
          apply_push(w);
        }
      }
      if (!request_req_[i].done && transport_.test(request_req_[i], "parameter server: request")) {
        ++messages;
        on_request(w);
      }
      if (!reply_req_[i].done && transport_.test(reply_req_[i], "parameter server: weights")) progress = true;
    }
    progress |= messages > 0;
    progress |= retire_finished();
    if (bsp) progress |= apply_bsp_clock();
    progress |= retire_finished();
    progress |= answer_pulls();
    if (messages > 0) {
      queue_depth_.add(messages);
      const double now = now_seconds();
      busy_ += now - poll_start;
      last_message_ = now - start_;
    }
    keep_worker0_waiting();
    keep_held_workers_waiting();
    bool all_done = true;
    for (int w = 0; w < config_.workers; ++w) {
      all_done = all_done && gate_.finished(w) && reply_req_[static_cast<std::size_t>(w)].done;
    }
    if (all_done) break;
    if (progress) {
      idle.reset();
      quiet = comm::Deadline::after(config_.timeout_seconds);
    } else {
      if (quiet.expired()) {
        if (!only_paused_workers_silent()) throw_silence();
        quiet = comm::Deadline::after(config_.timeout_seconds);  // a paused worker evaluates
      }
      idle.sleep();
    }
  }
  // Every worker is done: withdraw the receives still posted for pushes that will not come.
  std::vector<comm::Request> open;
  for (auto* list : {&push_req_, &request_req_}) open.insert(open.end(), list->begin(), list->end());
  transport_.cancel(open);
  for (auto* list : {&push_req_, &request_req_}) std::fill(list->begin(), list->end(), comm::Request{});
  send_stats();
}

}  // namespace dtrain::ps
