#include "data/cifar10.h"

#include <gtest/gtest.h>

#include "data/dataset.h"
#include "data_test_util.h"
#include "support/text.h"

namespace dtrain {
namespace {

using datatest::data_error_message;
using datatest::small_cifar;
using datatest::TempDir;
using datatest::write_file;

using test_support::contains;

// Writes a CIFAR-10 split of `per_file` records per batch file.
void write_cifar_split(const TempDir& dir, std::string_view split, std::int64_t per_file) {
  unsigned seed = 1;
  for (const std::string& name : cifar10_split_files(split)) {
    write_file(dir.file(name), encode_cifar10_batch(small_cifar(per_file, seed++)));
  }
}

TEST(Cifar10, RoundTripOneBatch) {
  TempDir dir;
  const CifarImages c = small_cifar(5);
  write_file(dir.file("b.bin"), encode_cifar10_batch(c));
  const CifarImages r = read_cifar10_batch(dir.file("b.bin"));
  EXPECT_EQ(r.count, 5);
  EXPECT_EQ(r.pixels, c.pixels);
  EXPECT_EQ(r.labels, c.labels);
}

TEST(Cifar10, RecordLayoutIsLabelThenChannelMajorPixels) {
  std::vector<std::uint8_t> bytes(2 * kCifarRecordBytes);
  bytes[0] = 3;
  bytes[1] = 11;                        // red (0, 0)
  bytes[1 + 1024] = 22;                 // green (0, 0)
  bytes[1 + 2048 + 32 * 31 + 31] = 33;  // blue (31, 31)
  bytes[kCifarRecordBytes] = 9;
  const CifarImages r = parse_cifar10_batch(bytes, "mem");
  EXPECT_EQ(r.labels, (std::vector<std::int32_t>{3, 9}));
  EXPECT_EQ(r.pixels[0], 11);
  EXPECT_EQ(r.pixels[1024], 22);
  EXPECT_EQ(r.pixels[3071], 33);
  EXPECT_EQ(r.pixels[3072], 0);
}

TEST(Cifar10, TruncatedAtEveryOffsetIsDataError) {
  TempDir dir;
  const auto full = encode_cifar10_batch(small_cifar(2));
  const std::string path = dir.file("data_batch_1.bin");
  for (std::size_t len = 0; len < full.size(); ++len) {
    if (len == static_cast<std::size_t>(kCifarRecordBytes)) continue;  // one whole record is a valid file
    const std::vector<std::uint8_t> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(len));
    // Every offset in memory, every 61st through a file as well.
    const std::string msg = data_error_message([&] { (void)parse_cifar10_batch(cut, path); });
    ASSERT_TRUE(contains(msg, path)) << len << ": " << msg;
    if (len % 61 == 0) {
      write_file(path, cut);
      const std::string msg2 = data_error_message([&] { (void)read_cifar10_batch(path); });
      ASSERT_TRUE(contains(msg2, path)) << len << ": " << msg2;
    }
  }
}

TEST(Cifar10, SizeNotMultipleOfRecordSaysSo) {
  TempDir dir;
  auto bytes = encode_cifar10_batch(small_cifar(2));
  bytes.resize(bytes.size() - 100);
  write_file(dir.file("b.bin"), bytes);
  const std::string msg = data_error_message([&] { (void)read_cifar10_batch(dir.file("b.bin")); });
  EXPECT_TRUE(contains(msg, "not a multiple of the 3073-byte CIFAR-10 record")) << msg;
  EXPECT_TRUE(contains(msg, "1 whole records and 2973 bytes left over")) << msg;
}

TEST(Cifar10, LabelOutOfRangeNamesRecord) {
  TempDir dir;
  auto bytes = encode_cifar10_batch(small_cifar(3));
  bytes[2 * kCifarRecordBytes] = 10;
  write_file(dir.file("b.bin"), bytes);
  const std::string msg = data_error_message([&] { (void)read_cifar10_batch(dir.file("b.bin")); });
  EXPECT_TRUE(contains(msg, "record 2")) << msg;
  EXPECT_TRUE(contains(msg, "label 10, outside [0, 10)")) << msg;
}

TEST(Cifar10, RandomBytesAreDataError) {
  TempDir dir;
  for (unsigned seed = 1; seed <= 8; ++seed) {
    // Random sizes that are not whole records, and whole records of random bytes (labels >= 10
    // appear with overwhelming probability in a few records).
    const std::size_t sizes[] = {(seed * 1237) % 9000 + 1, static_cast<std::size_t>(kCifarRecordBytes) * 20};
    for (std::size_t n : sizes) {
      if (n % kCifarRecordBytes == 0 && n != sizes[1]) continue;
      write_file(dir.file("r.bin"), datatest::random_bytes(n, seed));
      const std::string msg = data_error_message([&] { (void)read_cifar10_batch(dir.file("r.bin")); });
      EXPECT_TRUE(contains(msg, dir.file("r.bin"))) << msg;
    }
  }
}

TEST(Cifar10, SplitsConcatenateBatchFiles) {
  TempDir dir;
  write_cifar_split(dir, "train", 4);
  write_cifar_split(dir, "test", 3);
  const CifarImages train = read_cifar10(dir.path().string(), "train");
  EXPECT_EQ(train.count, 20);
  EXPECT_EQ(train.labels.size(), 20u);
  EXPECT_EQ(train.pixels.size(), 20u * kCifarImageBytes);
  // The second file's first record follows the first file's last.
  const CifarImages second = small_cifar(4, 2);
  EXPECT_TRUE(std::equal(second.pixels.begin(), second.pixels.end(), train.pixels.begin() + 4 * kCifarImageBytes));
  EXPECT_EQ(read_cifar10(dir.path().string(), "test").count, 3);
  EXPECT_THROW(read_cifar10(dir.path().string(), "val"), InputError);
}

TEST(Cifar10, MissingBatchFilesAreAllListed) {
  TempDir dir;
  write_cifar_split(dir, "train", 2);
  std::filesystem::remove(dir.file("data_batch_2.bin"));
  std::filesystem::remove(dir.file("data_batch_5.bin"));
  const std::string msg = data_error_message([&] { (void)read_cifar10(dir.path().string(), "train"); });
  EXPECT_TRUE(contains(msg, "missing data_batch_2.bin, data_batch_5.bin")) << msg;
  EXPECT_FALSE(contains(msg, "data_batch_3.bin")) << msg;
}

TEST(Cifar10, LoadDatasetFindsExtractedSubdirectoryAndExplainsMissing) {
  TempDir dir;
  std::filesystem::create_directory(dir.path() / "cifar-10-batches-bin");
  TempDir scratch;  // an empty directory
  for (const std::string& name : cifar10_split_files("test")) {
    write_file((dir.path() / "cifar-10-batches-bin" / name).string(), encode_cifar10_batch(small_cifar(6)));
  }
  const Dataset ds = load_dataset("cifar10", dir.path().string(), "test");
  EXPECT_EQ(ds.size(), 6);
  EXPECT_EQ(ds.channels, 3);
  EXPECT_EQ(ds.height, 32);
  EXPECT_EQ(ds.num_classes, 10);

  const std::string msg = data_error_message([&] { (void)load_dataset("cifar10", scratch.path().string(), "train"); });
  EXPECT_TRUE(contains(msg, "missing data_batch_1.bin, data_batch_2.bin, data_batch_3.bin")) << msg;
  EXPECT_TRUE(contains(msg, scratch.path().string())) << msg;
  EXPECT_TRUE(contains(msg, "no Debian package")) << msg;
  EXPECT_TRUE(contains(msg, "cifar-10-binary.tar.gz")) << msg;
  EXPECT_TRUE(contains(msg, "--data DIR")) << msg;
}

TEST(Cifar10, BrokenFileKeepsReaderMessage) {
  TempDir dir;
  write_file(dir.file("test_batch.bin"), std::vector<std::uint8_t>(100, 1));
  const std::string msg = data_error_message([&] { (void)load_dataset("cifar10", dir.path().string(), "test"); });
  EXPECT_TRUE(contains(msg, "not a multiple of the 3073-byte")) << msg;
}

}  // namespace
}  // namespace dtrain
