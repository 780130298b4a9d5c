// The parameter-server totals of Hashemi et al. 2016 ("Performance Modeling of Distributed Deep
// Neural Networks"), for W workers and K server shards each holding 1/K of the parameters. The
// servers sit on their own nodes behind the network (the intra-node link on a machine without
// one); a worker's node link is shared by the node's k workers.
//   T_send (one direction) = max(worker side: K alpha + f n beta,  server side: W (alpha + (n/K) beta))
//     with n the bytes each way per worker (pushes in the wire type, pulls of the weights in f32,
//     as ps/protocol.h sends them) and f = min(k, W) workers sharing a node's link;
//   server update per worker gradient: c_u * P / K (c_u = 1 / the device's update rate, P parameters).
// BSP (synchronous): every step waits for all pushes, the server's sum and update, and all pulls.
// As dtrain's servers do it (ps/server.h), the W pushes are summed (gamma per byte, 4 P / K
// bytes each in f32) and applied once:
//   step = compute + 2 T_send + (W - 1) gamma 4 P / K + c_u P / K.
// ASP (asynchronous) and SSP (bounded staleness): every push is one optimizer pass on arrival, and
// workers never wait for each other, so the throughput is bounded by the slower of the workers
// and the servers:
//   worker period  = compute + 2 (K alpha + f n beta),
//   server time per worker update = 2 (alpha + (n/K) beta) + c_u P / K,
//   seconds per W worker steps = max(worker period, W * server time per update).
// Here every worker takes the same time, so SSP's staleness bound never binds and SSP predicts as
// ASP; the wait for the slowest worker under BSP (straggler.h) is added by step_model.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "perfmodel/profile.h"
#include "tensor/dtype.h"

namespace dtrain::perf {

enum class Sync : std::uint8_t { kBsp, kSsp, kAsp };
const char* sync_name(Sync s);
// "bsp", "ssp", "asp"; throws InputError listing them.
Sync parse_sync(const std::string& name);

struct ServerPlan {
  int workers = 1;
  int servers = 1;
  Sync sync = Sync::kBsp;
  DType dtype = DType::kF32;
  // Seconds of the push that overlap backward (pushes_during_backward): the step pays push - this.
  double push_hidden = 0;
  // Seconds of the pull that overlap backward and the other shards' pushes
  // (pulls_during_backward): the step pays pull - this.
  double pull_hidden = 0;
};

// The part of a push of `push_seconds` (all shards) that overlaps backward: each shard leaves the
// moment its gradients are final (ps/ps_updater.h), one after another. Backward ends the layers
// in reverse, so shard k is final when the backward of the layer holding its first parameter
// ends, at ready_k; in that order (k = K-1 first) each push takes push_seconds / K and
//   end = max(end, ready_k) + push_seconds / K,   exposed = end - backward_seconds,
// which is at least one shard's push (the first layer's shard is final last). `layer_params`
// and `layer_backward` per layer in forward order (the parameters in that order are the flat
// order the shards cut); 0 with one shard or --accumulate (every shard waits for the last
// micro-batch's backward).
double pushes_during_backward(const std::vector<std::int64_t>& layer_params, const std::vector<double>& layer_backward,
                              int servers, double push_seconds);
// The part of a pull of `pull_seconds` (all shards) that overlaps backward and the later shards'
// pushes: each shard's weights are requested with its push (ps/ps_worker.h), answered
// `server_seconds` after it arrives (BSP: the server's sum and update; 0 where the step does not
// wait for the servers' arithmetic), and received one after another:
//   pulled = max(pulled, pushed_k + server_seconds) + pull_seconds / K,
// against a tail of (pushed - backward) + server_seconds + pull_seconds with every pull after the
// last answer. 0 with one shard.
double pulls_during_backward(const std::vector<std::int64_t>& layer_params, const std::vector<double>& layer_backward,
                             int servers, double push_seconds, double server_seconds, double pull_seconds);

struct ServerTime {
  double push = 0, pull = 0;   // T_send each way (BSP: the slower side; ASP: the worker's side)
  double server_update = 0;    // server seconds of arithmetic per global step of W worker batches
  double step = 0;             // seconds per global step (W worker batches), compute included
  double exposed = 0;          // step - compute: what the workers wait
  bool servers_bound = false;  // ASP/SSP: the servers, not the workers, set the throughput
};

ServerTime parameter_server_time(const ServerPlan& plan, std::int64_t params, double worker_compute,
                                 const Profile& profile);

// A worker's compute per step where a host's ranks outnumber its CPUs (profile.h: cores). The
// calibrated rates are those of `accelerators` ranks per host taking turns on `cores` CPUs, each
// getting cores / accelerators of one; in a parameter-server run the servers wait blocked, so
// only b = min(accelerators, W) workers per host compute. With C = cores:
//   alone  = calibrated x min(1, C / accelerators): the step on a CPU of its own;
//   shared = alone x ceil(b / C) under BSP and SSP: the scheduler keeps ranks on their CPUs, so
//            the workers that share one with the most others set the pace of a synchronous step
//            (and a persistent imbalance outruns any staleness bound);
//          = alone x max(1, b / C) under ASP: its gradients come at the CPUs' aggregate pace.
// A worker slowed on purpose sleeps and gives its CPU to the others, so the step's compute is the
// larger of `shared` and the rule's pace with every worker on a CPU of its own (step_model.cpp).
// Measured (ResNet-20 on 4 ranks of 2 CPUs, 2026-12-03): W = 3 under BSP 156 ms a step and under
// ASP 121 (ceil(3/2) = 2 against 3/2); W = 2, 78 ms: half the calibrated compute. Both equal
// `alone` where the ranks have CPUs of their own.
// Where every calibrated rank computes (b = accelerators), `shared` is the calibrated compute
// itself and the calibrated turn-taking (straggler.h) prices the synchronous step's wait.
struct WorkerCompute {
  double alone = 0;
  double shared = 0;
  bool as_calibrated = true;  // the CPUs shared as in the calibration (or not at all)
  // Whether `shared` holds the turns of a synchronous step (no separate turn-taking wait).
  bool turns() const { return !as_calibrated && shared > alone; }
};
WorkerCompute worker_compute_on_cores(const Profile& profile, int workers, Sync sync, double calibrated);

}  // namespace dtrain::perf
