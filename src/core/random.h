// Seeded random numbers for initialisation and shuffling. Everything random in dtrain draws from
// an explicit Rng (or a counter-based hash of a seed), so a run is reproducible from --seed.
#pragma once

#include <cstdint>
#include <random>

namespace dtrain {

class Rng {
 public:
  explicit Rng(std::uint64_t seed = 0) : engine_(seed) {}
  double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(engine_); }
  double normal(double mean = 0, double stddev = 1) { return std::normal_distribution<double>(mean, stddev)(engine_); }
  std::uint64_t next() { return engine_(); }
  std::mt19937_64& engine() { return engine_; }

 private:
  std::mt19937_64 engine_;
};

// Mixes two 64-bit values into one seed (splitmix64 finaliser), for per-step and per-sample seeds.
inline std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b) {
  std::uint64_t z = a * 0x9e3779b97f4a7c15ull + b + 0x632be59bd9b4e019ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace dtrain
