// Checkpoint files: what they hold, that every damaged variant (cut at any byte, any byte of it
// changed) fails to load with a clear error and leaves the model untouched, atomic writing, and
// the directory of a run's checkpoints (newest valid, pruning, stale temporaries).
#include "checkpoint/checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "autograd/ops.h"
#include "checkpoint/atomic_file.h"
#include "checkpoint/checkpoint_dir.h"
#include "checkpoint/checkpoint_test_util.h"
#include "core/error.h"
#include "train/checkpointer.h"

namespace dtrain {
namespace {

using cktest::snapshot;
using cktest::TempDir;

// The byte-by-byte tests load the checkpoint once per byte, so the model is tiny: 2x2 inputs,
// 4 hidden units, 3 classes.
constexpr std::int64_t kSide = 2, kHidden = 4, kClasses = 3;

// A few steps of training so that every kind of state is non-trivial.
void train_a_little(Module& model, Optimizer& opt, int steps) {
  Rng rng(5);
  for (int s = 0; s < steps; ++s) {
    std::vector<float> x(8 * kSide * kSide);
    for (float& v : x) v = static_cast<float>(rng.uniform(-1, 1));
    std::vector<std::int32_t> y(8);
    for (auto& v : y) v = static_cast<std::int32_t>(rng.below(kClasses));
    Variable loss = ops::softmax_cross_entropy(model(Variable(Tensor::from_vector(x, {8, 1, kSide, kSide}))),
                                               Tensor::from_labels(y));
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
}

struct Fixture {
  std::shared_ptr<Sequential> model = cktest::small_model(1, kSide, kHidden, kClasses);
  std::unique_ptr<Optimizer> opt;
  CheckpointInfo info;

  explicit Fixture(const std::string& optimizer = "adam") {
    OptimizerConfig oc;
    oc.name = optimizer;
    opt = make_optimizer(oc, model->parameters());
    train_a_little(*model, *opt, 3);
    info.position = {1, 7, 2};
    info.config = {{"model", "small"}, {"batch", 8}};
    info.rank_totals = {{1.25, 3, 16}};
  }
  std::vector<std::uint8_t> encode(const TempDir& dir) {
    const std::string path = dir.file("c.safetensors");
    write_checkpoint(path, *model, *opt, info);
    return cktest::read_bytes(path);
  }
};

TEST(Checkpoint, RestoresEveryBitOfModelAndOptimizerState) {
  TempDir dir;
  Fixture a;
  const auto bytes = a.encode(dir);
  const auto expected = snapshot(*a.model, a.opt.get());

  Fixture b;  // same architecture, different state
  train_a_little(*b.model, *b.opt, 2);
  ASSERT_NE(snapshot(*b.model, b.opt.get()), expected);
  const Checkpoint ck = Checkpoint::parse(bytes, "c");
  ck.restore(*b.model, *b.opt);
  EXPECT_EQ(snapshot(*b.model, b.opt.get()), expected);
  EXPECT_EQ(ck.info().position.iteration, 7);
  EXPECT_EQ(ck.info().position.epoch_iteration, 2);
  EXPECT_EQ(ck.info().config["batch"], 8);
  ASSERT_EQ(ck.info().rank_totals.size(), 1u);
  EXPECT_EQ(ck.info().rank_totals[0].samples, 16);
  EXPECT_EQ(ck.optimizer_name(), "adam");
  EXPECT_EQ(ck.optimizer_steps(), 3);

  // Readable as a plain safetensors file under PyTorch-style names.
  const auto f = SafetensorsFile::parse(bytes, "c");
  EXPECT_NE(f.find("model.1.weight"), nullptr);
  EXPECT_NE(f.find("model.2.running_var"), nullptr);
  EXPECT_NE(f.find("optimizer.exp_avg_sq.5.bias"), nullptr);
  EXPECT_EQ(ck.model_entries().size(), 8u);  // 2 linear x 2, bn weight, bias, mean, var
}

TEST(Checkpoint, EveryTruncationFailsAndLoadsNothing) {
  TempDir dir;
  Fixture a;
  const auto bytes = a.encode(dir);
  Fixture b;
  const auto before = snapshot(*b.model, b.opt.get());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    try {
      Checkpoint::parse({bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n)}, "cut.safetensors")
          .restore(*b.model, *b.opt);
      ADD_FAILURE() << "a checkpoint cut to " << n << " of " << bytes.size() << " bytes loaded";
    } catch (const DataError& e) {
      ASSERT_NE(std::string(e.what()).find("cut.safetensors"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(snapshot(*b.model, b.opt.get()), before);
}

TEST(Checkpoint, EveryCorruptedByteIsCaught) {
  TempDir dir;
  Fixture a;
  const auto bytes = a.encode(dir);
  Fixture b;
  const auto before = snapshot(*b.model, b.opt.get());
  // Header bytes (length, JSON, metadata, checksum) and data bytes alike; two kinds of damage.
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    for (const std::uint8_t mask : {0x01, 0x80}) {
      auto bad = bytes;
      bad[i] ^= mask;
      try {
        Checkpoint::parse(std::move(bad), "bad").restore(*b.model, *b.opt);
        ADD_FAILURE() << "byte " << i << " ^ " << int(mask) << " was not detected";
      } catch (const DataError&) {
      }
    }
  }
  EXPECT_EQ(snapshot(*b.model, b.opt.get()), before);
  auto bad = bytes;
  bad[bad.size() - 3] ^= 0x10;
  try {
    Checkpoint::parse(bad, "bad");
    ADD_FAILURE();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("do not match their checksum"), std::string::npos) << e.what();
  }
}

TEST(Checkpoint, ADifferentModelOrOptimizerIsRefusedAndLeftUntouched) {
  TempDir dir;
  Fixture a;
  const Checkpoint ck = Checkpoint::parse(a.encode(dir), "c.safetensors");

  Rng rng(2);
  auto other = std::make_shared<Sequential>();
  other->add(std::make_shared<Flatten>());
  other->add(std::make_shared<Linear>(kSide * kSide, kHidden, true, rng));
  other->add(std::make_shared<BatchNorm>(kHidden));
  other->add(std::make_shared<ReLU>());
  other->add(std::make_shared<Dropout>(0.25, 1));
  other->add(std::make_shared<Linear>(kHidden, 5, true, rng));  // 5 classes: last tensors differ
  OptimizerConfig oc;
  oc.name = "adam";
  auto opt = make_optimizer(oc, other->parameters());
  const auto before = snapshot(*other, opt.get());
  try {
    ck.restore(*other, *opt);
    ADD_FAILURE();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'model.5.weight' is F32[3, 4], but this run's is F32[5, 4]"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(snapshot(*other, opt.get()), before) << "a failed restore changed the model";

  Fixture sgd("sgd");
  const auto sgd_before = snapshot(*sgd.model, sgd.opt.get());
  try {
    ck.restore(*sgd.model, *sgd.opt);
    ADD_FAILURE();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("holds adam optimizer state, this run uses sgd"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(snapshot(*sgd.model, sgd.opt.get()), sgd_before);

  auto smaller = std::make_shared<Sequential>();
  smaller->add(std::make_shared<Flatten>());
  smaller->add(std::make_shared<Linear>(kSide * kSide, kClasses, true, rng));
  auto opt2 = make_optimizer(oc, smaller->parameters());
  EXPECT_THROW(ck.restore(*smaller, *opt2), DataError);
}

TEST(Checkpoint, ExportedWeightsAreNotACheckpoint) {
  const std::vector<std::uint8_t> w(4);
  try {
    Checkpoint::parse(encode_safetensors({{"w", StDType::kF32, {1}, w}}, {{"format", "pt"}}), "model.safetensors");
    ADD_FAILURE();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("not a dtrain checkpoint"), std::string::npos) << e.what();
  }
}

TEST(Checkpoint, TheFuzzSeedsAreValidFiles) {
  // tools/make_fuzz_seeds.py writes them from the published format, independently of our writer.
  const std::string dir = std::string(DTRAIN_FUZZ_CORPUS) + "/safetensors/";
  EXPECT_EQ(SafetensorsFile::read(dir + "plain.safetensors").tensors().size(), 4u);
  const Checkpoint ck = Checkpoint::read(dir + "checkpoint.safetensors");
  EXPECT_EQ(ck.info().position.iteration, 5);
  EXPECT_EQ(ck.model_entries().size(), 2u);
  EXPECT_EQ(ck.info().config["model"], "tiny");
}

TEST(AtomicFile, AppearsWholeOrNotAtAll) {
  TempDir dir;
  const std::string path = dir.file("x.bin");
  {
    AtomicFile f(path);
    f.write("abc", 3);
    EXPECT_FALSE(std::filesystem::exists(path));  // not visible before commit
  }                                               // abandoned: no trace left
  EXPECT_TRUE(std::filesystem::is_empty(dir.str()));
  cktest::write_bytes(path, {'o', 'l', 'd'});
  AtomicFile f(path);
  f.write("new!", 4);
  EXPECT_EQ(cktest::read_bytes(path), (std::vector<std::uint8_t>{'o', 'l', 'd'}));
  f.commit();
  EXPECT_EQ(cktest::read_bytes(path), (std::vector<std::uint8_t>{'n', 'e', 'w', '!'}));
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.str())) entries += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(entries, 1);
  EXPECT_THROW(AtomicFile(dir.file("missing/x.bin")), DataError);
}

TEST(CheckpointDir, NewestValidSkipsDamagedFilesAndPruneKeepsTheNewest) {
  TempDir dir;
  const CheckpointDir d(dir.file("run"));
  EXPECT_FALSE(d.newest_valid({}).has_value());  // no directory yet
  EXPECT_TRUE(d.prepare().empty());
  Fixture a;
  for (std::int64_t step : {10, 20, 30, 40}) {
    a.info.position.iteration = step;
    write_checkpoint(d.path_for(step), *a.model, *a.opt, a.info);
  }
  cktest::write_bytes(dir.file("run/notes.txt"), {'x'});
  const auto all = d.list();
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0], d.path_for(40));
  EXPECT_EQ(all[3], d.path_for(10));

  // The newest is cut short (as by a crash of a non-atomic writer), the next has a flipped bit.
  auto bytes = cktest::read_bytes(d.path_for(40));
  bytes.resize(bytes.size() / 2);
  cktest::write_bytes(d.path_for(40), bytes);
  bytes = cktest::read_bytes(d.path_for(30));
  bytes[bytes.size() - 1] ^= 1;
  cktest::write_bytes(d.path_for(30), bytes);
  std::vector<std::string> skipped;
  const auto found = d.newest_valid([&](const std::string& path, const std::string& error) {
    skipped.push_back(path);
    EXPECT_NE(error.find(path), std::string::npos) << error;
  });
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->info().position.iteration, 20);
  EXPECT_EQ(skipped, (std::vector<std::string>{d.path_for(40), d.path_for(30)}));

  EXPECT_EQ(d.prune(2).size(), 2u);
  EXPECT_EQ(d.list(), (std::vector<std::string>{d.path_for(40), d.path_for(30)}));
  EXPECT_TRUE(d.prune(0).empty());

  // A writer killed mid-write leaves a hidden temporary; the next writer's prepare removes it.
  cktest::write_bytes(dir.file("run/.ckpt-000000000050.safetensors.tmp-123-0"), {1, 2, 3});
  EXPECT_EQ(d.list().size(), 2u);
  EXPECT_EQ(d.prepare().size(), 1u);
  EXPECT_FALSE(std::filesystem::exists(dir.file("run/.ckpt-000000000050.safetensors.tmp-123-0")));
}

TEST(CheckpointSchedule, ParsesStepsAndEpochs) {
  EXPECT_EQ(parse_checkpoint_schedule("500").every, 500);
  EXPECT_FALSE(parse_checkpoint_schedule("500").epochs);
  EXPECT_FALSE(parse_checkpoint_schedule("20steps").epochs);
  EXPECT_TRUE(parse_checkpoint_schedule("2e").epochs);
  EXPECT_EQ(parse_checkpoint_schedule("3epochs").every, 3);
  for (const char* bad : {"", "e", "0", "-3", "2x", "1.5e", "99999999999999999999"}) {
    EXPECT_THROW(parse_checkpoint_schedule(bad), InputError) << bad;
  }
}

}  // namespace
}  // namespace dtrain
