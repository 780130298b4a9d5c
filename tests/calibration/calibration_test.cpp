// dtrain calibrate: the profile it writes loads, validates and says where every number comes from;
// the roofline rate it solves for reproduces its measurements; the optional overlap part of the
// schema is checked like the rest.
#include "calibration/calibration.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "calibration/calibrate_compute.h"
#include "comm/local_transport.h"
#include "core/error.h"
#include "nn/models/models.h"
#include "perfmodel/allreduce_time.h"
#include "perfmodel/layer_trace.h"
#include "perfmodel/perfmodel_test_util.h"
#include "perfmodel/step_model.h"
#include "perfmodel/straggler.h"
#include "tensor/kernels/cpu/compute_precision.h"

namespace dtrain::perf {
namespace {

int run_command(const std::string& cmd, std::string* output) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p) != nullptr) *output += buf.data();
  const int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void expect_calibrated(const Quantity& q, const std::string& what) {
  EXPECT_GT(q.value, 0) << what;
  EXPECT_EQ(q.source.rfind("calibrated on ", 0), 0u) << what << ": " << q.source;
  EXPECT_NE(q.source.find(" by dtrain calibrate"), std::string::npos) << what << ": " << q.source;
}

TEST(Calibrate, OneProcessWritesAProfileThatLoadsAndValidates) {
  const auto path = std::filesystem::temp_directory_path() / "dtrain_calibrate_test.json";
  std::string out;
  const int rc = run_command(
      std::string(DTRAIN_BINARY) + " calibrate --models mlp --batch 8 --min-seconds 0.002 -o " + path.string(), &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("conv2d"), std::string::npos) << out;  // kinds mlp lacks come from the default models
  const Profile p = load_profile(path.string());
  for (std::size_t k = 0; k < kComputeKinds.size(); ++k) {
    expect_calibrated(p.device.compute[k], "compute");
    // mlp's kinds from its layers inside its own steps; the kinds it lacks from the default models'
    // shapes, each timed alone in passes (3 by default), its median pass kept.
    const bool in_mlp = kComputeKinds[k] == "linear" || kComputeKinds[k] == "elementwise";
    EXPECT_NE(p.device.compute[k].source.find(in_mlp ? "of mlp at batch 8, each timed inside the model's own training"
                                                     : "its median of 3 timed pass(es)"),
              std::string::npos)
        << p.device.compute[k].source;
  }
  EXPECT_NE(out.find("layers in the model's steps)"), std::string::npos) << out;
  EXPECT_NE(out.find("shapes timed alone"), std::string::npos) << out;
  expect_calibrated(p.device.memory_read, "memory_read");
  expect_calibrated(p.device.memory_write, "memory_write");
  expect_calibrated(p.device.update, "update");
  expect_calibrated(p.device.reduce, "reduce");
  expect_calibrated(p.node.disk_read, "disk_read");
  expect_calibrated(p.node.intra_link.bandwidth, "intra bandwidth");
  // The casts to 16 bits and back, timed; one process reduces nothing, so no 16-bit sums.
  for (const auto* r : {&p.device.cast_f16, &p.device.cast_bf16}) {
    ASSERT_TRUE(r->has_value());
    expect_calibrated(**r, "16-bit cast");
  }
  EXPECT_FALSE(p.device.reduce_f16.has_value());
  EXPECT_NE(out.find("16-bit casts    f16 "), std::string::npos) << out;
  // The step variation from repeated compute steps: a fraction, with how it was measured.
  ASSERT_TRUE(p.device.step_variation.has_value());
  EXPECT_GE(p.device.variation(), 0);
  EXPECT_LT(p.device.variation(), 1);
  EXPECT_NE(p.device.step_variation->source.find("compute steps per rank timed one by one"), std::string::npos)
      << p.device.step_variation->source;
  EXPECT_NE(out.find("step variation"), std::string::npos) << out;
  EXPECT_EQ(p.node.accelerators, 1);
  EXPECT_FALSE(p.network.has_value());       // one process: no link between hosts measured
  EXPECT_FALSE(p.node.overlap.has_value());  // nor an overlap of communication
  // The same schema and version as the spec-sheet profiles: it predicts like them.
  RunConfig c;
  c.batch_per_worker = 16;
  EXPECT_GT(predict_step(describe_zoo_model("mlp", "fashion-mnist"), p, c).step, 0);
  std::filesystem::remove(path);
}

// --precision bf16 also times the convolutions and linear layers in bf16: device.precisions.bf16,
// with 4-byte activations (dtrain's bf16 runs keep the ReLUs' outputs alone in bf16), which
// predict --precision bf16 then prices.
TEST(Calibrate, Bf16RatesGoIntoTheProfilesPrecisions) {
  const auto path = std::filesystem::temp_directory_path() / "dtrain_calibrate_bf16_test.json";
  std::string out;
  const int rc =
      run_command(std::string(DTRAIN_BINARY) +
                      " calibrate --models lenet --batch 8 --min-seconds 0.002 --precision bf16 -o " + path.string(),
                  &out);
  if (!cpu_has_bf16()) {  // named, and nothing written
    EXPECT_NE(rc, 0);
    EXPECT_NE(out.find("lacks the bf16 dot-product instructions"), std::string::npos) << out;
    return;
  }
  ASSERT_EQ(rc, 0) << out;
  const Profile p = load_profile(path.string());
  ASSERT_EQ(p.device.precisions.size(), 1u);
  EXPECT_EQ(p.device.precisions[0].first, "bf16");
  expect_calibrated(p.device.precisions[0].second.conv2d, "bf16 conv2d");
  expect_calibrated(p.device.precisions[0].second.linear, "bf16 linear");
  ASSERT_TRUE(p.device.precisions[0].second.activation_bytes.has_value());
  ASSERT_TRUE(p.device.precisions[0].second.gradient_bytes.has_value());
  EXPECT_EQ(at_precision(p.device, p.name, "bf16").activation_element_bytes, 2);
  EXPECT_EQ(at_precision(p.device, p.name, "bf16").gradient_element_bytes, 4);
  // The memory-bound kinds timed on bf16 activations too.
  ASSERT_EQ(p.device.precisions[0].second.other_kinds.size(), 3u);
  for (const auto& [kind, rate] : p.device.precisions[0].second.other_kinds) expect_calibrated(rate, "bf16 " + kind);
  std::filesystem::remove(path);
}

TEST(Calibrate, BadFlagsNameTheProblem) {
  std::string out;
  EXPECT_EQ(run_command(std::string(DTRAIN_BINARY) + " calibrate --models vgg", &out), 2);
  EXPECT_NE(out.find("unknown model 'vgg' in --models; valid:"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(run_command(std::string(DTRAIN_BINARY) + " calibrate --min-seconds 0", &out), 2);
  EXPECT_NE(out.find("--min-seconds must be > 0"), std::string::npos) << out;
  out.clear();
  EXPECT_NE(run_command(std::string(DTRAIN_BINARY) + " calibrate --rounds 0", &out), 0);
  EXPECT_NE(out.find("--rounds: Value 0 not in range 1 to 100"), std::string::npos) << out;
}

Calibration synthetic_calibration() {
  Calibration c;
  c.ranks = 4;
  c.threads = 1;
  c.host = "hostA";
  c.date = "2026-01-01T00:00Z";
  c.options.device.models = {"mlp"};
  c.device.memory_read = 2e10;
  c.device.memory_write = 1e10;
  c.device.compute.fill(5e10);
  c.device.shapes.fill(2);
  c.device.update = 1e9;
  c.device.disk_read = 1e9;
  c.device.stream_bytes = 8 << 20;
  c.transport.host_of = {0, 0, 1, 1};
  c.transport.host_names = {"hostA", "hostB"};
  c.transport.ranks_per_host = 2;
  c.transport.reduce = 3e10;
  c.transport.reduce_f16 = 1e10;
  c.transport.reduce_bf16 = 8e9;
  c.device.cast_f16 = 4e9;
  c.device.cast_bf16 = 3e9;
  c.transport.same_host = {true,
                           2e-6,
                           5e9,
                           6e9,
                           1 << 20,
                           2,
                           "2 same-host pair(s) side by side",
                           {{64 << 10, 8e-6}, {256 << 10, 2.5e-5}, {1 << 20, 1.5e-4}},
                           {{64 << 10, 6e-6}, {256 << 10, 2e-5}, {1 << 20, 1e-4}},
                           0,
                           ""};
  c.transport.across_hosts = {true, 3e-5, 1.2e7, 1.5e7, 1 << 20, 1, "ranks 0 and 2", {}, {}, 262144, "after idling"};
  c.overlap = {true, 0.6, 0.3, 1e-3, "test"};
  c.device.step_seconds = {0.10, 0.11, 0.10, 0.12};
  c.device.step_variation = 0.03;
  return c;
}

TEST(Calibrate, ProfileOfAMultiHostCalibrationHasEveryPart) {
  const Profile p = calibrated_profile(synthetic_calibration());
  EXPECT_EQ(p.name, "calibrated-hostA");
  EXPECT_EQ(p.node.accelerators, 2);
  ASSERT_TRUE(p.network.has_value());
  EXPECT_DOUBLE_EQ(p.network->latency.value, 3e-5);
  EXPECT_DOUBLE_EQ(p.network->bandwidth.value, 1.2e7);
  EXPECT_DOUBLE_EQ(p.node.intra_link.bandwidth.value, 5e9);
  ASSERT_TRUE(p.node.overlap.has_value());
  EXPECT_DOUBLE_EQ(p.node.overlap->compute.value, 0.6);
  EXPECT_DOUBLE_EQ(p.node.overlap->comm.value, 0.3);
  expect_calibrated(p.network->bandwidth, "network");
  expect_calibrated(p.node.overlap->comm, "overlap");
  // Written and read back through the schema, unchanged.
  const ProfileFragment back = parse_profile_fragment(profile_to_json(p), "round trip");
  ASSERT_TRUE(back.node && back.node->overlap && back.network);
  EXPECT_DOUBLE_EQ(back.node->overlap->compute.value, 0.6);
  EXPECT_DOUBLE_EQ(back.network->latency.value, 3e-5);
  ASSERT_TRUE(back.network->one_way_bandwidth.has_value());
  EXPECT_DOUBLE_EQ(back.network->one_way(), 1.5e7);
  EXPECT_DOUBLE_EQ(back.node->intra_link.one_way(), 6e9);
  // The network's burst allowance, calibrated across hosts only.
  ASSERT_TRUE(back.network->burst.has_value());
  EXPECT_DOUBLE_EQ(back.network->burst_bytes(), 262144);
  expect_calibrated(*back.network->burst, "burst");
  EXPECT_FALSE(back.node->intra_link.burst.has_value());
  // The same-host exchange ladder, and none across hosts (a shaped link's burst would pass as speed).
  ASSERT_TRUE(back.node->intra_link.exchange_ladder.has_value());
  const auto& ladder = back.node->intra_link.exchange_ladder->points;
  ASSERT_EQ(ladder.size(), 3u);
  EXPECT_DOUBLE_EQ(ladder[1].first, 256 << 10);
  EXPECT_DOUBLE_EQ(ladder[1].second, 2.5e-5);
  EXPECT_NE(back.node->intra_link.exchange_ladder->source.find("calibrated on"), std::string::npos);
  EXPECT_EQ(back.node->intra_link.exchange_ladder->pairs, 2);  // and the first pair alone:
  ASSERT_EQ(back.node->intra_link.exchange_ladder->one_pair.size(), 3u);
  EXPECT_DOUBLE_EQ(back.node->intra_link.exchange_ladder->one_pair[2].second, 1e-4);
  EXPECT_FALSE(back.network->exchange_ladder.has_value());
  EXPECT_DOUBLE_EQ(back.device->variation(), 0.03);
  EXPECT_DOUBLE_EQ(back.device->reduce_seconds_per_byte(DType::kF16), 1 / 1e10);
  EXPECT_DOUBLE_EQ(back.device->reduce_seconds_per_byte(DType::kBF16), 1 / 8e9);
  EXPECT_DOUBLE_EQ(back.device->cast(DType::kBF16)->value, 3e9);
  expect_calibrated(*back.device->cast_f16, "f16 cast");
  expect_calibrated(*back.device->step_variation, "step variation");
  EXPECT_EQ(back.device->compute[0].source, p.device.compute[0].source);
  const std::string text = format_calibration(synthetic_calibration(), false);
  EXPECT_NE(text.find("across hosts"), std::string::npos) << text;
  EXPECT_NE(text.find("overlap"), std::string::npos) << text;
  EXPECT_NE(text.find("exchange ladder 64 KiB"), std::string::npos) << text;
  EXPECT_NE(text.find("one pair      64 KiB"), std::string::npos) << text;
  EXPECT_NE(text.find("step variation  3.0% (standard deviation / mean of 4 compute steps"), std::string::npos) << text;
}

TEST(Calibrate, LockstepStepsGiveTheVariationAndSayWhatTheUnsynchronisedOnesGave) {
  Calibration c = synthetic_calibration();
  c.free_variation = 0.12;
  c.lockstep_variation = 0.03;
  c.lockstep_steps = 24;
  const Profile p = calibrated_profile(c);
  ASSERT_TRUE(p.device.step_variation.has_value());
  EXPECT_DOUBLE_EQ(p.device.step_variation->value, 0.03);
  expect_calibrated(*p.device.step_variation, "step variation");
  EXPECT_NE(p.device.step_variation->source.find("24 compute steps per rank"), std::string::npos)
      << p.device.step_variation->source;
  EXPECT_NE(p.device.step_variation->source.find("each step after a barrier"), std::string::npos);
  EXPECT_NE(p.device.step_variation->source.find("0.1200 from unsynchronised steps"), std::string::npos);
  const std::string text = format_calibration(c, false);
  EXPECT_NE(text.find("step variation  3.0% (the ranks' own: compute steps of about 105.0 ms in lockstep; 12.0% with "
                      "what slowed every rank alike)"),
            std::string::npos)
      << text;
}

TEST(Calibrate, ShmTimesOfOneHostBecomeTheProfilesShmAllreduce) {
  // Two hosts: shm was not measured, and the profile has none.
  EXPECT_FALSE(calibrated_profile(synthetic_calibration()).shm_allreduce.has_value());
  Calibration c = synthetic_calibration();
  c.ranks = 2;
  c.transport.host_of = {0, 0};
  c.transport.host_names = {"hostA"};
  c.transport.across_hosts = {};
  c.transport.shm_allreduce = {{4 << 10, 3e-6}, {8 << 10, 4e-6}, {16 << 10, 6e-6}};
  const Profile p = calibrated_profile(c);
  const ProfileFragment back = parse_profile_fragment(profile_to_json(p), "round trip");
  ASSERT_TRUE(back.shm_allreduce.has_value());
  EXPECT_FALSE(back.mpi_allreduce.has_value());
  EXPECT_EQ(back.shm_allreduce->workers, 2);
  ASSERT_EQ(back.shm_allreduce->points.size(), 3u);
  EXPECT_DOUBLE_EQ(back.shm_allreduce->points[2].first, 16 << 10);
  EXPECT_DOUBLE_EQ(back.shm_allreduce->points[2].second, 6e-6);
  EXPECT_EQ(back.shm_allreduce->source.rfind("calibrated on hostA", 0), 0u) << back.shm_allreduce->source;
  EXPECT_NE(back.shm_allreduce->source.find("shm allreduce of f32 over the 2 rank(s)"), std::string::npos)
      << back.shm_allreduce->source;
  const std::string text = format_calibration(c, false);
  EXPECT_NE(text.find("  shm allreduce   4 KiB 3"), std::string::npos) << text;
  EXPECT_EQ(text.find("MPI_Allreduce"), std::string::npos) << text;
  // The model reads it for shm at that worker count.
  AllreducePlan shm{comm::Algorithm::kShm, 2};
  EXPECT_DOUBLE_EQ(allreduce_time(shm, 2048, p).seconds, 4e-6);  // 8 KiB of f32
}

TEST(Calibrate, OverlapBesideMpiAllreduceGoesWithItsTimes) {
  Calibration c = synthetic_calibration();
  c.transport.mpi_allreduce = {{4 << 10, 3e-5}, {8 << 10, 4e-5}};
  EXPECT_FALSE(calibrated_profile(c).mpi_allreduce->overlap.has_value());  // not measured: none
  c.mpi_overlap = {true, 0.66, 0.48, 9e-3, "every rank handing one 1 MiB MPI_Allreduce at a time"};
  const Profile p = calibrated_profile(c);
  const ProfileFragment back = parse_profile_fragment(profile_to_json(p), "round trip");
  ASSERT_TRUE(back.mpi_allreduce && back.mpi_allreduce->overlap);
  EXPECT_DOUBLE_EQ(back.mpi_allreduce->overlap->compute.value, 0.66);
  EXPECT_DOUBLE_EQ(back.mpi_allreduce->overlap->comm.value, 0.48);
  expect_calibrated(back.mpi_allreduce->overlap->compute, "MPI overlap");
  EXPECT_NE(back.mpi_allreduce->overlap->comm.source.find("MPI_Allreduce rate kept"), std::string::npos)
      << back.mpi_allreduce->overlap->comm.source;
  EXPECT_DOUBLE_EQ(back.node->overlap->compute.value, 0.6);  // the node's own, unchanged
  const std::string text = format_calibration(c, false);
  EXPECT_NE(text.find("overlap (MPI)   compute keeps 66% of its rate beside MPI_Allreduce, MPI_Allreduce 48%"),
            std::string::npos)
      << text;
}

// Two ranks of one host on one CPU, whose compute steps alternate between the CPU alone (2 ms)
// and half of it (5 ms), as ranks that take turns see theirs.
Calibration time_shared_calibration() {
  Calibration c = synthetic_calibration();
  c.ranks = 2;
  c.host_cores = 1;
  c.transport.host_of = {0, 0};
  c.transport.host_names = {"hostA"};
  c.transport.across_hosts = {};
  c.transport.ranks_per_host = 2;
  c.device.step_seconds = {0.002, 0.005, 0.002, 0.005};
  // One block: 3/4 of pairs hold a 5 ms step.
  set_turns(c, {0.0035}, {expected_slowest(c.device.step_seconds, 2)});
  return c;
}

TEST(Calibrate, TurnsAreTheWaitForTheSlowestOfTheRanksSteps) {
  const Calibration c = time_shared_calibration();
  ASSERT_DOUBLE_EQ(c.steps_slowest, 0.25 * 0.002 + 0.75 * 0.005);
  const Profile p = calibrated_profile(c);
  ASSERT_TRUE(p.node.turn_taking.has_value());
  EXPECT_NEAR(p.node.turn_taking->value, 0.00425 / 0.0035 - 1, 1e-12);
  EXPECT_DOUBLE_EQ(turn_taking(c), p.node.turn_taking->value);
  EXPECT_NE(p.node.turn_taking->source.find("the expected slowest of 2 ranks' steps (E[max of 2 draws] of each "
                                            "rank's steps) against their mean, minus 1; the median of the blocks "
                                            "(+21.4%); 4.2 ms expected against 3.5 ms"),
            std::string::npos)
      << p.node.turn_taking->source;
  EXPECT_FALSE(p.node.turn_taking_shm.has_value()) << "shm takes the same turns";
  const std::string text = format_calibration(c, false);
  EXPECT_NE(text.find("taking turns    +21.4%: a synchronous step waits for the slowest of 2 ranks' compute steps, "
                      "4.2 ms expected against 3.5 ms in the mean (the median of 1 block(s): +21.4%)"),
            std::string::npos)
      << text;
  // A CPU per rank: no turns (the straggler wait of the variation stands instead).
  Calibration own_cpus = c;
  own_cpus.host_cores = 2;
  EXPECT_FALSE(calibrated_profile(own_cpus).node.turn_taking.has_value());
  EXPECT_EQ(format_calibration(own_cpus, false).find("taking turns"), std::string::npos);
}

TEST(Calibrate, TurnsAreTheMedianBlocksSoOneSlowMomentIsNotTheEstimate) {
  Calibration c = time_shared_calibration();
  // Four blocks of 4 ms steps; the third met a rank preempted for a while (4.4.. 8 ms slowest).
  set_turns(c, {0.004, 0.004, 0.004, 0.004}, {0.0044, 0.0046, 0.008, 0.0045});
  ASSERT_EQ(c.turn_blocks.size(), 4u);
  EXPECT_NEAR(c.turn_blocks[2], 1.0, 1e-12);
  EXPECT_NEAR(turn_taking(c), (0.125 + 0.15) / 2, 1e-12);  // the median, not the mean (0.34)
  EXPECT_DOUBLE_EQ(c.steps_alone, 0.004);
  EXPECT_NE(format_calibration(c, false).find("(the median of 4 block(s): +10.0%, +15.0%, +100.0%, +12.5%)"),
            std::string::npos)
      << format_calibration(c, false);
  // A block slower on average than its slowest steps' estimate cannot give negative turns.
  set_turns(c, {0.004, 0.005}, {0.0038, 0.005});
  EXPECT_EQ(c.turn_blocks, (std::vector<double>{0.0, 0.0}));
  EXPECT_THROW(set_turns(c, {0.004}, {}), std::exception);
  EXPECT_THROW(set_turns(c, {}, {}), std::exception);
}

TEST(Calibrate, AllreduceLadderDropsStalledSizes) {
  // The calibration of 2026-11-25 00:57 over 1 Gbit/s: 512 KiB stalled (9.6 ms, as long as
  // 1 MiB); 4 KiB slower than 8 KiB; a protocol step up at 2 MiB that every larger size keeps.
  std::vector<std::pair<std::size_t, double>> ladder{{4 << 10, 70e-6},    {8 << 10, 45e-6},  {256 << 10, 2.1e-3},
                                                     {512 << 10, 9.6e-3}, {1 << 20, 9.6e-3}, {2 << 20, 26e-3},
                                                     {4 << 20, 52e-3}};
  drop_stalled_sizes(ladder);
  EXPECT_DOUBLE_EQ(ladder[0].second, 45e-6);  // no slower than 8 KiB
  EXPECT_DOUBLE_EQ(ladder[1].second, 45e-6);
  EXPECT_DOUBLE_EQ(ladder[2].second, 2.1e-3);
  EXPECT_NEAR(ladder[3].second, 2.1e-3 + (9.6e-3 - 2.1e-3) / 3, 1e-12);  // the chord of 256 KiB and 1 MiB
  EXPECT_DOUBLE_EQ(ladder[4].second, 9.6e-3);
  EXPECT_DOUBLE_EQ(ladder[5].second, 26e-3);  // within 1.5x of its chord (23.3 ms): kept
  EXPECT_DOUBLE_EQ(ladder[6].second, 52e-3);
  std::vector<std::pair<std::size_t, double>> empty, one{{4 << 10, 1e-5}};
  drop_stalled_sizes(empty);
  drop_stalled_sizes(one);
  EXPECT_TRUE(empty.empty());
  EXPECT_DOUBLE_EQ(one[0].second, 1e-5);
}

TEST(Calibrate, ShmLadderRunsWhereTheRanksShareMemory) {
  // Local ranks are threads of one process: they share memory. The ladder starts at 4 KiB and
  // doubles, and every rank gets the same times.
  std::vector<std::vector<std::pair<std::size_t, double>>> ladders(2);
  comm::run_local(
      2, [&](comm::Communicator& c) { ladders[static_cast<std::size_t>(c.rank())] = time_shm_allreduce(c, 0.01); });
  const auto& l = ladders[0];
  ASSERT_GE(l.size(), 2u);
  EXPECT_EQ(l.front().first, std::size_t{4} << 10);
  for (std::size_t i = 1; i < l.size(); ++i) EXPECT_EQ(l[i].first, 2 * l[i - 1].first);
  EXPECT_LE(l.back().first, std::size_t{64} << 20);
  for (const auto& [bytes, seconds] : l) EXPECT_GT(seconds, 0) << bytes;
  EXPECT_EQ(ladders[1], l);
  // One rank: nothing to time.
  comm::run_local(1, [&](comm::Communicator& c) { EXPECT_TRUE(time_shm_allreduce(c, 0.01).empty()); });
}

TEST(Calibrate, OverlapFractionsAreCheckedLikeEveryField) {
  nlohmann::json j = profile_to_json(calibrated_profile(synthetic_calibration()));
  j["node"]["overlap"]["compute"]["value"] = 1.5;
  EXPECT_THROW(parse_profile_fragment(j, "t.json"), DataError);
  try {
    parse_profile_fragment(j, "t.json");
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("'node.overlap.compute' is 1.5; it must be in (0, 1]"), std::string::npos)
        << e.what();
  }
  j["node"]["overlap"].erase("compute");
  j["node"]["overlap"]["commm"] = {{"value", 0.5}, {"source", "x"}};
  try {
    parse_profile_fragment(j, "t.json");
    FAIL() << "accepted an unknown field";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown field 'node.overlap.commm'"), std::string::npos) << e.what();
  }
}

TEST(Calibrate, EveryAllreducePaysTheExchangeRate) {
  // Two workers on two nodes: the network carries everything. Every algorithm keeps both
  // directions busy (the tree's reduce and broadcast are pipelined), so a faster one-way rate
  // changes none of them.
  Profile two_way = testing::test_profile(1, 1e-6, 1e8);
  Profile faster_one_way = two_way;
  faster_one_way.network->one_way_bandwidth = testing::q(2e8);
  const std::size_t count = 1 << 20;  // 4 MiB of f32
  for (comm::Algorithm a : comm::all_algorithms()) {
    // mpi is priced by its estimate; shm sends no messages and needs every worker on one node.
    if (a == comm::Algorithm::kMpi || a == comm::Algorithm::kShm) continue;
    const AllreducePlan plan{a, 2};
    EXPECT_DOUBLE_EQ(allreduce_time(plan, count, faster_one_way).seconds, allreduce_time(plan, count, two_way).seconds)
        << comm::algorithm_name(a);
  }
}

TEST(Calibrate, PipelinedTreeOnTwoNodesCostsTheVectorOncePlusAChunk) {
  // p = 2, L = 1: 2 alpha + (n + chunk) beta + n gamma, where the two-phase tree paid 2 n beta.
  const Profile profile = testing::test_profile(1, 1e-6, 1e8, 1e10);
  const std::size_t count = 1 << 20;
  const double n = 4.0 * count, chunk = 32 << 10;
  AllreducePlan tree{comm::Algorithm::kTree, 2};
  tree.chunk_bytes = 32 << 10;
  EXPECT_NEAR(allreduce_time(tree, count, profile).seconds, 2e-6 + (n + chunk) / 1e8 + n / 1e10, 1e-9);
  // As fast as the ring there, but for the ring's half-size reductions.
  AllreducePlan ring = tree;
  ring.algorithm = comm::Algorithm::kRing;
  EXPECT_NEAR(allreduce_time(tree, count, profile).seconds, allreduce_time(ring, count, profile).seconds,
              0.02 * allreduce_time(ring, count, profile).seconds);
}

TEST(Calibrate, RooflineRateReproducesTheMeasuredTotal) {
  // Arithmetic binds every shape: the rate is FLOPs over seconds.
  std::vector<ShapeTiming> arithmetic{{"conv2d", "a", 2e9, 0.02, 0.001}, {"conv2d", "b", 1e9, 0.01, 0.002}};
  EXPECT_NEAR(solve_roofline_rate(arithmetic), 1e11, 1e2);
  // One shape memory-bound: sum max(F/r, M) equals the measured total at the solved rate.
  std::vector<ShapeTiming> mixed{{"relu", "a", 1e6, 0.004, 0.003}, {"relu", "b", 4e6, 0.002, 0.0005}};
  const double r = solve_roofline_rate(mixed);
  double total = 0;
  for (const ShapeTiming& t : mixed) total += std::max(t.flops / r, t.memory_seconds);
  EXPECT_NEAR(total, 0.006, 1e-9);
  // Memory alone exceeds the measurement: FLOPs over seconds (the memory roof then decides).
  std::vector<ShapeTiming> memory{{"relu", "a", 1e6, 0.001, 0.002}};
  EXPECT_NEAR(solve_roofline_rate(memory), 1e9, 1);
}

TEST(Calibrate, RooflineRateWeighsEachShapeByItsLayers) {
  // A slow shape of one layer beside a fast one of five: the rate reproduces the five layers'
  // time and the one's, (5 * 1e9 + 1e8) FLOPs in (5 * 0.005 + 0.002) s, not the two shapes' sum.
  std::vector<ShapeTiming> shapes{{"conv2d", "fast", 1e9, 0.005, 0.0001, 5}, {"conv2d", "slow", 1e8, 0.002, 0.0001, 1}};
  EXPECT_NEAR(solve_roofline_rate(shapes), 5.1e9 / 0.027, 1e3);
  shapes[0].layers = 1;
  EXPECT_NEAR(solve_roofline_rate(shapes), 1.1e9 / 0.007, 1e3);
  shapes[1].layers = 0;
  EXPECT_THROW(solve_roofline_rate(shapes), InternalError);
}

TEST(Calibrate, LayerBenchCountsTheLayersOfEachShape) {
  ComputeCalibrationOptions o;
  o.models = {"resnet20"};
  o.batch = 2;
  LayerBench bench(o);
  // ResNet-20: the stem, then per stage of 16, 32 and 64 channels six 3x3 convolutions, the
  // first of the second and third stages with stride 2 and a 1x1 shortcut beside it.
  std::map<std::string, int> conv;
  int layers = 0;
  for (std::size_t i = 0; i < bench.layers().size(); ++i) {
    if (bench.layers()[i].kind != "conv2d") continue;
    conv[bench.describe_layer(i)] = bench.layers_of_shape(i);
    layers += bench.layers_of_shape(i);
  }
  EXPECT_EQ(conv.size(), 8u);
  EXPECT_EQ(layers, 21);  // 1 + 3 * 6 + 2 shortcuts
  EXPECT_EQ(conv.at("conv2d [16, 32, 32]->[16, 32, 32] k3/s1/p1"), 6);
  EXPECT_EQ(conv.at("conv2d [32, 16, 16]->[32, 16, 16] k3/s1/p1"), 5);
  EXPECT_EQ(conv.at("conv2d [16, 32, 32]->[32, 16, 16] k1/s2/p0"), 1);
}

TEST(Calibrate, LayerBenchRunsEveryDistinctShapeOnce) {
  ComputeCalibrationOptions o;
  o.models = {"lenet"};
  o.batch = 2;
  LayerBench bench(o);
  int conv = 0, bn = 0, add = 0;
  for (const LayerSummary& l : bench.layers()) {
    conv += l.kind == "conv2d";
    bn += l.kind == "batch_norm";
    add += l.kind == "add";
  }
  EXPECT_EQ(conv, 2);  // lenet's two convolutions
  for (std::size_t i = 0; i < bench.layers().size(); ++i) {
    if (bench.of_chosen_model(i)) {
      EXPECT_EQ(bench.layers_of_shape(i), 1) << bench.describe_layer(i);
    }
  }
  EXPECT_GE(bn, 1);  // batch norm from the default models (lenet has none)
  // Elementwise is a kind lenet has (its ReLUs), so the default models' residual additions are
  // not mixed into its rate: only kinds the chosen models lack are borrowed.
  EXPECT_EQ(add, 0);
  // The timed compute steps run lenet's own shapes only, not the borrowed batch norms.
  for (std::size_t i = 0; i < bench.layers().size(); ++i) {
    EXPECT_EQ(bench.of_chosen_model(i), bench.layers()[i].kind != "batch_norm") << bench.describe_layer(i);
  }
  for (std::size_t i = 0; i < bench.layers().size(); ++i) bench.run(i);
  EXPECT_GT(bench.largest_tensor_bytes(), 0u);
}

TEST(Calibrate, LargestMessageIsTheLargestChosenModelsGradients) {
  // The MPI ladder reaches it (calibrate_transport.h): every gradient of the model in one bucket.
  Rng rng(7);
  const auto bytes_of = [&](const std::string& name) {
    const ModelInput in = name == "resnet20" ? ModelInput{3, 32, 32, 10} : ModelInput{1, 28, 28, 10};
    return static_cast<std::size_t>(make_model(name, in, rng)->num_parameters()) * sizeof(float);
  };
  EXPECT_EQ(largest_gradient_bytes({"mlp"}), bytes_of("mlp"));
  EXPECT_EQ(largest_gradient_bytes({"mlp", "lenet", "resnet20"}), bytes_of("lenet"));  // lenet: 13 MB
  EXPECT_GT(bytes_of("lenet"), std::size_t{8} << 20);
}

}  // namespace
}  // namespace dtrain::perf
