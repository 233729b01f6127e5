#include "ici/partition.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

#include "common/input_file.hpp"
#include "common/parse_number.hpp"

namespace tpuemu::ici {
namespace {

constexpr std::string_view kForms = "slab:AXIS, block:AxBxC or file:PATH";

std::size_t parse_axis(std::string_view text, std::string_view whole) {
  if (text == "x") return 0;
  if (text == "y") return 1;
  if (text == "z") return 2;
  throw PartitionError(fmt::format("--partition '{}': '{}' is not an axis (x, y or z)", whole, text));
}

std::vector<std::uint32_t> read_partition_file(const std::string& path, std::uint32_t chips) {
  std::string text;
  try {
    text = read_input_file(path, std::size_t{64} << 20);
  } catch (const InputFileError& e) {
    throw PartitionError(fmt::format("--partition file:{}", e.what()));
  }
  std::vector<std::uint32_t> ranks;
  std::size_t line = 1;
  std::size_t line_start = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      line_start = ++i;
      continue;
    }
    if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      ++i;
      continue;
    }
    const std::size_t begin = i;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])) == 0 && text[i] != '#') ++i;
    const std::string_view word(text.data() + begin, i - begin);
    const auto value = parse_unsigned(word);
    if (!value || *value > UINT32_MAX) {
      throw PartitionError(
          fmt::format("{}:{}:{}: '{}' is not a rank number", path, line, begin - line_start + 1, word));
    }
    if (ranks.size() == chips) {
      throw PartitionError(
          fmt::format("{}:{}:{}: more entries than the pod's {} chips", path, line, begin - line_start + 1, chips));
    }
    ranks.push_back(static_cast<std::uint32_t>(*value));
  }
  if (ranks.size() != chips) {
    throw PartitionError(fmt::format("{}: {} entries for a pod of {} chips (one rank per chip, in linear-id order)",
                                     path, ranks.size(), chips));
  }
  return ranks;
}

}  // namespace

PartitionSpec parse_partition(std::string_view text) {
  PartitionSpec spec;
  spec.text = std::string(text);
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    throw PartitionError(fmt::format("--partition '{}': expected {}", text, kForms));
  }
  const std::string_view kind = text.substr(0, colon);
  const std::string_view value = text.substr(colon + 1);
  if (kind == "slab") {
    spec.kind = PartitionSpec::Kind::kSlab;
    spec.axis = parse_axis(value, text);
  } else if (kind == "block") {
    spec.kind = PartitionSpec::Kind::kBlock;
    std::size_t begin = 0;
    for (;;) {
      const std::size_t end = value.find('x', begin);
      const std::string_view part = value.substr(begin, end == std::string_view::npos ? end : end - begin);
      const auto n = parse_unsigned(part);
      if (!n || *n == 0 || *n > UINT32_MAX) {
        throw PartitionError(
            fmt::format("--partition '{}': block factors are positive numbers, as in block:2x2x1", text));
      }
      spec.blocks.push_back(static_cast<std::uint32_t>(*n));
      if (end == std::string_view::npos) break;
      begin = end + 1;
    }
    if (spec.blocks.size() > kMaxAxes) {
      throw PartitionError(fmt::format("--partition '{}': at most {} block factors", text, kMaxAxes));
    }
  } else if (kind == "file") {
    spec.kind = PartitionSpec::Kind::kFile;
    if (value.empty()) throw PartitionError(fmt::format("--partition '{}': file: needs a path", text));
    spec.path = std::string(value);
  } else {
    throw PartitionError(fmt::format("--partition '{}': unknown form '{}'; expected {}", text, kind, kForms));
  }
  return spec;
}

std::vector<std::uint32_t> partition_chips(const Topology& topology, const PartitionSpec& spec, std::uint32_t ranks) {
  const std::uint32_t chips = topology.chip_count();
  if (ranks == 0) throw PartitionError("no ranks");
  if (ranks > chips) {
    throw PartitionError(fmt::format(
        "{} ranks for a pod of {} chips: every rank needs a whole chip (use at most {} ranks)", ranks, chips, chips));
  }
  std::vector<std::uint32_t> rank_of(chips);
  switch (spec.kind) {
    case PartitionSpec::Kind::kLinear:
      for (std::uint32_t c = 0; c < chips; ++c)
        rank_of[c] = static_cast<std::uint32_t>(std::uint64_t{c} * ranks / chips);
      break;
    case PartitionSpec::Kind::kSlab: {
      if (spec.axis >= topology.axis_count()) {
        throw PartitionError(fmt::format("--partition '{}': the {} pod has no {} axis", spec.text, topology.shape(),
                                         axis_name(spec.axis)));
      }
      const std::uint32_t length = topology.length(spec.axis);
      if (ranks > length) {
        throw PartitionError(fmt::format("--partition '{}': {} ranks but the {} axis has only {} chips", spec.text,
                                         ranks, axis_name(spec.axis), length));
      }
      for (std::uint32_t c = 0; c < chips; ++c) {
        const std::uint64_t coord = topology.coords(ChipId(c))[spec.axis];
        rank_of[c] = static_cast<std::uint32_t>(coord * ranks / length);
      }
      break;
    }
    case PartitionSpec::Kind::kBlock: {
      std::array<std::uint32_t, kMaxAxes> parts{1, 1, 1};
      std::uint64_t product = 1;
      for (std::size_t a = 0; a < spec.blocks.size(); ++a) {
        parts[a] = spec.blocks[a];
        product *= spec.blocks[a];
        const std::uint32_t length = a < topology.axis_count() ? topology.length(a) : 1;
        if (parts[a] > length) {
          throw PartitionError(fmt::format("--partition '{}': {} blocks along {} but the {} pod has {} chips there",
                                           spec.text, parts[a], axis_name(a), topology.shape(), length));
        }
      }
      if (product != ranks) {
        throw PartitionError(
            fmt::format("--partition '{}' makes {} blocks but there are {} ranks", spec.text, product, ranks));
      }
      for (std::uint32_t c = 0; c < chips; ++c) {
        const Coords xyz = topology.coords(ChipId(c));
        std::array<std::uint64_t, kMaxAxes> b{};
        for (std::size_t a = 0; a < kMaxAxes; ++a) {
          const std::uint32_t length = a < topology.axis_count() ? topology.length(a) : 1;
          b[a] = std::uint64_t{xyz[a]} * parts[a] / length;
        }
        rank_of[c] = static_cast<std::uint32_t>(b[0] + parts[0] * (b[1] + parts[1] * b[2]));
      }
      break;
    }
    case PartitionSpec::Kind::kFile:
      rank_of = read_partition_file(spec.path, chips);
      for (std::uint32_t c = 0; c < chips; ++c) {
        if (rank_of[c] >= ranks) {
          throw PartitionError(fmt::format("{}: chip {} is given rank {} but there are {} ranks (0..{})", spec.path, c,
                                           rank_of[c], ranks, ranks - 1));
        }
      }
      break;
  }
  std::vector<bool> used(ranks);
  for (const std::uint32_t r : rank_of) used[r] = true;
  const auto idle = std::find(used.begin(), used.end(), false);
  if (idle != used.end()) {
    throw PartitionError(fmt::format("--partition '{}' gives rank {} no chip",
                                     spec.text.empty() ? "default" : spec.text, idle - used.begin()));
  }
  return rank_of;
}

std::uint64_t cut_links(const Topology& topology, const std::vector<std::uint32_t>& rank_of) {
  std::uint64_t cut = 0;
  for (std::uint32_t c = 0; c < topology.chip_count(); ++c) {
    for (std::size_t a = 0; a < topology.axis_count(); ++a) {
      for (const int d : {-1, 1}) {
        const auto n = topology.neighbour(ChipId(c), a, d);
        if (n && rank_of[n->value()] != rank_of[c]) ++cut;
      }
    }
  }
  return cut;
}

}  // namespace tpuemu::ici
