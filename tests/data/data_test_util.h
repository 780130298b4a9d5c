// Helpers for the data tests: a temporary directory, file writing, a gzip writer of our own (zlib)
// and small synthetic IDX / CIFAR-10 contents.
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/cifar10.h"
#include "data/idx.h"

#include "support/temp_dir.h"

namespace dtrain::datatest {

// A temporary directory named for these tests (tests/support/temp_dir.h).
class TempDir : public test_support::TempDir {
 public:
  TempDir() : test_support::TempDir("dtrain-data") {}
};

inline void write_file(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

// gzip-compresses with zlib (level 9, gzip wrapper).
inline std::vector<std::uint8_t> gzip(const std::vector<std::uint8_t>& raw) {
  z_stream zs{};
  if (deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2");
  }
  std::vector<std::uint8_t> out(deflateBound(&zs, static_cast<uLong>(raw.size())) + 32);
  zs.next_in = const_cast<Bytef*>(raw.data());
  zs.avail_in = static_cast<uInt>(raw.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  const int ret = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (ret != Z_STREAM_END) throw std::runtime_error("deflate");
  return out;
}

inline std::vector<std::uint8_t> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(gen() & 0xff);
  return v;
}

// n images of rows x cols with distinct-ish pixel values, and labels i % 10.
inline IdxImages small_images(std::int64_t n = 3, std::int64_t rows = 4, std::int64_t cols = 5) {
  IdxImages im;
  im.count = n;
  im.rows = rows;
  im.cols = cols;
  im.pixels.resize(static_cast<std::size_t>(n * rows * cols));
  for (std::size_t i = 0; i < im.pixels.size(); ++i) im.pixels[i] = static_cast<std::uint8_t>(i * 7 + 3);
  return im;
}

inline IdxLabels small_labels(std::int64_t n = 3) {
  IdxLabels lb;
  lb.count = n;
  for (std::int64_t i = 0; i < n; ++i) lb.labels.push_back(static_cast<std::uint8_t>(i % 10));
  return lb;
}

inline CifarImages small_cifar(std::int64_t n, unsigned seed = 1) {
  CifarImages c;
  c.count = n;
  c.pixels = random_bytes(static_cast<std::size_t>(n * kCifarImageBytes), seed);
  for (std::int64_t i = 0; i < n; ++i) c.labels.push_back(static_cast<std::int32_t>((i * 3 + seed) % 10));
  return c;
}

// Writes the four Fashion-MNIST-named files of a tiny dataset (train: n_train, test: n_test).
inline void write_mnist_like(const TempDir& dir, std::int64_t n_train, std::int64_t n_test, bool compress = true) {
  const std::string ext = compress ? ".gz" : "";
  auto put = [&](const std::string& name, const std::vector<std::uint8_t>& raw) {
    write_file(dir.file(name + ext), compress ? gzip(raw) : raw);
  };
  put("train-images-idx3-ubyte", encode_idx_images(small_images(n_train, 28, 28)));
  put("train-labels-idx1-ubyte", encode_idx_labels(small_labels(n_train)));
  put("t10k-images-idx3-ubyte", encode_idx_images(small_images(n_test, 28, 28)));
  put("t10k-labels-idx1-ubyte", encode_idx_labels(small_labels(n_test)));
}

// The message of the DataError `f` throws (fails the test if it throws nothing or something else).
template <typename F>
std::string data_error_message(F&& f) {
  try {
    f();
  } catch (const DataError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected DataError, got: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected DataError, nothing thrown";
  return {};
}

}  // namespace dtrain::datatest
