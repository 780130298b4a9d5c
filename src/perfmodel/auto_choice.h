// `--allreduce auto` and `--bucket-mb auto` with a profile: the configuration whose predicted
// step (step_model.h) is the shortest, found by evaluating the model on every candidate, never by
// trial runs (Horovod's autotuner times real steps instead).
//
// Candidates: dtrain's own collectives (ring, tree, butterfly, onetoall; "mpi" is left out: its
// cost is an estimate of whatever Open MPI picks at run time, not a count of what it sends), shm
// where it can run and was measured (shm_candidate), and bucket sizes 0 (one bucket per
// parameter), 64 KiB, 128 KiB, ... doubling up to the first size that holds all gradients in one
// bucket. Ties go to the earlier candidate in that order.
#pragma once

#include <string>
#include <vector>

#include "perfmodel/step_model.h"

namespace dtrain::perf {

struct Alternative {
  comm::Algorithm algorithm = comm::Algorithm::kRing;
  std::size_t bucket_bytes = 0;
  double step = 0;  // predicted seconds per step
};

struct AutoChoice {
  RunConfig chosen;
  StepPrediction prediction;              // of the chosen configuration
  std::vector<Alternative> alternatives;  // every candidate, fastest first
};

// Bucket sizes tried for `workload`: 0, then 64 KiB doubling to the first >= all its gradients.
std::vector<std::size_t> bucket_candidates(const Workload& workload);

// Chooses the algorithm (when choose_algorithm) and the bucket size (when choose_bucket) of
// `base`; the other settings stay as given. With neither, predicts `base` alone.
AutoChoice choose_by_prediction(const Workload& workload, const Profile& profile, const RunConfig& base,
                                bool choose_algorithm, bool choose_bucket);

// "chose ring with 4 MiB buckets: 61.2 ms per step predicted; alternatives: butterfly 4 MiB 61.9 ms, ..."
// (at most `shown` alternatives).
std::string describe_choice(const AutoChoice& choice, std::size_t shown = 8);

// "1 MiB", "64 KiB", "0 (one per parameter)".
std::string bucket_label(std::size_t bytes);

}  // namespace dtrain::perf
