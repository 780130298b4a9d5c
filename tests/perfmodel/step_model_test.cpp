// The step model against the quantities it is built from: the comm layer's own cost functions,
// the bucketer, and the overlap rules of parallel/data_parallel.h.
#include "perfmodel/step_model.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "comm/hosts.h"
#include "core/error.h"
#include "parallel/buckets.h"
#include "perfmodel/allreduce_time.h"
#include "perfmodel/layer_cost.h"
#include "perfmodel/run_model.h"
#include "perfmodel_test_util.h"

namespace dtrain::perf {
namespace {

using comm::Algorithm;
using testing::layer;
using testing::test_profile;

// Parameterised layers first, then parameter-free ones: backward reaches the parameters last, so
// every gradient is final at the very end of backward and nothing overlaps.
Workload params_first(int tensors, std::int64_t numel) {
  std::vector<LayerSummary> layers;
  layers.reserve(static_cast<std::size_t>(tensors) + 4);
  for (int i = 0; i < tensors; ++i) layers.push_back(layer(fmt::format("p{}", i), "linear", numel, 0, 1));
  for (int i = 0; i < 4; ++i) layers.push_back(layer(fmt::format("r{}", i), "relu", 0, 1e9, 1 << 20));
  return workload_from_layers(layers);
}

// A deep net with parameters spread through it: gradients become final all along backward.
Workload spread(int depth) {
  std::vector<LayerSummary> layers;
  for (int i = 0; i < depth; ++i) {
    layers.push_back(layer(fmt::format("c{}", i), "conv2d", 50000 + 1000 * i, 2e8, 1 << 16));
    layers.push_back(layer(fmt::format("b{}", i), "batch_norm", 128, 1e5, 1 << 16));
  }
  return workload_from_layers(layers);
}

double sum_of_bucket_allreduces(const Workload& w, const RunConfig& c, const Profile& profile,
                                const comm::AlphaBetaGamma& m) {
  std::vector<std::int64_t> numels;
  for (const ParameterInfo& p : w.params) numels.push_back(p.numel);
  double sum = 0;
  for (std::int64_t n : plan_buckets(numels, c.bucket_bytes).bucket_elements) {
    sum += comm::predict_allreduce_seconds(c.algorithm, c.workers, static_cast<std::size_t>(n), c.comm_dtype, m,
                                           chunk_bytes_of(c, profile));
  }
  return sum;
}

TEST(StepModel, OneWorkerHasNoCommunication) {
  RunConfig c;
  c.workers = 1;
  const StepPrediction s = predict_step(spread(6), test_profile(), c);
  EXPECT_EQ(s.comm, 0);
  EXPECT_EQ(s.phases.comm, 0);
  EXPECT_TRUE(s.buckets.empty());
  EXPECT_NEAR(s.step, s.compute + s.phases.data, 1e-12);
  EXPECT_EQ(s.bottleneck, "compute");
}

TEST(StepModel, WithoutOverlapCommIsTheSumOfTheBucketsAllreduces) {
  const Workload w = params_first(12, 100000);  // 400 KB each: several 1 MiB buckets
  for (Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kButterfly, Algorithm::kOneToAll}) {
    for (int p : {2, 3, 5, 8}) {
      // All ranks in one node: the intra-node link.
      Profile one_node = test_profile(8);
      RunConfig c;
      c.workers = p;
      c.algorithm = a;
      const StepPrediction s = predict_step(w, one_node, c);
      const comm::AlphaBetaGamma intra{1e-7, 1.0 / 1e10, 1.0 / 1e12};
      const double expected = sum_of_bucket_allreduces(w, c, one_node, intra);
      EXPECT_NEAR(s.comm_allreduce, expected, 1e-12 * p) << algorithm_name(a) << " p=" << p;
      // Exposed: all of it, less the last gradient copies into their buckets (tens of ns here).
      EXPECT_NEAR(s.phases.comm, expected, 1e-6 * expected + 2e-8) << algorithm_name(a) << " p=" << p;
      EXPECT_GT(s.buckets.size(), 3u);
      // One accelerator per node: the network, shared by one flow for every algorithm here.
      const Profile one_per_node = test_profile(1);
      const StepPrediction across = predict_step(w, one_per_node, c);
      if (a != Algorithm::kButterfly) {
        const double net = sum_of_bucket_allreduces(w, c, one_per_node, {1e-6, 1.0 / 1e9, 1.0 / 1e12});
        EXPECT_NEAR(across.phases.comm, net, 1e-6 * net + 1e-8) << algorithm_name(a) << " p=" << p;
      }
    }
  }
}

TEST(StepModel, SixteenBitCastsAtTheirCalibratedRate) {
  const Workload w = params_first(12, 100000);
  RunConfig c;
  c.workers = 2;
  c.comm_dtype = DType::kF16;
  Profile bytes = test_profile(8, 1e-6, 1e9, 1e12, 1e12);
  bytes.device.gradient_copy = testing::q(1e10);
  Profile cast = bytes;
  cast.device.cast_f16 = testing::q(1e8);  // 10 ns per element there and back
  const StepPrediction a = predict_step(w, bytes, c), b = predict_step(w, cast, c);
  const double params = 12 * 100000;
  // Two passes, each 6 bytes an element: the scaled cast into the wire on the compute thread (the
  // grad-ready hook) and the widening with the finite check on the communication thread. Without
  // a calibrated cast each is its bytes at half a copied byte's time (3/4 of the 8-byte copy);
  // with one, half its time each.
  const double pass_gap = params * (0.5 / 1e8 - 0.75 * 4 / 1e10);
  EXPECT_NEAR(b.comm - a.comm, pass_gap, 1e-9);
  EXPECT_NEAR(b.compute - a.compute, pass_gap, 1e-9);
  // The bf16 rate prices bf16 only; f32 has no cast at all.
  c.comm_dtype = DType::kBF16;
  EXPECT_DOUBLE_EQ(predict_step(w, cast, c).comm, predict_step(w, bytes, c).comm);
  c.comm_dtype = DType::kF32;
  EXPECT_DOUBLE_EQ(predict_step(w, cast, c).comm, predict_step(w, bytes, c).comm);
}

TEST(StepModel, GradientCopiesIntoBucketsAtTheCalibratedRate) {
  const Workload w = params_first(12, 100000);
  RunConfig c;
  c.workers = 2;
  Profile fast = test_profile(8, 1e-6, 1e9, 1e12, 1e12);  // copies at memory rates: 0.8 ms for 1.2 M
  Profile slow = fast;
  slow.device.gradient_copy = testing::q(1e9);  // 4.8 ms for the 4.8 MB of gradients
  const StepPrediction a = predict_step(w, fast, c), b = predict_step(w, slow, c);
  const double params = 12 * 100000;
  EXPECT_NEAR(b.compute - a.compute, params * (4 / 1e9 - (4 / 1e12 + 4 / 1e12)), 1e-9);
  // The communication thread's pass over each bucket (the finite check: 4 bytes read; the copy
  // scaled the gradients) at half a copied byte's time per byte touched.
  EXPECT_NEAR(b.comm - a.comm, params * (4 / (2 * 1e9) - 4 / 1e12), 1e-9);
  // One worker copies nothing.
  c.workers = 1;
  EXPECT_DOUBLE_EQ(predict_step(w, slow, c).compute, predict_step(w, fast, c).compute);

  // Parameters of 2 MB: buckets of one parameter, which adopt their gradients (no copy) and
  // scale them on the communication thread, fused with the check (4 bytes read, 4 written).
  const Workload large = params_first(3, 500000);
  c.workers = 2;
  const StepPrediction la = predict_step(large, fast, c), lb = predict_step(large, slow, c);
  EXPECT_NEAR(lb.compute, la.compute, 1e-12);
  EXPECT_NEAR(lb.comm - la.comm, 3 * 500000 * (8 / (2 * 1e9) - (4 / 1e12 + 4 / 1e12)), 1e-9);
  // With f16 on the wire nothing is adopted: each gradient is cast into its wire slot on the
  // compute thread, and the sums are widened and checked on the communication thread, 6 bytes an
  // element each, 3/4 of a copy's time.
  c.comm_dtype = DType::kF16;
  const StepPrediction ha = predict_step(large, fast, c), hb = predict_step(large, slow, c);
  const double pass_gap = 3 * 500000 * 0.75 * (4 / 1e9 - (4 / 1e12 + 4 / 1e12));
  EXPECT_NEAR(hb.comm - ha.comm, pass_gap, 1e-9);
  EXPECT_NEAR(hb.compute - ha.compute, pass_gap, 1e-9);
  // shm with f32: the allreduce scales and checks the sums itself (parallel/buckets.h), so the
  // communication thread makes no pass of its own, and the gradients are copied in (4 bytes each
  // way, at the calibrated rate) rather than adopted.
  c.comm_dtype = DType::kF32;
  c.algorithm = Algorithm::kShm;
  const StepPrediction sa = predict_step(large, fast, c), sb = predict_step(large, slow, c);
  EXPECT_NEAR(sa.comm, sa.comm_allreduce, 1e-12);
  EXPECT_NEAR(sb.comm, sb.comm_allreduce, 1e-12);
  EXPECT_GT(lb.comm, lb.comm_allreduce) << "ring's pass over each bucket is its own";
  EXPECT_NEAR(sb.compute - sa.compute, 3 * 500000 * (4 / 1e9 - (4 / 1e12 + 4 / 1e12)), 1e-9);
}

// Ranks sharing one copy of the weights (shm, no double buffering) each update their part and
// meet at a barrier: at the profile's calibrated shared rate where it has one, else 1/p of the
// parameters at the private rate; other algorithms and double buffering update every parameter.
TEST(StepModel, ASharedWeightsUpdateTakesTheCalibratedSharedRate) {
  const Workload w = params_first(4, 1 << 20);
  const double params = static_cast<double>(w.total_params());
  Profile p = test_profile(2);
  RunConfig c;
  c.workers = 2;
  c.algorithm = Algorithm::kShm;
  EXPECT_NEAR(predict_step(w, p, c).phases.update, params / 1e10 / 2, 1e-12);
  p.device.shared_update = Quantity{2e9, 0, 0, "calibrated"};
  EXPECT_NEAR(predict_step(w, p, c).phases.update, params / 2e9, 1e-12);
  RunConfig ring = c;
  ring.algorithm = Algorithm::kRing;
  EXPECT_NEAR(predict_step(w, p, ring).phases.update, params / 1e10, 1e-12);
  RunConfig buffered = c;
  buffered.double_buffering = true;
  EXPECT_NEAR(predict_step(w, p, buffered).phases.update, params / 1e10, 1e-12);
}

TEST(StepModel, ChunkFollowsTheLayoutAsTheCommunicatorChoosesIt) {
  // As comm/hosts.h: 1 MiB messages within a node, 32 KiB once the workers span nodes; a chunk
  // the run set (dtrain train --chunk-kb) is kept.
  RunConfig c;
  c.workers = 4;
  EXPECT_EQ(chunk_bytes_of(c, test_profile(4)), comm::kDefaultChunkBytes);
  EXPECT_EQ(chunk_bytes_of(c, test_profile(2)), comm::kNetworkChunkBytes);
  c.chunk_bytes = 64 << 10;
  EXPECT_EQ(chunk_bytes_of(c, test_profile(2)), std::size_t{64} << 10);
  // The chunk reaches the allreduce: one-to-all's pipeline fill is one chunk.
  c.chunk_bytes = 0;
  c.algorithm = Algorithm::kOneToAll;
  const Workload w = params_first(4, 1 << 20);  // four 4 MiB gradients, a bucket each
  RunConfig small = c;
  small.chunk_bytes = 4 << 10;
  EXPECT_LT(predict_step(w, test_profile(2), small).comm_allreduce, predict_step(w, test_profile(2), c).comm_allreduce);
}

TEST(StepModel, OverlapNeverMakesAStepSlower) {
  const Workload w = spread(20);
  for (Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kButterfly, Algorithm::kOneToAll}) {
    for (int p : {2, 4, 16, 64}) {
      for (bool db : {false, true}) {
        for (double bucket_mb : {0.0, 0.25, 1.0, 25.0}) {
          RunConfig c;
          c.workers = p;
          c.algorithm = a;
          c.double_buffering = db;
          c.bucket_bytes = static_cast<std::size_t>(bucket_mb * (1 << 20));
          const StepPrediction s = predict_step(w, test_profile(4, 5e-6, 2e9, 1e10, 2e10), c);
          const double serial = s.compute + s.comm + s.phases.data;
          EXPECT_LE(s.step, serial * (1 + 1e-9)) << algorithm_name(a) << " p=" << p << " db=" << db;
          EXPECT_GE(s.step, std::max(db ? 0.0 : s.compute, s.comm) * (1 - 1e-9));
          EXPECT_GE(s.step, s.compute * (1 - 1e-9));
          EXPECT_NEAR(s.phases.total(), s.step, 1e-9 * s.step);
          if (db) {
            RunConfig plain = c;
            plain.double_buffering = false;
            EXPECT_LE(s.step, predict_step(w, test_profile(4, 5e-6, 2e9, 1e10, 2e10), plain).step * (1 + 1e-9));
          }
        }
      }
    }
  }
}

TEST(StepModel, F16HalvesTheBytesOnTheWire) {
  const Workload w = spread(10);
  for (Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kButterfly, Algorithm::kOneToAll}) {
    RunConfig c;
    c.workers = 8;
    c.algorithm = a;
    // Whole buckets as single messages, so that one-to-all's pipeline fill (one chunk) is a
    // bucket too and every term scales with the bytes.
    c.chunk_bytes = std::size_t{64} << 20;
    const Profile bandwidth_only = test_profile(1, 0.0, 1e9, 1e30);  // no latency, free reduction
    const double f32 = predict_step(w, bandwidth_only, c).comm_allreduce;
    c.comm_dtype = DType::kF16;
    EXPECT_NEAR(predict_step(w, bandwidth_only, c).comm_allreduce, f32 / 2, 1e-9 * f32) << algorithm_name(a);
    c.comm_dtype = DType::kBF16;
    EXPECT_NEAR(predict_step(w, bandwidth_only, c).comm_allreduce, f32 / 2, 1e-9 * f32) << algorithm_name(a);
  }
}

TEST(StepModel, DoubleBufferingHidesCommunicationBehindAStep) {
  const Workload w = spread(10);
  RunConfig c;
  c.workers = 16;
  c.algorithm = Algorithm::kRing;
  const Profile slow_net = test_profile(1, 1e-5, 1e7);
  const StepPrediction plain = predict_step(w, slow_net, c);
  c.double_buffering = true;
  const StepPrediction db = predict_step(w, slow_net, c);
  ASSERT_GT(plain.comm, plain.compute);  // communication-bound
  EXPECT_NEAR(db.step, std::max(db.compute, db.comm), 1e-6 * db.step);
  EXPECT_LT(db.step, plain.step);
  EXPECT_NE(plain.bottleneck.find("communication"), std::string::npos);
}

TEST(StepModel, AccumulationCommunicatesOncePerStep) {
  const Workload w = spread(10);
  RunConfig c;
  c.workers = 8;
  c.batch_per_worker = 64;
  const Profile p = test_profile(1, 1e-5, 5e8);
  const StepPrediction once = predict_step(w, p, c);
  c.accumulate = 4;
  const StepPrediction four = predict_step(w, p, c);
  EXPECT_DOUBLE_EQ(four.comm, once.comm);
  EXPECT_NEAR(four.phases.forward, once.phases.forward, 0.05 * once.phases.forward);
  // Per micro-batch, communication is a quarter of what a step of 16 samples pays.
  RunConfig small = c;
  small.accumulate = 1;
  small.batch_per_worker = 16;
  EXPECT_NEAR(four.comm / 4, predict_step(w, p, small).comm / 4, 1e-12);
  EXPECT_LE(four.phases.comm, once.phases.comm + 1e-12);  // overlaps only the last micro-batch's backward
}

TEST(StepModel, EveryMicroBatchAfterTheFirstAddsItsGradientsIntoTheStepsOnes) {
  const Workload w = spread(10);
  RunConfig c;
  c.batch_per_worker = 64;
  c.accumulate = 4;
  const Profile p = test_profile(1, 1e-5, 5e8);
  const StepPrediction four = predict_step(w, p, c);
  RunConfig one = c;
  one.accumulate = 1;
  one.batch_per_worker = 16;
  const double accumulation = gradient_accumulation_seconds(static_cast<double>(w.total_params()), p.device);
  EXPECT_GT(accumulation, 0.0);
  EXPECT_NEAR(four.phases.backward, 4 * predict_step(w, p, one).phases.backward + 3 * accumulation, 1e-12);
}

TEST(StepModel, BucketsStartWhenReadyAndInOrder) {
  RunConfig c;
  c.workers = 4;
  const StepPrediction s = predict_step(spread(12), test_profile(1, 1e-5, 1e9), c);
  ASSERT_GT(s.buckets.size(), 2u);
  for (std::size_t b = 0; b < s.buckets.size(); ++b) {
    EXPECT_GE(s.buckets[b].start + 1e-12, s.buckets[b].ready);
    if (b > 0) {
      EXPECT_GE(s.buckets[b].ready, s.buckets[b - 1].ready);
      EXPECT_GE(s.buckets[b].start + 1e-12, s.buckets[b - 1].end);
    }
  }
  double compute_end = 0;
  for (const TimelineEvent& e : s.timeline) {
    if (e.lane != "compute") continue;
    EXPECT_GE(e.start + 1e-12, compute_end) << e.name;  // one compute thread: no overlap
    compute_end = e.start + e.duration;
  }
  EXPECT_NEAR(compute_end, s.step, 1e-9);
}

TEST(StepModel, EfficiencyFallsAsWorkersGrow) {
  const Workload w = spread(16);
  const DatasetInfo data{"synthetic", 1 << 20, 1000, 1, 1, 1, 10, 100, ""};
  for (Algorithm a : {Algorithm::kRing, Algorithm::kButterfly, Algorithm::kOneToAll}) {
    double last_efficiency = 1.0 + 1e-12, last_epoch = 1e300;
    for (int p : {1, 2, 4, 8, 16, 32, 64}) {
      RunConfig c;
      c.workers = p;
      c.algorithm = a;
      const RunPrediction r = predict_run(w, data, test_profile(1, 2e-6, 5e9), c, 1);
      EXPECT_LE(r.efficiency, last_efficiency) << algorithm_name(a) << " p=" << p;
      if (a != Algorithm::kOneToAll) {
        EXPECT_LT(r.epoch_seconds, last_epoch) << algorithm_name(a) << " p=" << p;
      }
      last_efficiency = r.efficiency;
      last_epoch = r.epoch_seconds;
      if (p == 1) {
        EXPECT_DOUBLE_EQ(r.speedup, 1.0);
      }
    }
  }
}

TEST(StepModel, ShmWithF32CopiesEveryGradientIntoSharedMemory) {
  // Parameters of 2 MB: buckets of one parameter. Their f32 buffers must lie in shared memory
  // for shm, so they copy their gradient instead of adopting it (parallel/buckets.h): the copies
  // land on the compute thread, as for every other bucket. With f16 on the wire every gradient is
  // cast into the 16-bit buffer (the shared one for shm) with any algorithm, 3/4 of a copy's time.
  const Workload large = params_first(3, 500000);
  Profile fast = test_profile(8, 1e-6, 1e9, 1e12, 1e12);
  Profile slow = fast;
  slow.device.gradient_copy = testing::q(1e9);
  RunConfig c;
  c.workers = 2;
  auto compute_extra = [&](Algorithm a, DType dtype) {
    c.algorithm = a;
    c.comm_dtype = dtype;
    return predict_step(large, slow, c).compute - predict_step(large, fast, c).compute;
  };
  const double copies = 3 * 500000 * (4 / 1e9 - (4 / 1e12 + 4 / 1e12));
  EXPECT_NEAR(compute_extra(Algorithm::kShm, DType::kF32), copies, 1e-9);
  EXPECT_NEAR(compute_extra(Algorithm::kShm, DType::kF16), 0.75 * copies, 1e-9);
  EXPECT_NEAR(compute_extra(Algorithm::kRing, DType::kF16), 0.75 * copies, 1e-9);
  EXPECT_NEAR(compute_extra(Algorithm::kRing, DType::kF32), 0, 1e-12);
  // Buckets of many parameters copy with every algorithm alike (shm's ranks also split the
  // update: SharedWeightsSplitTheUpdate).
  const Workload small = params_first(12, 100000);
  c.comm_dtype = DType::kF32;
  c.algorithm = Algorithm::kShm;
  const double shm = predict_step(small, slow, c).compute;
  c.algorithm = Algorithm::kRing;
  const StepPrediction ring = predict_step(small, slow, c);
  EXPECT_NEAR(shm, ring.compute - ring.phases.update / 2, 1e-12);
}

TEST(StepModel, SharedWeightsSplitTheUpdate) {
  // With shm and without double buffering the ranks share one copy of the weights and each
  // updates 1/p of it (parallel/shared_weights.h); with double buffering every rank updates all.
  const Workload w = params_first(12, 100000);
  const Profile p = test_profile(8, 1e-6, 1e9, 1e12, 1e12);
  for (int workers : {2, 4}) {
    RunConfig c;
    c.workers = workers;
    c.algorithm = Algorithm::kRing;
    const double whole = predict_step(w, p, c).phases.update;
    ASSERT_GT(whole, 0);
    c.algorithm = Algorithm::kShm;
    EXPECT_NEAR(predict_step(w, p, c).phases.update, whole / workers, 1e-12) << workers;
    c.double_buffering = true;
    EXPECT_NEAR(predict_step(w, p, c).phases.update, whole, 1e-12) << workers;
  }
}

TEST(StepModel, LinearWeightsWrittenInPlaceAreNotCopied) {
  // mlp's weights are linear layers': backward writes their gradients into their slots (buckets.h),
  // so with shm and f32 only the biases are copied in; with accumulation every gradient is.
  const Workload w = describe_zoo_model("mlp", "mnist");
  std::int64_t biases = 0, all = 0;
  for (const ParameterInfo& q : w.params) {
    EXPECT_EQ(q.written_in_place, q.name.ends_with(".weight")) << q.name;
    EXPECT_EQ(q.written_in_wire, q.written_in_place) << q.name;
    biases += q.written_in_place ? 0 : q.numel;
    all += q.numel;
  }
  Profile fast = test_profile(8, 1e-6, 1e9, 1e12, 1e12);
  Profile slow = fast;
  slow.device.gradient_copy = testing::q(1e9);
  RunConfig c;
  c.workers = 2;
  c.algorithm = Algorithm::kShm;
  const auto compute_extra = [&] { return predict_step(w, slow, c).compute - predict_step(w, fast, c).compute; };
  const double per_element = 4 / 1e9 - (4 / 1e12 + 4 / 1e12);
  EXPECT_NEAR(compute_extra(), static_cast<double>(biases) * per_element, 1e-9);
  c.accumulate = 2;
  EXPECT_NEAR(compute_extra(), static_cast<double>(all) * per_element, 1e-9);

  // A 16-bit wire: every gradient is cast into it (6 bytes an element, 3/4 of a copy), except, in
  // a bf16 run with a bf16 wire, the linear weights, which leave their bf16 matmuls scaled in it
  // (and so would convolutions' weights).
  c.accumulate = 1;
  c.algorithm = Algorithm::kRing;
  const double cast = 0.75 * per_element;
  for (const DType wire : {DType::kF16, DType::kBF16}) {
    c.comm_dtype = wire;
    EXPECT_NEAR(compute_extra(), static_cast<double>(all) * cast, 1e-9) << dtype_name(wire);
  }
  fast.device.precision = slow.device.precision = "bf16";
  EXPECT_NEAR(compute_extra(), static_cast<double>(biases) * cast, 1e-9);
  c.comm_dtype = DType::kF16;
  EXPECT_NEAR(compute_extra(), static_cast<double>(all) * cast, 1e-9) << "no f16 matmul output";
}

TEST(StepModel, ABf16RunCastsOnlyItsBiasesIntoABf16Wire) {
  // lenet's convolutions' and linear layers' weights leave backward scaled in a bf16 wire in a
  // bf16 run (parallel/buckets.h); the convolutions' are not written into an f32 slot.
  const Workload w = describe_zoo_model("lenet", "mnist");
  std::int64_t biases = 0, all = 0, conv_weights = 0;
  for (const ParameterInfo& q : w.params) {
    EXPECT_EQ(q.written_in_wire, q.name.ends_with(".weight")) << q.name;
    biases += q.written_in_wire ? 0 : q.numel;
    conv_weights += q.written_in_wire && !q.written_in_place ? 1 : 0;
    all += q.numel;
  }
  EXPECT_EQ(conv_weights, 2);
  Profile fast = test_profile(8, 1e-6, 1e9, 1e12, 1e12);
  Profile slow = fast;
  slow.device.gradient_copy = testing::q(1e9);
  RunConfig c;
  c.workers = 2;
  c.comm_dtype = DType::kBF16;
  const auto compute_extra = [&] { return predict_step(w, slow, c).compute - predict_step(w, fast, c).compute; };
  const double cast = 0.75 * (4 / 1e9 - (4 / 1e12 + 4 / 1e12));
  EXPECT_NEAR(compute_extra(), static_cast<double>(all) * cast, 1e-9);
  fast.device.precision = slow.device.precision = "bf16";
  EXPECT_NEAR(compute_extra(), static_cast<double>(biases) * cast, 1e-9);
  c.accumulate = 2;
  EXPECT_NEAR(compute_extra(), static_cast<double>(all) * cast, 1e-9) << "accumulation: every gradient is cast";
}

TEST(ParameterServer, HashemiTotals) {
  const Profile p = test_profile(1, 1e-5, 1e9);
  const std::int64_t params = 1000000;
  const double compute = 0.1, n = 4e6;
  ServerPlan plan{16, 4, Sync::kBsp, DType::kF32};
  const ServerTime bsp = parameter_server_time(plan, params, compute, p);
  const double worker_send = 4 * 1e-5 + n / 1e9, server_send = 16 * (1e-5 + n / 4 / 1e9);
  EXPECT_DOUBLE_EQ(bsp.push, std::max(worker_send, server_send));
  // The server sums the 16 pushes of its shard (15 additions of 4 P / K bytes at 1e12 B/s) and
  // steps once (P / K parameters at 1e10 per second), as ps/server.cpp does.
  EXPECT_DOUBLE_EQ(bsp.server_update, 15 * 4.0 * params / 4 / 1e12 + params / 4.0 / 1e10);
  EXPECT_DOUBLE_EQ(bsp.step, compute + 2 * bsp.push + bsp.server_update);
  plan.sync = Sync::kAsp;
  const ServerTime asp = parameter_server_time(plan, params, compute, p);
  const double per_update = 2 * (1e-5 + n / 4 / 1e9) + params / 4.0 / 1e10;
  EXPECT_DOUBLE_EQ(asp.step, std::max(compute + 2 * worker_send, 16 * per_update));
  EXPECT_LE(asp.step, bsp.step);
  plan.sync = Sync::kSsp;
  EXPECT_DOUBLE_EQ(parameter_server_time(plan, params, compute, p).step, asp.step);
  plan.workers = 256;  // many workers: the servers bound the throughput
  plan.sync = Sync::kAsp;
  EXPECT_TRUE(parameter_server_time(plan, params, compute, p).servers_bound);
  plan.servers = 64;  // more shards relieve them
  EXPECT_LT(parameter_server_time(plan, params, compute, p).step,
            parameter_server_time({256, 4, Sync::kAsp}, params, compute, p).step);
}

TEST(StepModel, ParameterServerStep) {
  RunConfig c;
  c.workers = 8;
  c.exchange = Exchange::kParameterServer;
  c.servers = 2;
  const StepPrediction s = predict_step(spread(8), test_profile(1, 1e-5, 1e9), c);
  EXPECT_GT(s.phases.comm, 0);
  EXPECT_NEAR(s.phases.total(), s.step, 1e-9 * s.step);
  EXPECT_EQ(exchange_label(c), "ps-bsp x2");
}

// Layers of 100, 0 and 100 parameters, 1 s of backward each, run last to first: with 2 shards the
// second (the last layer's) is final after 1 s, the first after 3 s, at backward's end.
TEST(ParameterServer, ShardsPushedAsBackwardFinishesThem) {
  const std::vector<std::int64_t> params{100, 0, 100};
  const std::vector<double> backward{1, 1, 1};
  EXPECT_DOUBLE_EQ(pushes_during_backward(params, backward, 2, 4), 2);    // 1 + 2, then 3 + 2: 2 s exposed
  EXPECT_DOUBLE_EQ(pushes_during_backward(params, backward, 2, 1), 0.5);  // only the last shard's 0.5 s shows
  EXPECT_DOUBLE_EQ(pushes_during_backward(params, backward, 1, 4), 0);    // one shard: final at the end
  // Each shard's pull asked for with its push: shard 1 pushed 1..3, answered at 4, pulled 4..5
  // while shard 0 is pushed 3..5 (answered 6, pulled 6..7): a tail of 4 s, not 2 + 1 + 2.
  EXPECT_DOUBLE_EQ(pulls_during_backward(params, backward, 2, 4, 1, 2), 1);
  // Shard 1's 0.5 s pull ends at 2, inside backward; shard 0's is the tail.
  EXPECT_DOUBLE_EQ(pulls_during_backward(params, backward, 2, 1, 0, 1), 0.5);
  EXPECT_DOUBLE_EQ(pulls_during_backward(params, backward, 1, 4, 1, 2), 0);
  RunConfig c;
  c.workers = 2;
  c.exchange = Exchange::kParameterServer;
  c.servers = 4;
  const Workload w = spread(8);
  const StepPrediction early = predict_step(w, test_profile(1, 1e-5, 1e9), c);
  EXPECT_NEAR(early.phases.total(), early.step, 1e-9 * early.step);
  c.accumulate = 2;  // every shard waits for the last micro-batch
  c.batch_per_worker = 64;
  const StepPrediction late = predict_step(w, test_profile(1, 1e-5, 1e9), c);
  EXPECT_GT(late.phases.comm, early.phases.comm);
}

// Calibrated with 4 ranks on 2 CPUs (each rank half a CPU); the servers of a run wait blocked.
TEST(StepModel, ParameterServerWorkersShareTheCpusTheServersLeave) {
  Profile p = test_profile(1, 1e-5, 1e9);
  p.node.accelerators = 4;
  p.node.cores = Quantity{2, 0, 0, "test"};
  const double calibrated = 0.2;
  const auto bsp3 = worker_compute_on_cores(p, 3, Sync::kBsp, calibrated);
  EXPECT_DOUBLE_EQ(bsp3.alone, 0.1);
  EXPECT_DOUBLE_EQ(bsp3.shared, 0.2);  // two of the three share a CPU: the step waits for them
  EXPECT_TRUE(bsp3.turns());
  EXPECT_DOUBLE_EQ(worker_compute_on_cores(p, 3, Sync::kSsp, calibrated).shared, 0.2);
  EXPECT_DOUBLE_EQ(worker_compute_on_cores(p, 3, Sync::kAsp, calibrated).shared, 0.15);  // 3 steps on 2 CPUs
  const auto bsp2 = worker_compute_on_cores(p, 2, Sync::kBsp, calibrated);
  EXPECT_DOUBLE_EQ(bsp2.shared, 0.1);  // a CPU each: the compute of a CPU alone
  EXPECT_FALSE(bsp2.turns());
  const auto all4 = worker_compute_on_cores(p, 4, Sync::kBsp, calibrated);  // as calibrated: its turn-taking
  EXPECT_TRUE(all4.as_calibrated);
  EXPECT_DOUBLE_EQ(all4.shared, calibrated);
  EXPECT_FALSE(all4.turns());
  p.node.cores.reset();  // CPUs unknown: the calibrated compute as it is
  EXPECT_DOUBLE_EQ(worker_compute_on_cores(p, 3, Sync::kBsp, calibrated).shared, calibrated);

  // A persistent 2x straggler sleeps half its step: with 3 workers on 2 CPUs the CPUs it frees
  // keep BSP's step as it was; with 2 workers on 2 CPUs the step doubles.
  p.node.cores = Quantity{2, 0, 0, "test"};
  const Workload w = spread(8);
  RunConfig c;
  c.exchange = Exchange::kParameterServer;
  c.servers = 1;
  for (int workers : {2, 3}) {
    c.workers = workers;
    c.slowdown = {};
    const StepPrediction even = predict_step(w, p, c);
    c.slowdown.straggler = WorkerSpeeds::Straggler::kPersistent;
    c.slowdown.factor = 2;
    const StepPrediction slowed = predict_step(w, p, c);
    if (workers == 3) {
      EXPECT_NEAR(slowed.step, even.step, 1e-12 * even.step);
    } else {
      EXPECT_NEAR(slowed.step - even.step, even.compute, 1e-9 * even.step);
    }
    EXPECT_NEAR(slowed.phases.total(), slowed.step, 1e-9 * slowed.step);
  }
  // Allreduce on 3 ranks calibrated on 2 CPUs: a 2x straggler's chain is 2 x 2/3 of the
  // calibrated compute on a CPU of its own, past the calibrated turns by 1/3 of it.
  p.node.accelerators = 3;
  c = RunConfig{};
  c.workers = 3;
  const StepPrediction even = predict_step(w, p, c);
  ASSERT_TRUE(even.turns);
  c.slowdown.straggler = WorkerSpeeds::Straggler::kPersistent;
  c.slowdown.factor = 2;
  const StepPrediction slowed = predict_step(w, p, c);
  EXPECT_NEAR(slowed.straggler, std::max(even.straggler, 2 * even.compute * 2 / 3 - even.compute), 1e-9 * even.step);
}

TEST(StepModel, InvalidConfigurationsAreNamed) {
  auto message = [](RunConfig c) {
    try {
      validate(c);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  RunConfig c;
  c.workers = 0;
  EXPECT_EQ(message(c), "workers must be >= 1, got 0");
  c = RunConfig{};
  c.batch_per_worker = 30;
  c.accumulate = 4;
  EXPECT_NE(message(c).find("--accumulate 4 must divide the per-worker batch 30"), std::string::npos);
  c = RunConfig{};
  c.sync = Sync::kAsp;
  EXPECT_NE(message(c).find("--sync asp applies to the parameter server only; use --allreduce ps"), std::string::npos);
  c = RunConfig{};
  c.exchange = Exchange::kParameterServer;
  c.double_buffering = true;
  EXPECT_NE(message(c).find("--double-buffering applies to allreduce"), std::string::npos);
  EXPECT_THROW(parse_sync("eventual"), InputError);
}

}  // namespace
TEST(AllreduceTime, ShmAcrossNodesIsAnInputError) {
  Profile p = test_profile(8);
  p.shm_allreduce = MeasuredAllreduce{16, {{1000, 1e-6}}, "test", std::nullopt};
  for (bool hierarchical : {false, true}) {
    AllreducePlan plan{Algorithm::kShm, 16, hierarchical};
    try {
      allreduce_time(plan, 1000, p);
      FAIL() << "shm over two nodes";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--allreduce shm needs every worker on one host, but 16 workers need 2 "
                                           "nodes of 8 accelerator(s)"),
                std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("choose another algorithm"), std::string::npos) << e.what();
    }
  }
  RunConfig c;
  c.workers = 2;
  c.algorithm = Algorithm::kShm;
  EXPECT_THROW(predict_step(params_first(2, 1000), test_profile(1), c), InputError);
  EXPECT_GT(predict_step(params_first(2, 1000), test_profile(2), c).step, 0);
}

}  // namespace dtrain::perf
