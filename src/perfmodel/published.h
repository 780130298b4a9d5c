// Published training runs the model is checked against, predicted from spec-sheet profiles
// alone (nothing is fitted to them): ResNet-50 on ImageNet for 90 epochs
//   - He et al. 2016 as timed by Goyal et al. 2017 (their baseline): 8 P100 in one server,
//     batch 256 (32 per GPU): about 29 hours;
//   - Goyal et al. 2017 ("Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour"): 256 P100,
//     32 servers of 8 joined by 50 Gbit Ethernet, batch 8192 (32 per GPU): about 1 hour; gradients
//     summed inside each server, then across servers by recursive halving and doubling
//     (the hierarchical butterfly of allreduce_time.h).
// docs/perfmodel.md derives each number.
#pragma once

#include <string>
#include <vector>

#include "perfmodel/run_model.h"

namespace dtrain::perf {

struct PublishedRun {
  std::string name;      // "he2016"
  std::string citation;  // who, what hardware, what batch
  std::string model, dataset, profile;
  RunConfig config;
  int epochs = 90;
  double published_hours = 0;
  // The relative error the test accepts: 25% for both. Goyal et al.'s step grew about 10% from 8
  // to 256 GPUs; the model's part of that is the wait for the slowest GPU (straggler.h: 2.2%,
  // from the P100 profile's 1.5% step variation), so it predicts -22.3% (He et al. -15.9%).
  double tolerance = 0.25;
};

const std::vector<PublishedRun>& published_runs();

struct PublishedCheck {
  PublishedRun run;
  RunPrediction prediction;
  double predicted_hours = 0;
  double error = 0;  // (predicted - published) / published
};
// Predicts every published run (describes each model once).
std::vector<PublishedCheck> check_published_runs();
std::string format_published(const std::vector<PublishedCheck>& checks);

}  // namespace dtrain::perf
