#include "schedule/speed_fit.h"

#include <array>
#include <cmath>
#include <limits>
#include <set>

#include "core/error.h"

namespace dtrain::schedule {
namespace {

// The basis functions of T(w) in the order a, b, c.
double speed_basis(int k, double w) { return k == 0 ? 1.0 / w : k == 1 ? 1.0 : w; }

// Least squares on the terms in `use` (a bit mask), weighted rows; false when singular.
bool solve_subset(const std::vector<std::pair<double, double>>& points, unsigned use, std::array<double, 3>& coef) {
  std::array<int, 3> terms{};
  int m = 0;
  for (int k = 0; k < 3; ++k) {
    if (use & (1u << k)) terms[static_cast<std::size_t>(m++)] = k;
  }
  // Normal equations A^T A x = A^T y with rows scaled by 1 / y (relative errors).
  std::array<std::array<double, 4>, 3> g{};
  for (const auto& [w, y] : points) {
    for (int r = 0; r < m; ++r) {
      const double fr = speed_basis(terms[static_cast<std::size_t>(r)], w) / y;
      for (int c = 0; c < m; ++c) g[r][c] += fr * speed_basis(terms[static_cast<std::size_t>(c)], w) / y;
      g[r][3] += fr * 1.0;  // (y / y)
    }
  }
  // Gaussian elimination with partial pivoting.
  for (int col = 0; col < m; ++col) {
    int pivot = col;
    for (int r = col + 1; r < m; ++r) {
      if (std::abs(g[r][col]) > std::abs(g[pivot][col])) pivot = r;
    }
    if (std::abs(g[pivot][col]) < 1e-12 * (1 + std::abs(g[0][0]))) return false;
    std::swap(g[col], g[pivot]);
    for (int r = 0; r < m; ++r) {
      if (r == col) continue;
      const double f = g[r][col] / g[col][col];
      for (int c = col; c < 4; ++c) g[r][c] -= f * g[col][c];
    }
  }
  coef = {0, 0, 0};
  for (int r = 0; r < m; ++r) coef[static_cast<std::size_t>(terms[static_cast<std::size_t>(r)])] = g[r][3] / g[r][r];
  return true;
}

}  // namespace

SpeedCurve fit_speed_curve(const std::vector<std::pair<double, double>>& points) {
  DT_CHECK(!points.empty(), "no points to fit");
  std::set<double> distinct;
  for (const auto& [w, y] : points) {
    DT_CHECK(w > 0 && y > 0, "bad point ({}, {})", w, y);
    distinct.insert(w);
  }
  // Non-negative least squares with three unknowns: the best of the unconstrained fits on every
  // subset of the terms whose coefficients all come out >= 0 (the optimum is one of them).
  SpeedCurve best;
  double best_error = std::numeric_limits<double>::infinity();
  for (unsigned use = 1; use < 8; ++use) {
    const int terms = __builtin_popcount(use);
    if (terms > static_cast<int>(distinct.size())) continue;
    std::array<double, 3> coef{};
    if (!solve_subset(points, use, coef)) continue;
    if (coef[0] < 0 || coef[1] < 0 || coef[2] < 0) continue;
    const SpeedCurve curve{coef[0], coef[1], coef[2]};
    double error = 0;
    for (const auto& [w, y] : points) error += std::pow((curve.at(w) - y) / y, 2);
    // Fewer terms win ties (a curve through one count has a alone).
    if (error < best_error * (1 - 1e-12) - 1e-300) {
      best = curve;
      best_error = error;
    }
  }
  DT_CHECK(best_error < std::numeric_limits<double>::infinity(), "no non-negative fit");
  return best;
}

}  // namespace dtrain::schedule
