// One training job of a cluster's queue, as a trace row describes it: what it trains (model,
// dataset, batch per rank), how much work it is, the ranks it may run on and when it arrives.
// The work is a fixed number of samples, so its time at any rank count follows from the model's
// step time there (job_pricing.h).
#pragma once

#include <cstdint>
#include <string>

namespace dtrain::schedule {

struct Job {
  std::string name;
  std::string model;
  std::string dataset;
  std::int64_t batch = 32;  // samples per rank per step
  // dtrain rows: the job trains `epochs` epochs of the dataset, with the evaluation after each.
  int epochs = 0;
  // Tiresias rows: the job's work is `samples` training samples (its iterations x batch x the
  // ranks it asked for), without evaluation; 0 for dtrain rows.
  std::int64_t samples = 0;
  int min_ranks = 1;
  int max_ranks = 1;  // what the job requests: the rank count of fifo, srtf and tiresias
  double submit_time = 0;
  int priority = 0;            // read and reported; no policy weighs it
  double trace_duration = -1;  // Tiresias's duration column in seconds, < 0 when absent
  int row = 0;                 // the trace's line, for messages
};

// The dataset a model trains on when a row leaves it empty: imagenet for resnet50, cifar10 for
// the CIFAR ResNets, fashion-mnist for lenet and mlp.
std::string default_dataset(const std::string& model);

}  // namespace dtrain::schedule
