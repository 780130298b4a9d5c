// String checks shared by the tests.
#pragma once

#include <string>

namespace dtrain::test_support {

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace dtrain::test_support
