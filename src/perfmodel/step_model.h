// One training step of one worker, predicted phase by phase as the trainer measures it
// (core/phase_times.h), with the timeline that produces it (Hashemi et al. 2016; Paleo, Qi et
// al. 2017; the step semantics of parallel/data_parallel.h):
//   - compute: each layer's forward and backward (layer_cost.h) for each of the K micro-batches
//     of the worker's batch, then the optimizer update (parameters / update rate);
//   - data: the loader reads the batch from disk (its share of the node's disk bandwidth) and
//     writes it to memory, on its own thread, so only what exceeds the rest of the step shows;
//   - communication (allreduce): the buckets of plan_buckets, each released when its last
//     gradient is final during the last micro-batch's backward (walked layer by layer in
//     reverse) and all buckets before it were released; one communication thread runs them in
//     order, each costing its allreduce (allreduce_time.h) plus the thread's own passes over the
//     bucket (scale by 1/(pK), cast to and from f16/bf16, the finite check). What runs past the
//     end of backward is exposed; with double buffering the update waits for the previous
//     step's buckets instead, so communication hides behind a whole step;
//   - communication (parameter server): parameter_server.h;
//   - stragglers (straggler.h): a synchronous step (allreduce, or the parameter server's BSP)
//     waits for the slowest of the p workers, on average  v x compute x E[max of p standard
//     normals]  longer than one worker's own step (v the device's step_variation). The wait
//     comes before the update, where the trainer measures it as communication (phases.comm).
//     Where a host's ranks time-share its CPUs they take turns instead, and the step is longer by
//     the node's calibrated turn_taking fraction of its compute (profile.h), charged in its place.
//     With double buffering the update waits for the previous step's buckets: one step of slack
//     absorbs part of the wait, but the full term is charged (an upper bound). ASP has no wait: no
//     worker waits for another. SSP is predicted as ASP: a fast worker waits only once it is a
//     whole staleness bound ahead of the slowest, and the model has no staleness bound to weigh
//     that against (a lower bound).
// The steady state is found by simulating consecutive steps (the communication thread carries
// work from one step into the next).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/algorithm.h"
#include "core/phase_times.h"
#include "perfmodel/parameter_server.h"
#include "perfmodel/profile.h"
#include "perfmodel/sync_rules.h"
#include "perfmodel/workload.h"
#include "tensor/dtype.h"

namespace dtrain::perf {

enum class Exchange : std::uint8_t { kAllreduce, kParameterServer };

struct RunConfig {
  int workers = 1;
  std::int64_t batch_per_worker = 32;
  Exchange exchange = Exchange::kAllreduce;
  comm::Algorithm algorithm = comm::Algorithm::kRing;
  bool hierarchical = false;  // two-level allreduce (allreduce_time.h); dtrain's own collectives are flat
  int servers = 1;            // parameter-server shards
  Sync sync = Sync::kBsp;
  DType comm_dtype = DType::kF32;
  std::size_t bucket_bytes = std::size_t{1} << 20;
  // The collectives' largest message; 0: as dtrain chooses it by layout (comm/algorithm.h: chunk_bytes_for), 1 MiB
  // within a node and 32 KiB when the workers span nodes.
  std::size_t chunk_bytes = 0;
  bool double_buffering = false;
  int accumulate = 1;
  double disk_bytes_per_sample = 0;
  int staleness = 3;             // SSP's bound S (sync kSsp)
  bool sync_batch_norm = false;  // --sync-bn: two sums over the workers per batch-norm layer and micro-batch
  // --bn-stats population[:N]: after each epoch, N chunks of a micro-batch (over all workers; -1:
  // the whole training set) run forward (train/bn_statistics.h); 0: none.
  std::int64_t population_chunks = 0;
  // Workers slowed on purpose (dtrain train --slow-*); its `workers` and `jitter` are ignored:
  // the run's workers are slowed, and their natural variation is the profile's (straggler.h).
  WorkerSpeeds slowdown;
};
// Throws InputError naming the bad setting and what is valid.
void validate(const RunConfig& c);
// The chunk the run's collectives use: c.chunk_bytes, or by layout when it is 0.
std::size_t chunk_bytes_of(const RunConfig& c, const Profile& p);
// "ring", "hier-butterfly", "ps-asp x4", ...
std::string exchange_label(const RunConfig& c);

struct BucketTiming {
  std::int64_t elements = 0;
  double ready = 0;           // its last gradient is final (from the step's start)
  double start = 0, end = 0;  // on the communication thread
  double allreduce = 0;       // the collective alone (without the thread's local passes)
};

struct TimelineEvent {
  std::string name;      // layer path, "bucket 3", "update", "load batch"
  std::string category;  // forward, backward, allreduce, push, pull, server, update, data
  std::string lane;      // compute, comm, loader, servers
  double start = 0, duration = 0;
};

struct StepPrediction {
  PhaseTimes phases;           // the trainer's phases of one steady-state step; data and comm as exposed
  double step = 0;             // seconds per step
  double compute = 0;          // forward + backward + update, the worker's own work
  double data = 0;             // the loader's seconds per batch, before overlap
  double comm = 0;             // communication per step before overlap (the comm thread's busy time)
  double comm_allreduce = 0;   // of which in the collectives themselves
  double comm_latency = 0;     // of which charged to latency (alpha)
  double straggler = 0;        // the wait for the slowest worker, included in step and in phases.comm
  double sync_batch_norm = 0;  // --sync-bn's sums, on the compute thread: included in compute
  bool turns = false;          // the ranks take turns on shared CPUs: `straggler` is the turns' cost
  std::vector<BucketTiming> buckets;
  std::vector<TimelineEvent> timeline;  // one steady-state step, from its start
  std::string
      bottleneck;  // compute | communication (latency) | communication (bandwidth) | data loading | parameter servers

  const char* wait_name() const { return turns ? "ranks taking turns on shared CPUs" : "wait for the slowest worker"; }
  // The communication the step waits for, the straggler wait left out.
  double exposed_comm() const { return phases.comm - straggler; }
};

StepPrediction predict_step(const Workload& workload, const Profile& profile, const RunConfig& config);
StepPrediction predict_step(const std::vector<LayerSummary>& layers, const Profile& profile, const RunConfig& config);

}  // namespace dtrain::perf
