#include "compiler/command/depfile.h"

#include <gtest/gtest.h>

namespace kcache {
namespace {

using Files = std::vector<std::string>;

TEST(DepfileTest, PrerequisitesOfGccAndNvccRules) {
  EXPECT_EQ(depfile_prerequisites("g.o: g.c /usr/include/stdc-predef.h\n"),
            (Files{"g.c", "/usr/include/stdc-predef.h"}));
  EXPECT_EQ(depfile_prerequisites("n.cubin : n.cu \\\n    /usr/a.h \\\n    b.h\n"),
            (Files{"n.cu", "/usr/a.h", "b.h"}));
  // -MP adds a phony rule per header: no repeats, targets left out.
  EXPECT_EQ(depfile_prerequisites("o: a.h b.h\na.h:\nb.h:\n"), (Files{"a.h", "b.h"}));
}

TEST(DepfileTest, EscapesAndLineEndings) {
  EXPECT_EQ(depfile_prerequisites("o: my\\ dir/x.h c$$d.h \\#e.h\r\n"),
            (Files{"my dir/x.h", "c$d.h", "#e.h"}));
  EXPECT_EQ(depfile_prerequisites("o: a.h \\\r\n b.h\r\n"), (Files{"a.h", "b.h"}));
  EXPECT_TRUE(depfile_prerequisites("").empty());
  EXPECT_TRUE(depfile_prerequisites("o:\n").empty());
}

}  // namespace
}  // namespace kcache
