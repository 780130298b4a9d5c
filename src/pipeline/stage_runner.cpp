#include "pipeline/stage_runner.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <map>

#include "autograd/ops/loss.h"
#include "core/error.h"
#include "core/timer.h"

namespace dtrain::pipeline {

StageRunner::StageRunner(Module& stage, P2P& p2p, StageConfig config)
    : stage_(stage),
      p2p_(p2p),
      config_(std::move(config)),
      actions_(stage_actions(config_.schedule, config_.stages, config_.stage, config_.micro_batches)) {
  const bool first = config_.stage == 0, last = config_.stage == config_.stages - 1;
  if (!first && (config_.previous_rank < 0 || config_.previous_rank >= p2p.size()))
    throw InputError(fmt::format("pipeline stage {}: previous stage's rank {} is not a rank of the {}", config_.stage,
                                 config_.previous_rank, p2p.size()));
  if (!last && (config_.next_rank < 0 || config_.next_rank >= p2p.size()))
    throw InputError(fmt::format("pipeline stage {}: next stage's rank {} is not a rank of the {}", config_.stage,
                                 config_.next_rank, p2p.size()));
}

StageStep StageRunner::run(const Tensor& inputs, const Tensor& labels, double label_smoothing) {
  const int m = config_.micro_batches;
  const std::int64_t batch = inputs.size(0);
  if (m > kMaxP2PTag) throw InputError(fmt::format("--micro-batches must be at most {}, got {}", kMaxP2PTag, m));
  if (batch % m != 0)
    throw InputError(
        fmt::format("--micro-batches {} does not divide the batch of {} rows: use a divisor of {}", m, batch, batch));
  const std::int64_t rows = batch / m;
  const bool first = config_.stage == 0, last = config_.stage == config_.stages - 1;
  std::vector<std::int64_t> dims{rows};
  dims.insert(dims.end(), config_.input_sample.dims().begin(), config_.input_sample.dims().end());
  const Shape input_shape(dims);

  StageStep out;
  // The micro-batches this stage holds: its input (first: none) and the output's graph root (the
  // loss, or the send's delegate), from forward to backward.
  std::map<int, Variable> inputs_held, roots;
  out.wall_start = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const Stopwatch step;
  const double waited_before = p2p_.receive_seconds();
  double loss_sum = 0;
  for (const Action& a : actions_) {
    const int i = a.micro_batch;
    const double start = step.seconds();
    const double wait_start = p2p_.receive_seconds();
    switch (a.kind) {
      case ActionKind::kRecvActivation:
        inputs_held[i] = recv(p2p_, input_shape, config_.previous_rank, i);
        break;
      case ActionKind::kForward: {
        const Variable x = first ? Variable(inputs.slice_rows(i * rows, (i + 1) * rows)) : inputs_held.at(i);
        const Variable y = stage_(x);
        if (last) {
          const Tensor y_rows = labels.slice_rows(i * rows, (i + 1) * rows);
          Variable loss = ops::softmax_cross_entropy(y, y_rows, label_smoothing);
          const double value = loss.data().item();
          if (!std::isfinite(value)) out.loss_finite = false;
          loss_sum += value;
          out.correct += ops::count_correct(y.data(), y_rows);
          out.samples += rows;
          roots[i] = loss;
        } else {
          roots[i] = y;
        }
        out.peak_in_flight = std::max(out.peak_in_flight, static_cast<int>(roots.size()));
        break;
      }
      case ActionKind::kSendActivation:
        roots[i] = send(roots.at(i), p2p_, config_.next_rank, i);
        break;
      case ActionKind::kRecvGradient:
        // The send's delegate receives the gradient as the first node of the backward.
        break;
      case ActionKind::kBackward: {
        Variable root = roots.at(i);
        roots.erase(i);
        inputs_held.erase(i);
        root.backward(Tensor::full(root.shape(), last ? 1.0 / m : 1.0));
        break;
      }
      case ActionKind::kSendGradient:
        // Posted by the recv's backward, the last node of the backward.
        break;
    }
    const double end = step.seconds();
    const double waited = p2p_.receive_seconds() - wait_start;
    if (a.kind == ActionKind::kBackward && waited > 0) {
      // The gradient's receive ran inside the backward: show it as its own span.
      out.timeline.push_back({{ActionKind::kRecvGradient, i}, start, start + waited});
      out.timeline.push_back({a, start + waited, end});
    } else if (a.kind != ActionKind::kRecvGradient) {
      out.timeline.push_back({a, start, end});
    }
    if (a.kind == ActionKind::kForward) out.forward_s += end - start;
    if (a.kind == ActionKind::kBackward) out.backward_s += end - start - waited;
  }
  p2p_.finish_sends(fmt::format("pipeline stage {}: the step's sends", config_.stage));
  out.seconds = step.seconds();
  out.wait_s = p2p_.receive_seconds() - waited_before;
  out.loss = last ? loss_sum / m : 0;
  return out;
}

}  // namespace dtrain::pipeline
