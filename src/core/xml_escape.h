// Text placed inside an XML or SVG document: the five characters XML reserves are replaced by
// their entities, so a job or run name cannot break the file.
#pragma once

#include <string>

namespace dtrain {

std::string xml_escape(const std::string& text);

}  // namespace dtrain
