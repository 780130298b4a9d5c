// The parameter-server protocol: which ranks serve, the consistency modes, and the messages.
//
// Ranks: W workers are ranks 0..W-1 (worker w is rank w, so rank 0 trains, logs and evaluates as
// in every other mode), K servers are ranks W..W+K-1; server k holds piece k of the flat
// parameters (ps/sharding.h) and its optimizer state.
//
// Messages, each between one worker and one server, on tags of their own (above every
// collective's, comm/communicator.cpp), every byte count fixed by the shard's size:
//   init     worker 0 -> server k   once: a StateHeader, then shard k of the initial parameters
//                                   and of each of the header's optimizer state slots (f32; no
//                                   slots for a fresh optimizer, every slot on resume)
//   push     worker -> server       PushHeader + the worker's gradient of shard k (the wire type,
//                                   padded to a multiple of 4 bytes: push_payload_floats)
//   request  worker -> server       PullRequest: "weights for clock c", "done after n pushes",
//                                   "snapshot" (worker 0) or "pause" (between epochs: the worker
//                                   evaluates or checkpoints and is silent until its next push)
//   weights  server -> worker       shard k of the weights (f32), the answer to a request
//   snapshot server -> worker 0     the answer to a kSnapshot request (for a checkpoint): a
//                                   StateHeader, the shard's weights and every state slot (f32)
//   start    worker 0 -> worker     on resume: the global step the run continues from (int64)
//   stop     worker <-> worker 0    BSP with --checkpoint-dir, between steps: each worker's stop
//                                   signal (int32, 0: none) to worker 0, the largest back
//   stats    server -> worker 0     after every worker is done: StatsHeader, then the server's
//                                   ps/run_stats.h as JSON text; while worker 0 is done and others
//                                   still train, a StatsHeader of 0 bytes every timeout / 3 keeps
//                                   its wait for the stats from timing out
//   alive    server -> worker       8 bytes, every timeout / 3 to each worker whose pull the gate
//                                   holds while another worker is paused: the wait is the paused
//                                   worker's, not the server's, so the worker's timeout restarts
//   trace    worker -> worker 0     with --trace, after training: the worker's recorded events
//                                   (8-byte length, then JSON text)
// A worker's step at clock c is: push each shard's gradient of clock c with a request for that
// shard's weights of clock c + 1, then wait for the weights; the server answers when the gate
// (ps/clock_gate.h) opens. Messages of one kind between two ranks arrive in the order sent, so a
// server sees a worker's pushes in clock order; a request may overtake the push before it, which
// the gate's read-my-writes condition absorbs.
//
// Cost per worker step with K servers and N parameters (alpha: latency, beta: time per byte):
// 2K messages out (pushes with a 16-byte header, 24-byte requests) and K in, 4N bytes pushed and
// 4N pulled in all, so 2K alpha + 8N beta at the worker; each server receives 4N/K bytes from each of the W workers and
// sends as many back, 2 W alpha + 8 W N / K beta, which is why K servers share the load.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ps/async_corrections.h"
#include "tensor/dtype.h"

namespace dtrain::ps {

enum class SyncMode { kBsp, kSsp, kAsp };

std::string_view sync_mode_name(SyncMode mode);
// "bsp", "ssp" or "asp"; InputError listing them otherwise.
SyncMode parse_sync_mode(std::string_view name);

struct PsConfig {
  int workers = 1;
  int servers = 1;
  SyncMode sync = SyncMode::kBsp;
  // SSP's bound S in clocks (BSP is 0 and ASP unbounded whatever this says).
  std::int64_t staleness = 0;
  // Seconds a server waits without any message before a CommError names the silent workers (a
  // worker waits 1.25 x this + 1 s for an answer, so the server speaks first); 0 waits forever.
  // A paused worker (PullRequest::kPause) is not silent: its evaluation may take longer.
  double timeout_seconds = 300;
  // The pushed gradients' type on the wire (f32, f16 or bf16; rounded to nearest even, as the
  // allreduce's 16-bit wire); the servers widen them to f32 on arrival. Weights travel in f32.
  DType wire = DType::kF32;
  // SSP and ASP: each push's learning rate and the servers' momentum (ps/async_corrections.h).
  AsyncLr async_lr = AsyncLr::kDivided;
  AsyncMomentum async_momentum = AsyncMomentum::kKeep;

  // The gate's S: 0, staleness, or ClockGate::kUnbounded.
  std::int64_t gate_staleness() const;
  int world_size() const { return workers + servers; }
  bool is_server(int rank) const { return rank >= workers; }
  int server_rank(int k) const { return workers + k; }
  int server_index(int rank) const { return rank - workers; }
  // InputError for a layout or value that cannot run, or one that disagrees with `world_size`.
  void validate(int world_size) const;
};

inline constexpr int kTagInit = 20001;
inline constexpr int kTagPush = 20002;
inline constexpr int kTagRequest = 20003;
inline constexpr int kTagWeights = 20004;
inline constexpr int kTagStats = 20005;
inline constexpr int kTagSnapshot = 20006;
inline constexpr int kTagStart = 20007;
inline constexpr int kTagAlive = 20008;
inline constexpr int kTagTrace = 20009;
inline constexpr int kTagStop = 20010;

struct PushHeader {
  std::int64_t clock = 0;  // the clock of the weights the gradient was computed from
  double lr = 0;           // the worker's learning rate for this step (schedules live on workers)
};
static_assert(sizeof(PushHeader) == 16);

// The 4-byte words after a push's header that carry `elements` gradients in `wire`.
inline std::size_t push_payload_floats(std::int64_t elements, DType wire) {
  return (static_cast<std::size_t>(elements) * dtype_size(wire) + 3) / 4;
}

struct PullRequest {
  static constexpr std::int64_t kDone = -1;
  static constexpr std::int64_t kSnapshot = -2;  // worker 0: the weights and optimizer state now
  static constexpr std::int64_t kPause = -3;     // silent until the next push: not a dead worker
  std::int64_t clock = 0;                        // the clock wanted, kDone, kSnapshot or kPause
  std::int64_t pushes = 0;                       // with kDone: how many pushes this worker made in all
  double waited_seconds = 0;                     // with kDone: the worker's time waiting for its pushes and pulls
};
static_assert(sizeof(PullRequest) == 24);

// The optimizer state that travels with a shard's weights.
struct StateHeader {
  std::int64_t optimizer_steps = 0;  // Optimizer::steps() (Adam's bias correction counts them)
  std::int64_t slots = 0;            // state slots after the weights (0: a fresh optimizer)
  double applied_lr = 0;             // the workers' rate of the last step (momentum correction)
};
static_assert(sizeof(StateHeader) == 24);

struct StatsHeader {
  std::int64_t bytes = 0;  // of the JSON text that follows; 0: a keep-alive, nothing follows
};
static_assert(sizeof(StatsHeader) == 8);

}  // namespace dtrain::ps
