// Differentiable point-to-point transfers between the ranks that hold the parts of one model
// (ChainerMN's send and recv, over dtrain's transports).
//
// send(x) posts x to a peer and returns a one-element *delegate*; the delegate's backward
// receives x's gradient from that peer. recv() receives a tensor from a peer; its backward sends
// the gradient back. A rank whose part ends in a send starts its backward from the delegate.
//
// Ordering: blocking receives in backward must meet their peer's sends in the same order, or
// two ranks wait on each other. A rank that holds several parts (rank 0: layers 0 and 2 of a
// 0 -> 1 -> 0 chain) passes the delegate of its earlier send as recv's `after`: the recv then
// depends on it, so backward runs the recv's backward (sending the later part's gradient)
// before the delegate's (receiving the earlier part's), the reverse of forward, as the peer
// expects. Every send is non-blocking and every send is completed at finish_sends(), so a rank
// never blocks in a send while its peer blocks in one too (1F1B relies on this).
//
// Each op also takes an always-requiring-gradient anchor as input, so its node exists even when
// the tensor sent needs no gradient: otherwise the peer's gradient would never be received
// (ChainerMN's dummy variable, chainermn PR #214).
#pragma once

#include <string>
#include <vector>

#include "autograd/variable.h"
#include "comm/transport.h"

namespace dtrain::pipeline {

// The largest tag a caller may give: a gradient travels on tag + kGradientTagOffset.
inline constexpr int kMaxP2PTag = 16383;
inline constexpr int kGradientTagOffset = 16384;

// One rank's end of the transfers, with the sends in flight.
class P2P {
 public:
  // Every receive waits at most `timeout_s` (0: forever), then throws the transport's CommError
  // naming this rank, the transfer and the peer that did not answer.
  P2P(comm::Transport& transport, double timeout_s);
  ~P2P();
  P2P(const P2P&) = delete;
  P2P& operator=(const P2P&) = delete;

  int rank() const { return transport_.rank(); }
  int size() const { return transport_.size(); }

  // Posts `data` (made plain f32 here) to `peer`; it is kept until finish_sends().
  void post_send(const Tensor& data, int peer, int tag);
  // Receives a plain f32 tensor of `shape` from `peer`, waiting at most the timeout.
  Tensor receive(const Shape& shape, int peer, int tag, const std::string& what);
  // Completes every posted send (the end of a step), waiting at most the timeout.
  void finish_sends(const std::string& what);

  std::size_t sends_in_flight() const { return pending_.size(); }
  std::size_t bytes_sent() const { return bytes_sent_; }
  std::size_t bytes_received() const { return bytes_received_; }
  // Seconds spent waiting in receive() so far (a stage's share of the bubble).
  double receive_seconds() const { return receive_s_; }

 private:
  void check(int peer, int tag, const char* op) const;

  comm::Transport& transport_;
  double timeout_s_;
  std::vector<comm::Request> pending_;
  std::vector<Tensor> kept_;  // the buffers of pending_, in the same order
  std::size_t bytes_sent_ = 0, bytes_received_ = 0;
  double receive_s_ = 0;
};

// Sends x to `peer` on `tag` and returns the delegate (see the file comment).
Variable send(const Variable& x, P2P& p2p, int peer, int tag);

// Receives a tensor of `shape` from `peer` on `tag`. `after`: the delegate of an earlier send of
// this rank whose backward must run after this recv's (see the file comment), or undefined.
Variable recv(P2P& p2p, const Shape& shape, int peer, int tag, const Variable& after = {});

}  // namespace dtrain::pipeline
