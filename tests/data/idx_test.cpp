#include "data/idx.h"

#include <gtest/gtest.h>

#include "data/file_bytes.h"
#include "data_test_util.h"
#include "support/text.h"

namespace dtrain {
namespace {

using datatest::data_error_message;
using datatest::gzip;
using datatest::small_images;
using datatest::small_labels;
using datatest::TempDir;
using datatest::write_file;

using test_support::contains;

TEST(Idx, RoundTripRawAndGzip) {
  TempDir dir;
  const IdxImages im = small_images(3, 4, 5);
  const IdxLabels lb = small_labels(3);
  for (bool compress : {false, true}) {
    const std::string ext = compress ? ".gz" : "";
    const auto im_bytes = encode_idx_images(im);
    const auto lb_bytes = encode_idx_labels(lb);
    write_file(dir.file("img" + ext), compress ? gzip(im_bytes) : im_bytes);
    write_file(dir.file("lbl" + ext), compress ? gzip(lb_bytes) : lb_bytes);
    const IdxImages im2 = read_idx_images(dir.file("img" + ext));
    const IdxLabels lb2 = read_idx_labels(dir.file("lbl" + ext));
    EXPECT_EQ(im2.count, 3);
    EXPECT_EQ(im2.rows, 4);
    EXPECT_EQ(im2.cols, 5);
    EXPECT_EQ(im2.pixels, im.pixels);
    EXPECT_EQ(lb2.labels, lb.labels);
    EXPECT_NO_THROW(check_idx_counts_agree(im2, "img", lb2, "lbl"));
  }
}

TEST(Idx, GzipDetectedByMagicWithoutExtension) {
  TempDir dir;
  write_file(dir.file("img"), gzip(encode_idx_images(small_images())));
  EXPECT_EQ(read_idx_images(dir.file("img")).pixels, small_images().pixels);
}

TEST(Idx, ConcatenatedGzipMembers) {
  TempDir dir;
  const auto raw = encode_idx_images(small_images());
  std::vector<std::uint8_t> a(raw.begin(), raw.begin() + 20), b(raw.begin() + 20, raw.end());
  auto gz = gzip(a);
  const auto gz2 = gzip(b);
  gz.insert(gz.end(), gz2.begin(), gz2.end());
  write_file(dir.file("img.gz"), gz);
  EXPECT_EQ(read_idx_images(dir.file("img.gz")).pixels, small_images().pixels);
}

TEST(Idx, EmptyImageSetIsValid) {
  TempDir dir;
  write_file(dir.file("img"), encode_idx_images(small_images(0, 28, 28)));
  const IdxImages im = read_idx_images(dir.file("img"));
  EXPECT_EQ(im.count, 0);
  EXPECT_TRUE(im.pixels.empty());
}

// Every strict prefix of a valid file, plain and gzip, images and labels, is a DataError naming the file.
TEST(Idx, TruncatedAtEveryOffsetIsDataError) {
  TempDir dir;
  const std::vector<std::uint8_t> files[2] = {encode_idx_images(small_images(3, 4, 5)),
                                              encode_idx_labels(small_labels(7))};
  int cases = 0;
  for (int kind = 0; kind < 2; ++kind) {
    for (bool compress : {false, true}) {
      const auto full = compress ? gzip(files[kind]) : files[kind];
      const std::string path = dir.file(std::string(kind == 0 ? "img" : "lbl") + (compress ? ".gz" : ""));
      for (std::size_t len = 0; len < full.size(); ++len) {
        write_file(path, std::vector<std::uint8_t>(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(len)));
        const std::string msg = data_error_message([&] {
          if (kind == 0) {
            (void)read_idx_images(path);
          } else {
            (void)read_idx_labels(path);
          }
        });
        EXPECT_TRUE(contains(msg, path)) << "len " << len << ": " << msg;
        ++cases;
      }
    }
  }
  EXPECT_GT(cases, 100);
}

TEST(Idx, TruncatedMessageSaysWhatHeaderClaimsAndWhatFileHolds) {
  TempDir dir;
  auto bytes = encode_idx_images(small_images(3, 4, 5));
  bytes.pop_back();
  write_file(dir.file("train-images-idx3-ubyte"), bytes);
  const std::string msg = data_error_message([&] { (void)read_idx_images(dir.file("train-images-idx3-ubyte")); });
  EXPECT_TRUE(contains(msg, dir.file("train-images-idx3-ubyte") + ": truncated: header says 3x4x5 = 60 bytes of "
                                                                  "pixels, file holds 59"))
      << msg;
}

TEST(Idx, TruncatedGzipSaysWhatHeaderClaims) {
  TempDir dir;
  const auto gz = gzip(encode_idx_images(small_images(30, 10, 10)));
  const std::string path = dir.file("train-images-idx3-ubyte.gz");
  write_file(path, std::vector<std::uint8_t>(gz.begin(), gz.end() - 30));
  const std::string msg = data_error_message([&] { (void)read_idx_images(path); });
  EXPECT_TRUE(contains(msg, path + ": truncated: header says 30x10x10 = 3000 bytes of pixels, file holds ")) << msg;
  write_file(path, std::vector<std::uint8_t>(gz.begin(), gz.end() - 2));  // inside the CRC/length trailer
  const std::string msg2 = data_error_message([&] { (void)read_idx_images(path); });
  EXPECT_TRUE(contains(msg2, "file holds 3000 and then ends inside the gzip trailer")) << msg2;
  write_file(path, std::vector<std::uint8_t>(gz.begin(), gz.begin() + 12));
  const std::string msg3 = data_error_message([&] { (void)read_idx_images(path); });
  EXPECT_TRUE(contains(msg3, "inside the 16-byte IDX header")) << msg3;
}

TEST(Idx, TrailingBytesAreDataError) {
  TempDir dir;
  for (bool compress : {false, true}) {
    auto bytes = encode_idx_labels(small_labels(5));
    bytes.push_back(1);
    const std::string path = dir.file(compress ? "l.gz" : "l");
    write_file(path, compress ? gzip(bytes) : bytes);
    const std::string msg = data_error_message([&] { (void)read_idx_labels(path); });
    EXPECT_TRUE(contains(msg, "header says 5 labels = 5 bytes")) << msg;
  }
}

TEST(Idx, BadMagicNamesFoundAndExpected) {
  TempDir dir;
  write_file(dir.file("swapped"), encode_idx_labels(small_labels()));
  const std::string msg = data_error_message([&] { (void)read_idx_images(dir.file("swapped")); });
  EXPECT_TRUE(contains(msg, "bad magic 0x00000801")) << msg;
  EXPECT_TRUE(contains(msg, "expected 0x00000803 (IDX ubyte images)")) << msg;
  EXPECT_TRUE(contains(msg, "swapped?")) << msg;

  auto bytes = encode_idx_images(small_images());
  bytes[2] = 0x0d;  // float32 elements
  write_file(dir.file("floats"), bytes);
  const std::string msg2 = data_error_message([&] { (void)read_idx_images(dir.file("floats")); });
  EXPECT_TRUE(contains(msg2, "bad magic 0x00000d03 (IDX float32 with 3 dimensions)")) << msg2;
}

TEST(Idx, ZeroRowsOrColumnsAreDataError) {
  TempDir dir;
  auto bytes = encode_idx_images(small_images(0, 1, 1));
  bytes[11] = 0;  // rows = 0
  write_file(dir.file("img"), bytes);
  const std::string msg = data_error_message([&] { (void)read_idx_images(dir.file("img")); });
  EXPECT_TRUE(contains(msg, "0x0x1")) << msg;
}

TEST(Idx, RandomBytesAreDataError) {
  TempDir dir;
  for (unsigned seed = 1; seed <= 12; ++seed) {
    const std::size_t n = (seed * 977) % 3000;
    const auto junk = datatest::random_bytes(n, seed);
    // Plain junk, junk named .gz, junk behind a gzip header, junk behind a valid IDX magic.
    std::vector<std::uint8_t> gz_header = {0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0x03};
    gz_header.insert(gz_header.end(), junk.begin(), junk.end());
    std::vector<std::uint8_t> idx_header = {0, 0, 8, 3};
    idx_header.insert(idx_header.end(), junk.begin(), junk.end());
    const std::pair<std::string, std::vector<std::uint8_t>> cases[] = {{"junk", junk},
                                                                       {"junk.gz", junk},
                                                                       {"junkgz", gz_header},
                                                                       {"junkidx", idx_header},
                                                                       {"junkidx.gz", gzip(idx_header)}};
    for (const auto& [name, bytes] : cases) {
      const std::string path = dir.file(name);
      write_file(path, bytes);
      const std::string msg = data_error_message([&] { (void)read_idx_images(path); });
      EXPECT_TRUE(contains(msg, path)) << "seed " << seed << " " << name << ": " << msg;
      (void)data_error_message([&] { (void)read_idx_labels(path); });
    }
  }
}

TEST(Idx, CorruptGzipStreamIsDataError) {
  TempDir dir;
  auto gz = gzip(encode_idx_images(small_images(20, 8, 8)));
  for (std::size_t pos = 10; pos < gz.size(); pos += 7) {
    auto bad = gz;
    bad[pos] ^= 0x5a;
    write_file(dir.file("img.gz"), bad);
    // Either the deflate data or the CRC / length trailer catches the flipped bits.
    const std::string msg = data_error_message([&] { (void)read_idx_images(dir.file("img.gz")); });
    EXPECT_TRUE(contains(msg, "img.gz")) << pos << ": " << msg;
  }
  auto bad = gz;
  bad[bad.size() - 6] ^= 1;  // CRC byte
  write_file(dir.file("crc.gz"), bad);
  const std::string msg = data_error_message([&] { (void)read_idx_images(dir.file("crc.gz")); });
  EXPECT_TRUE(contains(msg, "corrupt gzip stream")) << msg;
}

TEST(Idx, LyingHeaderDoesNotAllocate) {
  TempDir dir;
  // 4294967295 x 65535 x 65535 images claimed, 10 bytes present.
  std::vector<std::uint8_t> bytes = {0, 0, 8, 3, 0xff, 0xff, 0xff, 0xff, 0, 0, 0xff, 0xff, 0, 0, 0xff, 0xff};
  bytes.resize(bytes.size() + 10, 0);
  for (bool compress : {false, true}) {
    const std::string path = dir.file(compress ? "big.gz" : "big");
    write_file(path, compress ? gzip(bytes) : bytes);
    const std::string msg = data_error_message([&] { (void)read_idx_images(path); });
    EXPECT_TRUE(contains(msg, "4294967295x65535x65535")) << msg;
    EXPECT_TRUE(contains(msg, "limit")) << msg;
  }
}

// A stream that inflates far beyond what its header claims stops at the claim.
TEST(Idx, GzipBombBehindPlausibleHeaderStopsAtTheClaim) {
  TempDir dir;
  auto bytes = encode_idx_labels(small_labels(4));
  bytes.resize(bytes.size() + (64 << 20), 0);  // 64 MiB of zeros compress to about 64 KiB
  write_file(dir.file("bomb.gz"), gzip(bytes));
  const std::string msg = data_error_message([&] { (void)read_idx_labels(dir.file("bomb.gz")); });
  EXPECT_TRUE(contains(msg, "header says 4 labels = 4 bytes, but the file holds more")) << msg;
}

TEST(Idx, GunzipLimitAndJunk) {
  const std::vector<std::uint8_t> raw(1000, 7);
  const auto gz = gzip(raw);
  EXPECT_EQ(gunzip(gz, "x", 1000), raw);
  EXPECT_THROW(gunzip(gz, "x", 999), DataError);
  const Inflated head = gunzip_prefix(gz, "x", 10);
  EXPECT_EQ(head.bytes.size(), 10u);
  EXPECT_TRUE(head.more);
  auto junk = gz;
  junk.push_back(0);
  const std::string msg = data_error_message([&] { (void)gunzip(junk, "x", 1000); });
  EXPECT_TRUE(contains(msg, "junk after the end")) << msg;
}

TEST(Idx, CountMismatchNamesBothFiles) {
  TempDir dir;
  write_file(dir.file("img"), encode_idx_images(small_images(3, 2, 2)));
  write_file(dir.file("lbl"), encode_idx_labels(small_labels(4)));
  const IdxImages im = read_idx_images(dir.file("img"));
  const IdxLabels lb = read_idx_labels(dir.file("lbl"));
  const std::string msg = data_error_message([&] { check_idx_counts_agree(im, dir.file("img"), lb, dir.file("lbl")); });
  EXPECT_TRUE(contains(msg, dir.file("img") + " holds 3 images")) << msg;
  EXPECT_TRUE(contains(msg, dir.file("lbl") + " holds 4 labels")) << msg;
}

TEST(Idx, MissingFileAndDirectoryAreDataErrors) {
  TempDir dir;
  const std::string msg = data_error_message([&] { (void)read_idx_images(dir.file("nope.gz")); });
  EXPECT_TRUE(contains(msg, dir.file("nope.gz") + ": no such file")) << msg;
  const std::string msg2 = data_error_message([&] { (void)read_idx_labels(dir.path().string()); });
  EXPECT_TRUE(contains(msg2, "not a regular file")) << msg2;
}

}  // namespace
}  // namespace dtrain
