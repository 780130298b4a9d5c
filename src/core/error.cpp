#include "core/error.h"

namespace dtrain::detail {

void throw_check_failure(const char* file, int line, const std::string& what) {
  throw InternalError(fmt::format("{}:{}: {}", file, line, what));
}

}  // namespace dtrain::detail
