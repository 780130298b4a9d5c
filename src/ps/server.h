// A parameter server: one rank holding piece k of the flat parameters (ps/sharding.h) and the
// optimizer state for it. It serves the workers' pushes and pulls (ps/protocol.h) until every
// worker is done, and applies the gradients by the run's consistency mode:
//
//   BSP  the W pushes of clock c are held until all are in, summed in worker-rank order and
//        applied as one optimizer step with their mean, g = (g_0 + g_1 + ... + g_{W-1}) / W: the
//        mean gradient allreduce training takes, at the learning rate the workers sent. Each
//        element's arithmetic is the same whichever server holds it, so the number of servers
//        does not change the result, bit for bit.
//   SSP, ASP  every push is one optimizer step as it arrives, at lr / W, so that the W pushes of
//        one clock move the weights as far as one BSP step (--lr means the same per global step
//        in every mode). Momentum and adaptive state still see W steps per clock, so the modes
//        differ beyond the order of the updates. ps/async_corrections.h has the other per-push
//        rates (staleness-aware, undivided) and the momentum compensation.
// Pulls are answered through the gate (ps/clock_gate.h) with the weights as they are then; gap and
// tau of every applied gradient are recorded there, and with them the rest of ps/run_stats.h,
// which the server sends worker 0 when every worker is done.
//
// Waiting: the server polls its requests with Transport::test and, when a poll finds nothing to
// do, sleeps (20 us, doubling to 200 us), so it never spins a core that the workers need; the
// sleep bounds the latency it adds to a message. A server that receives nothing for the timeout
// while workers remain throws a CommError naming the workers it waits for.
//
// Cost per clock: W pushes in of 2 or 4 N_k bytes (N_k its elements; f16/bf16 pushes are widened
// to f32 on arrival) and W weight messages out of 4 N_k bytes, W - 1 additions of N_k (BSP) and
// one optimizer pass of N_k (BSP) or W of them (SSP, ASP).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "autograd/variable.h"
#include "comm/transport.h"
#include "optim/optimizer.h"
#include "ps/clock_gate.h"
#include "ps/protocol.h"
#include "ps/run_stats.h"
#include "ps/sharding.h"

namespace dtrain::ps {

class ParameterServer {
 public:
  // The server of `transport.rank()` (a server rank of `config`) for a model of `total_elements`
  // parameters; `optimizer` names the optimizer and its hyperparameters (its lr is replaced by
  // the workers' per step).
  ParameterServer(comm::Transport& transport, const PsConfig& config, const OptimizerConfig& optimizer,
                  std::int64_t total_elements);
  ~ParameterServer();
  ParameterServer(const ParameterServer&) = delete;
  ParameterServer& operator=(const ParameterServer&) = delete;

  // Receives the initial weights (and on resume the optimizer state) from worker 0, serves until
  // every worker is done, then sends worker 0 its stats. A snapshot request from worker 0 (for a
  // checkpoint) is answered at once with the weights and optimizer state as they are.
  void run();

  int index() const { return index_; }
  FlatRange range() const { return range_; }
  const Tensor& weights() const { return weights_.data(); }
  Optimizer& optimizer() { return *optimizer_; }
  const ClockGate& gate() const { return gate_; }
  std::int64_t updates() const { return version_; }
  // What the run did so far (complete after run()).
  ServerStats stats() const;

 private:
  void post_push(int w);
  void post_request(int w);
  void on_request(int w);
  void apply_push(int w);  // SSP, ASP
  bool apply_bsp_clock();  // BSP: one step once every unfinished worker's push is in
  bool answer_pulls();
  bool retire_finished();
  PushHeader header(int w) const;
  float* gradient(int w);  // the push's gradient in f32
  void widen_push(int w);  // 16-bit pushes: into widened_
  [[noreturn]] void throw_silence() const;
  // Whether every worker that is neither done nor waiting for an answer is paused (and one is).
  bool only_paused_workers_silent() const;
  void keep_worker0_waiting();
  // While a worker is paused, a keep-alive every timeout / 3 to each worker whose pull is held.
  void keep_held_workers_waiting();
  void receive_initial_state();  // the weights, and on resume the optimizer's state
  void send_snapshot(int w);
  void send_stats();

  comm::Transport& transport_;
  PsConfig config_;
  int index_;
  FlatRange range_;
  std::int64_t n_;  // elements of this shard
  Variable weights_;
  std::unique_ptr<Optimizer> optimizer_;
  ClockGate gate_;
  std::int64_t version_ = 0;       // optimizer steps made
  double applied_workers_lr_ = 0;  // the workers' rate of the last push applied (for snapshots)

  // Per worker: the push buffer (PushHeader, then n_ floats), the request and reply buffers.
  std::vector<std::vector<float>> push_buf_;
  std::vector<PullRequest> request_buf_;
  std::vector<std::vector<float>> reply_buf_;
  std::vector<comm::Request> push_req_, request_req_, reply_req_;
  std::vector<bool> arrived_;                // BSP: the push of the current clock is held
  std::vector<std::int64_t> wanted_;         // clock of a pull not yet answered, or -1
  std::vector<std::int64_t> done_pushes_;    // pushes announced with "done", or -1
  std::vector<bool> paused_;                 // said kPause and sent nothing since
  std::vector<float> sum_;                   // BSP: the clock's sum
  std::vector<std::vector<float>> widened_;  // 16-bit pushes: per worker, its gradient in f32

  // For stats(): seconds since construction of the first push and of the first "done", busy
  // time, gradients applied (in all and before the first "done"), messages per busy poll, and
  // the workers' reported waits.
  double start_ = 0, first_push_ = -1, first_done_ = -1, last_message_ = 0, busy_ = 0;
  std::int64_t gradients_ = 0, gradients_all_running_ = 0;
  Histogram queue_depth_;
  std::vector<double> worker_wait_;
  std::vector<float> snapshot_buf_;  // StateHeader, the weights, every optimizer slot
  comm::Request snapshot_req_;
  StatsHeader keep_alive_{0};
  comm::Request keep_alive_req_;
  double last_keep_alive_ = 0;
  std::int64_t alive_ = 0;
  std::vector<comm::Request> alive_req_;  // per worker
  double last_alive_ = 0;
};

}  // namespace dtrain::ps
