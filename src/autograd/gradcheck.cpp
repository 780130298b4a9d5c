#include "autograd/gradcheck.h"

#include <cmath>
#include <random>

#include "tensor/backend.h"

namespace dtrain {
namespace {

double projected(const Variable& out, const Tensor& r) {
  const std::vector<double> y = out.data().to_vector_f64();
  const std::vector<double> w = r.to_vector_f64();
  double s = 0;
  for (std::size_t i = 0; i < y.size(); ++i) s += y[i] * w[i];
  return s;
}

}  // namespace

GradcheckResult gradcheck(const std::function<Variable(const std::vector<Variable>&)>& f,
                          const std::vector<Variable>& inputs, double eps, double atol, double rtol) {
  for (const Variable& v : inputs) {
    if (v.requires_grad() && (v.data().dtype() != DType::kF64 || v.data().layout() != Layout::kPlain)) {
      throw InputError("gradcheck needs plain f64 inputs");
    }
  }
  for (const Variable& v : inputs) const_cast<Variable&>(v).zero_grad();
  Variable out = f(inputs);
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  std::vector<double> rv(static_cast<std::size_t>(out.data().numel()));
  for (double& x : rv) x = uni(rng);
  const Tensor r = Tensor::from_vector(rv, out.shape(), DType::kF64).to_layout(out.data().layout());
  out.backward(r);

  GradcheckResult result;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const Variable& in = inputs[k];
    if (!in.requires_grad()) continue;
    const std::vector<double> analytic =
        in.grad().defined() ? in.grad().to_vector_f64() : std::vector<double>(static_cast<std::size_t>(in.data().numel()));
    double* x = in.data().data<double>();
    NoGradGuard no_grad;
    for (std::int64_t i = 0; i < in.data().numel(); ++i) {
      const double saved = x[i];
      x[i] = saved + eps;
      const double plus = projected(f(inputs), r);
      x[i] = saved - eps;
      const double minus = projected(f(inputs), r);
      x[i] = saved;
      const double numeric = (plus - minus) / (2 * eps);
      const double a = analytic[static_cast<std::size_t>(i)];
      const double err = std::abs(a - numeric);
      if (err > result.max_abs_error) {
        result.max_abs_error = err;
        result.worst = fmt::format("input {} element {}: analytic {:.10g} numeric {:.10g}", k, i, a, numeric);
      }
      if (err > atol + rtol * std::abs(numeric)) result.ok = false;
    }
  }
  return result;
}

}  // namespace dtrain
