#include "comm/agreement.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

#include "core/error.h"

namespace dtrain::comm {
namespace {

constexpr std::uint64_t kMagic = 0x6474726169'6e0001ull;  // "dtrain", format 1
constexpr std::size_t kMaxShownValue = 80;

struct AgreementHeader {
  std::uint64_t magic;
  std::uint64_t hash;
  std::uint64_t length;
  std::uint64_t entries;
};
static_assert(sizeof(AgreementHeader) == 32);

void put_u32(std::string& out, std::uint32_t v) {
  char b[4];
  std::memcpy(b, &v, 4);
  out.append(b, 4);
}

// Length-prefixed name/value pairs: values may hold any bytes.
std::string serialise(std::span<const NamedValue> values) {
  std::string out;
  for (const NamedValue& v : values) {
    put_u32(out, static_cast<std::uint32_t>(v.name.size()));
    out += v.name;
    put_u32(out, static_cast<std::uint32_t>(v.value.size()));
    out += v.value;
  }
  return out;
}

// Inverse of serialise; a malformed record (another build) yields nullopt.
std::optional<std::vector<NamedValue>> parse(std::string_view in) {
  std::vector<NamedValue> out;
  auto take = [&](std::string& s) {
    std::uint32_t n;
    if (in.size() < 4) return false;
    std::memcpy(&n, in.data(), 4);
    in.remove_prefix(4);
    if (in.size() < n) return false;
    s.assign(in.substr(0, n));
    in.remove_prefix(n);
    return true;
  };
  while (!in.empty()) {
    NamedValue v;
    if (!take(v.name) || !take(v.value)) return std::nullopt;
    out.push_back(std::move(v));
  }
  return out;
}

// "rank 3" or "ranks 0-2,5".
std::string rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!s.empty()) s += ",";
    s += j == i ? fmt::format("{}", ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]);
    i = j + 1;
  }
  return (ranks.size() == 1 ? "rank " : "ranks ") + s;
}

std::string shown(const std::string& value) {
  return value.size() <= kMaxShownValue ? value : value.substr(0, kMaxShownValue) + "...";
}

// The report every rank builds from the same gathered lists.
std::string report(const std::vector<std::optional<std::vector<NamedValue>>>& lists) {
  const int p = static_cast<int>(lists.size());
  std::vector<std::string> names;  // in order of first appearance
  std::vector<int> unreadable;
  for (int r = 0; r < p; ++r) {
    if (!lists[static_cast<std::size_t>(r)]) {
      unreadable.push_back(r);
      continue;
    }
    for (const NamedValue& v : *lists[static_cast<std::size_t>(r)]) {
      if (std::find(names.begin(), names.end(), v.name) == names.end()) names.push_back(v.name);
    }
  }
  std::vector<std::string> parts;
  if (!unreadable.empty())
    parts.push_back(rank_list(unreadable) + " sent an unreadable record (another dtrain build?)");
  for (const std::string& name : names) {
    // Group ranks by value (nullopt: the rank has no such name), groups in order of lowest rank.
    std::vector<std::pair<std::optional<std::string>, std::vector<int>>> groups;
    for (int r = 0; r < p; ++r) {
      const auto& l = lists[static_cast<std::size_t>(r)];
      if (!l) continue;
      std::optional<std::string> value;
      for (const NamedValue& v : *l) {
        if (v.name == name) {
          value = v.value;
          break;
        }
      }
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == value; });
      if (it == groups.end()) {
        groups.push_back({value, {r}});
      } else {
        it->second.push_back(r);
      }
    }
    if (groups.size() <= 1) continue;
    std::string part = name + ": ";
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const auto& [value, ranks] = groups[g];
      if (g > 0) part += ", ";
      const char* verb = ranks.size() == 1 ? "has" : "have";
      part += value ? fmt::format("{} {} {}={}", rank_list(ranks), verb, name, shown(*value))
                    : fmt::format("{} {} no '{}'", rank_list(ranks), verb, name);
    }
    parts.push_back(part);
  }
  if (parts.empty()) parts.emplace_back("the same values in a different order");
  std::string out = "ranks disagree on the configuration: ";
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "; " : "") + parts[i];
  return out;
}

}  // namespace

std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t seed) {
  std::uint64_t h = seed;
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

void check_agreement(Communicator& comm, std::span<const NamedValue> values) {
  const std::string mine = serialise(values);
  const auto p = static_cast<std::size_t>(comm.size());
  const AgreementHeader own{kMagic, fnv1a64(mine), mine.size(), values.size()};
  std::vector<AgreementHeader> headers(p);
  comm.allgather(&own, headers.data(), sizeof(AgreementHeader));
  const bool same = std::all_of(headers.begin(), headers.end(), [&](const AgreementHeader& h) {
    return h.magic == own.magic && h.hash == own.hash && h.length == own.length && h.entries == own.entries;
  });
  if (same) return;

  std::uint64_t longest = 0;
  for (const AgreementHeader& h : headers) longest = std::max(longest, h.magic == kMagic ? h.length : 0);
  std::string padded = mine;
  padded.resize(longest, '\0');
  std::vector<char> all(p * longest);
  comm.allgather(padded.data(), all.data(), longest);
  std::vector<std::optional<std::vector<NamedValue>>> lists(p);
  for (std::size_t r = 0; r < p; ++r) {
    if (headers[r].magic != kMagic || headers[r].length > longest) continue;
    lists[r] = parse(std::string_view(all.data() + r * longest, headers[r].length));
  }
  throw CommError(report(lists));
}

}  // namespace dtrain::comm
