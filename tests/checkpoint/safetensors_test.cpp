// The safetensors reader and writer: round trips, files written by hand from the published format,
// and rejection (with a DataError naming the file) of everything a hostile or damaged file can
// claim, before any memory is sized by the claim.
#include "checkpoint/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "checkpoint/checkpoint_test_util.h"
#include "core/error.h"

namespace dtrain {
namespace {

using cktest::TempDir;

std::vector<std::uint8_t> as_bytes(const std::vector<float>& v) {
  std::vector<std::uint8_t> b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// A file from a header text and a data section, exactly as the format describes it.
std::vector<std::uint8_t> handmade(const std::string& header, const std::vector<std::uint8_t>& data) {
  std::vector<std::uint8_t> out(8 + header.size() + data.size());
  std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i, n >>= 8) out[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(n & 0xff);
  std::copy(header.begin(), header.end(), out.begin() + 8);
  std::copy(data.begin(), data.end(), out.begin() + 8 + static_cast<std::ptrdiff_t>(header.size()));
  return out;
}

// Parsing must fail with a DataError whose message contains `what` and the source name.
void expect_rejected(const std::vector<std::uint8_t>& bytes, const std::string& what) {
  try {
    SafetensorsFile::parse(bytes, "bad.safetensors");
    ADD_FAILURE() << "accepted; expected an error containing: " << what;
  } catch (const DataError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("bad.safetensors"), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  }
}

TEST(Safetensors, RoundTripsEveryTypeScalarsAndEmptyTensors) {
  const auto w = as_bytes({1.5f, -2.0f, 3.25f, 0.0f, 1e-30f, -7.0f});
  const std::vector<std::uint8_t> i64(16, 0x5a), u8{1, 2, 3}, half(4, 0x3c);
  const std::int64_t scalar_value = 42;
  const auto* scalar = reinterpret_cast<const std::uint8_t*>(&scalar_value);
  std::vector<StTensorView> tensors{
      {"w", StDType::kF32, {2, 3}, w}, {"bytes", StDType::kU8, {3}, u8},           {"empty", StDType::kF32, {0, 4}, {}},
      {"h", StDType::kF16, {2}, half}, {"scalar", StDType::kI64, {}, {scalar, 8}}, {"pair", StDType::kI64, {2}, i64}};
  const auto bytes = encode_safetensors(tensors, {{"k", "v"}, {"config", "{\"a\": 1}"}});
  // Header padded so the data (and every tensor, widest first) is aligned.
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u);
  const auto f = SafetensorsFile::parse(bytes, "mem");
  EXPECT_EQ(f.tensors().size(), 6u);
  EXPECT_EQ(f.metadata().at("config"), "{\"a\": 1}");
  for (const StEntry& e : f.tensors()) EXPECT_EQ(e.begin % st_dtype_size(e.dtype), 0u) << e.name;
  const StEntry& we = f.at("w");
  EXPECT_EQ(we.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(std::vector<std::uint8_t>(f.bytes(we).begin(), f.bytes(we).end()), w);
  EXPECT_EQ(f.at("empty").numel(), 0);
  EXPECT_EQ(f.at("scalar").numel(), 1);
  std::int64_t back = 0;
  std::memcpy(&back, f.bytes(f.at("scalar")).data(), 8);
  EXPECT_EQ(back, 42);
  EXPECT_THROW(f.at("missing"), DataError);

  TempDir dir;
  const std::string path = dir.file("t.safetensors");
  write_safetensors(path, tensors, {{"k", "v"}});
  const auto g = SafetensorsFile::read(path);
  EXPECT_EQ(g.tensors().size(), 6u);
  EXPECT_EQ(g.raw(), cktest::read_bytes(path));
  EXPECT_EQ(std::vector<std::uint8_t>(g.bytes(g.at("pair")).begin(), g.bytes(g.at("pair")).end()), i64);
}

TEST(Safetensors, ReadsAFileWrittenByHandFromThePublishedFormat) {
  // Keys in any order, offsets not in key order, whitespace and padding spaces.
  const std::string header =
      R"({ "b": {"dtype":"F32","shape":[1],"data_offsets":[8,12]},
           "__metadata__": {"format": "pt"},
           "a": {"shape":[2], "dtype":"BF16", "data_offsets":[0,4]},
           "c": {"dtype":"I32","shape":[1],"data_offsets":[4,8]} }    )";
  std::vector<std::uint8_t> data(12);
  const float b = 0.5f;
  std::memcpy(data.data() + 8, &b, 4);
  const auto f = SafetensorsFile::parse(handmade(header, data), "hand");
  ASSERT_EQ(f.tensors().size(), 3u);
  EXPECT_EQ(f.tensors()[0].name, "a");  // data order
  EXPECT_EQ(f.tensors()[2].name, "b");
  float back = 0;
  std::memcpy(&back, f.bytes(f.at("b")).data(), 4);
  EXPECT_EQ(back, 0.5f);
  EXPECT_EQ(f.metadata().at("format"), "pt");
}

TEST(Safetensors, RejectsLengthFieldsThatLie) {
  expect_rejected({}, "shorter than the 8-byte header length");
  expect_rejected({1, 0, 0}, "shorter than the 8-byte header length");
  // Claims of 2^63 and of 1 TB: rejected from the length field alone, nothing allocated.
  auto huge = handmade("{}", {});
  huge[7] = 0x80;
  expect_rejected(huge, "more than the 100000000 a safetensors header may have");
  auto big = handmade("{}", {});
  big[5] = 0x01;  // 2^40
  expect_rejected(big, "header claims");
  auto past_end = handmade("{}", {});
  past_end[0] = 200;
  expect_rejected(past_end, "only 2 follow the length field");
  expect_rejected(handmade("[]", {}), "does not start with '{'");
  expect_rejected(handmade("{\"a\": ", {}), "not valid JSON");
}

TEST(Safetensors, RejectsEntriesThatDoNotFitTheData) {
  auto one = [](const std::string& entry, std::size_t data_bytes) {
    return handmade("{\"t\": " + entry + "}", std::vector<std::uint8_t>(data_bytes));
  };
  // Huge shapes: rejected by arithmetic on the claim, before anything is sized by it.
  expect_rejected(one(R"({"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,4]})", 4),
                  "more than 2^63 elements");
  expect_rejected(one(R"({"dtype":"F32","shape":[1099511627776,1099511627776,0],"data_offsets":[0,0]})", 0),
                  "more than 2^63 elements");
  expect_rejected(one(R"({"dtype":"F32","shape":[65536,65536],"data_offsets":[0,4]})", 4),
                  "more than the 4 bytes of data");
  expect_rejected(one(R"({"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,4]})", 4), "needs");
  expect_rejected(one(R"({"dtype":"F32","shape":[4294967296,4294967296,0],"data_offsets":[0,0]})", 0),
                  "more than 2^63 elements");
  expect_rejected(one(R"({"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,4]})", 4), "2^63");
  expect_rejected(one(R"({"dtype":"F32","shape":[1e30],"data_offsets":[0,4]})", 4), "not a non-negative integer");
  expect_rejected(one(R"({"dtype":"F32","shape":[-1],"data_offsets":[0,4]})", 4), "not a non-negative integer");
  expect_rejected(one(R"({"dtype":"F32","shape":[1.0],"data_offsets":[0,4]})", 4), "not a non-negative integer");
  // Offsets out of range, reversed, or not matching the shape.
  expect_rejected(one(R"({"dtype":"F32","shape":[1],"data_offsets":[0,18446744073709551615]})", 4), "reach past");
  expect_rejected(one(R"({"dtype":"F32","shape":[1],"data_offsets":[4,8]})", 4), "reach past");
  expect_rejected(one(R"({"dtype":"F32","shape":[1],"data_offsets":[4,0]})", 4), "end before they begin");
  expect_rejected(one(R"({"dtype":"F32","shape":[2],"data_offsets":[0,4]})", 8), "needs 8");
  expect_rejected(one(R"({"dtype":"F32","shape":[1],"data_offsets":[0]})", 4), "data_offsets is not an array");
  expect_rejected(one(R"({"dtype":"F32","shape":[1],"data_offsets":[0,-4]})", 4), "not non-negative integers");
  // Bad types and fields.
  expect_rejected(one(R"({"dtype":"F31","shape":[1],"data_offsets":[0,4]})", 4), "unknown dtype");
  expect_rejected(one(R"({"dtype":7,"shape":[1],"data_offsets":[0,4]})", 4), "dtype is not a string");
  expect_rejected(one(R"({"dtype":"F32","data_offsets":[0,4]})", 4), "lacks one of");
  expect_rejected(one(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1})", 4), "unexpected field");
  expect_rejected(one(R"({"dtype":"F32","shape":{},"data_offsets":[0,4]})", 4), "shape is not an array");
  expect_rejected(one(R"([1,2])", 4), "not an object");
  std::string dims = "1";
  for (int i = 1; i < 65; ++i) dims += ",1";
  expect_rejected(one(R"({"dtype":"U8","shape":[)" + dims + R"(],"data_offsets":[0,1]})", 1), "65 dimensions");
  expect_rejected(handmade(R"({"__metadata__": {"a": 1}})", {}), "is not a string");
  expect_rejected(handmade(R"({"__metadata__": []})", {}), "not an object of strings");
  expect_rejected(handmade(R"({"": {"dtype":"U8","shape":[0],"data_offsets":[0,0]}})", {}), "empty name");
  expect_rejected(handmade("{\"a\":" + std::string(20, '[') + std::string(20, ']') + "}", {}), "nests deeper");
}

TEST(Safetensors, TensorsMustTileTheDataExactly) {
  const std::string two = R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)";
  expect_rejected(
      handmade(two + R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})", std::vector<std::uint8_t>(6)),
      "they overlap");
  expect_rejected(
      handmade(two + R"("b":{"dtype":"U8","shape":[2],"data_offsets":[6,8]}})", std::vector<std::uint8_t>(8)), "a gap");
  expect_rejected(
      handmade(two + R"("b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}})", std::vector<std::uint8_t>(7)),
      "trailing bytes");
  // The same two tensors at the same offsets (a duplicated name collapses to one entry).
  expect_rejected(
      handmade(two + R"("b":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", std::vector<std::uint8_t>(4)),
      "they overlap");
}

TEST(Safetensors, EveryTruncationOfAFileIsRejectedFromMemoryAndFromDisk) {
  const auto w = as_bytes({1, 2, 3, 4, 5, 6, 7, 8});
  const auto bytes = encode_safetensors({{"w", StDType::kF32, {2, 4}, w}, {"b", StDType::kF32, {2}, as_bytes({9, 10})}},
                                        {{"note", "x"}});
  TempDir dir;
  const std::string path = dir.file("cut.safetensors");
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    const std::vector<std::uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_THROW(SafetensorsFile::parse(cut, "cut"), DataError) << n;
    cktest::write_bytes(path, cut);
    EXPECT_THROW(SafetensorsFile::read(path), DataError) << n;
  }
  auto longer = bytes;
  longer.push_back(0);
  EXPECT_THROW(SafetensorsFile::parse(longer, "long"), DataError);
}

TEST(Safetensors, FileErrorsNameTheFile) {
  TempDir dir;
  try {
    SafetensorsFile::read(dir.file("none.safetensors"));
    ADD_FAILURE();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("none.safetensors: no such file"), std::string::npos) << e.what();
  }
  EXPECT_THROW(SafetensorsFile::read(dir.str()), DataError);  // a directory
}

TEST(Safetensors, WriterRejectsWhatCannotBeRead) {
  const auto w = as_bytes({1, 2});
  EXPECT_THROW(encode_safetensors({{"w", StDType::kF32, {3}, w}}, {}), InputError);
  EXPECT_THROW(encode_safetensors({{"w", StDType::kF32, {2}, w}, {"w", StDType::kF32, {2}, w}}, {}), InputError);
  EXPECT_THROW(encode_safetensors({{"__metadata__", StDType::kF32, {2}, w}}, {}), InputError);
  EXPECT_THROW(encode_safetensors({{"", StDType::kF32, {2}, w}}, {}), InputError);
}

TEST(Safetensors, DTypeNames) {
  for (const char* name : {"BOOL", "U8", "I8", "U16", "I16", "F16", "BF16", "U32", "I32", "F32", "U64", "I64", "F64"}) {
    const auto t = parse_st_dtype(name);
    ASSERT_TRUE(t.has_value()) << name;
    EXPECT_EQ(st_dtype_name(*t), name);
  }
  EXPECT_FALSE(parse_st_dtype("f32").has_value());
  EXPECT_EQ(st_dtype_size(StDType::kBF16), 2u);
  EXPECT_EQ(st_dtype_size(StDType::kI64), 8u);
}

}  // namespace
}  // namespace dtrain
