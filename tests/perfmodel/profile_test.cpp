// Hardware profiles: the built-in spec-sheet files load and compose; bad files and names get an
// error that names the problem and lists what is valid.
#include "perfmodel/profile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "perfmodel/layer_cost.h"
#include "perfmodel_test_util.h"

namespace dtrain::perf {
namespace {

using nlohmann::json;

json valid_device_file() {
  json compute = json::object();
  for (std::string_view k : kComputeKinds) compute[std::string(k)] = {{"value", 1e12}, {"source", "test"}};
  const json rate = {{"value", 1e11}, {"source", "test"}};
  return {{"dtrain_profile", 1},
          {"name", "mine"},
          {"device",
           {{"name", "my device"},
            {"compute", compute},
            {"memory_read", rate},
            {"memory_write", rate},
            {"update", rate},
            {"reduce", rate}}},
          {"node",
           {{"accelerators", 4},
            {"intra_link",
             {{"name", "bus"},
              {"latency", {{"value", 1e-6}, {"source", "test"}}},
              {"bandwidth", {{"peak", 1e10}, {"efficiency", 0.5}, {"source", "test"}}}}},
            {"disk_read", rate}}}};
}

// The DataError message parse_profile_fragment gives for `j`, or "" if it parses.
std::string error_of(const json& j) {
  try {
    parse_profile_fragment(j, "test.json");
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

TEST(Profile, EveryBuiltInFileParsesWithSources) {
  const ProfileNames names = builtin_profile_names();
  EXPECT_GE(names.devices.size(), 6u);
  EXPECT_GE(names.networks.size(), 7u);
  for (const std::string d : {"p100", "v100", "a100", "h100", "h200", "skylake-sp", "knl"}) {
    const Profile p = load_profile(d);
    EXPECT_FALSE(p.device.name.empty()) << d;
    for (const Quantity& c : p.device.compute) {
      EXPECT_GT(c.value, 0) << d;
      EXPECT_FALSE(c.source.empty()) << d;
    }
    EXPECT_EQ(p.node.accelerators, 1) << d;
    EXPECT_FALSE(p.network.has_value()) << d;
    ASSERT_TRUE(p.device.step_variation.has_value()) << d;
    EXPECT_GT(p.device.variation(), 0) << d;
    EXPECT_LT(p.device.variation(), 0.1) << d;
    EXPECT_FALSE(p.device.step_variation->source.empty()) << d;
  }
  for (const std::string n : {"ib-fdr", "ib-edr", "ib-ndr", "eth-10g", "eth-25g", "eth-50g", "eth-100g"}) {
    const Profile p = load_profile("p100+" + n);
    ASSERT_TRUE(p.network.has_value()) << n;
    EXPECT_GT(p.network->bandwidth.value, 0) << n;
    EXPECT_FALSE(p.network->latency.source.empty()) << n;
  }
  for (const std::string& l : names.links) EXPECT_NO_THROW(load_profile("2xp100-" + l)) << l;
}

TEST(Profile, ComposesDeviceNodeAndNetwork) {
  const Profile p = load_profile("8xp100-nvlink+eth-50g");
  EXPECT_EQ(p.name, "8xp100-nvlink+eth-50g");
  EXPECT_EQ(p.device.name, "NVIDIA Tesla P100 SXM2 16 GB");
  EXPECT_EQ(p.node.accelerators, 8);
  EXPECT_EQ(p.node.intra_link.name, load_profile("2xp100-nvlink1").node.intra_link.name);
  ASSERT_TRUE(p.network.has_value());
  EXPECT_DOUBLE_EQ(p.network->bandwidth.value, 50e9 / 8 * 0.9);
  // Peak times efficiency, both kept for printing the derivation.
  EXPECT_DOUBLE_EQ(p.device.compute[0].value, p.device.compute[0].peak * p.device.compute[0].efficiency);
  // A later term replaces what an earlier one set.
  EXPECT_EQ(load_profile("p100+eth-10g+ib-edr").network->name, load_profile("ib-edr+p100").network->name);
  EXPECT_EQ(load_profile("4xv100-pcie3").node.intra_link.name, "PCIe 3.0 x16");
}

TEST(Profile, JsonRoundTripsAndFilesCompose) {
  const Profile p = load_profile("8xa100-nvlink+ib-ndr");
  const json j = profile_to_json(p);
  const ProfileFragment f = parse_profile_fragment(j, "round trip");
  ASSERT_TRUE(f.device && f.node && f.network);
  EXPECT_EQ(
      profile_to_json(Profile{p.name, p.description, *f.device, *f.node, f.network, f.mpi_allreduce, f.shm_allreduce}),
      j);

  const auto path = std::filesystem::temp_directory_path() / "dtrain_profile_test.json";
  std::ofstream(path) << valid_device_file().dump(2);
  const Profile mine = load_profile(path.string() + "+ib-fdr");
  EXPECT_EQ(mine.device.name, "my device");
  EXPECT_EQ(mine.node.accelerators, 4);
  EXPECT_DOUBLE_EQ(mine.node.intra_link.bandwidth.value, 5e9);
  EXPECT_EQ(mine.network->name, "InfiniBand FDR 4x");
  std::filesystem::remove(path);
}

TEST(Profile, MissingFieldIsNamedWithTheRequiredOnes) {
  json j = valid_device_file();
  j["device"].erase("memory_write");
  const std::string e = error_of(j);
  expect_contains(e, "test.json");
  expect_contains(e, "'device' is missing memory_write");
  expect_contains(e, "required: name, compute, memory_read, memory_write, update, reduce");

  j = valid_device_file();
  j["device"]["compute"].erase("pooling");
  expect_contains(error_of(j),
                  "'device.compute' is missing pooling; required: conv2d, linear, batch_norm, pooling, "
                  "elementwise");
  j = valid_device_file();
  j["device"]["update"].erase("source");
  expect_contains(error_of(j), "'device.update' is missing source");
}

TEST(Profile, UnknownFieldListsTheValidOnes) {
  json j = valid_device_file();
  j["node"]["intra_link"]["bandwith"] = 1;
  const std::string e = error_of(j);
  expect_contains(e, "unknown field 'node.intra_link.bandwith'");
  expect_contains(e, "valid fields of 'node.intra_link': name, latency, bandwidth");

  j = valid_device_file();
  j["device"]["compute"]["conv3d"] = {{"value", 1}, {"source", "x"}};
  expect_contains(error_of(j), "valid fields of 'device.compute': conv2d, linear, batch_norm, pooling, elementwise");
  j = valid_device_file();
  j["gpu"] = 1;
  expect_contains(error_of(j), "unknown field 'gpu'; valid fields: dtrain_profile, name, description, device, node");
}

TEST(Profile, NegativeZeroAndMistypedValuesAreRejected) {
  json j = valid_device_file();
  j["device"]["memory_read"]["value"] = -5;
  expect_contains(error_of(j), "'device.memory_read.value' is -5; it must be > 0 (bytes per second)");
  j = valid_device_file();
  j["device"]["compute"]["conv2d"]["value"] = 0;
  expect_contains(error_of(j), "'device.compute.conv2d.value' is 0; it must be > 0");
  j = valid_device_file();
  j["node"]["intra_link"]["latency"]["value"] = -1e-6;
  expect_contains(error_of(j), "it must be >= 0 (seconds per message)");
  j = valid_device_file();
  j["node"]["intra_link"]["bandwidth"]["efficiency"] = 1.5;
  expect_contains(error_of(j), "'node.intra_link.bandwidth.efficiency' is 1.5; it must be in (0, 1]");
  j = valid_device_file();
  j["node"]["accelerators"] = 0;
  expect_contains(error_of(j), "'node.accelerators' is 0; it must be an integer >= 1");
  j = valid_device_file();
  j["device"]["reduce"]["value"] = "fast";
  expect_contains(error_of(j), "'device.reduce.value' must be a number");
  j = valid_device_file();
  j["dtrain_profile"] = 2;
  expect_contains(error_of(j), "this dtrain reads schema version 1");
}

TEST(Profile, SharedUpdateIsOptionalAndPositive) {
  json j = valid_device_file();
  EXPECT_FALSE(parse_profile_fragment(j, "test.json").device->shared_update.has_value());
  j["device"]["shared_update"] = {{"value", 2.5e9}, {"source", "calibrated"}};
  const ProfileFragment with = parse_profile_fragment(j, "test.json");
  ASSERT_TRUE(with.device->shared_update.has_value());
  EXPECT_DOUBLE_EQ(with.device->shared_update->value, 2.5e9);
  Profile p;
  p.device = *with.device;
  p.node = *with.node;
  EXPECT_EQ(profile_to_json(p)["device"]["shared_update"], j["device"]["shared_update"]);
  j["device"]["shared_update"]["value"] = -1;
  expect_contains(error_of(j), "'device.shared_update.value' is -1; it must be > 0");
}

TEST(Profile, GradientCopyIsOptionalAndPositive) {
  json j = valid_device_file();
  const ProfileFragment without = parse_profile_fragment(j, "test.json");
  EXPECT_FALSE(without.device->gradient_copy.has_value());
  // Absent: a read and a write at the streaming rates.
  EXPECT_DOUBLE_EQ(without.device->gradient_copy_seconds(),
                   4 / without.device->memory_read.value + 4 / without.device->memory_write.value);
  j["device"]["gradient_copy"] = {{"value", 2e10}, {"source", "measured"}};
  const ProfileFragment with = parse_profile_fragment(j, "test.json");
  EXPECT_DOUBLE_EQ(with.device->gradient_copy_seconds(), 4 / 2e10);
  Profile p;
  p.device = *with.device;
  p.node = *with.node;
  EXPECT_EQ(profile_to_json(p)["device"]["gradient_copy"], j["device"]["gradient_copy"]);
  j["device"]["gradient_copy"]["value"] = 0;
  expect_contains(error_of(j), "'device.gradient_copy.value' is 0; it must be > 0");
}

TEST(Profile, SixteenBitReduceAndCastRatesAreOptionalAndPositive) {
  json j = valid_device_file();
  const ProfileFragment without = parse_profile_fragment(j, "test.json");
  // Absent: 16-bit sums at the f32 reduce rate per byte, and no calibrated cast.
  const double gamma = 1 / without.device->reduce.value;
  EXPECT_DOUBLE_EQ(without.device->reduce_seconds_per_byte(DType::kF16), gamma);
  EXPECT_DOUBLE_EQ(without.device->reduce_seconds_per_byte(DType::kBF16), gamma);
  EXPECT_FALSE(without.device->cast(DType::kF16).has_value());
  j["device"]["reduce_f16"] = {{"value", 2e9}, {"source", "measured"}};
  j["device"]["reduce_bf16"] = {{"value", 1e9}, {"source", "measured"}};
  j["device"]["cast_f16"] = {{"value", 4e9}, {"source", "measured"}};
  j["device"]["cast_bf16"] = {{"value", 3e9}, {"source", "measured"}};
  const ProfileFragment with = parse_profile_fragment(j, "test.json");
  EXPECT_DOUBLE_EQ(with.device->reduce_seconds_per_byte(DType::kF32), gamma);
  EXPECT_DOUBLE_EQ(with.device->reduce_seconds_per_byte(DType::kF16), 1 / 2e9);
  EXPECT_DOUBLE_EQ(with.device->reduce_seconds_per_byte(DType::kBF16), 1 / 1e9);
  EXPECT_DOUBLE_EQ(with.device->cast(DType::kF16)->value, 4e9);
  EXPECT_DOUBLE_EQ(with.device->cast(DType::kBF16)->value, 3e9);
  Profile p;
  p.device = *with.device;
  p.node = *with.node;
  for (const char* key : {"reduce_f16", "reduce_bf16", "cast_f16", "cast_bf16"}) {
    EXPECT_EQ(profile_to_json(p)["device"][key], j["device"][key]) << key;
    json bad = j;
    bad["device"][key]["value"] = -1;
    expect_contains(error_of(bad), fmt::format("'device.{}.value' is -1; it must be > 0", key));
  }
}

TEST(Profile, PrecisionRatesAreOptionalRoundTripAndReplaceTheMatrixLayersRates) {
  json j = valid_device_file();
  const ProfileFragment without = parse_profile_fragment(j, "test.json");
  EXPECT_TRUE(without.device->precisions.empty());
  // f32 is the device as it is; another precision without rates names the missing field.
  EXPECT_DOUBLE_EQ(at_precision(*without.device, "mine", "f32").compute[0].value, 1e12);
  try {
    at_precision(*without.device, "mine", "bf16");
    FAIL() << "no error";
  } catch (const InputError& e) {
    expect_contains(e.what(), "the profile 'mine' has no rate for --precision bf16");
    expect_contains(e.what(), "'device.precisions.bf16' (conv2d and linear");
  }
  try {
    at_precision(*without.device, "mine", "int4");
    FAIL() << "no error";
  } catch (const InputError& e) {
    expect_contains(e.what(), "unknown precision 'int4'; valid: f32, tf32, bf16, f16, fp8");
  }
  j["device"]["precisions"] = {
      {"bf16",
       {{"conv2d", {{"peak", 8e12}, {"efficiency", 0.5}, {"source", "sheet"}}},
        {"linear", {{"value", 6e12}, {"source", "measured"}}}}},
      {"tf32", {{"conv2d", {{"value", 3e12}, {"source", "s"}}}, {"linear", {{"value", 3e12}, {"source", "s"}}}}}};
  const ProfileFragment with = parse_profile_fragment(j, "test.json");
  Profile p;
  p.device = *with.device;
  p.node = *with.node;
  EXPECT_EQ(profile_to_json(p)["device"]["precisions"], j["device"]["precisions"]);
  const DeviceProfile bf16 = at_precision(p.device, "mine", "bf16");
  EXPECT_DOUBLE_EQ(bf16.compute[compute_kind_index("conv2d")].value, 4e12);
  EXPECT_DOUBLE_EQ(bf16.compute[compute_kind_index("linear")].value, 6e12);
  EXPECT_DOUBLE_EQ(bf16.compute[compute_kind_index("batch_norm")].value, 1e12);  // f32 arithmetic
  EXPECT_DOUBLE_EQ(bf16.activation_element_bytes, 2);
  EXPECT_DOUBLE_EQ(bf16.gradient_element_bytes, 2);  // absent: the activations' size
  EXPECT_EQ(bf16.precision, "bf16");
  EXPECT_EQ(p.device.precision, "f32");
  EXPECT_DOUBLE_EQ(at_precision(p.device, "mine", "tf32").activation_element_bytes, 4);  // tf32 keeps f32 storage
  // A memory-bound layer moves half the bytes in 16 bits: a ReLU over 1000 elements.
  LayerSummary relu;
  relu.kind = "relu";
  relu.input = relu.output = Shape({1000});
  relu.forward_flops = 1000;
  relu.activation_bytes = 8000;
  EXPECT_DOUBLE_EQ(layer_time(relu, 64, bf16).forward.memory, layer_time(relu, 64, p.device).forward.memory / 2);
  EXPECT_DOUBLE_EQ(layer_time(relu, 64, bf16).backward.memory, layer_time(relu, 64, p.device).backward.memory / 2);
  // dtrain's own bf16 runs (calibrated profiles): bf16 activations, f32 gradients. The backward
  // reads x (2 bytes) and dy (4) and writes dx (4): 6 of f32's 8 bytes read, all 4 written.
  json mixed = j;
  mixed["device"]["precisions"]["bf16"]["activation_bytes"] = {{"value", 2}, {"source", "s"}};
  mixed["device"]["precisions"]["bf16"]["gradient_bytes"] = {{"value", 4}, {"source", "s"}};
  const DeviceProfile own = at_precision(*parse_profile_fragment(mixed, "test.json").device, "mine", "bf16");
  EXPECT_DOUBLE_EQ(own.gradient_element_bytes, 4);
  // A measured rate of a memory-bound kind on 16-bit data replaces its f32 rate; absent, f32's stays.
  mixed["device"]["precisions"]["bf16"]["batch_norm"] = {{"value", 3e12}, {"source", "calibrated"}};
  const ProfileFragment with_bn = parse_profile_fragment(mixed, "test.json");
  EXPECT_DOUBLE_EQ(at_precision(*with_bn.device, "mine", "bf16").compute[compute_kind_index("batch_norm")].value, 3e12);
  EXPECT_DOUBLE_EQ(at_precision(*with_bn.device, "mine", "bf16").compute[compute_kind_index("pooling")].value,
                   p.device.compute[compute_kind_index("pooling")].value);
  Profile round;
  round.device = *with_bn.device;
  round.node = *with_bn.node;
  EXPECT_EQ(profile_to_json(round)["device"]["precisions"]["bf16"]["batch_norm"]["value"], 3e12);
  const PassTime f32_back = layer_time(relu, 64, p.device).backward, own_back = layer_time(relu, 64, own).backward;
  EXPECT_DOUBLE_EQ(own_back.memory, 64 * 1000 * (6 / p.device.memory_read.value + 4 / p.device.memory_write.value));
  EXPECT_LT(own_back.memory, f32_back.memory);
  json bad = j;
  bad["device"]["precisions"]["int8"] = bad["device"]["precisions"]["bf16"];
  expect_contains(error_of(bad), "'device.precisions.int8': not a precision the model prices");
  bad = j;
  bad["device"]["precisions"]["bf16"].erase("linear");
  expect_contains(error_of(bad), "device.precisions.bf16");
}

TEST(Profile, StepVariationIsOptionalAndAFraction) {
  // Absent (files written before the field existed): 0, identical workers.
  json j = valid_device_file();
  ASSERT_EQ(error_of(j), "");
  const ProfileFragment without = parse_profile_fragment(j, "test.json");
  EXPECT_FALSE(without.device->step_variation.has_value());
  EXPECT_EQ(without.device->variation(), 0);

  j["device"]["step_variation"] = {{"value", 0.02}, {"source", "measured"}};
  const ProfileFragment with = parse_profile_fragment(j, "test.json");
  EXPECT_DOUBLE_EQ(with.device->variation(), 0.02);
  EXPECT_EQ(with.device->step_variation->source, "measured");
  Profile p;
  p.device = *with.device;
  p.node = *with.node;
  const ProfileFragment back = parse_profile_fragment(profile_to_json(p), "round trip");
  EXPECT_DOUBLE_EQ(back.device->variation(), 0.02);
  j["device"]["step_variation"]["value"] = 0;
  EXPECT_EQ(error_of(j), "");

  j["device"]["step_variation"]["value"] = -0.01;
  const std::string negative = error_of(j);
  expect_contains(negative, "test.json");
  expect_contains(negative, "'device.step_variation.value' is -0.01; it must be >= 0");
  j["device"]["step_variation"]["value"] = 2;
  expect_contains(error_of(j), "'device.step_variation' is 2; it must be in [0, 1)");
  j["device"]["step_variation"] = {{"value", 0.02}};
  expect_contains(error_of(j), "'device.step_variation' is missing source");
}

TEST(Profile, CoreRoundTripIsOptionalPositiveAndRoundTrips) {
  json j = valid_device_file();
  EXPECT_FALSE(parse_profile_fragment(j, "test.json").node->core_round_trip.has_value());
  j["node"]["core_round_trip"] = {{"value", 6e-8}, {"source", "measured"}};
  const ProfileFragment with = parse_profile_fragment(j, "test.json");
  ASSERT_TRUE(with.node->core_round_trip.has_value());
  EXPECT_DOUBLE_EQ(with.node->core_round_trip->value, 6e-8);
  Profile p;
  p.device = *with.device;
  p.node = *with.node;
  const ProfileFragment back = parse_profile_fragment(profile_to_json(p), "round trip");
  EXPECT_DOUBLE_EQ(back.node->core_round_trip->value, 6e-8);
  j["node"]["core_round_trip"]["value"] = 0;
  expect_contains(error_of(j), "'node.core_round_trip.value' is 0; it must be > 0");
  j["node"]["core_round_trip"] = {{"value", 6e-8}};
  expect_contains(error_of(j), "'node.core_round_trip' is missing source");
}

TEST(Profile, CoresAreOptionalAtLeastOneAndRoundTrip) {
  json j = valid_device_file();
  EXPECT_FALSE(parse_profile_fragment(j, "test.json").node->cores.has_value());
  j["node"]["cores"] = {{"value", 2}, {"source", "measured"}};
  const ProfileFragment with = parse_profile_fragment(j, "test.json");
  ASSERT_TRUE(with.node->cores.has_value());
  EXPECT_TRUE(with.node->time_shared(4));
  EXPECT_FALSE(with.node->time_shared(2));
  EXPECT_TRUE(with.node->time_shared(2, 2));
  Profile p;
  p.device = *with.device;
  p.node = *with.node;
  EXPECT_DOUBLE_EQ(parse_profile_fragment(profile_to_json(p), "round trip").node->cores->value, 2);
  j["node"]["cores"]["value"] = 0.5;
  expect_contains(error_of(j), "'node.cores' is 0.5; a host has at least 1 CPU");
  j["node"].erase("cores");
  EXPECT_FALSE(parse_profile_fragment(j, "test.json").node->time_shared(64));  // unknown: not shared
}

TEST(Profile, TurnTakingIsOptionalNotNegativeAndRoundTrips) {
  json j = valid_device_file();
  EXPECT_EQ(parse_profile_fragment(j, "test.json").node->turn_taking_fraction(), 0);
  j["node"]["turn_taking"] = {{"value", 0.07}, {"source", "measured"}};
  const ProfileFragment with = parse_profile_fragment(j, "test.json");
  ASSERT_TRUE(with.node->turn_taking.has_value());
  EXPECT_DOUBLE_EQ(with.node->turn_taking_fraction(), 0.07);
  Profile p;
  p.device = *with.device;
  p.node = *with.node;
  EXPECT_DOUBLE_EQ(parse_profile_fragment(profile_to_json(p), "round trip").node->turn_taking_fraction(), 0.07);
  j["node"]["turn_taking"]["value"] = 0;  // ranks that take turns at no cost
  EXPECT_EQ(parse_profile_fragment(j, "test.json").node->turn_taking_fraction(), 0);
  j["node"]["turn_taking"]["value"] = -0.1;
  expect_contains(error_of(j), "'node.turn_taking.value' is -0.1");
  j["node"]["turn_taking"] = {{"value", 0.1}};
  expect_contains(error_of(j), "'node.turn_taking' is missing source");
  // shm's own turns: read, written, checked the same way; ring and the others keep turn_taking.
  j["node"]["turn_taking"] = {{"value", 0.07}, {"source", "measured"}};
  j["node"]["turn_taking_shm"] = {{"value", 0.02}, {"source", "measured"}};
  const ProfileFragment both = parse_profile_fragment(j, "test.json");
  EXPECT_DOUBLE_EQ(both.node->turn_taking_fraction(true), 0.02);
  EXPECT_DOUBLE_EQ(both.node->turn_taking_fraction(false), 0.07);
  p.node = *both.node;
  EXPECT_DOUBLE_EQ(parse_profile_fragment(profile_to_json(p), "round trip").node->turn_taking_fraction(true), 0.02);
  j["node"]["turn_taking_shm"]["value"] = -0.1;
  expect_contains(error_of(j), "'node.turn_taking_shm.value' is -0.1");
}

TEST(Profile, LinkBurstIsOptionalNotNegativeAndRoundTrips) {
  json j = valid_device_file();
  EXPECT_EQ(parse_profile_fragment(j, "test.json").node->intra_link.burst_bytes(), 0);
  j["node"]["intra_link"]["burst"] = {{"value", 262144}, {"source", "tc tbf burst 256kb"}};
  const ProfileFragment with = parse_profile_fragment(j, "test.json");
  ASSERT_TRUE(with.node->intra_link.burst.has_value());
  EXPECT_DOUBLE_EQ(with.node->intra_link.burst_bytes(), 262144);
  Profile p;
  p.device = *with.device;
  p.node = *with.node;
  EXPECT_DOUBLE_EQ(parse_profile_fragment(profile_to_json(p), "round trip").node->intra_link.burst_bytes(), 262144);
  j["node"]["intra_link"]["burst"]["value"] = 0;  // a link without a shaper
  EXPECT_EQ(error_of(j), "");
  j["node"]["intra_link"]["burst"]["value"] = -1;
  expect_contains(error_of(j), "'node.intra_link.burst.value' is -1");
  j["node"]["intra_link"]["burst"] = {{"value", 1}};
  expect_contains(error_of(j), "'node.intra_link.burst' is missing source");
}

TEST(Profile, MpiAllreduceTimesAreOptionalAscendingAndPositive) {
  json j = valid_device_file();
  j["mpi_allreduce"] = {{"workers", 2},
                        {"points", {{{"bytes", 65536}, {"seconds", 1e-4}}, {{"bytes", 262144}, {"seconds", 3e-4}}}},
                        {"source", "measured"}};
  ASSERT_EQ(error_of(j), "");
  const ProfileFragment f = parse_profile_fragment(j, "test.json");
  ASSERT_TRUE(f.mpi_allreduce.has_value());
  EXPECT_EQ(f.mpi_allreduce->workers, 2);
  ASSERT_EQ(f.mpi_allreduce->points.size(), 2u);
  Profile p;
  p.device = *f.device;
  p.node = *f.node;
  p.mpi_allreduce = f.mpi_allreduce;
  EXPECT_EQ(profile_to_json(p)["mpi_allreduce"], j["mpi_allreduce"]);

  json bad = j;
  bad["mpi_allreduce"]["workers"] = 1;
  expect_contains(error_of(bad), "'mpi_allreduce.workers' is 1; it must be an integer >= 2");
  bad = j;
  bad["mpi_allreduce"]["points"] = json::array();
  expect_contains(error_of(bad), "'mpi_allreduce.points' must be a non-empty array");
  bad = j;
  bad["mpi_allreduce"]["points"][1]["bytes"] = 1024;
  expect_contains(error_of(bad), "'mpi_allreduce.points[1]' has 1024 bytes, not more than the point before it");
  bad = j;
  bad["mpi_allreduce"]["points"][0]["seconds"] = -1;
  expect_contains(error_of(bad), "'mpi_allreduce.points[0]' is");
  bad = j;
  bad["mpi_allreduce"]["points"][0]["time"] = 1;
  expect_contains(error_of(bad), "unknown field 'mpi_allreduce.points[0].time'");
  bad = j;
  bad["mpi_allreduce"].erase("source");
  expect_contains(error_of(bad), "'mpi_allreduce' is missing source");

  // Its own overlap with compute: optional, fractions in (0, 1], written back as read.
  json overlapped = j;
  overlapped["mpi_allreduce"]["overlap"] = {{"compute", {{"value", 0.66}, {"source", "measured"}}},
                                            {"comm", {{"value", 0.48}, {"source", "measured"}}}};
  ASSERT_EQ(error_of(overlapped), "");
  p.mpi_allreduce = parse_profile_fragment(overlapped, "test.json").mpi_allreduce;
  ASSERT_TRUE(p.mpi_allreduce->overlap.has_value());
  EXPECT_DOUBLE_EQ(p.mpi_allreduce->overlap->compute.value, 0.66);
  EXPECT_EQ(profile_to_json(p)["mpi_allreduce"], overlapped["mpi_allreduce"]);
  bad = overlapped;
  bad["mpi_allreduce"]["overlap"]["comm"]["value"] = 1.2;
  expect_contains(error_of(bad), "'mpi_allreduce.overlap.comm' is 1.2; it must be in (0, 1]");
  bad = overlapped;
  bad["mpi_allreduce"]["overlap"].erase("compute");
  expect_contains(error_of(bad), "'mpi_allreduce.overlap' is missing compute");

  // A link's exchange ladder: the same points, the same checks, named by the link.
  json laddered = j;
  laddered["node"]["intra_link"]["exchange_ladder"] = {
      {"points", {{{"bytes", 65536}, {"seconds", 1e-5}}, {{"bytes", 1048576}, {"seconds", 1.2e-4}}}},
      {"source", "measured"}};
  ASSERT_EQ(error_of(laddered), "");
  const ProfileFragment lf = parse_profile_fragment(laddered, "test.json");
  ASSERT_TRUE(lf.node && lf.node->intra_link.exchange_ladder);
  EXPECT_DOUBLE_EQ(lf.node->intra_link.exchange_ladder->points[1].second, 1.2e-4);
  p.node = *lf.node;
  EXPECT_EQ(profile_to_json(p)["node"]["intra_link"]["exchange_ladder"],
            laddered["node"]["intra_link"]["exchange_ladder"]);
  bad = laddered;
  bad["node"]["intra_link"]["exchange_ladder"]["points"][1]["bytes"] = 100;
  expect_contains(error_of(bad),
                  "'node.intra_link.exchange_ladder.points[1]' has 100 bytes, not more than the point before it");
  bad = laddered;
  bad["node"]["intra_link"]["exchange_ladder"].erase("source");
  expect_contains(error_of(bad), "'node.intra_link.exchange_ladder' is missing source");
  bad = laddered;
  bad["node"]["intra_link"]["exchange_ladder"]["pairs"] = 2;
  expect_contains(error_of(bad), "has 2 pairs side by side but no 'one_pair_points'");
  json two = laddered;
  two["node"]["intra_link"]["exchange_ladder"]["pairs"] = 2;
  two["node"]["intra_link"]["exchange_ladder"]["one_pair_points"] = {{{"bytes", 65536}, {"seconds", 5e-6}}};
  ASSERT_EQ(error_of(two), "");
  p.node = *parse_profile_fragment(two, "test.json").node;
  EXPECT_EQ(profile_to_json(p)["node"]["intra_link"]["exchange_ladder"], two["node"]["intra_link"]["exchange_ladder"]);
}

TEST(Profile, ShmAllreduceTimesHaveTheShapeOfMpis) {
  json j = valid_device_file();
  j["shm_allreduce"] = {{"workers", 4},
                        {"points", {{{"bytes", 4096}, {"seconds", 2e-6}}, {{"bytes", 8192}, {"seconds", 3e-6}}}},
                        {"source", "measured"}};
  ASSERT_EQ(error_of(j), "");
  const ProfileFragment f = parse_profile_fragment(j, "test.json");
  ASSERT_TRUE(f.shm_allreduce.has_value());
  EXPECT_FALSE(f.mpi_allreduce.has_value());
  EXPECT_EQ(f.shm_allreduce->workers, 4);
  ASSERT_EQ(f.shm_allreduce->points.size(), 2u);
  EXPECT_DOUBLE_EQ(f.shm_allreduce->points[1].second, 3e-6);
  Profile p;
  p.device = *f.device;
  p.node = *f.node;
  p.shm_allreduce = f.shm_allreduce;
  const json written = profile_to_json(p);
  EXPECT_EQ(written["shm_allreduce"], j["shm_allreduce"]);
  EXPECT_FALSE(written.contains("mpi_allreduce"));
  // Both at once, each read back under its own name.
  j["mpi_allreduce"] = j["shm_allreduce"];
  j["mpi_allreduce"]["workers"] = 2;
  const ProfileFragment both = parse_profile_fragment(j, "test.json");
  ASSERT_TRUE(both.mpi_allreduce && both.shm_allreduce);
  EXPECT_EQ(both.mpi_allreduce->workers, 2);
  EXPECT_EQ(both.shm_allreduce->workers, 4);
  // And through a file, as --profile reads a calibrated one.
  const auto path = std::filesystem::temp_directory_path() / "dtrain_profile_shm_test.json";
  std::ofstream(path) << j.dump(2);
  const Profile loaded = load_profile(path.string());
  std::filesystem::remove(path);
  ASSERT_TRUE(loaded.shm_allreduce.has_value());
  EXPECT_EQ(loaded.shm_allreduce->points, f.shm_allreduce->points);

  json bad = j;
  bad["shm_allreduce"]["workers"] = 1;
  expect_contains(error_of(bad), "'shm_allreduce.workers' is 1; it must be an integer >= 2");
  bad = j;
  bad["shm_allreduce"]["points"][0]["bytes"] = -4096;
  expect_contains(error_of(bad), "'shm_allreduce.points[0]' is");
  bad = j;
  bad["shm_allreduce"]["points"] = "fast";
  expect_contains(error_of(bad), "'shm_allreduce.points' must be a non-empty array");
  bad = j;
  bad["shm_allreduce"]["pairs"] = 2;
  expect_contains(error_of(bad), "unknown field 'shm_allreduce.pairs'; valid fields of 'shm_allreduce': workers");
  bad = j;
  bad["shm_allreduce"].erase("workers");
  expect_contains(error_of(bad), "'shm_allreduce' is missing workers");
  bad = j;
  bad["smh_allreduce"] = bad["shm_allreduce"];
  expect_contains(error_of(bad),
                  "unknown field 'smh_allreduce'; valid fields: dtrain_profile, name, description, "
                  "device, node, network, link, mpi_allreduce, shm_allreduce");
}

TEST(Profile, UnknownHardwareListsWhatIsValid) {
  try {
    load_profile("p200+ib-fdr");
    FAIL() << "no error";
  } catch (const InputError& e) {
    expect_contains(e.what(), "unknown hardware 'p200'");
    expect_contains(e.what(), "devices: a100, h100, h200, knl, p100, skylake-sp, v100");
    expect_contains(e.what(), "networks: eth-100g, eth-10g, eth-25g, eth-50g, ib-edr, ib-fdr, ib-ndr");
  }
  auto message = [](const std::string& spec) {
    try {
      load_profile(spec);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  expect_contains(message("8xp100-nvlink9"), "unknown intra-node link 'nvlink9'; valid: nvlink, nvlink1");
  expect_contains(message("2xknl-nvlink"), "knl has no NVLink");
  expect_contains(message("ib-fdr"), "names no device; add one in front, e.g. p100+ib-fdr");
  expect_contains(message("p100++ib-fdr"), "empty term");
  expect_contains(message("0xp100"), "accelerators per node must be 1 to 999999");
  expect_contains(message("/nonexistent/profile.json"), "cannot open profile file '/nonexistent/profile.json'");
  expect_contains(message(""), "--profile is empty");
}

}  // namespace
}  // namespace dtrain::perf
