// Hardware-profile reader (the JSON files of profiles/ and those given to --profile). A DataError
// is the expected answer to a bad file; anything else is a finding. An accepted profile must
// survive the schema round trip that `dtrain calibrate` output goes through.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"
#include "perfmodel/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const dtrain::perf::ProfileFragment f = dtrain::perf::parse_profile_text(text, "fuzz.json");
    if (f.device && f.node) {
      dtrain::perf::Profile p;
      p.name = f.name;
      p.description = f.description;
      p.device = *f.device;
      p.node = *f.node;
      p.network = f.network;
      const dtrain::perf::ProfileFragment again =
          dtrain::perf::parse_profile_fragment(dtrain::perf::profile_to_json(p), "round trip");
      if (!again.device || !again.node || again.device->name != p.device.name ||
          again.node->accelerators != p.node.accelerators || again.network.has_value() != p.network.has_value()) {
        __builtin_trap();
      }
    }
  } catch (const dtrain::DataError&) {
  }
  return 0;
}
