// The worker's side of the parameter-server protocol (ps/protocol.h): it cuts its gradients into
// the servers' shards and pushes them, and pulls the shards' weights back into its parameters.
//
// start() (once): worker 0 sends its parameters to the servers as their initial weights, then
// every worker pulls clock 0, so all begin from the same weights. At clock c: push() each shard
// of the gradient of clock c to its server (with the step's learning rate, since schedules run on
// the workers; the updater pushes a shard during backward as soon as its gradients are final)
// and with it request that shard's weights of clock c + 1; pull_next() waits for every shard's
// weights (step() does both for a whole gradient); the wait is
// the gate's (BSP: until every worker pushed clock c; SSP: until the slowest is within S clocks;
// ASP: only until this worker's own push is applied). finish() tells the servers this worker
// pushes no more, so they stop waiting for it, and how long it waited for them; worker 0 then
// receives every server's stats (ps/run_stats.h) once the last worker is done.
//
// Cost per step: K pushes of 16 + 4 N_k bytes, K requests of 16 bytes, K answers of 4 N_k bytes
// (N_k: shard k's elements), plus one gather and one scatter of the N parameters.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "comm/transport.h"
#include "ps/protocol.h"
#include "ps/run_stats.h"
#include "ps/sharding.h"

namespace dtrain::ps {

// An optimizer's state as the workers hand it to the servers (on resume) and take it back (for a
// checkpoint): its step count and, per state slot, one pointer per tensor (plain f32, in the
// tensors' order).
struct OptimizerShards {
  std::int64_t steps = 0;
  double applied_lr = 0;                   // Optimizer::applied_lr(): the workers' rate of the last step
  std::vector<std::vector<float*>> slots;  // [slot][tensor]
};

class PsWorker {
 public:
  // The worker of `transport.rank()` for tensors of `tensor_sizes` elements (every worker the
  // same sizes, in the same order).
  PsWorker(comm::Transport& transport, const PsConfig& config, std::vector<std::int64_t> tensor_sizes);
  // Tells the servers this worker is done if finish() was not called; an error there is dropped
  // (the servers time out).
  ~PsWorker();
  PsWorker(const PsWorker&) = delete;
  PsWorker& operator=(const PsWorker&) = delete;

  // `params`: one pointer per tensor; worker 0 sends them (and `state`, on resume: the servers'
  // optimizers continue from it), every worker receives clock 0 into them.
  void start(std::span<float* const> params, const OptimizerShards* state = nullptr);
  // Worker 0 between steps: the servers' weights into `params` and their optimizer state into
  // `state` (its slot pointers set by the caller), for a checkpoint. Under BSP it is the state
  // after the last clock exactly; under SSP and ASP the servers may hold other workers' later
  // pushes too.
  void snapshot(std::span<float* const> params, OptimizerShards& state);
  // On resume: worker 0 sends `start` (the global step the run continues from) to every other
  // worker, which receives it; every worker returns it.
  std::int64_t share_start_step(std::int64_t start);
  // Preemption under BSP (train/stop_extension.h): every worker's stop signal (`mine`, 0: none)
  // goes to worker 0 and the largest comes back, so that all of them stop after the same clock
  // and worker 0's checkpoint holds exactly the state they stopped at. Called between steps, by
  // every worker at the same boundaries.
  int agree_stop(int mine);
  // Pushes `grads` (one pointer per tensor) for the current clock with learning rate `lr`, then
  // pulls the next clock's weights into `params`: push() of every shard not pushed yet, then
  // pull_next().
  void step(std::span<const float* const> grads, double lr, std::span<float* const> params);
  // Pushes shard k of `grads` for the current clock (only the pointers of the tensors the shard
  // covers are read, and only now): during backward, the moment the shard's gradients are final.
  // The shard's weights of the next clock are requested with it (received by pull_next).
  void push(int k, std::span<const float* const> grads, double lr);
  bool pushed(int k) const { return pushed_[static_cast<std::size_t>(k)]; }
  // Once every shard is pushed: the next clock's weights into `params`.
  void pull_next(std::span<float* const> params);
  // Between epochs: tells the servers this worker may be silent for longer than the timeout
  // (worker 0 evaluates and checkpoints) until its next push; the workers the gate holds back
  // meanwhile get keep-alives from the servers instead of timing out.
  void pause();
  // Worker 0 waits here until every worker is done and every server sent its stats.
  void finish();

  std::int64_t clock() const { return clock_; }
  // Seconds this worker spent waiting for its pushes to leave and its pulls to arrive.
  double waited_seconds() const { return waited_seconds_; }
  // Worker 0 after finish(): each server's stats, in server order (empty on other workers).
  const std::vector<ServerStats>& server_stats() const { return server_stats_; }
  const Sharding& sharding() const { return sharding_; }
  int rank() const { return transport_.rank(); }

 private:
  // Worker 0: `bytes` at `value` to every other worker (one buffer read by every send), waited for.
  void send_to_other_workers(const void* value, std::size_t bytes, int tag, std::string_view what);
  // Asks server k for the weights of `clock` (into weight_buf_[k]; the request and the receive
  // join pending_).
  void request(int k, std::int64_t clock);
  // Waits for pending_ (this clock's pushes, requests and weights) and scatters the weights into
  // params.
  void receive_weights(std::span<float* const> params);
  void send_done();
  // Waits for `pending` (then clears it) as Transport::waitall does, but a keep-alive from a
  // server (protocol.h: alive) restarts the deadline.
  void wait_for_servers(std::vector<comm::Request>& pending, const std::string& what);
  void post_alive(int k);
  std::string pull_description() const;
  void receive_stats();
  // A quarter of the timeout (and a second) longer than the servers wait: a server that waits for
  // a silent worker names it before the workers it holds back give up on the server.
  comm::Deadline deadline() const {
    return comm::Deadline::after(config_.timeout_seconds > 0 ? 1.25 * config_.timeout_seconds + 1 : 0);
  }

  comm::Transport& transport_;
  PsConfig config_;
  Sharding sharding_;
  std::int64_t clock_ = 0;
  bool started_ = false, finished_ = false;
  double waited_seconds_ = 0;
  std::vector<ServerStats> server_stats_;
  std::vector<std::vector<float>> push_buf_;    // per server: PushHeader, then the shard's gradient
  std::vector<float> narrow_buf_;               // 16-bit pushes: the shard's f32 gradient before the cast
  std::vector<std::vector<float>> weight_buf_;  // per server: the shard's weights
  std::vector<PullRequest> request_buf_;        // per server
  std::vector<std::int64_t> alive_buf_;         // per server: its keep-alive
  std::vector<comm::Request> alive_req_;        // per server
  std::vector<comm::Request> pending_;
  std::vector<bool> pushed_;  // per server, this clock
};

}  // namespace dtrain::ps
