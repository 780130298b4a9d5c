// The built-in profiles (profiles/devices, profiles/links, profiles/networks) and the --profile
// composition syntax: "8xp100-nvlink+eth-50g" is the p100 device, eight per node joined by the
// P100's NVLink generation, nodes joined by 50 Gbit Ethernet.
#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "core/error.h"
#include "core/split.h"
#include "perfmodel/profile.h"

namespace dtrain::perf {
namespace {

namespace fs = std::filesystem;

bool is_library(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(dir / "devices", ec) && fs::is_directory(dir / "networks", ec);
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string valid_names(const ProfileNames& n) {
  return fmt::format(
      "devices: {} (as DEVICE, one per node, or KxDEVICE-LINK, K per node); intra-node links: nvlink (the device's "
      "own generation), {}; networks: {}; or a path to a profile JSON file",
      fmt::join(n.devices, ", "), fmt::join(n.links, ", "), fmt::join(n.networks, ", "));
}

ProfileFragment builtin(const std::string& folder, const std::string& name) {
  return read_profile_file(fmt::format("{}/{}/{}.json", profile_library_dir(), folder, name));
}

LinkProfile builtin_link(const std::string& folder, const std::string& name) {
  const ProfileFragment f = builtin(folder, name);
  if (!f.link) throw DataError(fmt::format("built-in profile {}/{}.json has no 'link'", folder, name));
  return *f.link;
}

// The parts set so far.
struct Parts {
  std::optional<DeviceProfile> device;
  std::optional<NodeProfile> node;
  std::optional<LinkProfile> network;
  std::optional<MeasuredAllreduce> mpi_allreduce;
  std::optional<MeasuredAllreduce> shm_allreduce;
  std::string description;
};

bool is_file_term(const std::string& term) {
  return term.find('/') != std::string::npos || (term.size() > 5 && term.compare(term.size() - 5, 5, ".json") == 0);
}

std::vector<std::string> split_terms(const std::string& spec) {
  std::vector<std::string> terms = split_list(spec, '+');
  for (const std::string& term : terms)
    if (term.empty()) throw InputError(fmt::format("--profile '{}' has an empty term around '+'", spec));
  return terms;
}

// Applies a profile file's parts to `p`.
void apply_file(const std::string& path, Parts& p) {
  const ProfileFragment f = read_profile_file(path);
  if (f.device) p.device = *f.device;
  if (f.node) p.node = *f.node;
  if (f.network) p.network = *f.network;
  if (f.link) p.network = *f.link;  // a lone link in a composition joins the nodes
  if (f.mpi_allreduce) p.mpi_allreduce = *f.mpi_allreduce;
  if (f.shm_allreduce) p.shm_allreduce = *f.shm_allreduce;
  if (!f.description.empty()) p.description = f.description;
}

// Applies one '+'-separated term to `p`.
void apply_term(const std::string& term, Parts& p, const ProfileNames& names) {
  if (is_file_term(term)) {
    apply_file(term, p);
    return;
  }
  if (contains(names.networks, term)) {
    p.network = builtin_link("networks", term);
    return;
  }
  // [Kx]DEVICE[-LINK]
  int per_node = 0;
  std::string rest = term;
  const std::size_t x = term.find('x');
  const auto digit = [](char ch) { return ch >= '0' && ch <= '9'; };
  if (x != std::string::npos && x > 0 && std::all_of(term.begin(), term.begin() + static_cast<long>(x), digit)) {
    per_node = x > 6 ? 0 : std::stoi(term.substr(0, x));
    rest = term.substr(x + 1);
    if (per_node < 1) {
      throw InputError(fmt::format("--profile term '{}': accelerators per node must be 1 to 999999", term));
    }
  }
  for (const std::string& d : names.devices) {
    if (rest != d && rest.rfind(d + "-", 0) != 0) continue;
    const ProfileFragment f = builtin("devices", d);
    if (!f.device || !f.node) throw DataError(fmt::format("built-in device profile '{}' lacks its device or node", d));
    p.device = f.device;
    p.node = f.node;
    if (per_node > 0) p.node->accelerators = per_node;
    if (rest == d) return;
    std::string link = rest.substr(d.size() + 1);
    if (link == "nvlink") {
      if (p.device->nvlink.empty()) {
        throw InputError(fmt::format("--profile term '{}': {} has no NVLink; pick a link: {}", term, d,
                                     fmt::join(names.links, ", ")));
      }
      link = p.device->nvlink;
    }
    if (!contains(names.links, link)) {
      throw InputError(fmt::format("--profile term '{}': unknown intra-node link '{}'; valid: nvlink, {}", term, link,
                                   fmt::join(names.links, ", ")));
    }
    p.node->intra_link = builtin_link("links", link);
    return;
  }
  throw InputError(fmt::format("unknown hardware '{}' in --profile; valid: {}", term, valid_names(names)));
}

// The profile the parts make, named `spec`, once they include a device and a node. names: the
// built-in ones, or empty where only files were read (the error then lists them anyway).
Profile whole_profile(const Parts& parts, const std::string& spec, const ProfileNames& names) {
  if (!parts.device) {
    throw InputError(
        fmt::format("--profile '{}' names no device; add one in front, e.g. p100+{} (devices: {})", spec, spec,
                    fmt::join(names.devices.empty() ? builtin_profile_names().devices : names.devices, ", ")));
  }
  if (!parts.node) {
    throw InputError(
        fmt::format("--profile '{}' has a device but no node (accelerators per node, intra-node link, "
                    "disk); add a 'node' part to the file or use a built-in device such as 8xp100-nvlink",
                    spec));
  }
  Profile p;
  p.name = spec;
  p.description = parts.description;
  p.device = *parts.device;
  p.node = *parts.node;
  p.network = parts.network;
  p.mpi_allreduce = parts.mpi_allreduce;
  p.shm_allreduce = parts.shm_allreduce;
  return p;
}

}  // namespace

std::string profile_library_dir() {
  static const std::string dir = [] {
    if (const char* env = std::getenv("DTRAIN_PROFILES"); env != nullptr && *env != '\0') {
      if (!is_library(env)) {
        throw InputError(
            fmt::format("DTRAIN_PROFILES={} is not a profiles folder (it needs devices/ and networks/)", env));
      }
      return std::string(env);
    }
    // Searched from the executable (the dtrain command, a test) and from the file this code was
    // loaded from (the Python module, whose executable is python3): in the build tree the sources'
    // profiles/ lie above both, in an installed prefix P they are P/share/dtrain/profiles.
    std::vector<fs::path> anchors;
    std::error_code ec;
    if (fs::path exe = fs::read_symlink("/proc/self/exe", ec); !ec) anchors.push_back(exe);
    Dl_info info{};
    if (dladdr(reinterpret_cast<const void*>(&profile_library_dir), &info) != 0 && info.dli_fname != nullptr) {
      anchors.push_back(fs::absolute(info.dli_fname, ec));
    }
    for (const fs::path& anchor : anchors) {
      for (fs::path d = anchor.parent_path(); !d.empty(); d = d.parent_path()) {
        if (is_library(d / "profiles")) return (d / "profiles").string();
        if (is_library(d / "share/dtrain/profiles")) return (d / "share/dtrain/profiles").string();
        if (d == d.root_path()) break;
      }
    }
    return std::string();
  }();
  if (dir.empty()) {
    throw InputError(
        "the built-in hardware profiles were not found next to the dtrain executable or library or above "
        "them; set "
        "DTRAIN_PROFILES to the profiles/ folder of the dtrain sources, or pass a profile JSON file to --profile");
  }
  return dir;
}

ProfileNames builtin_profile_names() {
  const std::string dir = profile_library_dir();
  return {names_in(dir + "/devices"), names_in(dir + "/links"), names_in(dir + "/networks")};
}

Profile load_profile(const std::string& spec) {
  if (spec.empty()) throw InputError("--profile is empty; give e.g. p100+ib-fdr or a profile JSON file");
  const std::vector<std::string> terms = split_terms(spec);
  // Files alone need no built-in library.
  const bool files_only = std::all_of(terms.begin(), terms.end(), is_file_term);
  const ProfileNames names = files_only ? ProfileNames{} : builtin_profile_names();
  Parts parts;
  for (const std::string& term : terms) apply_term(term, parts, names);
  return whole_profile(parts, spec, names);
}

Profile load_profile_file(const std::string& path) {
  Parts parts;
  apply_file(path, parts);
  return whole_profile(parts, path, ProfileNames{});
}

}  // namespace dtrain::perf
