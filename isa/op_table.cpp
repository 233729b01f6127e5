#include "isa/op_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

#include "common/edit_distance.hpp"

namespace tpuemu::isa {
namespace {

std::optional<OperandClass> class_from_token(std::string_view t) {
  static const std::unordered_map<std::string_view, OperandClass> kClasses{
      {"v", OperandClass::kVreg},      {"vm", OperandClass::kMask},       {"s", OperandClass::kSreg},
      {"p", OperandClass::kPred},      {"t", OperandClass::kToken},       {"i", OperandClass::kInt},
      {"n", OperandClass::kNumber},    {"sym", OperandClass::kSymbol},    {"vmem", OperandClass::kVmem},
      {"smem", OperandClass::kSmem},   {"thread", OperandClass::kThread}, {"resolvable", OperandClass::kResolvable},
      {"chunk", OperandClass::kChunk}, {"flag", OperandClass::kFlag},     {"target", OperandClass::kTarget},
      {"decl", OperandClass::kDecl},
  };
  const auto it = kClasses.find(t);
  if (it == kClasses.end()) return std::nullopt;
  return it->second;
}

std::string_view trim_spaces(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// Parses the syntax column; a malformed row is a programming error caught by
// the first use (and by the table tests).
void parse_syntax(OpInfo& info) {
  std::string_view s = info.syntax;
  const auto eq = s.find(" =");
  const auto first_comma_or_end = s.find(',');
  if (eq != std::string_view::npos && (first_comma_or_end == std::string_view::npos || eq < first_comma_or_end) &&
      s.substr(0, eq).find('=') == std::string_view::npos) {
    info.dest = class_from_token(trim_spaces(s.substr(0, eq)));
    if (!info.dest) throw std::logic_error(fmt::format("ops.def: bad dest in '{}'", info.syntax));
    s = s.substr(eq + 2);
  }
  s = trim_spaces(s);
  while (!s.empty()) {
    const auto comma = s.find(',');
    std::string_view item = trim_spaces(s.substr(0, comma));
    s = comma == std::string_view::npos ? std::string_view{} : trim_spaces(s.substr(comma + 1));
    OperandSyntax operand;
    if (const auto named = item.find('='); named != std::string_view::npos) {
      operand.name = std::string(item.substr(0, named));
      item = item.substr(named + 1);
    }
    if (item.ends_with("...")) {
      operand.variadic = true;
      item.remove_suffix(3);
    }
    while (!item.empty()) {
      const auto bar = item.find('|');
      const auto cls = class_from_token(item.substr(0, bar));
      if (!cls) throw std::logic_error(fmt::format("ops.def: bad operand class in '{}'", info.syntax));
      operand.alternatives.push_back(*cls);
      item = bar == std::string_view::npos ? std::string_view{} : item.substr(bar + 1);
    }
    info.operands.push_back(std::move(operand));
  }
  if (info.mnemonic.find("mxu#") != std::string_view::npos) info.unit_kind = UnitKind::kMxu;
  if (info.mnemonic.find("xlu#") != std::string_view::npos) info.unit_kind = UnitKind::kXlu;
}

std::vector<OpInfo> build_table() {
  std::vector<OpInfo> table;
  bool in_extensions = false;
  std::string_view group;
#define TPUEMU_GROUP(title) group = title;
#define TPUEMU_OP(name, mnemonic, syntax, slot, latency, origin, summary) \
  if (OpId::k##name == OpId::kSidChip) in_extensions = true;              \
  table.push_back(OpInfo{OpId::k##name,                                   \
                         mnemonic,                                        \
                         syntax,                                          \
                         SlotClass::k##slot,                              \
                         LatencyClass::k##latency,                        \
                         Origin::k##origin,                               \
                         summary,                                         \
                         group,                                           \
                         std::nullopt,                                    \
                         {},                                              \
                         UnitKind::kNone,                                 \
                         in_extensions});
#include "isa/ops.def"
#undef TPUEMU_OP
#undef TPUEMU_GROUP
  for (auto& info : table) parse_syntax(info);
  return table;
}

const std::vector<OpInfo>& table() {
  static const std::vector<OpInfo> t = build_table();
  return t;
}

// Mnemonic pattern -> row. Unit-indexed rows are keyed with '#'.
const std::unordered_map<std::string_view, OpId>& by_mnemonic() {
  static const auto map = [] {
    std::unordered_map<std::string_view, OpId> m;
    for (const auto& info : table()) m.emplace(info.mnemonic, info.id);
    return m;
  }();
  return map;
}

}  // namespace

std::string_view to_string(Origin o) {
  switch (o) {
    case Origin::kObserved:
      return "observed";
    case Origin::kInferred:
      return "inferred";
    case Origin::kAssumed:
      return "assumed";
  }
  return "assumed";
}

std::string_view describe(OperandClass c) {
  switch (c) {
    case OperandClass::kVreg:
      return "a vector register (%v)";
    case OperandClass::kMask:
      return "a vector mask register (%vm)";
    case OperandClass::kSreg:
      return "a scalar register (%s)";
    case OperandClass::kPred:
      return "a predicate register (%p)";
    case OperandClass::kToken:
      return "an op result token (%N)";
    case OperandClass::kInt:
      return "an integer";
    case OperandClass::kNumber:
      return "a number";
    case OperandClass::kSymbol:
      return "an allocation ([#allocationN])";
    case OperandClass::kVmem:
      return "a VMEM reference ([vmem:[...] sm:$0x..])";
    case OperandClass::kSmem:
      return "an SMEM reference ([smem:[#allocationN]])";
    case OperandClass::kThread:
      return "[thread:$N]";
    case OperandClass::kResolvable:
      return "[resolvable:$true|$false]";
    case OperandClass::kChunk:
      return "a transpose chunk ([k/n])";
    case OperandClass::kFlag:
      return "(narrow) or (short)";
    case OperandClass::kTarget:
      return "a branch target (target bundleno = N or target = label)";
    case OperandClass::kDecl:
      return "an operand declaration ([shape: ..., index: ..., kind: ...])";
  }
  return "an operand";
}

std::span<const OpInfo> op_table() {
  return table();
}

const OpInfo& op_info(OpId id) {
  return table()[static_cast<std::size_t>(id)];
}

std::optional<MnemonicMatch> find_mnemonic(std::string_view mnemonic) {
  const auto& map = by_mnemonic();
  if (const auto it = map.find(mnemonic); it != map.end()) return MnemonicMatch{it->second, 0};
  // Replace the digits after "mxu" / "xlu" by '#'.
  for (std::string_view unit : {"mxu", "xlu"}) {
    const auto pos = mnemonic.find(unit);
    if (pos == std::string_view::npos) continue;
    std::size_t digits_end = pos + unit.size();
    while (digits_end < mnemonic.size() && mnemonic[digits_end] >= '0' && mnemonic[digits_end] <= '9') ++digits_end;
    const std::size_t digit_count = digits_end - pos - unit.size();
    if (digit_count == 0 || digit_count > 2) continue;
    std::string pattern(mnemonic.substr(0, pos + unit.size()));
    pattern += '#';
    pattern += mnemonic.substr(digits_end);
    if (const auto it = map.find(pattern); it != map.end()) {
      int index = 0;
      for (std::size_t i = pos + unit.size(); i < digits_end; ++i) index = index * 10 + (mnemonic[i] - '0');
      return MnemonicMatch{it->second, static_cast<std::uint8_t>(index)};
    }
  }
  return std::nullopt;
}

std::string mnemonic_text(OpId id, std::uint8_t unit) {
  const OpInfo& info = op_info(id);
  std::string text(info.mnemonic);
  if (const auto hash = text.find('#'); hash != std::string::npos) text.replace(hash, 1, std::to_string(unit));
  return text;
}

std::string nearest_mnemonic(std::string_view mnemonic) {
  std::string best;
  std::size_t best_distance = SIZE_MAX;
  for (const auto& info : table()) {
    const std::string candidate = mnemonic_text(info.id, 0);
    const std::size_t d = edit_distance(mnemonic, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

}  // namespace tpuemu::isa
