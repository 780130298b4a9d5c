#include <cmath>
#include <cstdint>

#include "core/error.h"
#include "python/bindings.h"

namespace dtrain::python {

py::object to_python(const nlohmann::json& j) {
  using Type = nlohmann::json::value_t;
  switch (j.type()) {
    case Type::null:
      return py::none();
    case Type::boolean:
      return py::bool_(j.get<bool>());
    case Type::number_integer:
      return py::int_(j.get<std::int64_t>());
    case Type::number_unsigned:
      return py::int_(j.get<std::uint64_t>());
    case Type::number_float: {
      // The command's JSON holds null where a value is not finite; so does the module's.
      const double v = j.get<double>();
      return std::isfinite(v) ? py::object(py::float_(v)) : py::object(py::none());
    }
    case Type::string:
      return py::str(j.get_ref<const std::string&>());
    case Type::array: {
      py::list out;
      for (const nlohmann::json& item : j) out.append(to_python(item));
      return out;
    }
    case Type::object: {
      py::dict out;
      for (const auto& [key, value] : j.items()) out[py::str(key)] = to_python(value);
      return out;
    }
    case Type::binary:
    case Type::discarded:
      break;
  }
  throw InternalError("a JSON value of a type Python has no counterpart for (binary or discarded)");
}

}  // namespace dtrain::python
