#include "calibration/calibrate_transport.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <thread>

#include "calibration/pinned_pairs.h"
#include "comm/algorithms/collective.h"
#include "comm/hosts.h"
#include "comm/message_buffer.h"
#include "comm/reduce.h"
#include "core/error.h"
#include "core/timer.h"
#include "perfmodel/report.h"
#include "perfmodel/timing_stats.h"

namespace dtrain::perf {
namespace {

// Above every tag the communicator's collectives use (32 * kind + algorithm + 0..31).
constexpr int kTag = 32000;
constexpr std::size_t kSmallBytes = 64;
constexpr std::size_t kFirstSlopeBytes = std::size_t{256} << 10;
constexpr std::size_t kMaxSlopeBytes = std::size_t{16} << 20;
constexpr std::size_t kLadderFirstBytes = std::size_t{64} << 10;
constexpr double kSlopeSeconds = 0.05;  // the slope's largest exchange takes at least this long
constexpr double kBatchSeconds = 0.005;
constexpr int kMinBatches = 5;
constexpr int kBurstRounds = 5;
constexpr std::size_t kReduceBytes = std::size_t{4} << 20;
// Where ranks share a host, gamma is timed after an exchange of one chunk of the same host's
// collectives (1 MiB), in rounds: on the 2-core VM in its slow state adding 512 KiB took 67 us
// into bytes the peer had just read and 7 us into private ones (as fast as 1.3x apart in the
// fast state).
constexpr std::size_t kInSituReduceBytes = std::size_t{1} << 20;
constexpr int kInSituReduceRounds = 21;
// MPI_Allreduce's ladder: 4 KiB x 2^k (a step's small buckets sit below 64 KiB; the library
// switches algorithm and protocol by size, over TCP at 100 Mbit/s from the line rate at 1.3 MiB
// to 1.4-1.9x its time at 2 MiB, a break a factor-4 ladder steps over).
constexpr std::size_t kMpiFirstBytes = std::size_t{4} << 10, kMpiMaxBytes = std::size_t{64} << 20;
// The ladder stops at the first size that holds the largest message the runs predicted send (the
// chosen models' gradients; calibrate_transport's largest_message), and where none is given after
// the first size this slow. Far enough to see where a slow link's throughput changes (a 1 Gbit/s
// link: 4 MiB at the line rate, 16 MiB at two thirds of it), and no size the runs send priced
// along a line drawn past the ladder's end, where the library's throughput keeps falling (over 100
// Mbit/s 1 MiB ran at 10.5 MB/s, 8 MiB at 8.9, and lenet's 12.8 MB bucket, priced from the line
// through 4 and 8 MiB, at 7.1). No further: Open MPI's reduction buffer for a 64 MiB call sits at
// the mmap threshold (core/malloc_tuning.h), so each such call maps and faults in fresh pages (160
// ms on 2 ranks of the 2-core VM, where 32 MiB took 5-7), and the rounds after one ran the smaller
// sizes 2-7x slower than training's calls (1 MiB: 140-1800 us a call, 150-210 us in
// `bench allreduce` and in rounds that stop at 32 MiB; mlp's `mpi` steps priced +55..+128%).
constexpr double kMpiSeconds = 0.5;
constexpr int kMpiMinRounds = 5, kMpiMaxRounds = 20;
// A call slower than this many times its size's median is a stall, left out of the mean: over the
// 1 Gbit/s link a 512 KiB call took 4.4 ms in most rounds and 19-66 ms in one of 3, which made
// its mean 2.5-5.7x the neighbouring sizes' per byte; a step's buckets did not see such stalls
// (mlp's f16 steps, a 512 KiB and an 800 KB bucket, took 12-13 ms in all).
constexpr double kMpiStall = 3.0;
// shm's ladder: the same sizes as MPI's, on one buffer of the largest size in shared memory. It
// moves memory between cores, not messages (64 MiB on 2 ranks: milliseconds, not seconds), so it
// stops after the first size this slow, and fewer rounds suffice.
constexpr double kShmSeconds = 0.1;
constexpr int kShmMinRounds = 3, kShmMaxRounds = 10;

// Mean of `value` over the ranks that pass active = true; the same on every rank.
double mean_over_active(comm::Communicator& c, double value, bool active) {
  // Summed in f32: the values are times and rates, where 7 digits are plenty.
  std::array<float, 2> f{active ? static_cast<float>(value) : 0.0f, active ? 1.0f : 0.0f};
  c.allreduce(f.data(), f.size(), DType::kF32, comm::Algorithm::kRing);
  return f[1] > 0 ? static_cast<double>(f[0]) / static_cast<double>(f[1]) : 0.0;
}

class Pairs {
 public:
  // partner[r]: the rank r talks to (r itself: a message to itself), -1: idle.
  Pairs(comm::Communicator& c, std::vector<int> partner) : c_(c), t_(c.transport()), partner_(std::move(partner)) {}

  bool active() const { return partner_[static_cast<std::size_t>(c_.rank())] >= 0; }

  // Mean seconds per operation over the active ranks (the same on every rank): a pilot sets
  // how many operations a batch holds, then batches run between barriers.
  double time(std::size_t bytes, bool exchange, double min_seconds) {
    ensure(bytes);
    double pilot = 0;
    if (active()) {
      std::vector<double> t(3);
      for (double& seconds : t) seconds = once(bytes, exchange, 1);
      pilot = median(t);
    }
    c_.barrier();
    const double op = std::max(mean_over_active(c_, pilot, active()), 1e-7);
    const int per_batch = std::clamp(static_cast<int>(kBatchSeconds / op), 1, 1000);
    const int batches = std::max(kMinBatches, static_cast<int>(std::ceil(min_seconds / (op * per_batch))));
    // The mean over all batches (not the median): on a shared machine the preemptions a batch
    // suffers belong to what a collective in a training step meets too.
    double total = 0;
    const int rounds = std::min(batches, 200);
    for (int b = 0; b < rounds; ++b) {
      c_.barrier();
      if (active()) total += once(bytes, exchange, per_batch);
    }
    return mean_over_active(c_, total / (rounds * per_batch), active());
  }

  // Seconds a link's burst allowance saves an exchange of `bytes`: per round, the ranks idle for
  // `idle` seconds (the link carries nothing, so a token bucket refills), then time one exchange
  // (T_idle) and a second straight after it (T_busy, the bucket drained by the first); the median
  // over `rounds` of T_busy - T_idle (the mean over the active ranks).
  double burst_saving(std::size_t bytes, double idle, int rounds) {
    ensure(bytes);
    std::vector<double> saved;
    for (int r = 0; r < rounds; ++r) {
      c_.barrier();
      std::this_thread::sleep_for(std::chrono::duration<double>(idle));
      const double t_idle = active() ? once(bytes, true, 1) : 0;
      const double t_busy = active() ? once(bytes, true, 1) : 0;
      saved.push_back(t_busy - t_idle);
    }
    return mean_over_active(c_, median(saved), active());
  }

  // Seconds of comm::reduce_sum adding `bytes` of `dtype` into the buffer an exchange of that size
  // has just sent, from the one it received into: the median over `rounds` (the mean over the
  // active ranks). A collective reduces into bytes its peer has just read (the ring's block, the
  // tree's partial sums), so each line it writes is first taken back from the peer's cache.
  double reduce_after_exchange(std::size_t bytes, int rounds, DType dtype) {
    ensure(bytes);
    std::vector<double> t;
    for (int r = 0; r < rounds; ++r) {
      c_.barrier();
      if (!active()) continue;
      once(bytes, true, 1);
      // once() flipped sent_from_: the buffer it sent is the other one now.
      void* sent = buffer_[1 - sent_from_].data();
      const void* received = buffer_[sent_from_].data();
      const Stopwatch sw;
      comm::reduce_sum(sent, received, bytes / dtype_size(dtype), dtype);
      t.push_back(sw.seconds());
    }
    return mean_over_active(c_, active() ? median(t) : 0, active());
  }

  // Seconds that `big` bytes take over `small` ones: the median over `rounds` rounds of the
  // difference of one operation of each, run back to back (the mean over the active ranks). A
  // difference of two noisy times is noisier than either; pairing the two sizes in time and taking
  // the median keeps a burst of load on a shared machine out of the slope.
  double extra_seconds(std::size_t small, std::size_t big, bool exchange, int rounds) {
    ensure(big);
    std::vector<double> diff;
    for (int r = 0; r < rounds; ++r) {
      c_.barrier();
      const double t_small = active() ? after_one(small, exchange) : 0;
      c_.barrier();
      const double t_big = active() ? after_one(big, exchange) : 0;
      diff.push_back(t_big - t_small);
    }
    return mean_over_active(c_, median(diff), active());
  }

 private:
  void ensure(std::size_t bytes) {
    for (comm::MessageBuffer& b : buffer_) b.grow(bytes);
  }

  // One untimed operation of `bytes`, then the seconds of a second one, which sends what the
  // first received (see once).
  double after_one(std::size_t bytes, bool exchange) {
    once(bytes, exchange, 1);
    return once(bytes, exchange, 1);
  }

  // `count` ping-pongs (exchange false) or simultaneous exchanges (true) of `bytes` bytes. Each
  // sends the buffer the one before received into, as a collective sends what it has just
  // written (gradients from backward, chunks it reduced or received): a peer pulls such bytes
  // out of this core's cache, not from memory, which costs more where the cores share no cache
  // (this VM in its slow state: a 512 KiB exchange of MPI_Sendrecv 35 us from a buffer written
  // long ago, 63 us from the one the last exchange received into).
  double once(std::size_t bytes, bool exchange, int count) {
    const int me = c_.rank(), peer = partner_[static_cast<std::size_t>(me)];
    const auto deadline = comm::Deadline::after(c_.options().timeout_seconds);
    const char* what = exchange ? "calibration exchange" : "calibration ping-pong";
    Stopwatch sw;
    for (int i = 0; i < count; ++i) {
      std::byte* out = buffer_[sent_from_].data();
      std::byte* in = buffer_[1 - sent_from_].data();
      if (exchange || peer == me) {
        exchange_bytes(c_, peer, out, in, bytes);
        if (!exchange) {  // a ping-pong with itself: the answer goes back the same way
          exchange_bytes(c_, peer, in, out, bytes);
        }
      } else if (me < peer) {
        t_.send(out, bytes, peer, kTag, deadline, what);
        t_.recv(in, bytes, peer, kTag, deadline, what);
      } else {
        t_.recv(in, bytes, peer, kTag, deadline, what);
        t_.send(out, bytes, peer, kTag, deadline, what);
      }
      sent_from_ = 1 - sent_from_;
    }
    return sw.seconds();
  }

  comm::Communicator& c_;
  comm::Transport& t_;
  std::vector<int> partner_;
  std::array<comm::MessageBuffer, 2> buffer_;  // huge pages, as the trainer's buckets
  std::size_t sent_from_ = 0;                  // the buffer the next operation sends
};

// Seconds of one exchange of 64 KiB x 4^k up to `largest` bytes above a 64-byte one. Rounds as
// for the slope, scaled to each size's expected time (`largest_seconds` for the largest), 7 to
// 200; a non-positive median (noise at a small size) falls back to the slope's `bandwidth`.
std::vector<std::pair<std::size_t, double>> measure_ladder(Pairs& pairs, std::size_t largest, double largest_seconds,
                                                           double bandwidth, double min_seconds) {
  std::vector<std::pair<std::size_t, double>> out;
  for (std::size_t size = kLadderFirstBytes; size <= largest; size *= 4) {
    const double expected = largest_seconds * static_cast<double>(size) / static_cast<double>(largest);
    const int rounds = std::clamp(static_cast<int>(min_seconds / std::max(expected, 1e-6)), 7, 200);
    const double extra = pairs.extra_seconds(kSmallBytes, size, true, rounds);
    out.emplace_back(size, extra > 0 ? extra : static_cast<double>(size) / bandwidth);
  }
  return out;
}

LinkMeasurement measure_link(comm::Communicator& c, const std::vector<int>& partner, double min_seconds,
                             std::string how, bool ladder, bool burst) {
  Pairs pairs(c, partner);
  LinkMeasurement m;
  m.measured = true;
  m.how = std::move(how);
  for (std::size_t r = 0; r < partner.size(); ++r) m.pairs += partner[r] > static_cast<int>(r) ? 1 : 0;
  m.latency = pairs.time(kSmallBytes, false, min_seconds) / 2;  // half a round trip
  // The slope is taken between the two largest exchanges, not from 64 B: a shaped link (tc tbf,
  // a switch's buffers) passes its first burst of bytes at line speed, so T(n) = c + (n - burst)
  // beta for n past the burst, and only a difference of two such sizes leaves beta alone.
  double half = pairs.time(kSmallBytes, true, min_seconds), big = 0;
  std::size_t n = kFirstSlopeBytes;
  for (;; n *= 2) {
    big = pairs.time(n, true, min_seconds);
    if ((big >= kSlopeSeconds && n >= 2 * kFirstSlopeBytes) || n >= kMaxSlopeBytes) break;
    half = big;
  }
  m.bytes = n;
  const std::size_t from = n == kFirstSlopeBytes ? kSmallBytes : n / 2;
  // The slope itself from the two sizes run in pairs (extra_seconds), as many rounds as fit in
  // about twice min_seconds (5 to 25).
  const int rounds = std::clamp(static_cast<int>(2 * min_seconds / std::max(big + half, 1e-6)), 5, 25);
  const double extra = pairs.extra_seconds(from, n, true, rounds);
  // A slope at or below zero (noise on an idle link) would mean infinite bandwidth: use the
  // plain rate of the largest exchange instead.
  m.bandwidth = extra > 0 ? static_cast<double>(n - from) / extra : static_cast<double>(n) / big;
  // One direction at a time (a broadcast): the slope of ping-pongs of the same two sizes, a
  // round trip carrying the bytes once each way.
  const double extra_one_way = pairs.extra_seconds(from, n, false, rounds) / 2;
  m.one_way_bandwidth = extra_one_way > 0 ? static_cast<double>(n - from) / extra_one_way : m.bandwidth;
  if (burst) {
    // At half the slope's largest size (about 25 ms or more at the line rate: a 256 KB bucket is
    // half of it at 100 Mbit/s, a tenth at 1 Gbit/s), after idling twice that exchange's time,
    // which refills up to twice its bytes.
    const std::size_t size = std::max(kFirstSlopeBytes, n / 2);
    const double line = static_cast<double>(size) / m.bandwidth;
    const double saved = pairs.burst_saving(size, 2 * line, kBurstRounds);
    m.burst = std::clamp(saved * m.bandwidth, 0.0, static_cast<double>(size));
    m.burst_how = fmt::format(
        "the time an exchange of {} KiB after {} of idling saves against one straight after it "
        "(the median over {} rounds) at the line rate, at most those {} KiB",
        size >> 10, format_seconds(2 * line), kBurstRounds, size >> 10);
  }
  if (ladder) {
    m.ladder = measure_ladder(pairs, n, big, m.bandwidth, min_seconds);
    if (m.pairs > 1) {
      std::vector<int> first(partner.size(), -1);  // the lowest rank with a partner, and that partner
      for (std::size_t r = 0; r < partner.size(); ++r) {
        if (partner[r] > static_cast<int>(r)) {
          first[r] = partner[r];
          first[static_cast<std::size_t>(partner[r])] = static_cast<int>(r);
          break;
        }
      }
      Pairs alone(c, first);
      m.ladder_one_pair = measure_ladder(alone, n, big, m.bandwidth, min_seconds);
    }
  }
  return m;
}

double reduce_rate(double min_seconds, DType dtype) {
  const std::size_t count = kReduceBytes / dtype_size(dtype);
  // Small values in every format: f32 1.0 and 1e-7 as f32, as 16-bit pairs zeros and normals.
  std::vector<float> dst(kReduceBytes / sizeof(float), 1.0f), src(kReduceBytes / sizeof(float), 1e-7f);
  std::vector<double> t;
  double total = 0;
  comm::reduce_sum(dst.data(), src.data(), count, dtype);  // warm-up
  while (t.size() < 5 || (total < min_seconds && t.size() < 200)) {
    Stopwatch sw;
    comm::reduce_sum(dst.data(), src.data(), count, dtype);
    t.push_back(sw.seconds());
    total += t.back();
  }
  return static_cast<double>(kReduceBytes) / median(t);
}

// A ladder of allreduce sizes from kMpiFirstBytes doubling to kMpiMaxBytes: a first pass, each
// size once in ascending order, warms every size up and finds where the ladder stops (the first
// size that reaches `reach`, or where that is 0 the first whose call takes `stop_seconds`); then
// rounds of every size in ascending order, as many as fit in min_seconds within [min_rounds,
// max_rounds]. Every rank runs the same calls (the round count is agreed through the mean of the
// warm-up times). `call(bytes)` times one call.
struct LadderPace {
  double stop_seconds = 0;
  int min_rounds = 0, max_rounds = 0;
  std::size_t reach = 0;  // the ladder ends at the first size at least this large (at most the top)
};
struct LadderCalls {
  std::vector<std::size_t> sizes;
  std::vector<std::vector<double>> calls;  // per size, every round's time
};
template <typename Call>
LadderCalls time_ladder(comm::Communicator& c, Call&& call, LadderPace pace, double min_seconds) {
  LadderCalls out;
  double round_seconds = 0;
  for (std::size_t bytes = kMpiFirstBytes; bytes <= kMpiMaxBytes; bytes *= 2) {
    const double warm = mean_over_active(c, call(bytes), true);
    out.sizes.push_back(bytes);
    round_seconds += warm;
    if (pace.reach > 0 ? bytes >= pace.reach : warm >= pace.stop_seconds) break;
  }
  const int rounds =
      std::clamp(static_cast<int>(min_seconds / std::max(round_seconds, 1e-6)), pace.min_rounds, pace.max_rounds);
  out.calls.resize(out.sizes.size());
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t i = 0; i < out.sizes.size(); ++i) out.calls[i].push_back(call(out.sizes[i]));
  }
  return out;
}

// The MPI library's allreduce at a ladder of sizes (calibrate_transport.h), in rounds of every size
// in ascending order (time_ladder): a step's buckets come in mixed sizes, and over TCP a call
// inherits the connection's state from the call before it (over 100 Mbit/s, 1 MiB takes 88 ms
// after calls of 1 MiB and 110-130 ms after calls of other sizes). The mean of the
// calls, not their median: past its line rate a shaped link's MPI_Allreduce of one size takes
// 1.05-1.9x the rate's time from call to call, and a step pays the mean.
std::vector<std::pair<std::size_t, double>> time_mpi_allreduce(comm::Communicator& c, double min_seconds,
                                                               std::size_t reach) {
  if (c.size() < 2 || !c.transport().has_native_allreduce()) return {};
  comm::MessageBuffer buffer;  // huge pages, as the trainer's buckets
  auto call = [&](std::size_t bytes) {
    std::byte* data = buffer.grow(bytes);  // zeros: never subnormal
    c.barrier();
    const Stopwatch sw;
    c.allreduce(data, bytes / sizeof(float), DType::kF32, comm::Algorithm::kMpi);
    return sw.seconds();
  };
  const LadderCalls ladder = time_ladder(c, call, {kMpiSeconds, kMpiMinRounds, kMpiMaxRounds, reach}, min_seconds);
  std::vector<std::pair<std::size_t, double>> out;
  for (std::size_t i = 0; i < ladder.sizes.size(); ++i)
    out.emplace_back(ladder.sizes[i], mean_over_active(c, mean_without_stalls(ladder.calls[i], kMpiStall), true));
  return out;
}

}  // namespace

namespace {

// Sends `bytes` to `peer` in the collectives' chunks (all sends posted) while receiving as many
// from it, at most `window` receives posted at a time (the next when the oldest has arrived).
void exchange_chunks(comm::Communicator& c, int peer, const std::byte* s, std::byte* r, std::size_t bytes,
                     std::size_t window) {
  comm::Transport& t = c.transport();
  const auto deadline = comm::Deadline::after(c.options().timeout_seconds);
  const std::size_t chunk = c.options().chunk_bytes;
  const std::size_t chunks = bytes == 0 ? 1 : (bytes + chunk - 1) / chunk;
  auto length = [&](std::size_t g) { return bytes == 0 ? 0 : std::min(chunk, bytes - g * chunk); };
  std::vector<comm::Request> sends, recvs;
  std::size_t posted = 0;
  for (; posted < std::min(chunks, window); ++posted) {
    recvs.push_back(t.irecv(r + posted * chunk, length(posted), peer, kTag));
  }
  for (std::size_t g = 0; g < chunks; ++g) sends.push_back(t.isend(s + g * chunk, length(g), peer, kTag));
  for (std::size_t g = 0; g < chunks; ++g) {
    t.wait(recvs[g], deadline, "calibration exchange");
    if (posted < chunks) {
      recvs.push_back(t.irecv(r + posted * chunk, length(posted), peer, kTag));
      ++posted;
    }
  }
  t.waitall(sends, deadline, "calibration exchange");
}

}  // namespace

void exchange_bytes(comm::Communicator& c, int peer, const void* send, void* recv, std::size_t bytes) {
  // Every allreduce of comm/ receives half of its bytes to reduce them and half to gather or
  // broadcast them (ring and butterfly: (p-1)/p n each; tree and one-to-all: n each way per
  // edge). Chunks to reduce land in a window of kRecvSlots scratch slots
  // (comm/algorithms/collective.h: exchange_reduce), gathered chunks straight in place (exchange).
  // Over a transport whose large messages wait for their receive (MPI's rendezvous), the window
  // bounds the chunks in flight, so beta is measured on the same mix: half the bytes through the
  // window, half free.
  const auto* s = static_cast<const std::byte*>(send);
  auto* r = static_cast<std::byte*>(recv);
  const std::size_t half = bytes / 2;
  exchange_chunks(c, peer, s, r, half, comm::detail::kRecvSlots);
  exchange_chunks(c, peer, s + half, r + half, bytes - half, std::numeric_limits<std::size_t>::max());
}

double time_exchanges(comm::Communicator& c, const std::vector<int>& partner, std::size_t bytes, double min_seconds) {
  return Pairs(c, partner).time(bytes, true, min_seconds);
}

std::vector<int> busy_partners(const TransportCalibration& t) {
  const std::size_t p = t.host_of.size();
  std::vector<int> partner(p, -1);
  if (p < 2) return {};
  std::vector<std::vector<int>> members(t.host_names.size());
  for (std::size_t r = 0; r < p; ++r) members[static_cast<std::size_t>(t.host_of[r])].push_back(static_cast<int>(r));
  bool paired = false;
  for (const std::vector<int>& m : members) {
    for (std::size_t i = 0; i + 1 < m.size(); i += 2) {
      partner[static_cast<std::size_t>(m[i])] = m[i + 1];
      partner[static_cast<std::size_t>(m[i + 1])] = m[i];
      paired = true;
    }
  }
  if (!paired) {
    partner[static_cast<std::size_t>(members[0][0])] = members[1][0];
    partner[static_cast<std::size_t>(members[1][0])] = members[0][0];
  }
  return partner;
}

// dtrain's shm allreduce at the sizes of MPI's ladder, the same way (time_ladder, each call after a
// barrier), on a buffer from allocate_shared so it runs in place as it does on the trainer's
// buckets, scaling the sums by 1/p and checking them as it does there (parallel/buckets.h). The median of a size's
// calls, not their mean: shm has no link whose state a call inherits, and with ranks sharing cores an occasional call
// waits for a peer the scheduler took away, which the step model charges through the step variation, not here.
std::vector<std::pair<std::size_t, double>> time_shm_allreduce(comm::Communicator& c, double min_seconds) {
  if (c.size() < 2 || !c.shares_memory()) return {};
  // Every rank allocates together, once; zeros: never subnormal.
  const std::span<std::byte> region = c.allocate_shared(kMpiMaxBytes);
  float* const buffer = reinterpret_cast<float*>(region.data());
  auto call = [&](std::size_t bytes) {
    c.barrier();
    const Stopwatch sw;
    c.allreduce_scaled(buffer, bytes / sizeof(float), 1.0f / static_cast<float>(c.size()), comm::Algorithm::kShm);
    return sw.seconds();
  };
  const LadderCalls ladder = time_ladder(c, call, {kShmSeconds, kShmMinRounds, kShmMaxRounds}, min_seconds);
  std::vector<std::pair<std::size_t, double>> out;
  for (std::size_t i = 0; i < ladder.sizes.size(); ++i)
    out.emplace_back(ladder.sizes[i], mean_over_active(c, median(ladder.calls[i]), true));
  return out;
}

void drop_stalled_sizes(std::vector<std::pair<std::size_t, double>>& ladder) {
  const std::vector<std::pair<std::size_t, double>> measured = ladder;
  for (std::size_t i = 1; i + 1 < measured.size(); ++i) {
    const auto [b0, t0] = measured[i - 1];
    const auto [b1, t1] = measured[i + 1];
    const double at = static_cast<double>(measured[i].first - b0) / static_cast<double>(b1 - b0);
    const double chord = t0 + (t1 - t0) * at;
    if (measured[i].second > kStallChord * chord) ladder[i].second = chord;
  }
  for (std::size_t i = ladder.size(); i-- > 1;) ladder[i - 1].second = std::min(ladder[i - 1].second, ladder[i].second);
}

TransportCalibration calibrate_transport(comm::Communicator& c, double min_seconds, std::size_t largest_message) {
  const int p = c.size();
  TransportCalibration out;
  // Hosts: every rank's key, gathered.
  const comm::HostLayout layout = comm::host_layout(c);
  out.host_of = layout.host_of;
  out.host_names = layout.names;
  out.ranks_per_host = layout.ranks_per_host;
  const std::vector<std::vector<int>>& members = layout.members;

  // Same host: consecutive ranks of each host in pairs, all pairs at once; one rank alone on its
  // host messages itself.
  std::vector<int> partner(static_cast<std::size_t>(p), -1);
  int pairs = 0;
  for (const std::vector<int>& m : members) {
    for (std::size_t i = 0; i + 1 < m.size(); i += 2) {
      partner[static_cast<std::size_t>(m[i])] = m[i + 1];
      partner[static_cast<std::size_t>(m[i + 1])] = m[i];
      ++pairs;
    }
  }
  std::string how = fmt::format("{} same-host pair(s) side by side", pairs);
  if (pairs == 0) {
    partner[0] = 0;
    how = "rank 0 messaging itself (no host has two ranks)";
  }
  {
    // Where a host's ranks outnumber its CPUs, each pair on a CPU of its own (pinned_pairs.h).
    const PinnedPairs pin(members, c.rank());
    if (mean_over_active(c, pin.pinned() ? 1.0 : 0.0, true) > 0) how += ", each pinned to one CPU";
    out.same_host = measure_link(c, partner, min_seconds, how, pairs > 0, false);
  }

  if (members.size() > 1) {
    std::vector<int> link(static_cast<std::size_t>(p), -1);
    const int a = members[0][0], b = members[1][0];
    link[static_cast<std::size_t>(a)] = b;
    link[static_cast<std::size_t>(b)] = a;
    out.across_hosts = measure_link(c, link, min_seconds,
                                    fmt::format("ranks {} and {} (one pair, the link alone)", a, b), false, true);
  }

  c.barrier();
  std::optional<Pairs> in_situ;  // the same-host pairs again, their buffers shared by the three formats
  if (pairs > 0) in_situ.emplace(c, partner);
  for (auto [dtype, rate] : {std::pair{DType::kF32, &out.reduce}, std::pair{DType::kF16, &out.reduce_f16},
                             std::pair{DType::kBF16, &out.reduce_bf16}}) {
    *rate = in_situ ? static_cast<double>(kInSituReduceBytes) /
                          in_situ->reduce_after_exchange(kInSituReduceBytes, kInSituReduceRounds, dtype)
                    : 1.0 / mean_over_active(c, 1.0 / reduce_rate(min_seconds, dtype), true);
  }
  out.mpi_allreduce = time_mpi_allreduce(c, min_seconds, largest_message);
  drop_stalled_sizes(out.mpi_allreduce);
  // Where the ranks span hosts the model never runs shm (allreduce_time.h), even if they share
  // memory (two network namespaces of one machine emulating two hosts).
  if (members.size() == 1) out.shm_allreduce = time_shm_allreduce(c, min_seconds);
  drop_stalled_sizes(out.shm_allreduce);
  return out;
}

}  // namespace dtrain::perf
