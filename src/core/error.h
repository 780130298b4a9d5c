// Typed errors and check macros. Environmental failures (a missing file, a bad flag, a peer that
// died) throw a typed exception whose message names the problem and the fix; broken invariants
// throw InternalError from the DT_CHECK macros, which print both operands. The library never
// calls exit().
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace dtrain {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A flag, option, model or configuration the user gave is not valid.
class InputError : public Error {
 public:
  using Error::Error;
};
// A data, checkpoint or profile file is missing, truncated or corrupt.
class DataError : public Error {
 public:
  using Error::Error;
};
// Tensor shapes (or dtypes, layouts, devices) do not fit the operation.
class ShapeError : public Error {
 public:
  using Error::Error;
};
// Training diverged: NaN or Inf in a loss or gradient.
class NumericError : public Error {
 public:
  using Error::Error;
};
// A collective failed: a peer died, timed out or disagreed.
class CommError : public Error {
 public:
  using Error::Error;
};
// A library call failed or an invariant does not hold: a bug, not a user error.
class InternalError : public Error {
 public:
  using Error::Error;
};

namespace detail {
[[noreturn]] void throw_check_failure(const char* file, int line, const std::string& what);
}  // namespace detail

}  // namespace dtrain

#define DT_CHECK(cond, ...)                                                                   \
  do {                                                                                        \
    if (!(cond)) [[unlikely]] {                                                               \
      ::dtrain::detail::throw_check_failure(                                                  \
          __FILE__, __LINE__, fmt::format("check failed: {} {}", #cond, fmt::format(__VA_ARGS__))); \
    }                                                                                         \
  } while (0)

#define DT_CHECK_OP_(a, b, op)                                                                   \
  do {                                                                                           \
    const auto& dt_a_ = (a);                                                                     \
    const auto& dt_b_ = (b);                                                                     \
    if (!(dt_a_ op dt_b_)) [[unlikely]] {                                                        \
      ::dtrain::detail::throw_check_failure(                                                     \
          __FILE__, __LINE__, fmt::format("check failed: {} {} {} ({} vs {})", #a, #op, #b, dt_a_, dt_b_)); \
    }                                                                                            \
  } while (0)

#define DT_CHECK_EQ(a, b) DT_CHECK_OP_(a, b, ==)
#define DT_CHECK_NE(a, b) DT_CHECK_OP_(a, b, !=)
#define DT_CHECK_LT(a, b) DT_CHECK_OP_(a, b, <)
#define DT_CHECK_LE(a, b) DT_CHECK_OP_(a, b, <=)
#define DT_CHECK_GT(a, b) DT_CHECK_OP_(a, b, >)
#define DT_CHECK_GE(a, b) DT_CHECK_OP_(a, b, >=)
