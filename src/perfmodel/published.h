// Published training runs the model is checked against, predicted from spec-sheet profiles
// alone (nothing is fitted to them): ResNet-50 on ImageNet for 90 epochs
//   - He et al. 2016 as timed by Goyal et al. 2017 (their baseline): 8 P100 in one server,
//     batch 256 (32 per GPU): about 29 hours;
//   - Goyal et al. 2017 ("Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour"): 256 P100,
//     32 servers of 8 joined by 50 Gbit Ethernet, batch 8192 (32 per GPU): about 1 hour; gradients
//     summed inside each server, then across servers by recursive halving and doubling
//     (the hierarchical butterfly of allreduce_time.h).
// and mixed-precision (AMP, f16 on the tensor cores) ResNet-50 v1.5 training throughput from
// NVIDIA's DeepLearningExamples (PyTorch/Classification/ConvNets/resnet50v1.5/README.md, "Training
// performance results", pytorch-21.03 container, batch 256 per GPU): DGX-1V (V100 16 GB) 1 GPU
// 1,200 img/s and 8 GPUs 8,322; DGX A100 (80 GB) 1 GPU 2,470 and 8 GPUs 16,621.
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
  // Where > 0, the published samples per second the run is checked against instead of its hours.
  double published_samples_per_s = 0;
  std::string precision = "f32";  // the matrix layers' arithmetic (profile.h: at_precision)
};

const std::vector<PublishedRun>& published_runs();

struct PublishedCheck {
  PublishedRun run;
  RunPrediction prediction;
  double predicted_hours = 0;
  double predicted_samples_per_s = 0;
  double error = 0;  // (predicted - published) / published, of the hours or the samples per second
};
// Predicts every published run (describes each model once).
std::vector<PublishedCheck> check_published_runs();
std::string format_published(const std::vector<PublishedCheck>& checks);

}  // namespace dtrain::perf
