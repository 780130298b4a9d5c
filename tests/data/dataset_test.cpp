#include "data/dataset.h"

#include <gtest/gtest.h>

#include <cmath>

#include "data/pixels.h"
#include "data_test_util.h"
#include "support/text.h"

namespace dtrain {
namespace {

using datatest::data_error_message;
using datatest::TempDir;
using datatest::write_file;

using test_support::contains;

TEST(Dataset, LoadsMnistLikeFilesGzipOrPlain) {
  for (bool compress : {true, false}) {
    TempDir dir;
    datatest::write_mnist_like(dir, 12, 5, compress);
    for (const char* name : {"fashion-mnist", "mnist"}) {
      const Dataset train = load_dataset(name, dir.path().string(), "train");
      EXPECT_EQ(train.size(), 12);
      EXPECT_EQ(train.channels, 1);
      EXPECT_EQ(train.height, 28);
      EXPECT_EQ(train.width, 28);
      EXPECT_EQ(train.num_classes, 10);
      EXPECT_EQ(train.name, name);
      EXPECT_EQ(train.images, datatest::small_images(12, 28, 28).pixels);
      EXPECT_EQ(train.labels[11], 1);
      EXPECT_EQ(load_dataset(name, dir.path().string(), "test").size(), 5);
    }
  }
}

TEST(Dataset, MissingFashionMnistNamesPathsPackageAndFlag) {
  TempDir dir;
  const std::string msg =
      data_error_message([&] { (void)load_dataset("fashion-mnist", dir.path().string(), "train"); });
  EXPECT_TRUE(contains(msg, dir.file("train-images-idx3-ubyte.gz"))) << msg;
  EXPECT_TRUE(contains(msg, dir.file("train-labels-idx1-ubyte.gz"))) << msg;
  EXPECT_TRUE(contains(msg, "apt-get install -y dataset-fashion-mnist")) << msg;
  EXPECT_TRUE(contains(msg, "--data DIR")) << msg;
}

TEST(Dataset, MissingMnistNamesFilesAndSource) {
  TempDir dir;
  datatest::write_mnist_like(dir, 4, 4);
  std::filesystem::remove(dir.file("t10k-labels-idx1-ubyte.gz"));
  const std::string msg = data_error_message([&] { (void)load_dataset("mnist", dir.path().string(), "test"); });
  EXPECT_TRUE(contains(msg, "missing t10k-labels-idx1-ubyte.gz")) << msg;
  EXPECT_FALSE(contains(msg, "missing t10k-images")) << msg;
  EXPECT_TRUE(contains(msg, "no Debian package")) << msg;
  EXPECT_TRUE(contains(msg, "yann.lecun.com")) << msg;
}

TEST(Dataset, UnknownNameOrSplitListsValidOnes) {
  try {
    (void)load_dataset("imagenet", "", "train");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), "fashion-mnist, mnist, cifar10")) << e.what();
  }
  try {
    (void)load_dataset("mnist", "", "validation");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), "train, test")) << e.what();
  }
}

TEST(Dataset, ImagesLabelsCountMismatchAndBadLabels) {
  TempDir dir;
  datatest::write_mnist_like(dir, 6, 4);
  write_file(dir.file("train-labels-idx1-ubyte.gz"), datatest::gzip(encode_idx_labels(datatest::small_labels(5))));
  const std::string msg = data_error_message([&] { (void)load_dataset("mnist", dir.path().string(), "train"); });
  EXPECT_TRUE(contains(msg, "holds 6 images")) << msg;
  EXPECT_TRUE(contains(msg, "holds 5 labels")) << msg;

  IdxLabels bad = datatest::small_labels(4);
  bad.labels[2] = 17;
  write_file(dir.file("t10k-labels-idx1-ubyte.gz"), datatest::gzip(encode_idx_labels(bad)));
  const std::string msg2 = data_error_message([&] { (void)load_dataset("mnist", dir.path().string(), "test"); });
  EXPECT_TRUE(contains(msg2, "label 17 of sample 2 is outside [0, 10)")) << msg2;
}

TEST(Dataset, RealFashionMnistIfInstalled) {
  const std::string dir = default_data_dir("fashion-mnist");
  if (!std::filesystem::exists(std::filesystem::path(dir) / "train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Fashion-MNIST not installed in " << dir << " (apt-get install -y dataset-fashion-mnist)";
  }
  const Dataset train = load_dataset("fashion-mnist", "", "train");
  const Dataset test = load_dataset("fashion-mnist", "", "test");
  EXPECT_EQ(train.size(), 60000);
  EXPECT_EQ(test.size(), 10000);
  for (const Dataset* ds : {&train, &test}) {
    EXPECT_EQ(ds->channels, 1);
    EXPECT_EQ(ds->height, 28);
    EXPECT_EQ(ds->width, 28);
    EXPECT_EQ(ds->images.size(), static_cast<std::size_t>(ds->size() * 784));
    for (std::int32_t l : ds->labels) ASSERT_TRUE(l >= 0 && l < 10) << l;
  }
  EXPECT_EQ(train.labels[0], 9);  // the first training image is an ankle boot
  EXPECT_EQ(test.labels[0], 9);
  // Every class appears 6000 times in the training split.
  std::vector<int> counts(10, 0);
  for (std::int32_t l : train.labels) ++counts[static_cast<std::size_t>(l)];
  for (int c : counts) EXPECT_EQ(c, 6000);
  const Normalization stats = channel_statistics(train);
  EXPECT_NEAR(stats.mean[0], 0.2860, 1e-3);
  EXPECT_NEAR(stats.stddev[0], 0.3530, 1e-3);
}

TEST(Dataset, SubsetSyntheticAndValidate) {
  const Dataset ds = make_synthetic_dataset(10, 3, 4, 5, 7, 42);
  EXPECT_NO_THROW(ds.validate());
  EXPECT_EQ(ds.images.size(), 600u);
  EXPECT_EQ(make_synthetic_dataset(10, 3, 4, 5, 7, 42).images, ds.images);
  EXPECT_NE(make_synthetic_dataset(10, 3, 4, 5, 7, 43).images, ds.images);
  const Dataset sub = subset(ds, 2, 5);
  EXPECT_EQ(sub.size(), 3);
  EXPECT_TRUE(std::equal(sub.images.begin(), sub.images.end(), ds.image(2)));
  EXPECT_EQ(sub.labels[0], ds.labels[2]);
  EXPECT_EQ(subset(ds, 4, 4).size(), 0);
  EXPECT_THROW(subset(ds, 5, 11), InputError);
  EXPECT_THROW(make_synthetic_dataset(-1, 1, 1, 1, 2), InputError);

  Dataset broken = ds;
  broken.labels[3] = 7;
  EXPECT_THROW(broken.validate(), DataError);
  broken = ds;
  broken.images.pop_back();
  EXPECT_THROW(broken.validate(), DataError);
}

TEST(Pixels, ConversionIsDivisionBy255InFloat) {
  std::vector<std::uint8_t> all(256);
  for (int v = 0; v < 256; ++v) all[static_cast<std::size_t>(v)] = static_cast<std::uint8_t>(v);
  std::vector<float> out(256);
  pixels_to_float(all.data(), out.data(), 256);
  for (int v = 0; v < 256; ++v) {
    const float expected = static_cast<float>(v) / 255.0f;  // numpy: astype(float32) / 255
    EXPECT_EQ(out[static_cast<std::size_t>(v)], expected) << v;
  }
  EXPECT_EQ(out[255], 1.0f);
  EXPECT_EQ(out[0], 0.0f);
}

TEST(Pixels, NormalizationPerChannelAndChecks) {
  std::vector<float> x = {0.5f, 1.0f, 0.2f, 0.4f};  // 2 channels, 2 pixels each
  Normalization n{{0.5f, 0.1f}, {0.25f, 0.5f}};
  EXPECT_NO_THROW(n.check(2));
  normalize_channels(x.data(), 2, 2, n);
  EXPECT_EQ(x[0], 0.0f);
  EXPECT_EQ(x[1], (1.0f - 0.5f) / 0.25f);
  EXPECT_EQ(x[2], (0.2f - 0.1f) / 0.5f);
  EXPECT_EQ(x[3], (0.4f - 0.1f) / 0.5f);
  EXPECT_THROW(n.check(3), InputError);
  EXPECT_THROW((Normalization{{0.5f}, {0.0f}}.check(1)), InputError);
  EXPECT_NO_THROW(Normalization{}.check(3));
}

TEST(Pixels, ChannelStatisticsMatchDirectComputation) {
  const Dataset ds = make_synthetic_dataset(50, 3, 6, 6, 10, 3);
  const Normalization n = channel_statistics(ds);
  ASSERT_EQ(n.mean.size(), 3u);
  for (std::int64_t c = 0; c < 3; ++c) {
    double s = 0, s2 = 0;
    std::int64_t count = 0;
    for (std::int64_t i = 0; i < ds.size(); ++i) {
      for (std::int64_t k = 0; k < 36; ++k) {
        const double v = ds.image(i)[c * 36 + k] / 255.0;
        s += v;
        s2 += v * v;
        ++count;
      }
    }
    const double mean = s / static_cast<double>(count);
    EXPECT_NEAR(n.mean[static_cast<std::size_t>(c)], mean, 1e-6);
    EXPECT_NEAR(n.stddev[static_cast<std::size_t>(c)], std::sqrt(s2 / static_cast<double>(count) - mean * mean), 1e-6);
  }
}

}  // namespace
}  // namespace dtrain
