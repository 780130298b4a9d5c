// An image-classification dataset held in memory as it is stored on disk: uint8 pixels, so
// Fashion-MNIST's training split costs 47 MB rather than 188 MB of floats; the loader converts each
// batch to f32 when it is needed. Named datasets are found on disk by load_dataset.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dtrain {

struct Dataset {
  std::string name;   // "fashion-mnist", "mnist", "cifar10", "synthetic", ...
  std::string split;  // "train" or "test"
  std::int64_t channels = 0;
  std::int64_t height = 0;
  std::int64_t width = 0;
  int num_classes = 0;
  std::vector<std::uint8_t> images;  // [N, C, H, W]
  std::vector<std::int32_t> labels;  // [N], each in [0, num_classes)

  std::int64_t size() const { return static_cast<std::int64_t>(labels.size()); }
  std::int64_t sample_numel() const { return channels * height * width; }
  const std::uint8_t* image(std::int64_t i) const { return images.data() + i * sample_numel(); }
  // "fashion-mnist train: 60000 x 1x28x28, 10 classes"
  std::string describe() const;
  // Throws DataError unless the extents are positive, the pixel count matches and every label is
  // in [0, num_classes).
  void validate() const;
};

// Names load_dataset knows, in the order error messages list them.
std::vector<std::string> dataset_names();

// Where load_dataset looks when no directory is given: Debian's /usr/share/datasets/fashion-mnist
// for Fashion-MNIST (package dataset-fashion-mnist); data/mnist and data/cifar-10-batches-bin,
// relative to the working directory, for the datasets Debian does not package.
std::string default_data_dir(std::string_view name);

// Loads split "train" or "test" of a named dataset from `dir` (empty: default_data_dir(name)).
// An unknown name or split is an InputError listing the valid ones. A missing dataset is a
// DataError naming every path looked at, where to get the files, and the --data DIR flag.
Dataset load_dataset(std::string_view name, const std::string& dir = "", std::string_view split = "train");

// Samples [begin, end) as a dataset of their own (for --limit, quick runs and tests).
Dataset subset(const Dataset& ds, std::int64_t begin, std::int64_t end);

// Uniformly random pixels and labels, deterministic in seed: for benchmarks that need data of a
// given shape but not its content (as the PyTorch peer does for resnet20).
Dataset make_synthetic_dataset(std::int64_t n, std::int64_t channels, std::int64_t height, std::int64_t width,
                               int num_classes, std::uint64_t seed = 0);

}  // namespace dtrain
