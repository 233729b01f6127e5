// Splitting a pod over ranks: each form of --partition, table-driven, and
// every way a partition can be refused.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ici/partition.hpp"

using namespace tpuemu;
using namespace tpuemu::ici;

namespace {

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("tpuemu_part_" + std::to_string(::getpid()) + "_" + name)).string();
  std::ofstream(path) << text;
  return path;
}

std::vector<std::uint32_t> ranks_of(const Topology& t, const std::string& spec, std::uint32_t ranks) {
  return partition_chips(t, spec.empty() ? PartitionSpec{} : parse_partition(spec), ranks);
}

}  // namespace

TEST_CASE("partition: each form assigns whole chips to ranks", "[ici][partition]") {
  const Topology t4x4({4, 4}, {true, true});
  struct Row {
    const char* spec;
    std::uint32_t ranks;
    std::vector<std::uint32_t> expected;  // by linear id, x fastest
  };
  const std::vector<Row> rows = {
      {"", 1, std::vector<std::uint32_t>(16, 0)},
      {"", 2, {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}},
      {"", 3, {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2}},
      {"slab:y", 2, {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}},
      {"slab:x", 2, {0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1}},
      {"slab:x", 4, {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}},
      {"block:2x2", 4, {0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3}},
      {"block:2x1x1", 2, {0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1}},
  };
  for (const auto& row : rows) {
    INFO(row.spec << " on " << row.ranks << " ranks");
    CHECK(ranks_of(t4x4, row.spec, row.ranks) == row.expected);
  }
  // A 4x4 torus in 2 slabs cuts 2 rows of 4 links each way, twice (wraparound).
  CHECK(cut_links(t4x4, ranks_of(t4x4, "slab:y", 2)) == 16);
  CHECK(cut_links(t4x4, ranks_of(t4x4, "", 1)) == 0);
}

TEST_CASE("partition: a file gives one rank per chip, with comments", "[ici][partition]") {
  const Topology t({2, 2}, {false, false});
  const std::string path = write_file("ok", "# chip -> rank\n1 0\n0 1  # the last row\n");
  CHECK(ranks_of(t, "file:" + path, 2) == std::vector<std::uint32_t>{1, 0, 0, 1});
  std::filesystem::remove(path);
}

TEST_CASE("partition: bad specs and partitions that cannot be used are refused", "[ici][partition]") {
  const Topology t({4, 4}, {true, true});
  struct Row {
    std::string spec;
    std::uint32_t ranks;
    const char* message;
  };
  const std::string bad_word = write_file("word", "0 0 0 0\n0 0 x1 0\n");
  const std::string few = write_file("few", "0 1 0 1\n");
  std::string many_text;
  for (int i = 0; i < 17; ++i) many_text += "0 ";
  const std::string many = write_file("many", many_text);
  std::string idle_text;
  for (int i = 0; i < 16; ++i) idle_text += "0 ";
  const std::string idle = write_file("idle", idle_text);
  std::string out_text;
  for (int i = 0; i < 16; ++i) out_text += i == 5 ? "7 " : "1 ";
  const std::string out = write_file("out", out_text);
  const std::vector<Row> rows = {
      {"", 17, "17 ranks for a pod of 16 chips"},
      {"slab", 2, "expected slab:AXIS"},
      {"ring:x", 2, "unknown form 'ring'"},
      {"slab:w", 2, "'w' is not an axis"},
      {"slab:z", 2, "has no z axis"},
      {"slab:x", 5, "5 ranks but the x axis has only 4 chips"},
      {"block:2x0", 2, "block factors are positive"},
      {"block:2x2x1x1", 4, "at most 3 block factors"},
      {"block:2x2", 2, "makes 4 blocks but there are 2 ranks"},
      {"block:8", 8, "8 blocks along x"},
      {"file:", 2, "file: needs a path"},
      {"file:/nonexistent/partition", 2, "/nonexistent/partition"},
      {"file:" + bad_word, 2, ":2:5: 'x1' is not a rank number"},
      {"file:" + few, 2, "4 entries for a pod of 16 chips"},
      {"file:" + many, 2, "more entries than the pod's 16 chips"},
      {"file:" + idle, 2, "gives rank 1 no chip"},
      {"file:" + out, 2, "chip 5 is given rank 7 but there are 2 ranks"},
  };
  for (const auto& row : rows) {
    INFO(row.spec << " on " << row.ranks << " ranks");
    CHECK_THROWS_WITH(ranks_of(t, row.spec, row.ranks), Catch::Contains(row.message));
  }
  for (const auto& p : {bad_word, few, many, idle, out}) std::filesystem::remove(p);
}
