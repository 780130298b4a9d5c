// Hardware profiles: the machine constants the performance model divides work by. One schema
// (docs/perfmodel.md, "Profile schema", version 1) serves the spec-sheet profiles in profiles/ and
// the measured ones `dtrain calibrate` will write. Every number carries its source.
//
// A profile has three parts:
//   device   compute rate per layer kind (FLOP/s), memory read and write bandwidth, optimizer
//            update rate (parameters/s), reduction rate (bytes/s, the gamma term) and the
//            variation of a worker's compute time per step (stragglers: straggler.h);
//   node     accelerators per node, the link between them, the node's disk read bandwidth;
//   network  the link between nodes (absent: a single-node machine).
// A link is a latency (alpha, seconds per message) and a bandwidth per direction (1 / beta).
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tensor/dtype.h"

namespace dtrain::perf {

// A rate or latency and where it comes from. Spec-sheet values may be written as a peak times a
// fixed efficiency; `peak` and `efficiency` keep both so the derivation can be printed.
struct Quantity {
  double value = 0;
  double peak = 0;        // 0 when given directly as "value"
  double efficiency = 0;  // 0 when given directly as "value"
  std::string source;
};

// The layer kinds a device has a compute rate for; every LayerSummary::kind maps to one.
inline constexpr std::array<std::string_view, 5> kComputeKinds = {"conv2d", "linear", "batch_norm", "pooling",
                                                                  "elementwise"};
// conv2d, linear and batch_norm map to themselves, max/avg/global pooling to pooling, and every
// other layer (relu, dropout, flatten, ...) to elementwise.
std::size_t compute_kind_index(std::string_view layer_kind);

// Seconds of a simultaneous exchange between two ranks (as calibrate_transport.h's beta is
// measured) at a ladder of sizes, above a 64-byte exchange's. On one host the transfers are memory
// copies, whose cost per byte depends on the size: buffers that stay in the caches move several
// times faster than the slope of the largest sizes (this VM: a 4 MiB MPI_Allreduce 0.39 ms, a
// 16 MiB one 3.8 ms). The model then charges beta at the bytes an allreduce moves
// (allreduce_time.h) instead of the slope.
//
// With more than one pair on a host, `points` are measured with all `pairs` pairs exchanging side
// by side and `one_pair` with one pair while the host's other ranks wait: ranks that share cores
// copy faster when the others idle, as the leaves of a tree or one-to-all do while its root works.
// The model reads between the two by how many ranks the algorithm keeps busy (allreduce_time.h).
struct ExchangeLadder {
  std::vector<std::pair<double, double>> points;  // (bytes, seconds), bytes ascending
  std::string source;
  int pairs = 1;                                    // pairs side by side in `points`
  std::vector<std::pair<double, double>> one_pair;  // empty where pairs == 1
};

struct LinkProfile {
  std::string name;
  Quantity latency;    // seconds per message (alpha)
  Quantity bandwidth;  // bytes per second per direction, both directions busy (1 / beta)
  // Bytes per second when only one direction carries data (a broadcast; every allreduce keeps
  // both directions busy and pays `bandwidth`): over TCP the acknowledgements then have the
  // reverse direction to themselves. Optional in the schema (dtrain calibrate measures it);
  // absent: `bandwidth`.
  std::optional<Quantity> one_way_bandwidth;
  double one_way() const { return one_way_bandwidth ? one_way_bandwidth->value : bandwidth.value; }
  // Optional in the schema; dtrain calibrate measures it for the same-host link.
  std::optional<ExchangeLadder> exchange_ladder;
  // Bytes per direction the link passes at once after it has idled: a token-bucket shaper's
  // bucket (tc tbf's burst; a rate-limited cloud NIC's credit), refilled at `bandwidth` while
  // the link carries nothing. A step's communication that follows compute long enough to refill
  // it sends that many bytes free of beta (step_simulation.h). Optional, >= 0 (dtrain calibrate
  // measures it across hosts); absent: 0, every byte at the line rate.
  std::optional<Quantity> burst;
  double burst_bytes() const { return burst ? burst->value : 0; }
};

// The arithmetic precisions a run may compute its convolutions and linear layers in
// (`dtrain predict --precision`): f32 on the device's compute rates, the others on its matrix
// units (tensor cores; a CPU's bf16 dot products) where the profile gives their rates.
inline constexpr std::array<std::string_view, 5> kPrecisions = {"f32", "tf32", "bf16", "f16", "fp8"};
// InputError listing kPrecisions for another name.
std::string_view parse_precision(std::string_view name);

// A device's rates in one precision other than f32: its convolutions' and linear layers'
// (device.precisions.NAME.conv2d, .linear in the schema) and, optionally, those of the other
// kinds on 16-bit data (.batch_norm, .pooling, .elementwise; absent: their f32 rates).
struct PrecisionRates {
  Quantity conv2d, linear;
  // Bytes per activation element between layers in runs of this precision (optional; absent: 2
  // for the 16- and 8-bit precisions, as mixed-precision GPU training keeps them, 4 for tf32),
  // and per element of an activation's gradient (optional; absent: the activation's). dtrain's
  // own bf16 runs keep activations in bf16 and most of their gradients in f32: its calibrated
  // profiles say 2 and 4.
  std::optional<Quantity> activation_bytes, gradient_bytes;
  // The other kinds' rates where measured (dtrain calibrate --precision bf16 times them on bf16
  // activations): memory-bound layers run faster on half the bytes than their f32 rate says.
  std::vector<std::pair<std::string, Quantity>> other_kinds;
};

struct DeviceProfile {
  std::string name;
  std::string nvlink;                                  // the NVLink generation of the device ("nvlink1"), "" for none
  std::array<Quantity, kComputeKinds.size()> compute;  // FLOP/s, indexed like kComputeKinds
  Quantity memory_read, memory_write;                  // bytes/s
  Quantity update;                                     // parameters/s of the optimizer step
  // Parameters/s of the update where the ranks of a host share one copy of the weights (shm
  // without double buffering, parallel/shared_weights.h): each rank's part and the barrier after
  // it, timed as one (calibration/calibrate_shared_update.h). Optional in the schema (dtrain
  // calibrate measures it on one host); absent: 1/p of the parameters at `update`.
  std::optional<Quantity> shared_update;
  Quantity reduce;                                     // bytes/s added into a buffer (1 / gamma)
  // Per precision other than f32 (kPrecisions): the matrix layers' rates. Optional in the schema.
  std::vector<std::pair<std::string, PrecisionRates>> precisions;
  // Bytes of one activation element and of one element of its gradient (layer_cost.h): 4 in f32
  // and tf32, 2 where a run keeps them in 16 bits (at_precision). Not in the schema.
  double activation_element_bytes = 4, gradient_element_bytes = 4;
  // The precision of the run the profile prices (kPrecisions; at_precision sets it). Not in the schema.
  std::string precision = "f32";
  // The coefficient of variation (standard deviation / mean) of one worker's compute time per
  // step, from step to step and from device to device: what makes a synchronous step wait for
  // its slowest worker (straggler.h). Optional in the schema, a fraction in [0, 1); absent: 0,
  // identical workers.
  std::optional<Quantity> step_variation;
  double variation() const { return step_variation ? step_variation->value : 0; }
  // Bytes per second of a gradient copied into its bucket (each byte read once and written once)
  // the way a data-parallel step copies it: from a gradient just written into a bucket last
  // touched a step ago. Slower than the streaming rates suggest (mlp on this VM: 28-49 GB/s, where
  // memory_read and memory_write sum to 92). Optional in the schema (dtrain calibrate measures
  // it); absent: a read at memory_read plus a write at memory_write.
  std::optional<Quantity> gradient_copy;
  // Seconds to copy one f32 gradient element into its bucket.
  double gradient_copy_seconds() const {
    return gradient_copy ? 4.0 / gradient_copy->value : 4.0 / memory_read.value + 4.0 / memory_write.value;
  }
  // Bytes per second of 16-bit sums (comm::reduce_sum on f16 or bf16 data, widened to f32 and
  // rounded back, so per byte slower than `reduce`: 2.5-5x on the AVX2 VM). Optional in the
  // schema (dtrain calibrate measures them); absent: `reduce`.
  std::optional<Quantity> reduce_f16, reduce_bf16;
  // Seconds per byte a collective spends adding received data of `wire` into its own (gamma).
  double reduce_seconds_per_byte(DType wire) const {
    const std::optional<Quantity>& r = wire == DType::kF16 ? reduce_f16 : wire == DType::kBF16 ? reduce_bf16 : reduce;
    return 1.0 / (r ? r->value : reduce.value);
  }
  // f32 gradient elements per second cast to f16 (bf16) for the wire and the sums cast back: both
  // passes of a 16-bit wire bucket (parallel/buckets.h), the scaled cast into the wire (the
  // grad-ready hook) and the widening with the finite check (the communication thread). Optional
  // in the schema (dtrain calibrate measures them); absent: priced as the bytes each pass reads
  // and writes (6 per element) at the gradient copy's rate.
  std::optional<Quantity> cast_f16, cast_bf16;
  const std::optional<Quantity>& cast(DType wire) const { return wire == DType::kBF16 ? cast_bf16 : cast_f16; }
  // Seconds per element of one of those two passes (each moves 6 bytes, the copy 8).
  double wire_pass_seconds(DType wire) const {
    const std::optional<Quantity>& c = cast(wire);
    return c ? 0.5 / c->value : 0.75 * gradient_copy_seconds();
  }
};

// How much of its speed each of a worker's two threads keeps while the other one is busy: on a
// CPU the communication thread polls its transport on the cores the compute threads use (and the
// ranks of a host share them), so overlapped communication slows compute and vice versa. Each is a
// fraction in (0, 1]; measured by dtrain calibrate; absent means 1 (a GPU computes while a DMA
// engine or NIC moves the data).
struct OverlapProfile {
  Quantity compute;  // fraction of the compute rate kept while communication runs
  Quantity comm;     // fraction of the communication rate kept while compute runs
};

struct NodeProfile {
  int accelerators = 1;
  LinkProfile intra_link;
  Quantity disk_read;                     // bytes/s for the whole node
  std::optional<OverlapProfile> overlap;  // optional in the schema
  // Seconds a cache line takes between two cores and back (core/core_round_trip.h) when the
  // profile was calibrated: the machine state its same-host link was measured in. Optional; runs
  // compare their own against it, and the model charges it for each of shm's flag barriers where
  // shm was not timed (allreduce_time.h).
  std::optional<Quantity> core_round_trip;
  // Logical CPUs of a host that its ranks may run on. Optional (dtrain calibrate records it);
  // absent: as many as its ranks. More ranks than CPUs time-share them, and then the step
  // variation is that sharing, not independent noise (straggler.h).
  std::optional<Quantity> cores;
  // Where ranks time-share CPUs, the fraction of a step's compute by which a synchronous step is
  // longer than the ranks' steps in the mean: their unsynchronised steps alternate between a CPU
  // to themselves and half of one, and the compute rates (means) count both, while a synchronous
  // step starts every rank at once and waits for the slowest. Measured by dtrain calibrate (the
  // expected slowest of the ranks' compute steps over their mean, minus 1; calibration.h),
  // charged in place of the wait for a straggler (straggler.h), whose normal draws these bimodal
  // steps are not. turn_taking_shm, where given, stands for shm (hand-written profiles, or ones
  // calibrated before 2026-11-27 17:00, which timed shm's flag barriers apart); absent:
  // turn_taking. Optional, >= 0; absent: 0.
  std::optional<Quantity> turn_taking, turn_taking_shm;
  double turn_taking_fraction(bool shm = false) const {
    if (shm && turn_taking_shm) return turn_taking_shm->value;
    return turn_taking ? turn_taking->value : 0;
  }
  // Whether `ranks` ranks on one host run more compute threads than it has CPUs.
  bool time_shared(int ranks, int threads = 1) const { return cores && ranks * threads > cores->value; }
};

// An allreduce timed by dtrain calibrate at a ladder of sizes under one layout, for algorithms
// whose cost the alpha-beta-gamma terms of the links do not capture (allreduce_time.h):
//   mpi_allreduce  the MPI library's own allreduce (dtrain's `mpi`): its algorithm and protocols
//                  are the library's (Open MPI picks by size and sends whole segments, over TCP
//                  past its eager limit), so the model interpolates what was measured instead of
//                  pricing an algorithm it cannot see;
//   shm_allreduce  dtrain's `shm` on a buffer in shared memory: no messages, only memory traffic
//                  between the cores of one host, whose speed the caches decide by size.
// Used for runs of `workers` workers only; other worker counts fall back to a formula.
struct MeasuredAllreduce {
  int workers = 2;
  std::vector<std::pair<double, double>> points;  // (bytes, seconds), bytes ascending
  std::string source;
  // Compute and this allreduce beside each other, where it differs from node.overlap (a library's
  // blocking collective polls for as long as it lasts); optional in the schema.
  std::optional<OverlapProfile> overlap;
};

struct Profile {
  std::string name;  // the --profile text or the file's "name"
  std::string description;
  DeviceProfile device;
  NodeProfile node;
  std::optional<LinkProfile> network;
  std::optional<MeasuredAllreduce> mpi_allreduce;
  std::optional<MeasuredAllreduce> shm_allreduce;
};

// The schema version this build reads and writes.
inline constexpr int kProfileSchemaVersion = 1;

// One file of the schema: any of the parts, or a lone "link" (an intra-node link or a network,
// by where it is used). `origin` names the file in errors.
struct ProfileFragment {
  std::string name, description;
  std::optional<DeviceProfile> device;
  std::optional<NodeProfile> node;
  std::optional<LinkProfile> network;
  std::optional<LinkProfile> link;
  std::optional<MeasuredAllreduce> mpi_allreduce;
  std::optional<MeasuredAllreduce> shm_allreduce;
};
// Throws DataError naming the file, the field and the valid fields for a missing, unknown,
// mistyped, negative or zero value.
ProfileFragment parse_profile_fragment(const nlohmann::json& j, const std::string& origin);
ProfileFragment read_profile_file(const std::string& path);
// The text of a profile file (what read_profile_file parses once it has read the file; the fuzz
// target calls it directly). Throws DataError for text that is not JSON or not the schema.
ProfileFragment parse_profile_text(std::string_view text, const std::string& origin);
// The device as a run in `precision` (kPrecisions) sees it: its convolutions and linear layers at
// the precision's rates, activations in 16 bits for bf16, f16 and fp8 (fp8 runs keep their
// activations in 16 bits: only the matrix units' inputs are 8-bit); master weights, the
// optimizer and every other layer's arithmetic as in f32. f32 returns the device unchanged.
// InputError naming the missing field (device.precisions.NAME) where the profile has no rate.
DeviceProfile at_precision(const DeviceProfile& device, const std::string& profile_name, std::string_view precision);

// A complete profile in the schema (what `dtrain calibrate` writes); round-trips through
// parse_profile_fragment.
nlohmann::json profile_to_json(const Profile& p);

// Resolves a --profile value: terms joined by '+', each a path to a JSON file (contains '/' or
// ends in .json) or a built-in name from the profiles/ folder:
//   DEVICE             a device with its default node (one accelerator): p100, v100, ...
//   KxDEVICE[-LINK]    K devices per node joined by LINK (nvlink = the device's own generation)
//   NETWORK            the link between nodes: ib-fdr, eth-50g, ...
// Later terms replace the parts earlier ones set. Throws InputError listing the valid names.
Profile load_profile(const std::string& spec);
// One profile JSON file, whatever its path looks like (never split at '+' nor taken for a built-in
// name), named by its path as load_profile names one. Throws as load_profile does.
Profile load_profile_file(const std::string& path);

// The folder of built-in profiles: $DTRAIN_PROFILES, else the first `profiles` folder (with
// devices/ and links/) found next to the executable or the library (the Python module) or above
// them, or in ../share/dtrain/profiles from one of those folders.
// Throws InputError saying how to point dtrain at it.
std::string profile_library_dir();
struct ProfileNames {
  std::vector<std::string> devices, links, networks;
};
ProfileNames builtin_profile_names();

}  // namespace dtrain::perf
