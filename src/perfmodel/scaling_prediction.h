// `dtrain predict`'s question and answer as data: a model, a dataset and a profile, the worker
// counts and exchanges to compare (the query, in the flags' own terms), and the predictions of
// every configuration with their JSON form. The command (apps/dtrain/predict.cpp) and the Python
// module (python/) both answer through these functions, so their rows and errors cannot differ.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "perfmodel/profile.h"
#include "perfmodel/run_model.h"
#include "perfmodel/workload.h"

namespace dtrain::perf {

// The flags of `dtrain predict` that shape the prediction, with the command's defaults.
struct ScalingQuery {
  std::string model = "resnet50";
  std::string dataset = "imagenet";
  std::string workers = "1,8,64,256,1024";  // comma-separated, as --workers
  std::int64_t batch_per_worker = 32;
  // > 0: the global batch every worker count shares (--global-batch), each worker's batch
  // global_batch / workers, so steps per epoch stay the same and large-batch runs are priced as
  // they are trained (docs/large-batch.md); batch_per_worker is then unused.
  std::int64_t global_batch = 0;
  std::string profile;  // the --profile text (unused when a loaded profile is given)
  std::string sync = "bsp";
  std::string allreduce = "ring";  // comma-separated exchanges, as --allreduce
  bool allreduce_given = false;    // false: with ssp or asp the exchange becomes "ps"
  int servers = 1;
  int epochs = 90;
  std::string comm_dtype = "f32";
  double bucket_mb = 1.0;
  bool double_buffering = false;
  int accumulate = 1;
  bool hierarchical = false;
  bool sync_batch_norm = false;        // --sync-bn
  std::int64_t population_chunks = 0;  // --bn-stats population[:N] (RunConfig::population_chunks)
  int staleness = 3;                   // --staleness: SSP's bound
  std::string slow_mode;               // --slow-mode: "" (none), none, persistent (one worker), random
  double slow_factor = 2.0;            // --slow-factor
  double slow_prob = 0;                // --slow-prob (random)
  std::string precision = "f32";       // --precision: the matrix layers' arithmetic (profile.h: at_precision)
};

struct ScalingPrediction {
  Workload workload;
  DatasetInfo dataset;
  Profile profile;
  Sync sync = Sync::kBsp;
  // Per worker count (in the query's order) one row per exchange; one worker once.
  std::vector<RunPrediction> runs;
};

// Every configuration of the query. Throws InputError with the message of the flag at fault.
ScalingPrediction predict_scaling(const ScalingQuery& q);
// The same on a profile already loaded (q.profile unused).
ScalingPrediction predict_scaling(const ScalingQuery& q, const Profile& profile);

// What `dtrain predict --json` prints: runs_to_json's {"runs", "best"} with the model, its
// parameter count, the dataset and the profile (in the schema).
nlohmann::json scaling_json(const ScalingQuery& q, const ScalingPrediction& p);

}  // namespace dtrain::perf
