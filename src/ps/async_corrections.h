// How SSP and ASP servers scale each push, since every push is an optimizer step of its own:
//
//   per-push rate (--async-lr)
//     divided    lr / W (the default): the W pushes of one clock move the weights as far as one
//                BSP step, so --lr means the same per global step in every mode.
//     staleness  lr / max(1, tau), tau the server updates between the push's read and its apply
//                (Zhang, Gupta, Lian and Liu, IJCAI 2016, "Staleness-aware Async-SGD": alpha0 /
//                tau). Equal workers have tau ~ W - 1, so it is lr / (W - 1) on average and
//                smaller for a straggler's staler pushes.
//     full       lr: what MXNet and BytePS servers do. With momentum it diverges under ASP (a step
//                W times too large, applied W - 1 updates late: ../shared/research/ps.md, B5); kept
//                so that the failure can be shown.
//   momentum (--async-momentum)
//     keep        the optimizer's momentum as given.
//     compensate  mu' = max(0, mu - (1 - 1/W)): asynchrony adds an implicit momentum of about
//                1 - 1/W (Mitliagkas, Zhang, Hadjis and Re 2016, "Asynchrony begets Momentum",
//                arXiv 1605.09774), so the explicit one is lowered to keep their sum at mu.
// BSP applies one step per clock at lr and takes neither.
#pragma once

#include <cstdint>
#include <string_view>

#include "optim/optimizer.h"

namespace dtrain::ps {

enum class AsyncLr { kDivided, kStaleness, kFull };
enum class AsyncMomentum { kKeep, kCompensate };

std::string_view async_lr_name(AsyncLr rule);
std::string_view async_momentum_name(AsyncMomentum rule);
// The names above; InputError listing them otherwise.
AsyncLr parse_async_lr(std::string_view name);
AsyncMomentum parse_async_momentum(std::string_view name);

// The learning rate of one SSP or ASP push of `tau` updates' staleness among `workers`.
double per_push_lr(AsyncLr rule, double lr, int workers, std::int64_t tau);
// The momentum the servers use for `momentum` asked among `workers`.
double server_momentum(AsyncMomentum rule, double momentum, int workers);
// The optimizer the servers run for `optimizer` under `sync` (a SyncMode's name): compensated
// momentum under ssp and asp. InputError for compensation of an optimizer without momentum (sgd's).
OptimizerConfig server_optimizer(const OptimizerConfig& optimizer, AsyncMomentum rule, std::string_view sync,
                                 int workers);

}  // namespace dtrain::ps
