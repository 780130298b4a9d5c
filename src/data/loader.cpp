#include "data/loader.h"

#include "core/error.h"
#include "core/timer.h"

namespace dtrain {

Batch prepare_batch(const Dataset& ds, std::span<const std::int64_t> indices, std::int64_t epoch,
                    const LoaderOptions& options) {
  const auto b = static_cast<std::int64_t>(indices.size());
  const std::int64_t numel = ds.sample_numel();
  const std::int64_t plane = ds.height * ds.width;
  Batch batch;
  batch.x = Tensor::empty({b, ds.channels, ds.height, ds.width}, DType::kF32);
  batch.y = Tensor::empty({b}, DType::kI32);
  batch.indices.assign(indices.begin(), indices.end());
  float* x = batch.x.data<float>();
  std::int32_t* y = batch.y.data<std::int32_t>();
  const bool augment = options.augment.any();
  std::vector<float> scratch;
  for (std::int64_t i = 0; i < b; ++i) {
    const std::int64_t idx = indices[static_cast<std::size_t>(i)];
    if (idx < 0 || idx >= ds.size()) {
      throw InputError(fmt::format("sample index {} is outside dataset {} of {} samples", idx, ds.name, ds.size()));
    }
    float* dst = x + i * numel;
    pixels_to_float(ds.image(idx), dst, numel);
    if (augment) {
      apply_augment(options.augment, draw_augment(options.augment, options.seed, epoch, idx), dst, ds.channels,
                    ds.height, ds.width, scratch);
    }
    normalize_channels(dst, ds.channels, plane, options.normalization);
    y[i] = ds.labels[static_cast<std::size_t>(idx)];
  }
  return batch;
}

namespace {

std::vector<std::vector<std::int64_t>> checked_batches(const Dataset& ds, const Sampler& sampler, std::int64_t epoch) {
  if (sampler.num_samples() != ds.size()) {
    throw InputError(
        fmt::format("sampler is for {} samples but dataset {} has {}", sampler.num_samples(), ds.name, ds.size()));
  }
  return sampler.epoch_batches(epoch);
}

}  // namespace

Loader::Loader(const Dataset& ds, const Sampler& sampler, std::int64_t epoch, LoaderOptions options)
    : Loader(ds, checked_batches(ds, sampler, epoch), epoch, std::move(options)) {}

Loader::Loader(const Dataset& ds, std::vector<std::vector<std::int64_t>> batches, std::int64_t epoch,
               LoaderOptions options)
    : ds_(ds), batches_(std::move(batches)), epoch_(epoch), options_(std::move(options)) {
  if (options_.prefetch < 0) throw InputError(fmt::format("prefetch depth must be >= 0, got {}", options_.prefetch));
  options_.normalization.check(ds_.channels);
  if (options_.prefetch > 0 && !batches_.empty()) thread_ = std::thread([this] { worker(); });
}

Loader::~Loader() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  space_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Batch Loader::prepare(std::size_t i) const {
  Batch b = prepare_batch(ds_, batches_[i], epoch_, options_);
  if (options_.on_prepared) options_.on_prepared(b);
  return b;
}

void Loader::worker() {
  const auto depth = static_cast<std::size_t>(options_.prefetch);
  for (std::size_t i = 0; i < batches_.size(); ++i) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      space_.wait(lock, [&] { return stop_ || queue_.size() < depth; });
      if (stop_) break;
    }
    // Prepared outside the lock, so the consumer can take queued batches meanwhile.
    std::optional<Batch> batch;
    std::exception_ptr error;
    try {
      batch = prepare(i);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (error) {
      error_ = error;
      break;
    }
    queue_.push_back(std::move(*batch));
    ready_.notify_one();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  finished_ = true;
  ready_.notify_all();
}

std::optional<Batch> Loader::next() {
  const Stopwatch watch;
  auto account = [&] {
    last_wait_seconds_ = watch.seconds();
    wait_seconds_ += last_wait_seconds_;
  };
  std::optional<Batch> out;
  if (options_.prefetch == 0 || batches_.empty()) {
    if (error_) std::rethrow_exception(error_);
    if (next_sync_ < batches_.size()) {
      try {
        out = prepare(next_sync_++);
      } catch (...) {
        error_ = std::current_exception();
        account();
        throw;
      }
    }
  } else {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [&] { return !queue_.empty() || finished_; });
    if (!queue_.empty()) {
      out = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      space_.notify_one();
    } else if (error_) {
      account();
      std::rethrow_exception(error_);
    }
  }
  account();
  if (out) ++delivered_;
  return out;
}

}  // namespace dtrain
