#include "data/dataset.h"

#include <filesystem>

#include "core/error.h"
#include "data/cifar10.h"
#include "data/idx.h"
#include "core/random.h"

namespace dtrain {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFashionMnistDebianDir = "/usr/share/datasets/fashion-mnist";

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : std::string(sep)) + s;
  return out;
}

std::string absolute_path(const fs::path& p) {
  std::error_code ec;
  const fs::path a = fs::absolute(p, ec);
  return ec ? p.string() : a.lexically_normal().string();
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// How to get a dataset that is missing, for the error message.
std::string how_to_get(std::string_view name) {
  if (name == "fashion-mnist") {
    return fmt::format(
        "Install Debian's copy with `apt-get install -y dataset-fashion-mnist` (it puts the files in {}), or pass "
        "--data DIR to read them from DIR",
        kFashionMnistDebianDir);
  }
  if (name == "mnist") {
    return "MNIST has no Debian package: download train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
           "t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz from http://yann.lecun.com/exdb/mnist/ "
           "(mirror: https://ossci-datasets.s3.amazonaws.com/mnist/) into a directory DIR and pass --data DIR";
  }
  return "CIFAR-10 has no Debian package: download the binary version, "
         "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz, extract it (tar xzf) and pass --data DIR with DIR "
         "the extracted cifar-10-batches-bin directory (data_batch_1.bin .. data_batch_5.bin, test_batch.bin)";
}

// MNIST-style datasets: one IDX file of images and one of labels per split, gzip or not.
Dataset load_idx_dataset(std::string_view name, const fs::path& dir, std::string_view split) {
  const std::string prefix = split == "train" ? "train" : "t10k";
  const std::string stems[2] = {prefix + "-images-idx3-ubyte", prefix + "-labels-idx1-ubyte"};
  std::string found[2];
  std::vector<std::string> looked;
  std::vector<std::string> missing;
  for (int k = 0; k < 2; ++k) {
    for (const std::string& candidate : {stems[k] + ".gz", stems[k]}) {
      if (is_file(dir / candidate)) {
        found[k] = (dir / candidate).string();
        break;
      }
      looked.push_back(absolute_path(dir / candidate));
    }
    if (found[k].empty()) missing.push_back(stems[k] + ".gz");
  }
  if (!missing.empty()) {
    throw DataError(fmt::format("{} {} split not found: missing {} (gzip or uncompressed) in {}; looked for {}. {}.",
                                name, split, join(missing, " and "), absolute_path(dir), join(looked, ", "),
                                how_to_get(name)));
  }
  IdxImages images = read_idx_images(found[0]);
  IdxLabels labels = read_idx_labels(found[1]);
  check_idx_counts_agree(images, found[0], labels, found[1]);

  Dataset ds;
  ds.name = std::string(name);
  ds.split = std::string(split);
  ds.channels = 1;
  ds.height = images.rows;
  ds.width = images.cols;
  ds.num_classes = 10;
  ds.images = std::move(images.pixels);
  ds.labels.assign(labels.labels.begin(), labels.labels.end());
  for (std::size_t i = 0; i < ds.labels.size(); ++i) {
    if (ds.labels[i] >= ds.num_classes) {
      throw DataError(
          fmt::format("{}: label {} of sample {} is outside [0, {})", found[1], ds.labels[i], i, ds.num_classes));
    }
  }
  return ds;
}

Dataset load_cifar10_dataset(const fs::path& dir, std::string_view split) {
  // Accept both the extracted directory and the one it was extracted into.
  const std::vector<std::string> names = cifar10_split_files(split);
  const fs::path inner = dir / "cifar-10-batches-bin";
  const fs::path where = !is_file(dir / names.front()) && is_file(inner / names.front()) ? inner : dir;
  std::vector<std::string> missing;
  for (const std::string& name : names) {
    if (!is_file(where / name)) missing.push_back(name);
  }
  if (!missing.empty()) {
    throw DataError(fmt::format("cifar10 {} split not found: missing {} in {} (also looked in {}). {}.", split,
                                join(missing, ", "), absolute_path(where), absolute_path(where == inner ? dir : inner),
                                how_to_get("cifar10")));
  }
  CifarImages cifar = read_cifar10(where.string(), split);
  Dataset ds;
  ds.name = "cifar10";
  ds.split = std::string(split);
  ds.channels = kCifarChannels;
  ds.height = kCifarSide;
  ds.width = kCifarSide;
  ds.num_classes = kCifarClasses;
  ds.images = std::move(cifar.pixels);
  ds.labels = std::move(cifar.labels);
  return ds;
}

}  // namespace

std::string Dataset::describe() const {
  return fmt::format("{} {}: {} x {}x{}x{}, {} classes", name, split, size(), channels, height, width, num_classes);
}

void Dataset::validate() const {
  if (channels <= 0 || height <= 0 || width <= 0 || num_classes <= 0) {
    throw DataError(fmt::format("dataset {}: sample shape {}x{}x{} and {} classes must all be positive", name, channels,
                                height, width, num_classes));
  }
  if (images.size() != static_cast<std::size_t>(size() * sample_numel())) {
    throw DataError(fmt::format("dataset {}: {} labels need {} x {} = {} pixels, have {}", name, size(), size(),
                                sample_numel(), size() * sample_numel(), images.size()));
  }
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= num_classes) {
      throw DataError(
          fmt::format("dataset {}: label {} of sample {} is outside [0, {})", name, labels[i], i, num_classes));
    }
  }
}

std::vector<std::string> dataset_names() { return {"fashion-mnist", "mnist", "cifar10"}; }

std::string default_data_dir(std::string_view name) {
  if (name == "fashion-mnist") return kFashionMnistDebianDir;
  if (name == "mnist") return "data/mnist";
  if (name == "cifar10") return "data/cifar-10-batches-bin";
  throw InputError(fmt::format("unknown dataset '{}'; valid: {}", name, join(dataset_names(), ", ")));
}

Dataset load_dataset(std::string_view name, const std::string& dir, std::string_view split) {
  const std::string default_dir = default_data_dir(name);  // also rejects unknown names
  if (split != "train" && split != "test") {
    throw InputError(fmt::format("unknown split '{}' of dataset {}; valid: train, test", split, name));
  }
  const fs::path where = dir.empty() ? fs::path(default_dir) : fs::path(dir);
  Dataset ds = name == "cifar10" ? load_cifar10_dataset(where, split) : load_idx_dataset(name, where, split);
  ds.validate();
  return ds;
}

Dataset subset(const Dataset& ds, std::int64_t begin, std::int64_t end) {
  if (begin < 0 || end < begin || end > ds.size()) {
    throw InputError(fmt::format("subset [{}, {}) of dataset {} with {} samples", begin, end, ds.name, ds.size()));
  }
  Dataset out = ds;  // copies metadata; the vectors are replaced below
  out.images.assign(ds.image(begin), ds.image(end));
  out.labels.assign(ds.labels.begin() + begin, ds.labels.begin() + end);
  return out;
}

Dataset make_synthetic_dataset(std::int64_t n, std::int64_t channels, std::int64_t height, std::int64_t width,
                               int num_classes, std::uint64_t seed) {
  if (n < 0 || channels <= 0 || height <= 0 || width <= 0 || num_classes <= 0) {
    throw InputError(fmt::format("synthetic dataset of {} x {}x{}x{} with {} classes: extents must be positive", n,
                                 channels, height, width, num_classes));
  }
  Dataset ds;
  ds.name = "synthetic";
  ds.split = "train";
  ds.channels = channels;
  ds.height = height;
  ds.width = width;
  ds.num_classes = num_classes;
  ds.images.resize(static_cast<std::size_t>(n * channels * height * width));
  ds.labels.resize(static_cast<std::size_t>(n));
  Rng rng(rng_key(seed, 0x5e7));
  for (std::uint8_t& p : ds.images) p = static_cast<std::uint8_t>(rng.next() >> 56);
  for (std::int32_t& l : ds.labels) l = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(num_classes)));
  return ds;
}

}  // namespace dtrain
