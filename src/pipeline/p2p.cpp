#include "pipeline/p2p.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/timer.h"

namespace dtrain::pipeline {

P2P::P2P(comm::Transport& transport, double timeout_s) : transport_(transport), timeout_s_(timeout_s) {}

P2P::~P2P() {
  // A step that failed leaves sends behind: withdraw them so no peer writes into freed buffers.
  transport_.cancel(pending_);
}

void P2P::check(int peer, int tag, const char* op) const {
  if (peer == rank())
    throw InputError(
        fmt::format("rank {}: {} to itself: a part of the model that stays on one rank needs no transfer", rank(), op));
  if (tag < 0 || tag > kMaxP2PTag + kGradientTagOffset)
    throw InputError(fmt::format("{} tag {} is outside [0, {}]", op, tag, kMaxP2PTag + kGradientTagOffset));
}

void P2P::post_send(const Tensor& data, int peer, int tag) {
  check(peer, tag, "send");
  Tensor plain = data.to_plain().to(DType::kF32);
  pending_.push_back(transport_.isend(plain.raw_data(), plain.nbytes(), peer, tag));
  kept_.push_back(std::move(plain));
  bytes_sent_ += kept_.back().nbytes();
}

Tensor P2P::receive(const Shape& shape, int peer, int tag, const std::string& what) {
  check(peer, tag, "receive");
  Tensor out = Tensor::empty(shape);
  const Stopwatch waited;
  comm::Request r = transport_.irecv(out.raw_data(), out.nbytes(), peer, tag);
  transport_.wait(r, comm::Deadline::after(timeout_s_), what);
  receive_s_ += waited.seconds();
  bytes_received_ += out.nbytes();
  return out;
}

void P2P::finish_sends(const std::string& what) {
  transport_.waitall(pending_, comm::Deadline::after(timeout_s_), what);
  pending_.clear();
  kept_.clear();
}

namespace {

Variable anchor() { return Variable(Tensor::zeros({1}), true, "p2p anchor"); }

// The ops keep the upper half of the tags for the gradients.
void check_op_tag(int tag, const char* op) {
  if (tag < 0 || tag > kMaxP2PTag)
    throw InputError(
        fmt::format("pipeline {} tag {} is outside [0, {}]: tags above it carry the gradients", op, tag, kMaxP2PTag));
}

}  // namespace

Variable send(const Variable& x, P2P& p2p, int peer, int tag) {
  check_op_tag(tag, "send");
  p2p.post_send(x.data(), peer, tag);
  const Shape shape = x.shape();
  const Layout layout = x.data().layout();
  P2P* link = &p2p;
  const bool wants_grad = x.requires_grad();
  return Variable::from_op(Tensor::zeros({1}), "send", {x, anchor()},
                           [link, shape, layout, peer, tag, wants_grad](const Tensor&) -> std::vector<Tensor> {
                             Tensor g = link->receive(shape, peer, tag + kGradientTagOffset,
                                                      fmt::format("backward of send: the gradient from rank {}", peer));
                             if (!wants_grad) return {Tensor(), Tensor()};
                             return {g.to_layout(layout), Tensor()};
                           });
}

Variable recv(P2P& p2p, const Shape& shape, int peer, int tag, const Variable& after) {
  check_op_tag(tag, "recv");
  Tensor data = p2p.receive(shape, peer, tag, fmt::format("recv of {} from rank {}", shape, peer));
  P2P* link = &p2p;
  const bool ordered = after.defined() && after.requires_grad();
  std::vector<Variable> inputs{anchor()};
  if (ordered) inputs.push_back(after);
  return Variable::from_op(std::move(data), "recv", inputs,
                           [link, peer, tag, ordered](const Tensor& grad) -> std::vector<Tensor> {
                             link->post_send(grad, peer, tag + kGradientTagOffset);
                             // A zero gradient for the delegate makes its backward run after this.
                             if (ordered) return {Tensor(), Tensor::zeros({1})};
                             return {Tensor()};
                           });
}

}  // namespace dtrain::pipeline
