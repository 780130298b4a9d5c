#include "ps/ps_worker.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include "core/error.h"
#include "core/timer.h"

namespace dtrain::ps {
namespace {

constexpr std::size_t kPushHeaderFloats = sizeof(PushHeader) / sizeof(float);

}  // namespace

PsWorker::PsWorker(comm::Transport& transport, const PsConfig& config, std::vector<std::int64_t> tensor_sizes)
    : transport_(transport), config_(config), sharding_(std::move(tensor_sizes), config.servers) {
  config_.validate(transport.size());
  DT_CHECK(!config_.is_server(transport.rank()), "rank {} is a server, not a worker", transport.rank());
  if (sharding_.total() < config_.servers) {
    throw InputError(fmt::format("{} parameter servers for {} parameters: every server needs at least one",
                                 config_.servers, sharding_.total()));
  }
  for (int k = 0; k < config_.servers; ++k) {
    const auto n = static_cast<std::size_t>(sharding_.range(k).size());
    push_buf_.emplace_back(kPushHeaderFloats + push_payload_floats(sharding_.range(k).size(), config_.wire));
    weight_buf_.emplace_back(n);
    if (config_.wire != DType::kF32) narrow_buf_.resize(std::max(narrow_buf_.size(), n));
  }
  request_buf_.resize(static_cast<std::size_t>(config_.servers));
  alive_buf_.resize(static_cast<std::size_t>(config_.servers));
  alive_req_.resize(static_cast<std::size_t>(config_.servers));
  pushed_.assign(static_cast<std::size_t>(config_.servers), false);
  for (int k = 0; k < config_.servers; ++k) post_alive(k);
}

void PsWorker::post_alive(int k) {
  const auto i = static_cast<std::size_t>(k);
  alive_req_[i] = transport_.irecv(&alive_buf_[i], sizeof(std::int64_t), config_.server_rank(k), kTagAlive);
}

void PsWorker::wait_for_servers(std::vector<comm::Request>& pending, const std::string& what) {
  comm::Deadline until = deadline();
  for (unsigned polls = 1;; ++polls) {
    bool all = true;
    for (comm::Request& r : pending) all = transport_.test(r, what) && all;
    if (all) break;
    if (polls % 16 != 0) continue;
    for (int k = 0; k < config_.servers; ++k) {
      if (!transport_.test(alive_req_[static_cast<std::size_t>(k)], "parameter-server keep-alive")) continue;
      until = deadline();
      post_alive(k);
    }
    // Expired: waitall's own timeout names the ranks that did not answer.
    if (until.expired()) transport_.waitall(pending, until, what);
    // Spin briefly (an answer over shared memory takes microseconds), then give the core away.
    if (polls > 256) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  pending.clear();
}

PsWorker::~PsWorker() {
  transport_.cancel(alive_req_);
  if (!started_ || finished_) return;
  // Not the stats: an error is on its way out, and the other workers may train on for long.
  try {
    send_done();
  } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): the servers report the silence
  }
}

void PsWorker::request(int k, std::int64_t clock) {
  const auto i = static_cast<std::size_t>(k);
  request_buf_[i] = PullRequest{clock, 0};
  pending_.push_back(transport_.isend(&request_buf_[i], sizeof(PullRequest), config_.server_rank(k), kTagRequest));
  pending_.push_back(transport_.irecv(weight_buf_[i].data(), weight_buf_[i].size() * sizeof(float),
                                      config_.server_rank(k), kTagWeights));
}

void PsWorker::receive_weights(std::span<float* const> params) {
  const Stopwatch waiting;
  wait_for_servers(pending_, pull_description());
  waited_seconds_ += waiting.seconds();
  for (int k = 0; k < config_.servers; ++k) sharding_.scatter(k, weight_buf_[static_cast<std::size_t>(k)], params);
}

std::string PsWorker::pull_description() const {
  // Under BSP and SSP a server's silence may be another worker's: say what the gate waits for.
  if (clock_ == 0) return "parameter-server pull of the initial weights";
  switch (config_.sync) {
    case SyncMode::kBsp:
      return fmt::format("parameter-server pull of clock {} (bsp: answered once every worker pushed clock {})", clock_,
                         clock_ - 1);
    case SyncMode::kSsp:
      return fmt::format("parameter-server pull of clock {} (ssp: answered once every worker pushed clock {})", clock_,
                         clock_ - 1 - config_.staleness);
    case SyncMode::kAsp:
      break;
  }
  return fmt::format("parameter-server pull of clock {}", clock_);
}

void PsWorker::start(std::span<float* const> params, const OptimizerShards* state) {
  DT_CHECK(!started_, "PsWorker::start called twice");
  started_ = true;
  if (transport_.rank() == 0) {
    const StateHeader header{state != nullptr ? state->steps : 0,
                             state != nullptr ? static_cast<std::int64_t>(state->slots.size()) : 0,
                             state != nullptr ? state->applied_lr : 0.0};
    // Per server: its shard of the weights, then of each slot.
    std::vector<std::vector<float>> init(static_cast<std::size_t>(config_.servers));
    for (int k = 0; k < config_.servers; ++k) {
      auto& buf = init[static_cast<std::size_t>(k)];
      const auto n = static_cast<std::size_t>(sharding_.range(k).size());
      buf.resize(n * static_cast<std::size_t>(1 + header.slots));
      std::vector<const float*> from(params.begin(), params.end());
      sharding_.gather(k, from, std::span<float>(buf).first(n));
      for (std::int64_t slot = 0; slot < header.slots; ++slot) {
        const auto& ptrs = state->slots[static_cast<std::size_t>(slot)];
        DT_CHECK(ptrs.size() == params.size(), "optimizer slot {} has {} tensors, the model {}", slot, ptrs.size(),
                 params.size());
        std::vector<const float*> slot_from(ptrs.begin(), ptrs.end());
        sharding_.gather(k, slot_from, std::span<float>(buf).subspan(n * static_cast<std::size_t>(1 + slot), n));
      }
      pending_.push_back(transport_.isend(&header, sizeof header, config_.server_rank(k), kTagInit));
      pending_.push_back(transport_.isend(buf.data(), buf.size() * sizeof(float), config_.server_rank(k), kTagInit));
    }
    transport_.waitall(pending_, deadline(), "parameter-server initial weights");
    pending_.clear();
  }
  for (int k = 0; k < config_.servers; ++k) request(k, clock_);
  receive_weights(params);
}

void PsWorker::snapshot(std::span<float* const> params, OptimizerShards& state) {
  DT_CHECK(started_ && !finished_ && transport_.rank() == 0, "PsWorker::snapshot is worker 0's, between steps");
  const std::size_t slots = state.slots.size();
  std::vector<PullRequest> requests(static_cast<std::size_t>(config_.servers), PullRequest{PullRequest::kSnapshot});
  std::vector<std::vector<float>> replies(static_cast<std::size_t>(config_.servers));
  constexpr std::size_t kHeaderFloats = sizeof(StateHeader) / sizeof(float);
  for (int k = 0; k < config_.servers; ++k) {
    const auto i = static_cast<std::size_t>(k);
    replies[i].resize(kHeaderFloats + static_cast<std::size_t>(sharding_.range(k).size()) * (1 + slots));
    pending_.push_back(transport_.isend(&requests[i], sizeof(PullRequest), config_.server_rank(k), kTagRequest));
    pending_.push_back(
        transport_.irecv(replies[i].data(), replies[i].size() * sizeof(float), config_.server_rank(k), kTagSnapshot));
  }
  transport_.waitall(pending_, deadline(), "parameter-server snapshot for a checkpoint");
  pending_.clear();
  for (int k = 0; k < config_.servers; ++k) {
    const std::vector<float>& reply = replies[static_cast<std::size_t>(k)];
    StateHeader h;
    std::memcpy(static_cast<void*>(&h), reply.data(), sizeof h);
    DT_CHECK(h.slots == static_cast<std::int64_t>(slots), "server {} holds {} optimizer slots, worker 0 {}", k, h.slots,
             slots);
    if (k == 0) {
      state.steps = h.optimizer_steps;
      state.applied_lr = h.applied_lr;
    }
    const auto n = static_cast<std::size_t>(sharding_.range(k).size());
    const auto data = std::span<const float>(reply).subspan(kHeaderFloats);
    sharding_.scatter(k, data.first(n), params);
    for (std::size_t slot = 0; slot < slots; ++slot) {
      sharding_.scatter(k, data.subspan(n * (1 + slot), n), state.slots[slot]);
    }
  }
}

void PsWorker::send_to_other_workers(const void* value, std::size_t bytes, int tag, std::string_view what) {
  for (int w = 1; w < config_.workers; ++w) pending_.push_back(transport_.isend(value, bytes, w, tag));
  transport_.waitall(pending_, deadline(), what);
  pending_.clear();
}

std::int64_t PsWorker::share_start_step(std::int64_t start) {
  if (transport_.rank() == 0) {
    send_to_other_workers(&start, sizeof start, kTagStart, "the resumed step to the other workers");
    return start;
  }
  std::int64_t received = 0;
  transport_.recv(&received, sizeof received, 0, kTagStart, deadline(), "the resumed step from worker 0");
  return received;
}

int PsWorker::agree_stop(int mine) {
  std::int32_t signal = mine;
  if (transport_.rank() != 0) {
    transport_.send(&signal, sizeof signal, 0, kTagStop, deadline(), "the stop signal to worker 0");
    transport_.recv(&signal, sizeof signal, 0, kTagStop, deadline(), "the agreed stop signal from worker 0");
    return signal;
  }
  for (int w = 1; w < config_.workers; ++w) {
    std::int32_t theirs = 0;
    transport_.recv(&theirs, sizeof theirs, w, kTagStop, deadline(), "a worker's stop signal");
    signal = std::max(signal, theirs);
  }
  send_to_other_workers(&signal, sizeof signal, kTagStop, "the agreed stop signal to the other workers");
  return signal;
}

void PsWorker::push(int k, std::span<const float* const> grads, double lr) {
  DT_CHECK(started_ && !finished_, "PsWorker::push before start() or after finish()");
  const auto i = static_cast<std::size_t>(k);
  DT_CHECK(!pushed_[i], "shard {} pushed twice at clock {}", k, clock_);
  auto& buf = push_buf_[i];
  const PushHeader h{clock_, lr};
  std::memcpy(buf.data(), &h, sizeof h);
  float* payload = buf.data() + kPushHeaderFloats;
  const auto n = static_cast<std::size_t>(sharding_.range(k).size());
  if (config_.wire == DType::kF32) {
    sharding_.gather(k, grads, std::span<float>(payload, n));
  } else {
    sharding_.gather(k, grads, std::span<float>(narrow_buf_.data(), n));
    convert_f32_to_16bit(config_.wire, narrow_buf_.data(), reinterpret_cast<std::uint16_t*>(payload), n);
  }
  pending_.push_back(transport_.isend(buf.data(), buf.size() * sizeof(float), config_.server_rank(k), kTagPush));
  pushed_[i] = true;
  // The shard's next weights are asked for at once: the server answers when its gate opens,
  // while this worker still computes the other shards' gradients.
  request(k, clock_ + 1);
}

void PsWorker::pull_next(std::span<float* const> params) {
  for (int k = 0; k < config_.servers; ++k) DT_CHECK(pushed(k), "shard {} not pushed at clock {}", k, clock_);
  std::fill(pushed_.begin(), pushed_.end(), false);
  ++clock_;
  receive_weights(params);
}

void PsWorker::step(std::span<const float* const> grads, double lr, std::span<float* const> params) {
  for (int k = 0; k < config_.servers; ++k) {
    if (!pushed(k)) push(k, grads, lr);
  }
  pull_next(params);
}

void PsWorker::pause() {
  DT_CHECK(started_ && !finished_, "PsWorker::pause before start() or after finish()");
  for (int k = 0; k < config_.servers; ++k) {
    const auto i = static_cast<std::size_t>(k);
    request_buf_[i] = PullRequest{PullRequest::kPause};
    pending_.push_back(transport_.isend(&request_buf_[i], sizeof(PullRequest), config_.server_rank(k), kTagRequest));
  }
  transport_.waitall(pending_, deadline(), "parameter-server pause");
  pending_.clear();
}

void PsWorker::finish() {
  if (finished_) return;
  send_done();
  if (transport_.rank() == 0) receive_stats();
}

void PsWorker::send_done() {
  finished_ = true;
  for (int k = 0; k < config_.servers; ++k) {
    const auto i = static_cast<std::size_t>(k);
    request_buf_[i] = PullRequest{PullRequest::kDone, clock_, waited_seconds_};
    pending_.push_back(transport_.isend(&request_buf_[i], sizeof(PullRequest), config_.server_rank(k), kTagRequest));
  }
  transport_.waitall(pending_, deadline(), "parameter-server done");
  pending_.clear();
  transport_.cancel(alive_req_);  // no pull waits any more
}

void PsWorker::receive_stats() {
  for (int k = 0; k < config_.servers; ++k) {
    StatsHeader h;
    // Keep-alives (0 bytes) come while other workers still train; each restarts the timeout.
    do {
      transport_.recv(&h, sizeof h, config_.server_rank(k), kTagStats, deadline(),
                      fmt::format("parameter server {}'s stats (sent once every worker is done)", k));
    } while (h.bytes == 0);
    std::string text(static_cast<std::size_t>(h.bytes), '\0');
    transport_.recv(text.data(), text.size(), config_.server_rank(k), kTagStats, deadline(),
                    fmt::format("parameter server {}'s stats", k));
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded()) throw CommError(fmt::format("parameter server {} sent stats that are not JSON", k));
    server_stats_.push_back(server_stats_from_json(j));
  }
}

}  // namespace dtrain::ps
