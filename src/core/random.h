// Deterministic random numbers for initialisation, shuffling, augmentation and dropout. Every
// stream is a pure function of a key built from (seed, epoch, sample, purpose), so a draw never depends on thread timing, on
// which rank or batch a sample lands in, or on which other augmentations are enabled. The
// generator and the distributions are our own: std::shuffle and the std::*_distribution classes
// are implementation-defined, so they would give different data orders on different standard
// libraries and break reproducibility across machines.
#pragma once

#include <cmath>
#include <cstdint>

namespace dtrain {

// The SplitMix64 finaliser: a bijection on 64-bit words with full avalanche.
constexpr std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// What a random stream is used for; part of the key so that streams never coincide.
enum class RngPurpose : std::uint64_t { kShuffle = 1, kFlip, kTranslate, kRotate, kNoise };

// A stream key from a seed and up to three coordinates (epoch, sample index, purpose).
constexpr std::uint64_t rng_key(std::uint64_t seed, std::uint64_t a, std::uint64_t b = 0, std::uint64_t c = 0) {
  std::uint64_t h = mix64(seed + 0x9e3779b97f4a7c15ULL);
  h = mix64(h ^ (a + 0x632be59bd9b4e019ULL));
  h = mix64(h ^ (b + 0x8cb92ba72f3d8dd7ULL));
  return mix64(h ^ (c + 0xd1b54a32d192ed03ULL));
}

// SplitMix64 as a generator: one add and one finaliser per draw, statistically sound for
// shuffling and noise, and cheap to create per sample.
class Rng {
 public:
  explicit constexpr Rng(std::uint64_t key) : state_(key) {}

  constexpr std::uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return mix64(state_);
  }
  // Uniform integer in [0, n), n >= 1, without modulo bias (rejects the short top range).
  constexpr std::uint64_t below(std::uint64_t n) {
    const std::uint64_t threshold = (0 - n) % n;  // 2^64 mod n
    for (;;) {
      const std::uint64_t r = next();
      if (r >= threshold) return r % n;
    }
  }
  // Uniform integer in [lo, hi].
  constexpr std::int64_t between(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(hi - lo) + 1));
  }
  // Uniform double in [0, 1) with 53 random bits.
  constexpr double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform double in [lo, hi).
  constexpr double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Normal with the given mean and standard deviation (draws pairs, keeps the spare).
  double normal(double mean = 0, double stddev = 1) {
    if (has_spare_) {
      has_spare_ = false;
      return mean + stddev * spare_;
    }
    double a, b;
    normal_pair(a, b);
    spare_ = b;
    has_spare_ = true;
    return mean + stddev * a;
  }
  // Two independent standard normal values (Marsaglia's polar method: one log and one sqrt per
  // pair and no trigonometry, about twice as fast as Box-Muller; 21% of the candidate pairs are
  // rejected).
  void normal_pair(double& a, double& b) {
    double u, v, s;
    do {
      u = 2.0 * uniform() - 1.0;
      v = 2.0 * uniform() - 1.0;
      s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double f = std::sqrt(-2.0 * std::log(s) / s);
    a = u * f;
    b = v * f;
  }

 private:
  std::uint64_t state_;
  double spare_ = 0;
  bool has_spare_ = false;
};

}  // namespace dtrain
