// Splitting a flag's list ("f2,f3", "8xa100-nvlink+eth-50g") at a separator.
#pragma once

#include <string>
#include <vector>

namespace dtrain {

// The pieces between separators, empty ones included: "a,,b" -> {"a", "", "b"}, "" -> {""}.
std::vector<std::string> split_list(const std::string& text, char separator);

}  // namespace dtrain
