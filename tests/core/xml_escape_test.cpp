#include "core/xml_escape.h"

#include <gtest/gtest.h>

namespace dtrain {
namespace {

TEST(XmlEscape, ReplacesTheReservedCharactersAndKeepsTheRest) {
  EXPECT_EQ(xml_escape("resnet-20 <b>"), "resnet-20 &lt;b&gt;");
  EXPECT_EQ(xml_escape(R"(a&b "c" 'd')"), "a&amp;b &quot;c&quot; &apos;d&apos;");
  EXPECT_EQ(xml_escape("plain text, 42%"), "plain text, 42%");
  EXPECT_EQ(xml_escape(""), "");
}

}  // namespace
}  // namespace dtrain
