#include "core/split.h"

#include <algorithm>

namespace dtrain {

std::vector<std::string> split_list(const std::string& text, char separator) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(separator, begin), text.size());
    out.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

}  // namespace dtrain
