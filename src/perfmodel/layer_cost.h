// Time of one layer's forward and backward pass on a device: a roofline (Williams, Waterman &
// Patterson 2009) per pass, as Paleo (Qi et al. 2017) costs layers: the larger of
//   FLOPs / rate(kind)                                    (arithmetic)
//   bytes read / memory_read + bytes written / memory_write (memory traffic)
// with the FLOPs of nn/summary.h. Bytes, for a micro-batch of m samples (f32 activations):
//   forward:  reads m * input + weights, writes m * output;
//   backward: reads m * (input + output gradient) + weights, writes m * input gradient + the
//             weight gradient.
// Batch normalisation reads twice in each pass (statistics, then normalisation); a residual
// addition ("add") reads two inputs. A layer with no activation bytes in the summary (flatten: a
// view) costs its FLOPs only.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "nn/summary.h"
#include "perfmodel/profile.h"

namespace dtrain::perf {

struct PassTime {
  double seconds = 0;
  double arithmetic = 0, memory = 0;  // the two roofline terms; seconds = max of them
};

struct LayerTime {
  PassTime forward, backward;
};

LayerTime layer_time(const LayerSummary& layer, std::int64_t micro_batch, const DeviceProfile& device);

// Seconds to add a later micro-batch's gradients of `params` elements into those the earlier
// micro-batches of the step left (accumulation, pipeline micro-batches): autograd adds out of
// place (autograd/engine.cpp: accumulate), reading both and writing the sum, three f32 passes
// over gradients last touched a micro-batch ago, each priced as half of a calibrated gradient
// copy (a read and a write: profile.h, gradient_copy). Measured by its absence: lenet's 2-stage
// pipeline at 8 micro-batches of 8 ran 6.6 ms a step over the model without it, 7 additions of
// its second stage's 13 MB of gradients at 21 GB/s (the calibrated copy) being 6.7 ms.
double gradient_accumulation_seconds(double params, const DeviceProfile& device);

// Forward and backward seconds per compute kind (kComputeKinds order) for a micro-batch, and how
// much of it the memory roof set: where a model's time goes on a device.
struct KindTime {
  std::string_view kind;
  int layers = 0;
  double forward = 0, backward = 0;
  double memory_bound = 0;  // seconds of passes whose memory term exceeded the arithmetic one
};
std::vector<KindTime> time_by_kind(const std::vector<LayerSummary>& layers, std::int64_t micro_batch,
                                   const DeviceProfile& device);

}  // namespace dtrain::perf
