#include "tensorparallel/regions.h"

#include <fmt/format.h>

#include <cstring>

#include "core/error.h"

namespace dtrain::tensorparallel {

namespace {

// Elements per index of dim from_dim - 1: the product of the dims from from_dim on.
std::int64_t inner_elements(const Tensor& t, int from_dim) {
  std::int64_t n = 1;
  for (int d = from_dim; d < t.dim(); ++d) n *= t.size(d);
  return n;
}

Tensor allreduced(const Tensor& t, comm::Communicator& comm) {
  Tensor out = t.to_plain().to(DType::kF32).clone();
  comm.allreduce(out, comm::Algorithm::kRing);
  return out;
}

}  // namespace

Tensor slice_dim0(const Tensor& t, std::int64_t begin, std::int64_t end) {
  const Tensor plain = t.to_plain();
  std::vector<std::int64_t> dims = plain.shape().dims();
  dims[0] = end - begin;
  Tensor out = Tensor::empty(Shape(dims), plain.dtype());
  const std::size_t row = static_cast<std::size_t>(inner_elements(plain, 1)) * dtype_size(plain.dtype());
  std::memcpy(out.raw_data(), static_cast<const char*>(plain.raw_data()) + static_cast<std::size_t>(begin) * row,
              out.nbytes());
  return out;
}

Tensor slice_dim1(const Tensor& t, int part, int parts) {
  const Tensor plain = t.to_plain();
  const std::int64_t features = plain.size(1);
  DT_CHECK(features % parts == 0, "{} features in {} parts", features, parts);
  const std::int64_t block = features / parts, inner = inner_elements(plain, 2), rows = plain.size(0);
  std::vector<std::int64_t> dims = plain.shape().dims();
  dims[1] = block;
  Tensor out = Tensor::empty(Shape(dims), plain.dtype());
  const std::size_t esize = dtype_size(plain.dtype());
  const std::size_t chunk = static_cast<std::size_t>(block * inner) * esize;
  for (std::int64_t n = 0; n < rows; ++n) {
    const char* src = static_cast<const char*>(plain.raw_data()) +
                      static_cast<std::size_t>((n * features + part * block) * inner) * esize;
    std::memcpy(static_cast<char*>(out.raw_data()) + static_cast<std::size_t>(n) * chunk, src, chunk);
  }
  return out;
}

Variable copy_to_parallel(const Variable& x, comm::Communicator& comm) {
  comm::Communicator* c = &comm;
  return Variable::from_op(x.data(), "copy_to_parallel", {x},
                           [c](const Tensor& g) -> std::vector<Tensor> { return {allreduced(g, *c)}; });
}

Variable reduce_from_parallel(const Variable& x, comm::Communicator& comm) {
  return Variable::from_op(allreduced(x.data(), comm), "reduce_from_parallel", {x},
                           [](const Tensor& g) -> std::vector<Tensor> { return {g}; });
}

Variable gather_features(const Variable& x, comm::Communicator& comm) {
  const Tensor local = x.data().to_plain().to(DType::kF32);
  const int parts = comm.size();
  const std::int64_t rows = local.size(0), block = local.size(1), inner = inner_elements(local, 2);
  // The allgather lays the ranks' blocks out rank-major ([T][N][F/T][...]); the layer's output
  // is feature-major within each row ([N][T][F/T][...]).
  Tensor all = Tensor::empty(Shape({parts * local.numel()}));
  comm.allgather(local.raw_data(), all.raw_data(), local.nbytes());
  std::vector<std::int64_t> dims = local.shape().dims();
  dims[1] = block * parts;
  Tensor out = Tensor::empty(Shape(dims));
  const std::size_t chunk = static_cast<std::size_t>(block * inner) * sizeof(float);
  for (int t = 0; t < parts; ++t)
    for (std::int64_t n = 0; n < rows; ++n)
      std::memcpy(out.data<float>() + (n * parts + t) * block * inner,
                  all.data<float>() + (t * rows + n) * block * inner, chunk);
  const int rank = comm.rank();
  return Variable::from_op(
      std::move(out), "gather_features", {x},
      [rank, parts](const Tensor& g) -> std::vector<Tensor> { return {slice_dim1(g, rank, parts)}; });
}

}  // namespace dtrain::tensorparallel
