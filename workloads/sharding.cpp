#include "workloads/sharding.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string>

namespace tpuemu::workloads {
namespace {

constexpr std::string_view kAxisNames = "XYZ";

// The mesh axis a letter names (x, y, z in either case) on a topology of
// `axis_count` axes, or npos.
std::size_t axis_index(char c, std::size_t axis_count) {
  const auto at = kAxisNames.find(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  return at < axis_count ? at : std::string_view::npos;
}

bool disjoint(const std::vector<std::size_t>& a, const std::vector<std::size_t>& b) {
  return std::none_of(a.begin(), a.end(), [&b](std::size_t x) { return std::find(b.begin(), b.end(), x) != b.end(); });
}

std::vector<std::size_t> shared_axes(const std::vector<std::size_t>& a, const std::vector<std::size_t>& b) {
  std::vector<std::size_t> out;
  for (std::size_t x : a) {
    if (std::find(b.begin(), b.end(), x) != b.end()) out.push_back(x);
  }
  return out;
}

DimSharding parse_dim(std::string_view text, std::string_view option, std::size_t axis_count) {
  DimSharding dim;
  const auto underscore = text.find('_');
  dim.name = std::string(text.substr(0, underscore));
  if (dim.name.empty() || !std::all_of(dim.name.begin(), dim.name.end(),
                                       [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; })) {
    throw std::invalid_argument(fmt::format(
        "{} '{}': a dimension is a name (letters, digits) with optional mesh axes, like I_X", option, text));
  }
  if (underscore == std::string_view::npos) return dim;
  const std::string_view axes = text.substr(underscore + 1);
  if (axes.empty()) throw std::invalid_argument(fmt::format("{} '{}': no mesh axes after '_'", option, text));
  for (const char c : axes) {
    const std::size_t at = axis_index(c, axis_count);
    if (at == std::string_view::npos) {
      throw std::invalid_argument(fmt::format("{} '{}': unknown mesh axis '{}': the topology's axes are {}", option,
                                              text, c, kAxisNames.substr(0, axis_count)));
    }
    dim.axes.push_back(at);
  }
  return dim;
}

}  // namespace

std::vector<std::size_t> concat_axes(std::vector<std::size_t> a, const std::vector<std::size_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::string axes_text(const std::vector<std::size_t>& axes) {
  std::string out;
  for (std::size_t a : axes) out += kAxisNames.at(a);
  return out;
}

std::vector<std::size_t> parse_mesh_axes(std::string_view text, std::string_view option, std::size_t axis_count) {
  const auto refuse = [&] {
    return std::invalid_argument(
        fmt::format("{} '{}': expected none or mesh axes of the topology ({}), each at most once", option, text,
                    fmt::join(kAxisNames.substr(0, axis_count), ", ")));
  };
  if (text == "none") return {};
  if (text.empty()) throw refuse();
  std::vector<std::size_t> axes;
  for (const char c : text) {
    const std::size_t at = axis_index(c, axis_count);
    if (at == std::string_view::npos || std::find(axes.begin(), axes.end(), at) != axes.end()) throw refuse();
    axes.push_back(at);
  }
  return axes;
}

OperandSharding parse_sharding(std::string_view text, std::string_view option, std::size_t axis_count) {
  const auto comma = text.find(',');
  if (comma == std::string_view::npos || text.find(',', comma + 1) != std::string_view::npos) {
    throw std::invalid_argument(
        fmt::format("{} '{}': give two dimensions separated by a comma, like 'I_X,J'", option, text));
  }
  OperandSharding s{parse_dim(text.substr(0, comma), option, axis_count),
                    parse_dim(text.substr(comma + 1), option, axis_count)};
  const auto all = concat_axes(s.rows.axes, s.cols.axes);
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (std::find(all.begin() + static_cast<std::ptrdiff_t>(i) + 1, all.end(), all[i]) != all.end()) {
      throw std::invalid_argument(
          fmt::format("{} '{}': mesh axis {} is used twice (an operand is split over each axis at most once)", option,
                      text, kAxisNames.at(all[i])));
    }
  }
  if (s.rows.name == s.cols.name) {
    throw std::invalid_argument(fmt::format("{} '{}': both dimensions are named {}", option, text, s.rows.name));
  }
  return s;
}

std::string format_sharding(const OperandSharding& s) {
  const auto dim = [](const DimSharding& d) { return d.axes.empty() ? d.name : d.name + "_" + axes_text(d.axes); };
  return dim(s.rows) + "," + dim(s.cols);
}

std::string_view plan_name(Plan plan) {
  switch (plan) {
    case Plan::kLocal:
      return "local";
    case Plan::kAllGather:
      return "ag";
    case Plan::kReduceScatter:
      return "rs";
    case Plan::kAllReduce:
      return "ar";
  }
  return "?";
}

std::optional<Plan> parse_plan(std::string_view text) {
  for (Plan p : kPlans) {
    if (plan_name(p) == text) return p;
  }
  return std::nullopt;
}

const PlanOption& CaseAnalysis::option(Plan plan) const {
  return plans.at(static_cast<std::size_t>(plan));
}

CaseAnalysis analyze_case(const OperandSharding& lhs, const OperandSharding& rhs) {
  if (lhs.cols.name != rhs.rows.name) {
    throw std::invalid_argument(fmt::format(
        "--rhs '{}': its first dimension ({}) must be the contracting dimension, the second of --lhs '{}' ({})",
        format_sharding(rhs), rhs.rows.name, format_sharding(lhs), lhs.cols.name));
  }
  const auto& a_i = lhs.rows.axes;
  const auto& a_ja = lhs.cols.axes;
  const auto& a_jb = rhs.rows.axes;
  const auto& a_k = rhs.cols.axes;
  const std::string i = lhs.rows.name;
  const std::string j = lhs.cols.name;
  const std::string k = rhs.cols.name;
  CaseAnalysis out;
  for (Plan p : kPlans) out.plans.push_back({p, std::nullopt, ""});
  const auto set = [&out](Plan p, PlanLayout layout) {
    layout.plan = p;
    out.plans[static_cast<std::size_t>(p)].layout = std::move(layout);
  };
  const auto refuse = [&out](Plan p, std::string why) {
    out.plans[static_cast<std::size_t>(p)].refusal = std::move(why);
  };
  const std::vector<std::size_t> shared = shared_axes(a_i, a_k);

  if (a_ja.empty() && a_jb.empty()) {
    const std::string nothing_to_sum = fmt::format("{} is not split: there are no partial sums to reduce", j);
    refuse(Plan::kReduceScatter, nothing_to_sum);
    refuse(Plan::kAllReduce, nothing_to_sum);
    if (shared.empty()) {
      out.book_case = 1;
      out.description = fmt::format("case 1: {} is split in neither operand: local matmul, no communication", j);
      set(Plan::kLocal, {Plan::kLocal, {}, 0, {a_i, {}}, {{}, a_k}, {a_i, {}}, {{}, a_k}, {a_i, a_k}});
      refuse(Plan::kAllGather, "case 1 needs no communication");
      return out;
    }
    out.book_case = 4;
    out.description = fmt::format("case 4: {} and {} are both split over {}: invalid as is; all-gather A over {} first",
                                  i, k, axes_text(shared), axes_text(shared));
    // The gather concatenates row blocks in rank order: whole row blocks of A
    // only if the gathered axes are I's minor ones.
    const std::vector<std::size_t> minor(a_i.end() - static_cast<std::ptrdiff_t>(shared.size()), a_i.end());
    if (!std::is_permutation(minor.begin(), minor.end(), shared.begin())) {
      throw std::invalid_argument(fmt::format(
          "--lhs '{}': the axes {} shares with {} ({}) must be the last (minor) axes of {} to be gathered into whole "
          "row blocks",
          format_sharding(lhs), i, k, axes_text(shared), i));
    }
    const std::vector<std::size_t> kept(a_i.begin(), a_i.end() - static_cast<std::ptrdiff_t>(shared.size()));
    set(Plan::kAllGather, {Plan::kAllGather, minor, 'A', {a_i, {}}, {{}, a_k}, {kept, {}}, {{}, a_k}, {kept, a_k}});
    refuse(Plan::kLocal, fmt::format("{} and {} are split over the same axes {}: the chips' blocks do not meet", i, k,
                                     axes_text(shared)));
    return out;
  }

  if (!a_ja.empty() && !a_jb.empty() && a_ja != a_jb) {
    throw std::invalid_argument(fmt::format(
        "--lhs '{}' and --rhs '{}': {} is split over {} in A and over {} in B; the book's cases need it split over the "
        "same axes in both, or in one of them",
        format_sharding(lhs), format_sharding(rhs), j, axes_text(a_ja), axes_text(a_jb)));
  }
  if (!shared.empty()) {
    throw std::invalid_argument(fmt::format(
        "--lhs '{}' and --rhs '{}': {} is split and {} and {} share axes {}: not one of the book's four cases",
        format_sharding(lhs), format_sharding(rhs), j, i, k, axes_text(shared)));
  }
  const std::vector<std::size_t>& r = a_ja.empty() ? a_jb : a_ja;
  refuse(Plan::kLocal, fmt::format("{} is split over {}: each chip holds only part of every sum", j, axes_text(r)));
  if (!a_ja.empty() && !a_jb.empty()) {
    out.book_case = 3;
    out.description = fmt::format(
        "case 3: {} is split over {} in both operands: local matmul gives partial sums C[{},{}]{{U_{}}}, then "
        "all-reduce (or reduce-scatter) over {}",
        j, axes_text(r), i, k, axes_text(r), axes_text(r));
    refuse(Plan::kAllGather, "case 3 sums partial results (the book: local matmul, then all-reduce or reduce-scatter)");
  } else {
    out.book_case = 2;
    const char which = a_ja.empty() ? 'B' : 'A';
    out.description = fmt::format(
        "case 2: {} is split over {} in {} only: all-gather {} first, or multiply locally and all-reduce / "
        "reduce-scatter the partial result",
        j, axes_text(r), which, which);
    if (which == 'B') {
      set(Plan::kAllGather, {Plan::kAllGather, r, 'B', {a_i, {}}, {r, a_k}, {a_i, {}}, {{}, a_k}, {a_i, a_k}});
    } else {
      // The gather leaves A as its column blocks one after another; the
      // matmul reads them so (programs::MatmulSpec::a_column_blocks).
      set(Plan::kAllGather, {Plan::kAllGather, r, 'A', {a_i, r}, {{}, a_k}, {a_i, {}}, {{}, a_k}, {a_i, a_k}});
    }
  }
  if (!disjoint(r, a_i) || !disjoint(r, a_k)) {
    const std::string why = fmt::format(
        "{} is split over {} too: the chips of a group over {} hold different blocks of C, so their partial sums do "
        "not add up; use --plan ag",
        disjoint(r, a_i) ? k : i, axes_text(r), axes_text(r));
    refuse(Plan::kReduceScatter, why);
    refuse(Plan::kAllReduce, why);
    return out;
  }
  const Blocks a{a_i, r};
  const Blocks b{r, a_k};
  set(Plan::kAllReduce, {Plan::kAllReduce, r, 0, a, b, a, b, {a_i, a_k}});
  set(Plan::kReduceScatter, {Plan::kReduceScatter, r, 0, a, b, a, b, {concat_axes(a_i, r), a_k}});
  return out;
}

std::uint64_t shard_index(const std::vector<std::uint32_t>& coords, const std::vector<std::uint32_t>& lengths,
                          const std::vector<std::size_t>& axes) {
  std::uint64_t index = 0;
  for (std::size_t a : axes) index = index * lengths.at(a) + coords.at(a);
  return index;
}

std::uint64_t shard_count(const std::vector<std::uint32_t>& lengths, const std::vector<std::size_t>& axes) {
  std::uint64_t n = 1;
  for (std::size_t a : axes) n *= lengths.at(a);
  return n;
}

}  // namespace tpuemu::workloads
