#include "comm/hosts.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>

namespace dtrain::comm {
namespace {

constexpr std::size_t kKeyBytes = 128;

}  // namespace

std::string host_key() {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0) std::strcpy(name.data(), "unknown-host");
  std::string key = name.data();
  struct stat st {};
  if (::stat("/proc/self/ns/net", &st) == 0) key += fmt::format("/netns:{}", st.st_ino);
  return key;
}

std::string host_name_of(const std::string& key) { return key.substr(0, key.find("/netns:")); }

HostLayout host_layout(Communicator& comm) {
  const int p = comm.size();
  std::string key = host_key();
  key.resize(kKeyBytes, '\0');
  key.back() = '\0';
  std::vector<char> keys(kKeyBytes * static_cast<std::size_t>(p));
  comm.allgather(key.data(), keys.data(), kKeyBytes);
  HostLayout out;
  std::map<std::string, int> index;
  std::vector<std::string> plain_names;
  for (int r = 0; r < p; ++r) {
    const std::string k(keys.data() + static_cast<std::size_t>(r) * kKeyBytes);
    auto [it, fresh] = index.emplace(k, static_cast<int>(out.members.size()));
    if (fresh) {
      out.members.emplace_back();
      plain_names.push_back(host_name_of(k));
    }
    out.members[static_cast<std::size_t>(it->second)].push_back(r);
    out.host_of.push_back(it->second);
  }
  for (std::size_t h = 0; h < out.members.size(); ++h) {
    const auto same = std::count(plain_names.begin(), plain_names.end(), plain_names[h]);
    out.names.push_back(same > 1 ? fmt::format("{} (network namespace {})", plain_names[h], h) : plain_names[h]);
    out.ranks_per_host = std::max(out.ranks_per_host, static_cast<int>(out.members[h].size()));
  }
  return out;
}

}  // namespace dtrain::comm
